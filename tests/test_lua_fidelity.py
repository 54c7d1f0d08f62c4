"""Fidelity differential: a plain Lua program runs under `nupp run` exactly as
under `luajit` (LANGUAGE.md section 1; issue 10, Show).

Each program runs twice, in its own folder with the arguments ARGS: by the
luajit binary (the oracle; Debian's package `luajit`, which .ci/run installs)
and by `nupp run`.  They must agree on

  * standard output, byte for byte;
  * the exit status;
  * standard error: all of it when the program succeeds; when it fails, the
    text of the message on its first line, as both name it: luajit writes
    `luajit: MESSAGE`, nupp `FILE:LINE:COL: error: TEXT` (MESSAGE being
    `FILE:LINE: TEXT`) or `error: MESSAGE`.  Tracebacks are not compared.
    For a nil error object luajit writes nothing and nupp says
    `(error object is nil)`; luajit ends a message at a NUL byte, nupp
    writes it whole.

The programs are tests/corpus/fidelity (closures, varargs, metatables, goto,
string escapes, error levels and objects, `arg`, number formatting, `require`
of a .lua module, uncaught errors, os.exit, the 200-local limit, what the
host could show), tests/corpus/lua, and programs drawn by tests/luagen.py.

The luajit binary and the LuaJIT that lupa bundles are different builds: they
round ties differently when formatting numbers (`%.0f` of 2.5 is 3 in one, 2
in the other), for one.  Where nupp differs from the binary, the program is
also run untranslated by lupa's LuaJIT (the same build nupp runs): if that
gives exactly nupp's outcome, the difference is the builds', not nupp's; a
corpus program then counts as an expected failure naming it, a generated one
is discarded.

Differences that are nupp's to fix and not fixed yet are expected failures
(EXPECTED_DIFFERENCES) with the reason; strict, so a fix makes them fail
until the entry goes.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, reject, settings

from nupp.runtime import cli

from .conftest import UNDER_CI, require_tool
from .luagen import programs
from .luagen_lib import programs as library_programs

CORPUS = Path(__file__).resolve().parent / "corpus"
PROGRAMS = sorted((CORPUS / "fidelity").glob("*.lua")) + sorted((CORPUS / "lua").glob("*.lua"))
ARGS = ("alpha", "", "3")
EXPECTED_DIFFERENCES: dict[str, str] = {  # a program's name -> why nupp differs
    "for_do_and_function_name_lines.lua": "the syntax tree keeps no position of a numeric for's `do` nor of a "
                                          "function statement's name parts: an error there names the line before",
}
TIMEOUT = 300


@dataclass(frozen=True)
class Outcome:
    stdout: bytes
    stderr: str  # all of it after a success; the message text after a failure
    status: int


def _outcome(stdout: bytes, stderr: bytes, status: int, message) -> Outcome:
    text = stderr.decode("utf-8", "replace")
    if status == 0:
        return Outcome(stdout, text, status)
    # luajit writes the message as a C string: up to a NUL it holds
    return Outcome(stdout, message(text.split("\n", 1)[0]).split("\0", 1)[0], status)


def _luajit_message(line: str) -> str:
    return line.removeprefix("luajit: ")


_NUPP_POSITION = re.compile(r"^(?P<where>.+?:\d+):\d+: error: (?P<text>.*)$")


def _nupp_message(line: str) -> str:
    if line == "error: (error object is nil)":
        return ""  # luajit prints nothing for a nil error object
    match = _NUPP_POSITION.match(line)
    if match is not None:
        return f"{match['where']}: {match['text']}"
    return line.removeprefix("error: ")


def luajit(path: Path, args=ARGS) -> Outcome:
    proc = subprocess.run(["luajit", path.name, *args], executable=require_tool("luajit"), cwd=path.parent,
                          capture_output=True, timeout=TIMEOUT)
    return _outcome(proc.stdout, proc.stderr, proc.returncode, _luajit_message)


def nupp(path: Path, args=ARGS) -> Outcome:
    proc = subprocess.run([sys.executable, "-m", "nupp", "run", path.name, *args], cwd=path.parent,
                          capture_output=True, timeout=TIMEOUT)
    assert b"Traceback" not in proc.stderr, proc.stderr
    return _outcome(proc.stdout, proc.stderr, proc.returncode, _nupp_message)


def nupp_in_process(path: Path, args=ARGS) -> Outcome:
    """`nupp run` by cli.main in this process (a subprocess per drawn program
    would cost Python's start-up each time): file descriptors 1 and 2 catch
    what LuaJIT writes, sys.stderr nupp's message."""
    python_stderr = io.StringIO()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, contextlib.chdir(path.parent):
        saved = os.dup(1), os.dup(2)
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            with contextlib.redirect_stderr(python_stderr), contextlib.redirect_stdout(io.StringIO()):
                status = cli.main(["run", path.name, *args])
        finally:
            for fd, old in zip((1, 2), saved):
                os.dup2(old, fd)
                os.close(old)
        out.seek(0)
        err.seek(0)
        stderr = err.read() + python_stderr.getvalue().encode("utf-8", "surrogateescape")
        return _outcome(out.read(), stderr, status, _nupp_message)


# lupa's LuaJIT bare (none of nupp's runtime), running the script as luajit.c does: `arg`, the
# arguments as `...`, and an uncaught error reported by its traceback() and report(): a
# non-string error object replaced by what its __tostring returns (nil: nothing printed), else
# "(error object is not a string)".  Not nupp's Host: a bug in nupp's report would pass for a
# difference of the two LuaJIT builds.
_LUPA_LUAJIT = """
import sys
import lupa.luajit21 as lupa
name, *args = sys.argv[1:]
lua = lupa.LuaRuntime(encoding=None, unpack_returned_tuples=True)
lua.globals()[b"arg"] = lua.table_from({i: a.encode("utf-8", "surrogateescape")
                                        for i, a in enumerate([name, *args])})
run = lua.eval(b'''function(name, ...)
    local chunk, problem = loadfile(name)
    if not chunk then return false, problem end
    local function as_string(v) return type(v) == "number" and tostring(v) or v end
    return xpcall(chunk, function(e)
        if type(e) == "string" or type(e) == "number" or e == nil then return as_string(e) end
        local meta = debug.getmetatable(e)
        local show = meta and rawget(meta, "__tostring")
        if show == nil then return e end
        return as_string((show(e)))
    end, ...)
end''')
outcome = run(name.encode(), *(a.encode("utf-8", "surrogateescape") for a in args))
ok, *rest = outcome if isinstance(outcome, tuple) else (outcome,)
lua.eval(b"io.stdout:flush()")
if not ok:
    message = rest[0] if rest else None
    if message is not None:
        text = message if isinstance(message, bytes) else b"(error object is not a string)"
        sys.stderr.buffer.write(b"luajit: " + text + b"\\n")
    sys.exit(1)
"""


def lupa_luajit(path: Path, args=ARGS) -> Outcome:
    """The program untranslated, run by lupa's LuaJIT (the build nupp runs) bare, as luajit would run it."""
    proc = subprocess.run([sys.executable, "-c", _LUPA_LUAJIT, path.name, *args], cwd=path.parent,
                          capture_output=True, timeout=TIMEOUT)
    return _outcome(proc.stdout, proc.stderr, proc.returncode, _luajit_message)


def luajit_build() -> str:
    version = subprocess.run([require_tool("luajit"), "-v"], capture_output=True, text=True).stdout
    return version.split(" -- ")[0]  # "LuaJIT 2.1.0-beta3"


def _corpus_case(path: Path):
    reason = EXPECTED_DIFFERENCES.get(path.name)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(path, marks=marks, id=f"{path.parent.name}/{path.name}")


@pytest.mark.parametrize("path", [_corpus_case(p) for p in PROGRAMS])
def test_a_plain_lua_program_runs_as_under_luajit(path):
    expected, got = luajit(path), nupp(path)
    if got != expected and lupa_luajit(path) == got:
        pytest.xfail(f"the luajit binary ({luajit_build()}) and lupa's LuaJIT disagree on this program; "
                     "nupp agrees with lupa's")
    assert got == expected


@settings(max_examples=300 if UNDER_CI else 40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=programs())
def test_a_generated_program_runs_as_under_luajit(tmp_path, text):
    path = tmp_path / "generated.lua"
    path.write_text(text)
    expected, got = luajit(path), nupp_in_process(path)
    if got != expected and lupa_luajit(path) == got:
        reject()  # the two LuaJIT builds disagree: this program cannot judge nupp
    assert got == expected, text


def test_the_comparison_sees_each_part():
    """The oracle's outcome of small programs, read as the comparison reads it."""
    folder = CORPUS / "fidelity"
    assert luajit(folder / "error_exit_runtime.lua") == Outcome(
        b"before\n", "error_exit_runtime.lua:3: attempt to index field 'missing' (a nil value)", 1)
    assert luajit(folder / "os_exit.lua") == Outcome(b"written before exit\n", "", 3)
    assert _nupp_message("x.lua:3:7: error: boom: at x.lua:2: y") == "x.lua:3: boom: at x.lua:2: y"
    assert _nupp_message("error: plain") == "plain"


@settings(max_examples=400 if UNDER_CI else 30, deadline=None,  # under CI: 35 s on 2 busy cores
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=library_programs())
def test_a_library_program_runs_as_under_luajit(tmp_path, text):
    """A program of the standard library's calls (strings, tables, coroutines,
    printing, errors: tests/luagen_lib.py), judged as a generated one is."""
    path = tmp_path / "library.lua"
    path.write_text(text)
    run_nupp = nupp if "os.exit" in text else nupp_in_process  # os.exit would end this process
    expected, got = luajit(path), run_nupp(path)
    if got != expected and lupa_luajit(path) == got:
        reject()  # the two LuaJIT builds disagree: this program cannot judge nupp
    assert got == expected, text
