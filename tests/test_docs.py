"""Every example in the user documentation runs and prints what the page shows.

The pages are docs/**/*.md and README.md.  Their fenced code blocks follow
these conventions (docs/how-it-works.md, "How the documentation is tested",
says the same for writers):

- ```nupp  a Nupp module or script.  A first line `-- NAME.nupp` names the file
  it is saved as (else example.nupp), in a folder of the page's own where
  the page's later commands run and its scripts `require` it.  Unless the
  next block is a console block, `nupp check NAME` must pass silently.
- ```python  a Python program, saved as `# NAME.py` (its first line) or
  example.py.  Unless the next block is a console block, it must run without
  raising.
- ```toml  a file saved under the name on its first line (`# nupp.toml`).
- ```console  commands after `$ ` (`nupp ...`, `python FILE.py`, `./PROGRAM`
  after any `NAME=VALUE` settings of its environment, `echo $?`), each
  followed by the output it must print (standard output, then standard
  error).  A line `...` stands for any number of lines, `...` within a line
  for any text in it.  A command must exit with status 0 unless its output
  shows an error (`FILE:LINE:COL: error:`, `nupp CMD: error:`, `PROGRAM:
  error:`); then it must fail, and `echo $?` shows how.  A command that fails
  for want of a tool (exit status 2, `nupp CMD: error:`) where the page shows
  success skips the rest of the page, except under CI.  NUPP_BLESS=1
  rewrites the output shown under a command with what it printed (review
  the diff).
- ```sh and ```text are not run (setup commands, prose in a box); no other
  fence is allowed, so no example escapes the test.

Commands run in this process through the CLI's `main` (one process for all:
the grammar and LuaJIT start once; so an example must not call os.exit), in the page's folder, whose `bench`
links to the checkout's bench/ as if run from the repository's root.  The
strict MkDocs build (`make docs`) runs here too, and the generated reference
pages must equal what docs/reference_pages.py writes from the argparse parser
and the API's docstrings.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import runpy
import shlex
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

from nupp.runtime import cli

from .conftest import UNDER_CI, require_module

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]

RUN_LANGUAGES = {"nupp", "python", "toml", "console"}
SHOWN_LANGUAGES = {"sh", "text"}
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<lang>[\w+-]*)\s*$")
FILE_NAME = {"nupp": (re.compile(r"^-- (?P<name>[\w./-]+\.nupp)\b"), "example.nupp"),
             "python": (re.compile(r"^# (?P<name>[\w./-]+\.py)\b"), "example.py"),
             "toml": (re.compile(r"^# (?P<name>[\w./-]+\.toml)\b"), "example.toml")}
# what a block not followed by a console block must pass
IMPLICIT_CHECK = {"nupp": ("nupp", "check"), "python": ("python",)}
# an output line that says the command failed; one that blames the machine
ERROR_LINE = re.compile(r"^(\S+:\d+:\d+: error: |nupp( \w+)?: error: |[\w.-]+: error: |error: )", re.M)
ENVIRONMENT_FAULT = re.compile(r"^nupp \w+: error: ", re.M)


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    line: int  # of the opening fence, 1-based


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    expected: str
    line: int  # of `$ COMMAND`; its output is shown on the lines after it


def fenced_blocks(page: Path) -> list[Block]:
    """The page's fenced code blocks, in order (as Markdown reads them: an
    unclosed fence runs to the end of the page, which the test refuses)."""
    blocks, lines, i = [], page.read_text().split("\n"), 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        i += 1
        if opening is None:
            continue
        start, indent, fence = i, len(opening["indent"]), opening["fence"]
        while i < len(lines) and not _closes(lines[i], fence):
            i += 1
        assert i < len(lines), f"{page}:{start}: the fence is never closed"
        body = [_dedent(line, indent) for line in lines[start:i]]
        blocks.append(Block(opening["lang"], "\n".join(body) + "\n", start))
        i += 1
    return blocks


def _dedent(line: str, indent: int) -> str:
    """A line of a fenced block indented by `indent` (as Markdown, it loses at most that)."""
    blank = len(line) - len(line.lstrip(" "))
    return line[min(blank, indent):]


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence) and set(stripped) == {fence[0]}


def commands(block: Block) -> list[Command]:
    """A console block's commands, each with the output shown under it."""
    found, current, expected = [], None, []
    for offset, line in enumerate(block.text.rstrip("\n").split("\n"), start=1):
        if line.startswith("$ "):
            if current is not None:
                found.append(Command(current[0], "\n".join(expected), current[1]))
            current, expected = (tuple(shlex.split(line[2:])), block.line + offset), []
        else:
            assert current is not None, f"line {block.line + offset}: a console block starts with `$ COMMAND`"
            expected.append(line)
    if current is not None:
        found.append(Command(current[0], "\n".join(expected), current[1]))
    return found


def file_name(block: Block) -> str:
    pattern, default = FILE_NAME[block.lang]
    first = pattern.match(block.text)
    return default if first is None else first["name"]


def example_count(page: Path) -> int:
    """Programs and commands the test runs for `page`."""
    blocks = fenced_blocks(page)
    return sum(len(commands(b)) if b.lang == "console" else b.lang in RUN_LANGUAGES for b in blocks)


def output_matches(expected: str, actual: str) -> bool:
    """Line by line, trailing blanks ignored; a `...` line matches any lines,
    `...` within a line any text in it."""
    pattern = "".join(r"(?:[^\n]*\n)*?" if line == "..." else _line_pattern(line) for line in _lines(expected))
    return re.fullmatch(pattern, "".join(line + "\n" for line in _lines(actual))) is not None


def _line_pattern(line: str) -> str:
    return r"[^\n]*".join(map(re.escape, line.split("..."))) + r"\n"


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip("\n").split("\n")] if text.strip() else []


class PageRun:
    """One page's examples in order, in the page's folder."""

    def __init__(self, page: Path, folder: Path, capfd):
        self.page, self.folder, self.capfd = page, folder, capfd
        self.status = 0  # of the last command, for `echo $?`
        self.blessed: list[tuple[Command, str]] = []  # NUPP_BLESS=1: outputs to show instead

    def where(self, line: int) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{line}"

    def run(self) -> None:
        blocks = fenced_blocks(self.page)
        for index, block in enumerate(blocks):
            assert block.lang in RUN_LANGUAGES | SHOWN_LANGUAGES, (
                f"{self.where(block.line)}: a ```{block.lang} block is neither run nor allowed "
                f"(use one of {', '.join(sorted(RUN_LANGUAGES | SHOWN_LANGUAGES))})")
            followed_by_console = index + 1 < len(blocks) and blocks[index + 1].lang == "console"
            if block.lang == "console":
                for command in commands(block):
                    self.expect(command)
            elif block.lang in FILE_NAME:
                name = file_name(block)
                self.write(name, block)
                if not followed_by_console and block.lang in IMPLICIT_CHECK:
                    self.expect(Command((*IMPLICIT_CHECK[block.lang], name), "", block.line))
        if self.blessed:
            bless(self.page, self.blessed)

    def write(self, name: str, block: Block) -> None:
        target = (self.folder / name).resolve()
        assert target.is_relative_to(self.folder.resolve()) and not name.startswith("bench/"), (
            f"{self.where(block.line)}: an example may not write {name}, outside its own folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text)

    def expect(self, command: Command) -> None:
        status, output = self.execute(command.words)
        shown = " ".join(command.words)
        if not output_matches(command.expected, output) and BLESS and command.words[0] != "echo":
            self.blessed.append((command, output))
            return  # its exit status is checked against the new output on the next run
        if not output_matches(command.expected, output):
            diff = "\n".join(difflib.unified_diff(_lines(command.expected), _lines(output),
                                                  "shown in the docs", "printed", lineterm=""))
            pytest.fail(f"{self.where(command.line)}: `{shown}` printed something else:\n{diff}", pytrace=False)
        if command.words[0] == "echo":
            return
        fails = ERROR_LINE.search(command.expected) is not None
        if status == 2 and not fails and ENVIRONMENT_FAULT.search(output):
            self.missing_tool(command, output)
        assert (status != 0) == fails, (
            f"{self.where(command.line)}: `{shown}` exited with {status}, but the docs show "
            f"{'an error' if fails else 'no error'}:\n{output}")
        self.status = status

    def missing_tool(self, command: Command, output: str) -> None:
        """An environment fault: skip locally (as conftest.require_tool does), fail under CI."""
        message = f"{self.where(command.line)}: `{' '.join(command.words)}` needs what this machine lacks:\n{output}"
        if UNDER_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)

    def execute(self, words: tuple[str, ...]) -> tuple[int, str]:
        self.capfd.readouterr()
        if words[0] == "nupp":
            status = run_cli(words[1:])
        elif words[0] == "python" and len(words) == 2:
            status = run_python(words[1])
        elif without_settings(words)[0].startswith("./"):
            status = run_program(words)
        elif words == ("echo", "$?"):
            print(self.status)
            status = 0
        else:
            raise AssertionError(f"{self.page}: the test runs `nupp`, `python FILE`, `./PROGRAM` and `echo $?`, "
                                 f"not {words}")
        sys.stdout.flush()
        out, err = self.capfd.readouterr()
        return status, out + err


BLESS = os.environ.get("NUPP_BLESS") == "1"


def bless(page: Path, outputs: list[tuple[Command, str]]) -> None:
    """Show each command's new output under it (from the page's end, so line numbers hold)."""
    lines = page.read_text().split("\n")
    for command, output in sorted(outputs, key=lambda c: -c[0].line):
        dollar = lines[command.line - 1]
        indent = dollar[:len(dollar) - len(dollar.lstrip())]
        shown = len(_lines(command.expected))
        lines[command.line:command.line + shown] = [indent + line for line in _lines(output)]
    page.write_text("\n".join(lines))


def run_cli(args) -> int:
    """`nupp ARGS` in this process (argparse's --help, --version and usage errors exit)."""
    try:
        return cli.main(list(args))
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1


SETTING = re.compile(r"^[A-Za-z_]\w*=")  # NAME=VALUE before a program: its environment


def without_settings(words: tuple[str, ...]) -> tuple[str, ...]:
    settings = 0
    while settings < len(words) - 1 and SETTING.match(words[settings]):
        settings += 1
    return words[settings:]


def run_program(words) -> int:
    """A program the page built, run as a shell runs it (its output passes through this process's),
    with the NAME=VALUE settings before it in its environment."""
    program = without_settings(words)
    settings = dict(word.split("=", 1) for word in words[:len(words) - len(program)])
    return subprocess.run(list(program), env={**os.environ, **settings}, timeout=120).returncode


def run_python(path: str) -> int:
    """`python PATH` in this process: 0, or 1 with the traceback as Python prints it."""
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    except Exception:  # noqa: BLE001 - shown to the test as the program's failure
        traceback.print_exc()
        return 1
    return 0


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One compile cache for every page: a module shown twice compiles once."""
    return tmp_path_factory.mktemp("cache")


COUNTS: dict[str, tuple[int, float]] = {}


@pytest.fixture(scope="module", autouse=True)
def _report_counts(request):
    """Print how many examples ran, and how long they took, at the end of the session."""
    class Reporter:
        def pytest_terminal_summary(self, terminalreporter):
            if COUNTS:
                total = sum(n for n, _ in COUNTS.values())
                seconds = sum(t for _, t in COUNTS.values())
                terminalreporter.write_line(f"docs: {total} examples checked on {len(COUNTS)} pages "
                                            f"in {seconds:.1f} s")
    request.config.pluginmanager.register(Reporter(), "nupp-docs-examples")
    yield


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.relative_to(ROOT)} ({example_count(p)} examples)")
def test_every_example_runs_as_shown(page, tmp_path, monkeypatch, capfd, cache):
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "bench").symlink_to(ROOT / "bench")
    started = time.perf_counter()
    PageRun(page, tmp_path, capfd).run()
    COUNTS[str(page)] = (example_count(page), time.perf_counter() - started)


def test_every_page_has_examples():
    empty = [str(p.relative_to(ROOT)) for p in PAGES
             if example_count(p) == 0 and p.parent.name != "reference"]
    assert not empty, f"pages without a tested example: {empty}"


MARKDOWN_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


@pytest.mark.parametrize("readme", [ROOT / "README.md", ROOT / "bench" / "README.md"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_readme_links_stay_in_the_repository(readme):
    """A clone has what the READMEs link to (the docs site checks its own links)."""
    for match in MARKDOWN_LINK.finditer(readme.read_text()):
        target = (readme.parent / match["target"].split("#")[0]).resolve()
        assert target.is_relative_to(ROOT) and target.exists(), f"{readme.name} links to {match['target']}"


# ---- the harness's own rules -------------------------------------------------

def test_output_matching():
    assert output_matches("a\nb\n", "a  \nb")
    assert output_matches("a\n...\nd", "a\nb\nc\nd\n") and output_matches("a\n...\nd", "a\nd")
    assert not output_matches("a\nb", "a\nb\nc") and not output_matches("a\n...\nd", "a\nb\nc")
    assert output_matches("rate: ... cases/s", "rate: 1,234 cases/s") and not output_matches("a...z", "a\nz")
    assert output_matches("", "") and not output_matches("", "x")


def test_blocks_and_commands_are_read_as_markdown_does(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("text\n```nupp\n-- k.nupp\nprint(1)\n```\n\n  ~~~console\n  $ nupp run k.nupp\n  1\n"
                    "  $ echo $?\n  0\n  ~~~\n````text\n```\n````\n")
    nupp, console, text = fenced_blocks(page)
    assert (nupp.lang, file_name(nupp), nupp.line) == ("nupp", "k.nupp", 2)
    assert [(c.words, c.expected, c.line) for c in commands(console)] == [
        (("nupp", "run", "k.nupp"), "1", 8), (("echo", "$?"), "0", 10)]
    assert text.text == "```\n" and example_count(page) == 3


GOOD_PAGE = """A script and its run:

```nupp
-- hello.nupp
print("hello", ...)
```

```console
$ nupp run hello.nupp a
hello	a
$ nupp run missing.nupp
...
missing.nupp:1:1: error: cannot read 'missing.nupp': No such file or directory
$ echo $?
1
```
"""

# (what is wrong, the page): each must fail the test
BAD_PAGES = [
    ("other output", GOOD_PAGE.replace("hello\ta", "hello\tb")),
    ("a failure shown as success", GOOD_PAGE.replace('...)\n', '...)\nerror("late")\n').replace("a\n$", "a\n...\n$")),
    ("success shown as a failure", '```nupp\n-- fake.nupp\nprint("fake.nupp:1:1: error: not really")\n```\n'
                                   '```console\n$ nupp run fake.nupp\nfake.nupp:1:1: error: not really\n```\n'),
    ("a module that does not check", "```nupp\n-- bad.nupp\nlocal x = = 1\n```\n"),
    ("a script that raises", "```python\nraise ValueError('no')\n```\n"),
    ("a block nobody runs", "```lua\nprint(1)\n```\n"),
    ("a command the test cannot run", "```console\n$ rm -rf x\n```\n"),
    ("a write into the checkout", "```nupp\n-- bench/x.nupp\nprint(1)\n```\n"),
]


def run_page(text: str, folder: Path, capfd) -> None:
    page = folder / "page.md"
    page.write_text(text)
    PageRun(page, folder, capfd).run()


def test_a_page_whose_examples_hold_passes(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    run_page(GOOD_PAGE, tmp_path, capfd)


@pytest.mark.parametrize("text", [page for _, page in BAD_PAGES], ids=[why for why, _ in BAD_PAGES])
def test_a_page_whose_examples_do_not_hold_fails(text, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bench").mkdir()
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        run_page(text, tmp_path, capfd)


# ---- the site and its generated pages ----------------------------------------

def reference_pages():
    spec = importlib.util.spec_from_file_location("reference_pages", DOCS / "reference_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_reference_pages_are_current():
    for path, text in reference_pages().pages().items():
        assert path.read_text() == text, (
            f"{path.relative_to(ROOT)} is out of date with the code it documents: run `make docs` and commit it")


@pytest.mark.slow
def test_the_site_builds_without_warnings(tmp_path):
    require_module("mkdocs")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    assert (tmp_path / "site" / "index.html").is_file()
