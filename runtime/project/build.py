"""`nupp build`: a project's output tree, built incrementally.

    build_project(load_project(Path("demo")), BuildOptions(aot="on", out=Path("demo/build")), say)

The tree:

    bin/NAME                          the launcher (launcher.py); bin/NAME.o where it cannot be linked
    lib/nupp/boot.lua                 what the launcher runs (boot.lua)
    lib/nupp/error_keys.lua           how boot.lua classifies an error's message (error_keys.lua)
    lib/nupp/runtime/*.lua            the runtime library (runtime/lua)
    lib/nupp/tree.lua                 for boot.lua: the program's name, its main, its modules by name
                                      and how each file loads, the rule NUPP_THREADS is read by and
                                      the rule an uncaught error is reported by (run_errors.py)
    lib/nupp/diagnostics/FILE.lua     each line's diagnostic of a run-time error in FILE, but for the
                                      column and message (run_errors.line_reports), and the column
                                      of each key of a message there (error_position.line_columns):
                                      the tree holds no sources
    lib/nupp/build.json               what each file was built from, for the next build
    lua/FILE.lua                      a module's Lua (FILE: its path in the project, e.g. lib/util.nupp),
    lua/FILE.TIER.lua                   or with a tiered library the Lua binding each tier
    native/FILE.so                    the library of the module's @aot functions: every tier, the dispatcher
    native/FILE.executions-TIER.so    its other executions at that tier, for nupp.executions

aot "on" builds what `nupp run --aot on` runs: on x86-64 the lane C of every
feature tier in one library per module, whose dispatcher boot.lua asks which
tier the machine runs; for AArch64 (--target aarch64-linux-gnu) the scalar C
(the tiers and their dispatcher are x86-64's).  aot "off" builds the same
tree without native/: @aot functions run as ordinary Nupp.

Incremental: build.json keeps, per file, a key of what it was built from (its
path and bytes, aot, the machine, the compiler and its version, nupp's own
code) with the tree files it produced and the modules it requires.  A file
whose key matches is taken from the previous tree and not even parsed, and
the walk from main goes on through its recorded requires.  A module compiles
alone (under `nupp run` as here), so changing one rebuilds only that one.
The new tree is written beside --out and renamed into place: a failed build
leaves the previous tree as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

import nupp
from nupp.errors import NuppError, Source, source_bytes
from nupp.frontend.parser import parse
from nupp.frontend.printer import lua_string
from nupp.paths import NuppEnvironmentError
from nupp.pipeline import Request, compile_for_tree, execution_library, module_prefix
from nupp.runtime.host import LUA_DIR
from nupp.runtime.project.config import Project
from nupp.runtime.project.elf import E_MACHINE, MACHINE_OF, e_machine
from nupp.runtime.project.launcher import LUAJIT_PACKAGE, Launcher, luajit_library
from nupp.runtime.project.requires import literal_requires, module_file
from nupp.runtime.error_keys import key_text
from nupp.runtime.error_position import line_columns
from nupp.runtime.run_errors import has_reported_positions, line_count, line_reports, report_rule
from nupp.runtime.threads import environment_rule
from nupp.targets.cross import MACHINES, Machine, foreign_compiler, host_machine, triple_of
from nupp.targets.tiers import TIER_NAMES
from nupp.targets.toolchain import find_toolchain

BOOT = "lib/nupp/boot.lua"
ERROR_KEYS = "lib/nupp/error_keys.lua"
RUNTIME = "lib/nupp/runtime"
MANIFEST = "lib/nupp/tree.lua"
DIAGNOSTICS = "lib/nupp/diagnostics"
RECORD = "lib/nupp/build.json"
RECORD_FORMAT = 1

Say = Callable[[str], None]


TARGETS = {triple_of(machine): machine for machine in MACHINES.values()}


@dataclass(frozen=True)
class BuildOptions:
    aot: str          # "on" | "off"
    out: Path
    target: str | None = None  # a triple of TARGETS; None: this host's
    cc: str = "gcc"


@dataclass
class Built:
    """One module file in the tree: what it was built from and what it became."""

    key: str
    imports: list  # the names it requires
    files: list    # the tree's paths it produced
    entry: dict    # how boot.lua loads it (tree.lua)
    reused: bool = False

    def record(self) -> dict:
        return {"key": self.key, "imports": self.imports, "files": self.files, "entry": self.entry}


def build_project(project: Project, options: BuildOptions, say: Say) -> None:
    """Write the project's output tree to options.out (progress and the outcome through `say`)."""
    machine = TARGETS[options.target] if options.target else host_machine()
    compiler = _compiler(options.cc, machine)
    request = _request(options.aot, compiler, machine)
    launcher = Launcher.stamped(project.name, BOOT, compiler, luajit_library(triple_of(machine)))
    if launcher.luajit is None and machine is host_machine():
        raise NuppEnvironmentError(f"nupp build links LuaJIT into the program's launcher, and its static "
                                   f"library is not installed: install {LUAJIT_PACKAGE}")
    with _replacing(options.out) as staging:
        tree = _Tree(staging, _Previous.of(options.out))
        builder = _FileBuilder(project, request, tree, say, _key_parts(options.aot, machine, request))
        modules = builder.walk()
        launcher_record = _place_launcher(launcher, f"bin/{project.name}", tree, say)
        _write_runtime(tree)
        tree.write(MANIFEST, _manifest(project, modules, builder.built))
        tree.write(RECORD, json.dumps({"format": RECORD_FORMAT, "launcher": launcher_record, "files": {
            rel: built.record() for rel, built in builder.built.items()}}, indent=1).encode())
        _check_machine(staging, machine, say)
        _say_what_was_compiled(builder.built, launcher_record["reused"], say)
    say(f"wrote {options.out} ({_size(options.out) // 1024} KiB)")


def _compiler(cc: str, machine: Machine) -> tuple[str, ...]:
    """The command that compiles C for `machine`: `cc` here, its cross compiler for another."""
    command = tuple(machine.compile_command(cc))
    if machine is host_machine():
        find_toolchain(cc)  # NuppEnvironmentError naming the fix when it is missing
        if (target := foreign_compiler(cc, machine)) is not None:
            raise NuppEnvironmentError(
                f"the C compiler '{cc}' builds for {target.name}, not for {machine.name}: build for {target.name} "
                f"with --target {triple_of(target)} (and --cc gcc: nupp names the cross compiler), or name a "
                f"compiler for {machine.name}")
    elif shutil.which(command[0]) is None:
        raise NuppEnvironmentError(f"'{command[0]}', the C compiler for {machine.name}, was not found on PATH; "
                                   f"install the Debian package {getattr(machine, 'gcc_package', command[0])}")
    return command


def _request(aot: str, compiler: tuple[str, ...], machine: Machine) -> Request:
    """How the tree's @aot functions run: interp with aot off; else lane C
    with every tier on x86-64, scalar C elsewhere (the tiers are x86-64's)."""
    if aot == "off":
        return Request("interp")
    if len(compiler) != 1:
        raise NuppEnvironmentError(f"a build for {machine.name} compiles its native libraries with GCC's cross "
                                   f"compiler (--cc gcc); '{' '.join(compiler)}' is not supported for them yet")
    return Request("lane" if machine.name == "x86_64" else "scalar", compiler[0])


def _key_parts(aot: str, machine: Machine, request: Request) -> dict:
    """What every file's build depends on besides its own path and bytes."""
    toolchain = find_toolchain(request.cc) if request.mode != "interp" else None
    return {"aot": aot, "mode": request.mode, "machine": machine.name, "nupp": _nupp_fingerprint(),
            "cc": [toolchain.path, toolchain.version] if toolchain else None}


@lru_cache(maxsize=1)
def _nupp_fingerprint() -> str:
    """A hash of nupp's own code (Python, Lua, grammar, C template): a build by
    another nupp, even an edited checkout, shares nothing with this one's."""
    digest = hashlib.sha256()
    package = Path(nupp.__file__).parent
    for folder, dirs, names in os.walk(package, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(n for n in names if n.endswith((".py", ".lua", ".lark", ".c"))):
            path = Path(folder) / name
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# ---- the previous tree and the new one ------------------------------------------------------------

@dataclass(frozen=True)
class _Previous:
    """The tree a previous build left at --out, as its record describes it (empty: none)."""

    root: Path
    record: dict

    @classmethod
    def of(cls, out: Path) -> "_Previous":
        try:
            record = json.loads((out / RECORD).read_text())
        except (OSError, ValueError):
            return cls(out, {})
        return cls(out, record if isinstance(record, dict) and record.get("format") == RECORD_FORMAT else {})

    def entry(self, section: str, key: str, name: str | None = None) -> dict | None:
        """The record of `name` in `section` ("files"; "launcher": name None) if
        built under `key` and its files are all still there."""
        found = self.record.get(section, {})
        found = found.get(name) if name is not None else found
        if not isinstance(found, dict) or found.get("key") != key:
            return None
        return found if all((self.root / f).is_file() for f in found.get("files", ())) else None


class _Tree:
    """The new tree being written (the staging folder)."""

    def __init__(self, root: Path, previous: _Previous):
        self.root = root
        self.previous = previous
        self.written: list[str] = []  # every path written, in order (a module's files: those since a mark)

    def write(self, path: str, data: bytes) -> str:
        self.place(path).write_bytes(data)
        return path

    def copy(self, source: Path, path: str, mode: int = 0o644) -> str:
        """A file from elsewhere (a library in the compile cache, which is private: a copy, made readable)."""
        target = self.place(path)
        shutil.copyfile(source, target)
        os.chmod(target, mode)
        return path

    def adopt(self, path: str) -> str:
        """A file of the previous tree, unchanged: linked, else copied."""
        source, target = self.previous.root / path, self.place(path)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
        return path

    def place(self, path: str) -> Path:
        """Where the tree's file `path` goes (its folder made), recorded as written."""
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        self.written.append(path)
        return target


@contextmanager
def _replacing(out: Path):
    """A new folder beside `out` to build in, renamed to `out` if the build
    succeeds (the previous tree moved aside first, then removed); removed if it fails."""
    if out.exists() and not _replaceable(out):
        raise NuppEnvironmentError(f"'{out}' exists and is not a tree nupp build wrote (it has no {RECORD}): "
                                   "nupp build replaces only its own output; remove it or choose another --out")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    except OSError as err:
        raise NuppEnvironmentError(f"cannot write the output tree '{out}': {err.strerror or err}; "
                                   "choose a writable folder (--out)") from None
    try:
        yield staging
        os.chmod(staging, 0o755)
        _swap(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _replaceable(out: Path) -> bool:
    return out.is_dir() and ((out / RECORD).is_file() or not any(out.iterdir()))


def _swap(staging: Path, out: Path) -> None:
    if not out.exists():
        os.rename(staging, out)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    os.rename(out, aside)  # onto the empty folder
    try:
        os.rename(staging, out)
    except OSError:
        os.rename(aside, out)
        raise
    shutil.rmtree(aside, ignore_errors=True)


# ---- the modules --------------------------------------------------------------------------------

class _FileBuilder:
    """Each module file reached from main, built or taken from the previous tree."""

    def __init__(self, project: Project, request: Request, tree: _Tree, say: Say, key_parts: dict):
        self.project, self.request, self.tree, self.say = project, request, tree, say
        self.key_parts = key_parts
        self.built: dict[str, Built] = {}  # by the file's path in the project

    def walk(self) -> dict[str, str]:
        """Build main and every module it reaches; the modules' files by require name."""
        modules: dict[str, str] = {}
        pending = [self.project.main.as_posix()]
        while pending:
            rel = pending.pop()
            if rel in self.built:
                continue
            self.built[rel] = self.file(rel)
            for name in self.built[rel].imports:
                found = module_file(self.project.modules_root, name) if name not in modules else None
                if found is not None:  # else LuaJIT's own (bit, jit.util), or no file: require says so at run time
                    modules[name] = Path(os.path.relpath(found, self.project.root)).as_posix()
                    pending.append(modules[name])
        return modules

    def file(self, rel: str) -> Built:
        data = (self.project.root / rel).read_bytes()
        key = hashlib.sha256(json.dumps({"path": rel, "source": hashlib.sha256(data).hexdigest(),
                                         **self.key_parts}, sort_keys=True).encode()).hexdigest()
        old = self.tree.previous.entry("files", key, rel)
        if old is not None:
            return Built(key, old["imports"], [self.tree.adopt(f) for f in old["files"]], old["entry"], reused=True)
        source = Source(rel, data.decode("utf-8", "surrogateescape"))
        mark = len(self.tree.written)
        if rel.endswith(".lua") and rel != self.project.main.as_posix():  # nupp run translates any main
            imports, entry, chunks, syntax = self.plain_lua(source, data)
        else:
            self.say(f"compiling {rel}")
            imports, entry, chunks, syntax = self.nupp_module(source)
        if has_reported_positions(rel):
            entry["diagnostics"] = self.tree.write(f"{DIAGNOSTICS}/{rel}.lua", _diagnostics(source, chunks, syntax))
        return Built(key, list(imports), self.tree.written[mark:], entry)

    def plain_lua(self, source: Source, data: bytes) -> tuple[tuple[str, ...], dict, list[str], object]:
        """A .lua module runs as it is; its requires as the Nupp parser reads them.
        Returns its requires, its entry in tree.lua, the Lua it runs as and its
        syntax tree (None: it does not parse as Nupp)."""
        syntax = None
        try:
            syntax = parse(source)
            imports = literal_requires(syntax)
        except NuppError:
            imports = ()
            self.say(f"{source.path}: its require calls were not read (it does not parse as Nupp)")
        lua = self.tree.write(f"lua/{source.path}", data)
        return imports, {"chunkname": "@" + source.path, "translated": False, "lua": lua}, [source.text], syntax

    def nupp_module(self, source: Source) -> tuple[tuple[str, ...], dict, list[str], object]:
        rel = source.path
        compiled = compile_for_tree(source, self.request, f"native/{rel}.so")
        entry = {"chunkname": "@" + rel, "translated": True}
        library = compiled.library
        if library is not None:
            entry["library"] = self.tree.copy(library.path, f"native/{rel}.so")
        if library is None or library.tiered is None:
            (_, lua), = compiled.lua
            entry["lua"] = self.tree.write(f"lua/{rel}.lua", source_bytes(lua))
        else:
            entry["tiers"] = {build.tier.name: self.tree.write(f"lua/{rel}.{build.tier.name}.lua", source_bytes(lua))
                              for build, lua in compiled.lua}
            entry["cpu_tier"] = {"symbol": library.tiered.cpu_tier_symbol, "cdef": library.tiered.cpu_tier_cdef}
            entry["executions"] = {tier: self.executions(compiled.module, source, tier) for tier in entry["tiers"]}
        return literal_requires(compiled.front.chunk), entry, [lua for _, lua in compiled.lua], compiled.front.chunk

    def executions(self, module, source: Source, tier: str) -> list[dict]:
        """The module's other native executions at `tier` (scalar C, lane C at
        every gang), in one library, as host.py hands them to native.lua."""
        self.say(f"{source.path}: nupp.executions at tier {tier} (scalar C, lane C at gangs 4, 8, 16)")
        library = execution_library(module, source.path, module_prefix(source), self.request, tier)
        path = self.tree.copy(library.path, f"native/{source.path}.executions-{tier}.so")
        return [{"name": native.mode, "library": path, "cdef": native.cdef, "errors": list(native.errors),
                 "functions": {name: symbol for name, (symbol, _) in native.functions.items()}}
                for native in map(library.bind, library.builds)]


# ---- the launcher, the runtime, the manifest ---------------------------------------------------

def _place_launcher(launcher: Launcher, exe: str, tree: _Tree, say: Say) -> dict:
    """bin/NAME built, or taken from the previous tree: its record, and whether it was taken."""
    path, key = exe + launcher.file_name, launcher.key()
    old = tree.previous.entry("launcher", key)
    reused = old is not None and old.get("files") == [path]
    if reused:
        tree.adopt(path)
    else:
        linked = "LuaJIT linked in" if launcher.luajit is not None else "compiled only"
        say(f"{path}: the launcher ({' '.join(launcher.compile_command)}, {linked})")
        launcher.build(tree.place(path))
    if launcher.luajit is None:
        say(f"{exe} is not linked: no static LuaJIT library for this machine (install {LUAJIT_PACKAGE} for "
            f"it, e.g. {LUAJIT_PACKAGE}:arm64); the tree holds the launcher's object, {path}")
    return {"key": key, "files": [path], "reused": reused}


def _write_runtime(tree: _Tree) -> None:
    for part in sorted(LUA_DIR.glob("*.lua")):
        tree.copy(part, f"{RUNTIME}/{part.name}")
    tree.copy(Path(__file__).with_name("boot.lua"), BOOT)
    tree.copy(Path(__file__).with_name("error_keys.lua"), ERROR_KEYS)


def _manifest(project: Project, modules: dict[str, str], built: dict[str, Built]) -> bytes:
    """tree.lua: what boot.lua reads."""
    return source_bytes("return " + lua_literal({
        "name": project.name, "main": project.main.as_posix(), "tiers": list(TIER_NAMES), "modules": modules,
        "files": {rel: b.entry for rel, b in built.items()}, "threads": environment_rule(),
        "errors": report_rule()}) + "\n")


def _diagnostics(source: Source, chunks: list[str], syntax=None) -> bytes:
    """diagnostics/FILE.lua: each line's diagnostic, but for the column and
    the message (run_errors.LineReports), and the column of each key a
    message at the line could produce that resolves there (error_position's
    line_columns: lines with none are left out), for every line any of the
    file's chunks has.  `syntax`: the source's syntax tree, parsed already
    (None: it is parsed here, or does not parse)."""
    lines = max(map(line_count, [source.text, *chunks]))
    reports = line_reports(source, lines)
    keys: dict[str, int] = {}  # each key's text once; a line's table: key number, column (0: False), ...
    columns = {line: [part for key, col in found.items()
                      for part in (keys.setdefault(key_text(key), len(keys) + 1), col or 0)]
               for line, found in enumerate(line_columns(source, lines, syntax), 1) if found}
    return source_bytes("return " + lua_literal({
        "heads": reports.heads, "middle": reports.middle, "excerpts": reports.excerpts, "caret": reports.caret,
        "firsts": reports.firsts, "keys": list(keys), "columns": columns}) + "\n")


def lua_literal(value) -> str:
    """A Lua expression for a value made of dicts, lists, strings, ints and bools."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return lua_string(value)
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(map(lua_literal, value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{lua_literal(k)}] = {lua_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no Lua literal for {type(value).__name__}")


def _check_machine(root: Path, machine: Machine, say: Say) -> None:
    """Every ELF object in the tree is for `machine` (its header's e_machine), and say so."""
    expected = E_MACHINE[machine.name]
    objects = sorted(p for p in root.rglob("*") if p.is_file() and e_machine(p) is not None)
    for path in objects:
        found = e_machine(path)
        if found != expected:
            raise NuppEnvironmentError(f"{path.relative_to(root)} was built for {MACHINE_OF.get(found, found)}, "
                                       f"not {machine.name}: the compiler builds for another machine")
    say(f"checked {len(objects)} ELF objects: each is for {machine.name} (e_machine {expected})")


def _say_what_was_compiled(built: dict[str, Built], launcher_reused: bool, say: Say) -> None:
    compiled = [rel for rel, b in built.items() if not b.reused]
    if not compiled and launcher_reused:
        say(f"nothing changed since the last build: compiled nothing ({len(built)} modules and the launcher "
            "taken from the previous tree)")
    else:
        launcher = "" if launcher_reused else ", and the launcher"
        say(f"compiled {len(compiled)} of {len(built)} modules ({', '.join(compiled) or 'none'}){launcher}")


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
