"""A run-time error's column: the caret under the construct that failed
(runtime/error_position.py), through `nupp run` as a user sees it.

Each expected position is written by hand from reading the program (the line
LuaJIT reports, the column of the construct the message names), never taken
from the locator."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nupp.errors import Source
from nupp.runtime.error_position import column_for, raising_function


def run_error(tmp_path, program: str, *options: str) -> str:
    """The first line of `nupp run`'s diagnostic for `program` (exit 1)."""
    (tmp_path / "m.nupp").write_text(program)
    proc = subprocess.run([sys.executable, "-m", "nupp", "run", "m.nupp", *options], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def head(stderr: str) -> str:
    return stderr.splitlines()[0]


# (program, "line:col" of the failing construct, the message)
LUA_ERRORS = {
    "index local": ("local t = nil\nlocal function f(x)\n  return x.y + 1\nend\nprint(f(t))\n",
                    "3:10", "attempt to index local 'x' (a nil value)"),
    "index global": ("print(nowhere.x)\n", "1:7", "attempt to index global 'nowhere' (a nil value)"),
    "index field": ("local t = {}\nprint(t.a.b)\n", "2:9", "attempt to index field 'a' (a nil value)"),
    "index upvalue": ("local t\nlocal function f() return t.x end\nf()\n", "2:27",
                      "attempt to index upvalue 't' (a nil value)"),
    "index the local named": ("local a, b = {}, nil\nprint(a.x, b.y)\n", "2:12",
                              "attempt to index local 'b' (a nil value)"),
    # two candidates the message does not tell apart: the first in source order
    "index the first of two": ("local b\nprint(b.x, b.y)\n", "2:7", "attempt to index local 'b' (a nil value)"),
    "index for a method": ("local s\nprint(s:upper())\n", "2:7", "attempt to index local 's' (a nil value)"),
    "index a string key": ('local t = {}\nprint(t["k"].z)\n', "2:9", "attempt to index field 'k' (a nil value)"),
    "call local": ("local f\nprint(1, f())\n", "2:10", "attempt to call local 'f' (a nil value)"),
    "call method": ("local t = {}\nprint(t:nope())\n", "2:9", "attempt to call method 'nope' (a nil value)"),
    "call field": ("local t = {}\nlocal x = t.f(1)\n", "2:13", "attempt to call field 'f' (a nil value)"),
    "call a result": ("local function g() return nil end\nlocal x = 1 + g()()\n", "2:15",
                      "attempt to call a nil value"),
    "call an iterator": ("local t = {}\nlocal n = 0; for k in t do end\n", "2:23", "attempt to call a table value"),
    "arithmetic on the operand named": ("local a = {}\nlocal n = 1 + a\n", "2:15",
                                        "attempt to perform arithmetic on local 'a' (a table value)"),
    "arithmetic on a field": ("local t = {}\nlocal n = t.x * 2\n", "2:13",
                              "attempt to perform arithmetic on field 'x' (a nil value)"),
    "arithmetic unnamed: the operator": ("local n = 1 + {}\n", "1:13", "attempt to perform arithmetic on a table value"),
    "negation": ("local t = {}\nlocal n = -t\n", "2:12", "attempt to perform arithmetic on local 't' (a table value)"),
    "floor division's division": ('local a = "x"\nlocal q = 7 // a\n', "2:16",
                                  "attempt to perform arithmetic on local 'a' (a string value)"),
    "concatenate": ('local s\nprint("a" .. s)\n', "2:14", "attempt to concatenate local 's' (a nil value)"),
    "concatenate unnamed": ('print("a" .. {})\n', "1:11", "attempt to concatenate a table value"),
    "length named": ("local t\nprint(#t)\n", "2:8", "attempt to get length of local 't' (a nil value)"),
    "length unnamed": ("print(1, #nil)\n", "1:10", "attempt to get length of a nil value"),
    "compare": ("local a = {}\nif 1 < a then end\n", "2:6", "attempt to compare number with table"),
    "compare two": ("local n = 0; if {} <= {} then end\n", "1:20", "attempt to compare two table values"),
    "error()": ('local function f()\n  local v = 1; error("boom")\nend\nf()\n', "2:16", "boom"),
    "error(msg, 2)": ('local function check(x)\n  if not x then error("bad x", 2) end\nend\n'
                      "local y = 1; check(false)\n", "4:14", "bad x"),
    # the traceback names the function that raised it: not the first call on the line
    "error(msg, 2) in an argument": ('local function check(x)\n  if not x then error("bad", 2) end\n  return x\n'
                                     "end\nprint(tostring(check(false)))\n", "5:16", "bad"),
    "assert": ("local ok = 1; assert(ok == 2)\n", "1:15", "assertion failed!"),
    "bad argument": ('local s = string.rep("x", nil)\n', "1:27",
                     "bad argument #2 to 'rep' (number expected, got nil)"),
    "bad argument of a method": ('local s = ("x"):rep(nil)\n', "1:21",
                                 "bad argument #1 to 'rep' (number expected, got nil)"),
    "bad self": ("local t = {rep = string.rep}\nlocal x = t:rep(2)\n", "2:11",
                 "calling 'rep' on bad self (string expected, got table)"),
    "for initial value": ("local a\nfor i = a, 2 do end\n", "2:9", "'for' initial value must be a number"),
    "for limit": ("local n\nfor i = 1, n do end\n", "2:12", "'for' limit must be a number"),
    "for step": ("local s = {}\nfor i = 1, 2, s do end\n", "2:15", "'for' step must be a number"),
    "table index is nil": ("local t, k = {}, nil\nt[k] = 1\n", "2:3", "table index is nil"),
    "table index is nil in a constructor": ("local k\nlocal t = {1, [k] = 2}\n", "2:16", "table index is nil"),
    "table index is NaN": ("local t = {}\nlocal n = 0; t[0/0] = 1\n", "2:16", "table index is NaN"),
    # raised by a metamethod at level 2: the operation it serves (LuaJIT names its frame by the event)
    "an __index metamethod's error": ('local t = setmetatable({}, {__index = function(t, k) error("no " .. k, 2) end})\n'
                                      "local v = 1; print(t.key)\n", "2:20", "no key"),
    "an __add metamethod's error": ('local t = setmetatable({}, {__add = function() error("no add", 2) end})\n'
                                    "local v = 1; print(v + t)\n", "2:22", "no add"),
    # raised inside a library function: its call
    "a library function's error": ('local n = 1; local s = string.format("%y", n)\n', "1:24",
                                   "invalid option '%y' to 'format'"),
}

# LuaJIT reports an expression spanning lines at the line its parser had reached
# when it emitted the failing instruction
MULTI_LINE = {
    "a call at its '('": ("local f\nlocal s = f(1,\n  2)\n", "2:11", "attempt to call local 'f'"),
    "a method call at its '('": ("local t = {}\nlocal s = t\n  :m(1)\n", "3:4", "attempt to call method 'm'"),
    "an index in a constructor": ("local x = nil\nlocal s = {\n  1, x.y }\n", "3:6", "attempt to index local 'x'"),
    "an index at its name": ("local x = {}\nlocal s = 1 + x.y. -- c\n  --[[d]] z\n", "3:11",
                             "attempt to index field 'y'"),
    "an operator at its right operand": ("local a = {}\nlocal s = 1 +\n  2 + 3 < a\n", "3:9",
                                         "attempt to compare number with table"),
    "the operand named on the operator's line": ("local a = {}\nlocal s = a\n  --[[c]] + 1\n", "3:11",
                                                 "attempt to perform arithmetic on local 'a'"),
}

NUPP_ERRORS = {
    "bitwise operator": ("local a = {}\nlocal b = 1 & a\n", "2:13", "attempt to perform bitwise operation '&'"),
    "switch without a match": ("local x = 3\nlocal y = switch x do case 1 -> 2 end\n", "2:11",
                               "no case of this switch matches 3"),
    "span index out of range": ("local span = nupp.mem.span\nlocal struct P\n  x: number\nend\n"
                                "local s = span.new(P, 2)\nprint(s[1].x, s[3].x)\n", "6:17",
                                "span index 3 out of range 1..2"),
    "span element field": ("local span = nupp.mem.span\nlocal struct P\n  x: number\nend\n"
                           "local s = span.new(P, 2)\nlocal e = s[1]; print(e.y)\n", "6:25",
                           "P has no field 'y'"),
    "span element store": ("local span = nupp.mem.span\nlocal struct P\n  x: int32\nend\n"
                           "local s = span.new(P, 2)\nlocal e = s[1]; e.x = 1.5\n", "6:19",
                           "cannot store 1.5 in int32 field 'x' of P"),
}


@pytest.mark.parametrize("case", [*LUA_ERRORS, *MULTI_LINE, *NUPP_ERRORS])
def test_the_caret_is_under_the_construct_that_failed(tmp_path, case):
    program, position, message = {**LUA_ERRORS, **MULTI_LINE, **NUPP_ERRORS}[case]
    line, col = map(int, position.split(":"))
    stderr = run_error(tmp_path, program)
    assert head(stderr).startswith(f"m.nupp:{position}: error: {message}"), stderr
    assert stderr.splitlines()[2] == "      | " + " " * (col - 1) + "^", stderr
    assert stderr.splitlines()[1] == f"{line:5} | " + program.splitlines()[line - 1], stderr


# errors of @aot functions: the same position interpreted (their IR as Lua) and native
AOT_ERRORS = {
    "division by zero": ("@aot\nlocal function d(a: int32, b: int32): int32\n  return a // b\nend\n"
                         "local q = 0; print(d(1, 0))\n", "3:12", "integer division by zero"),
    "a refused argument": ("@aot\nlocal function d(a: int32): int32\n  return a\nend\nlocal q = 0; print(d(nil))\n",
                           "5:22", "bad argument #1 to 'd' (int32 expected, got nil)"),
    "an assert": ("local span = nupp.mem.span\nlocal struct P\n  x: number\nend\n@aot\n"
                  "local function f(exclusive out: span.WriteSpan<P>, borrows inp: span.Span<P>): nil\n"
                  '  local k = 1; assert(#out == #inp, "length mismatch")\nend\nf(span.new(P, 1), span.new(P, 2))\n',
                  "7:16", "length mismatch"),
}


@pytest.mark.parametrize("aot", ["off", "on"])
@pytest.mark.parametrize("case", AOT_ERRORS)
def test_an_aot_error_is_at_its_construct_in_both_executions(tmp_path, case, aot):
    program, position, message = AOT_ERRORS[case]
    assert head(run_error(tmp_path, program, "--aot", aot)) == f"m.nupp:{position}: error: {message}"


# ---- the function itself ----------------------------------------------------------

def test_a_line_without_the_construct_falls_back_to_its_first_non_blank():
    source = Source("m.nupp", "local t = {}\n   local x = 1\n")
    assert column_for(source, 2, "attempt to index local 't' (a nil value)") == 4
    assert column_for(source, 2, "some message of a C function") == 4


def test_a_source_that_does_not_parse_falls_back_to_the_first_non_blank():
    source = Source("m.lua", "local x = 1\n  local y = x.z +\n")
    assert column_for(source, 2, "attempt to index local 'x' (a nil value)") == 3


def test_a_name_the_source_does_not_show_still_finds_the_kind():
    # the translation's own locals (a switch's subject) are named in messages
    source = Source("m.nupp", "local a = 1\nlocal n = a + {}\n")
    assert column_for(source, 2, "attempt to perform arithmetic on local '__nupp_s1' (a table value)") == 13


def test_the_raising_function_is_the_frame_before_the_errors_line():
    traceback = ("stack traceback:\n\t[C]: in function 'error'\n\tm.nupp:2: in function 'check'\n"
                 "\tm.nupp:5: in main chunk\n\t[C]: at 0x1")
    assert raising_function(traceback, "m.nupp", 5) == "check"
    assert raising_function(traceback, "m.nupp", 2) == "error"
    assert raising_function(traceback, "m.nupp", 9) is None
    assert raising_function("stack traceback:\n\t[C]: in function 'string.rep'\n\tm.nupp:1: in main chunk",
                            "m.nupp", 1) == "rep"
