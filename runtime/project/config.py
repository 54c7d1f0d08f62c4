"""nupp.toml: a project's name, its main script and how it builds.

    [project]
    name = "demo"          # the built program: bin/demo
    main = "main.nupp"     # the entry script; modules are found through require from its folder
    [build]
    aot = "on"             # "on" (the default) | "off"

An unknown key, a missing one, a value of the wrong kind, a `main` that is
not a file of the project or a file that is not TOML is a ProjectError: a
diagnostic at the line of nupp.toml it is about, exit status 2 (the
project's configuration, like a command line, is not the program).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from nupp.errors import Diagnostic, NuppError, Source
from nupp.paths import NuppEnvironmentError

PROJECT_FILE = "nupp.toml"
AOT_CHOICES = ("on", "off")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class ProjectError(NuppError):
    """nupp.toml is wrong: its diagnostics (exit status 2)."""


@dataclass(frozen=True)
class Project:
    """A project as nupp.toml describes it."""

    root: Path   # the folder holding nupp.toml, resolved
    name: str
    main: Path   # relative to root
    aot: str

    @property
    def modules_root(self) -> Path:
        """The folder `require` finds the project's modules in: main's."""
        return (self.root / self.main).parent


def _name_problem(value) -> str | None:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        return "name must be a file name of letters, digits, '.', '_' and '-' (it names bin/NAME)"
    return None


def _main_problem(value) -> str | None:
    if not isinstance(value, str) or not value:
        return "main must be the path of the entry script, relative to the project folder"
    if Path(value).is_absolute() or ".." in Path(value).parts:
        return f"main must be a path inside the project folder, not '{value}'"
    return None


def _aot_problem(value) -> str | None:
    return None if value in AOT_CHOICES else f"aot takes \"on\" or \"off\", not {value!r}"


# (table, key) -> (required, why a value is refused or None)
KEYS: dict[tuple[str, str], tuple[bool, Callable[[object], str | None]]] = {
    ("project", "name"): (True, _name_problem),
    ("project", "main"): (True, _main_problem),
    ("build", "aot"): (False, _aot_problem),
}
_KNOWN = "[project] takes name and main, [build] takes aot"


def load_project(folder: Path) -> Project:
    """The project in `folder`, its nupp.toml checked; ProjectError, or
    NuppEnvironmentError when there is no readable nupp.toml."""
    path = folder / PROJECT_FILE
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError as err:
        why = "no such file" if not path.exists() else err.strerror or type(err).__name__
        raise NuppEnvironmentError(f"cannot read {path}: {why}; a project folder holds {PROJECT_FILE} with "
                                   "[project] name and main") from None
    source = Source(str(path), text)
    table = _parse(source)
    _check_keys(source, table)
    project = Project(folder.resolve(), table["project"]["name"], Path(table["project"]["main"]),
                      table.get("build", {}).get("aot", "on"))
    if not (project.root / project.main).is_file():
        raise _error(source, ("project", "main"), f"main names '{project.main}', which is not a file in {folder}")
    return project


def _parse(source: Source) -> dict:
    try:
        return tomllib.loads(source.text)
    except (tomllib.TOMLDecodeError, UnicodeError) as err:
        message = str(err)
        at = re.search(r"\(at line (\d+), column (\d+)\)", message)
        line, col = (int(at[1]), int(at[2])) if at else (1, 1)
        raise ProjectError([Diagnostic(source, line, col, f"{PROJECT_FILE} is not TOML: "
                                       + message.split(" (at ")[0])]) from None


def _check_keys(source: Source, table: dict) -> None:
    problems = []
    tables = {name for name, _ in KEYS}
    for name, value in table.items():
        if name not in tables:
            problems.append(_diagnostic(source, (name,), f"unknown key '{name}' in {PROJECT_FILE}", _KNOWN))
        elif not isinstance(value, dict):
            problems.append(_diagnostic(source, (name,), f"'{name}' must be a table: [{name}]"))
        else:
            problems += [_diagnostic(source, (name, key), f"unknown key '{key}' in [{name}] of {PROJECT_FILE}",
                                     _KNOWN) for key in value if (name, key) not in KEYS]
    for (name, key), (required, problem) in KEYS.items():
        section = table.get(name)
        if not isinstance(section, dict) or key not in section:
            if required:
                problems.append(_diagnostic(source, (name,), f"[{name}] needs {key} = ... in {PROJECT_FILE}"))
        elif (why := problem(section[key])) is not None:
            problems.append(_diagnostic(source, (name, key), why))
    if problems:
        raise ProjectError(problems)


def _error(source: Source, key: tuple[str, ...], message: str) -> ProjectError:
    return ProjectError([_diagnostic(source, key, message)])


def _diagnostic(source: Source, key: tuple[str, ...], message: str, hint: str | None = None) -> Diagnostic:
    line, col = _position(source.text, key)
    return Diagnostic(source, line, col, message, hint)


_HEADER = re.compile(r"\s*\[\s*([^\[\]]+?)\s*\]")
_KEY = re.compile(r"\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _position(text: str, key: tuple[str, ...]) -> tuple[int, int]:
    """Where nupp.toml writes `key` (a table or table.key): the line and column of
    its table header or its assignment (1, 1 if not found: tomllib keeps no positions)."""
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            table = _dotted(header[1])
            if table == key:
                return number, line.index("[") + 1
            continue
        assignment = _KEY.match(line)
        if assignment:
            full = table + _dotted(assignment[1])
            if full == key[:len(full)] or key == full[:len(key)]:
                return number, assignment.start(1) + 1
    return 1, 1


def _dotted(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in text.split("."))


def run_target(path: str) -> tuple[str, str | None]:
    """What `nupp run PATH` runs: the script PATH, or a project folder's main
    (and then its nupp.toml's aot)."""
    if not Path(path).is_dir():
        return path, None
    project = load_project(Path(path))
    return str(Path(path) / project.main), project.aot
