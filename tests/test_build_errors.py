"""A built program reports an uncaught error as `nupp run` reports it: the same
stderr (the diagnostic with its source line and caret, else `error: MESSAGE`,
and the program's frames under `from:`), the same stdout and exit status 1.
The oracle is `nupp run` of the same project; each shape of error is checked
to have the form it is meant to test, so that a built program that printed
LuaJIT's bare `FILE:LINE: message` (as before) fails every case.

Byte for byte, the caret too: `nupp run` finds the construct that failed
from the message (runtime/error_position.py); a built program, which has no
parser, looks the message's keys up in the columns the build stored for the
line (the shapes "argument2" ... "raised" have carets away from the line's
first non-blank column).

The project: main.nupp runs the shape its argument names; lib/util.nupp (a
module in a folder, tabs in its lines, bytes that are not UTF-8), plain.lua (a
plain Lua module), broken.lua (one that does not load), bom.nupp (a BOM before
its first line), kernels.nupp (@aot functions, whose errors the aot-on tree
raises in native code) and carets.nupp (the shapes whose caret is away from
the line's first non-blank column).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import UNDER_CI, require_tool
from .test_build import AARCH64_LUAJIT, built, require_luajit_library

UTIL = b"""local M = {}
function M.boom(x)
\treturn x.field.deep
end
function M.raise(v)
  error(v)
end
function M.bytes()
\tlocal s = "caf\xc3\xa9 \xff\xfe \xe2\x82 \xed\xa0\x80 \xed\x9f\xbf \xf0\x9f\x98\x80 \xc0\x80 \xc1\xbf \xe0\x80\x80 \xf4\x90\x80\x80 \xf4\x8f\xbf\xbf \xf5\x80 \x80 \xef\xbf\xbf \xf0\x8f\xbf\xbf \xe2\x82"\terror("odd " .. s .. "\xe2\x82")
end
return M
"""

PLAIN = """local M = {}
function M.bad(a) return a + {} end
return M
"""

BROKEN = """local M = {}
M.x x = 1
return M
"""

BOM = b"\xef\xbb\xbf  local M = {}; function M.f(a) return a.b end\nreturn M\n"

KERNELS = """@aot
local function div(a: int32, b: int32): int32
    return a // b
end
@aot
local function positive(a: int32): int32
    assert(a > 0, "a must be positive")
    return a
end
return {div = div, positive = positive}
"""

CARETS = """local shapes = {}
shapes.midline = function() local a, b = {}, nil; print(a.x, b.y) end
shapes.argument2 = function()
  local s = string.rep("x", nil)
end
shapes.method = function()
  local t = {}; print(t:nope())
end
shapes.operator = function()
  local a = {}; local b = 1 & a
end
shapes.compare = function()
  local a = {}; if 1 < a then end
end
shapes.metamethod = function()
  local t = setmetatable({}, {__index = function(_, k) error("no " .. k, 2) end})
  local v = 1; print(t.key)
end
shapes.raised = function()
  local function f() local v = 1; error("boom") end
  local w = 2; f()
end
shapes.raised2 = function()
  local function check(v) if not v then error("check failed", 2) end end
  local v = 1; check(false)
end
return shapes
"""

MAIN = """local util = require("lib.util")
local plain = require("plain")
local kernels = require("kernels")
local bom = require("bom")
local carets = require("carets")
local shapes = {}
local function f(x)
  return x.y + 1
end
shapes.index = function() print("before"); print(f(nil)) end
shapes.module = function() util.boom({}) end
shapes.plain = function() plain.bad(1) end
shapes.broken = function() require("broken") end
shapes.table = function() error({}) end
shapes["nil"] = function() error(nil) end
shapes.tostring = function() error(setmetatable({}, {__tostring = function() return "a custom error" end})) end
shapes.number = function() util.raise(42) end
shapes.wrap = function()
  local co = coroutine.wrap(function() local g = nil; return g() end)
  co()
end
shapes.resume = function()
  local co = coroutine.create(function() util.boom({}) end)
  local ok, e = coroutine.resume(co)
  error(e, 0)
end
shapes.pcall = function()
  local ok, e = pcall(util.boom, {})
  error(e, 0)
end
shapes.level0 = function() error("plain words", 0) end
shapes.beyond = function() error("past the main chunk", 4) end
shapes.level2 = function()
  local function check(v) if not v then error("check failed", 2) end end
  check(false)
end
shapes.bytes = function() util.bytes() end
shapes.bom = function() bom.f(nil) end
shapes.overflow = function() local function r(n) return 1 + r(n) end; r(1) end
shapes.deep = function() local function d(n) if n == 0 then error("deep") end; return 1 + d(n - 1) end; d(30) end
shapes.div = function() print(kernels.div(1, 0)) end
shapes.assert = function() print(kernels.positive(-1)) end
shapes.argument = function() print(kernels.positive("x")) end
local shape = ...
if shape == "top" then local z = nil; print(z.q) end
local run = shapes[shape] or carets[shape]
run()
"""

# shape -> what its `nupp run` stderr must start with: a diagnostic ("caret")
# or `error: ` ("bare"); each lists its frames under `from:` but "top", raised
# in the main chunk itself
SHAPES = {"index": "caret", "module": "caret", "plain": "caret", "broken": "caret", "table": "bare",
          "nil": "bare", "tostring": "bare", "number": "caret", "wrap": "caret", "resume": "caret",
          "pcall": "caret", "level0": "bare", "beyond": "bare", "level2": "caret", "bytes": "caret", "overflow": "caret", "deep": "caret",
          "top": "caret", "bom": "caret", "div": "caret", "assert": "caret", "argument": "caret",
          **dict.fromkeys(("midline", "argument2", "method", "operator", "compare", "metamethod", "raised",
                           "raised2"), "caret")}
# shapes whose caret is not at its line's first non-blank column
AWAY = {"midline", "argument2", "method", "operator", "compare", "metamethod", "raised", "raised2", "top"}
# every shape in the aot-off tree; in the aot-on tree those raised in native
# code and a few whose Lua is the same as there
CASES = [(shape, "off") for shape in sorted(SHAPES)] + [
    (shape, "on") for shape in ("div", "assert", "argument", "index", "module", "bytes")]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    require_luajit_library()
    root = tmp_path_factory.mktemp("errors") / "shapes"
    (root / "lib").mkdir(parents=True)
    (root / "nupp.toml").write_text('[project]\nname = "shapes"\nmain = "main.nupp"\n')
    for name, text in (("main.nupp", MAIN), ("plain.lua", PLAIN), ("broken.lua", BROKEN),
                       ("kernels.nupp", KERNELS), ("lib/util.nupp", UTIL), ("bom.nupp", BOM), ("carets.nupp", CARETS)):
        (root / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return root


@pytest.fixture(scope="module")
def trees(project, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("trees")
    return {aot: built(project, out / aot, "--aot", aot) for aot in ("off", "on")}


def run_bytes(command, cwd) -> tuple[int, bytes, bytes]:
    proc = subprocess.run(command, capture_output=True, cwd=cwd, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def nupp_run(project: Path, aot: str, shape: str) -> tuple[int, bytes, bytes]:
    expected = run_bytes([sys.executable, "-m", "nupp", "run", ".", "--aot", aot, shape], project)
    assert b"Traceback" not in expected[2], expected[2]
    return expected


def assert_has_the_shape(shape: str, stderr: bytes) -> None:
    """The oracle's text has the form the shape is meant to test."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    if SHAPES[shape] == "caret":
        assert " error: " in lines[0] and lines[1].lstrip()[0].isdigit() and lines[2].rstrip().endswith("^"), stderr
    else:
        assert lines[0].startswith("error: "), stderr
    if shape in AWAY:  # its caret is under a character after the line's first non-blank
        text, caret = lines[1].split(" | ", 1)[1], lines[2].split("| ", 1)[1]
        assert len(caret) > len(text) - len(text.lstrip()) + 1 and text[len(caret) - 1] != " ", stderr
    if shape != "overflow":  # its frames: see the test
        assert ("from:" in lines) == (shape != "top"), stderr
    # where LuaJIT left levels out of the traceback, and only there
    assert ("  ..." in lines) == (shape in ("deep", "overflow")), stderr


@pytest.mark.parametrize("shape, aot", CASES)
def test_a_built_program_reports_an_error_as_nupp_run_does(project, trees, shape, aot):
    expected = nupp_run(project, aot, shape)
    assert expected[0] == 1
    assert_has_the_shape(shape, expected[2])
    if aot == "on" and shape in ("div", "assert"):
        assert b"in native code of '" in expected[2], expected[2]
    returncode, stdout, stderr = expected
    got = run_bytes([str(trees[aot] / "bin" / "shapes"), shape], "/")
    if shape == "overflow":
        # chunks.failure may have too little stack left to write the traceback
        # of an overflow: either program lists its frames in some runs, not in
        # others; the diagnostic is the same
        stderr, got = without_frames(stderr), (*got[:2], without_frames(got[2]))
    assert got == (returncode, stdout, stderr)


def without_frames(stderr: bytes) -> bytes:
    return stderr.split(b"\nfrom:\n")[0].rstrip(b"\n") + b"\n"


def test_a_copied_tree_reports_errors_from_its_new_place(project, trees, tmp_path):
    """Relocatable: the diagnostics are found relative to the tree wherever it is."""
    copy = shutil.copytree(trees["off"], tmp_path / "elsewhere" / "tree", symlinks=True)
    moved = trees["off"].with_name("off-moved")
    trees["off"].rename(moved)  # nothing of the original is where it was built
    try:
        got = run_bytes([str(copy / "bin" / "shapes"), "module"], tmp_path)
    finally:
        moved.rename(trees["off"])
    returncode, stdout, stderr = nupp_run(project, "off", "module")
    assert got == (returncode, stdout, stderr)


def test_an_aarch64_program_reports_errors_as_nupp_run_does(project, tmp_path):
    """The cross build's program under qemu, from /: its @aot functions are scalar C."""
    require_tool("aarch64-linux-gnu-gcc")
    if not AARCH64_LUAJIT.is_file():
        if UNDER_CI:
            pytest.fail(f"{AARCH64_LUAJIT} (libluajit-5.1-dev:arm64) is required under CI but is not installed")
        pytest.skip("libluajit-5.1-dev:arm64 is not installed: the AArch64 program is not linked, nor run")
    tree = built(project, tmp_path / "arm", "--target", "aarch64-linux-gnu")
    emulator = [require_tool("qemu-aarch64"), "-L", "/usr/aarch64-linux-gnu"]
    for shape in ("module", "bytes", "tostring", "div"):
        returncode, stdout, stderr = nupp_run(project, "on", shape)
        got = run_bytes([*emulator, str(tree / "bin" / "shapes"), shape], "/")
        assert got == (returncode, stdout, stderr), shape


def test_the_tree_holds_diagnostics_not_sources(project, trees):
    """lib/nupp/diagnostics/FILE.lua for each module file whose positions nupp run shows,
    and no module's source in the tree (only its Lua: plain.lua is its own Lua)."""
    tree = trees["off"]
    diagnostics = sorted(p.relative_to(tree / "lib/nupp/diagnostics").as_posix()
                         for p in (tree / "lib/nupp/diagnostics").rglob("*.lua"))
    assert diagnostics == ["bom.nupp.lua", "broken.lua.lua", "carets.nupp.lua", "kernels.nupp.lua", "lib/util.nupp.lua",
                           "main.nupp.lua", "plain.lua.lua"]
    assert not list(tree.rglob("*.nupp"))
    for path in (tree / "lib/nupp/diagnostics").rglob("*.lua"):  # relocatable: paths in the project only
        assert str(project).encode() not in path.read_bytes(), path


def test_a_file_without_a_final_line_break_builds_and_reports_as_nupp_run(tmp_path):
    """Its Lua has a line more than its source: `nupp build` stopped with an internal error."""
    require_luajit_library()
    project = tmp_path / "nonl"
    project.mkdir()
    (project / "nupp.toml").write_text('[project]\nname = "nonl"\nmain = "main.nupp"\n')
    (project / "main.nupp").write_bytes(b"local x = nil\nprint(x.y)")
    tree = built(project, tmp_path / "out", "--aot", "off")
    expected = run_bytes([sys.executable, "-m", "nupp", "run", "main.nupp"], project)
    assert expected[0] == 1 and b"main.nupp:2:7: error:" in expected[2], expected
    assert run_bytes([str(tree / "bin" / "nonl")], "/") == expected
