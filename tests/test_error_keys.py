"""A built program classifies a run-time error's message as `nupp run` does:
runtime/project/error_keys.lua, driven by the rule table of
runtime/error_keys.py (its Lua patterns), yields exactly the keys of the
Python classifier (its regexes), and names the same raising function."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lupa import luajit21

from nupp.errors import Diagnostic, Source, first_non_blank_column
from nupp.runtime.error_keys import key_text, keys_for, lua_rule, raising_function
from nupp.runtime.error_position import column_for, line_columns
from nupp.runtime.project.build import lua_literal
from nupp.runtime.run_errors import line_reports

from .test_error_positions import AOT_ERRORS, LUA_ERRORS, MULTI_LINE, NUPP_ERRORS

ODD = ["attempt to index local 'a' (a nil value)' (a nil value)", "attempt to index local 'x' (a nil value)\n",
       "attempt to index local 'x' (a nil value)\n\n", "attempt to index\nlocal 'x' (a nil value)",
       "attempt to index bogus 'x' (a nil value)", "attempt to index", "attempt to call a nil value",
       "bad argument #007 to 'f'", "bad argument #0 to 'f'", "bad argument #00 to ''", "bad argument #x to 'f'",
       "calling '' on bad self", "span index  out of range", "cannot assign to span element \t3",
       "T has no member named 'x' and field 'y'", "field 'a' has no member 'b'", "T has no member 'x",
       "line one\nP has no field 'y'", "", "x", "attempt to compare two table values",
       "attempt to perform bitwise operation '~'", "attempt to perform ''", "'for' step must be a number",
       "table index is NaN", "a: no case of this switch matches 3", "assertion failed!", "caf\xe9 \udcff"]
MESSAGES = [message for cases in (LUA_ERRORS, MULTI_LINE, NUPP_ERRORS, AOT_ERRORS)
            for _, _, message in cases.values()] + ODD
CALLEES = [None, "", "error", "check", "__index", "__add", "__call", "?"]


@pytest.fixture(scope="module")
def lua():
    return luajit21.LuaRuntime(encoding=None)


@pytest.fixture(scope="module")
def lua_keys(lua):
    make = lua.execute(Path(__file__).parents[1].joinpath("runtime/project/error_keys.lua").read_bytes())
    return make(lua.execute(b"return " + encoded(lua_literal(lua_rule()))))


def encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


@pytest.mark.parametrize("message", MESSAGES)
def test_the_lua_classifier_yields_the_python_keys(lua_keys, message):
    for callee in CALLEES:
        got = lua_keys.keys_for(encoded(message), None if callee is None else encoded(callee))
        assert list(got.values()) == [encoded(key_text(key)) for key in keys_for(message, callee)], callee


TRACEBACKS = [
    "stack traceback:\n\t[C]: in function 'error'\n\tm.nupp:2: in function 'check'\n\tm.nupp:5: in main chunk",
    "stack traceback:\n\t[C]: in function 'string.rep'\n\tm.nupp:1: in main chunk",
    "stack traceback:\n\tm.nupp:2: in function <m.nupp:1>\n\tm.nupp:5: in local 'a:b.c'\n\tm.nupp:7: in upvalue ''",
    "\tm.nupp:3: in function 'f' extra\n\tm.nupp:4: in field 'g'\n m.nupp:4: in method 'h'\n\tm.nupp:9: in global 'k'",
    "a: in b: in function 'x'\n\tm.nupp:4: in ?", "",
]


@pytest.mark.parametrize("traceback", TRACEBACKS)
def test_the_lua_raising_function_is_pythons(lua_keys, traceback):
    for line in range(1, 11):
        for path in ("m.nupp", "a", "a: in b"):
            got = lua_keys.raising_function(encoded(traceback), encoded(path), line)
            expected = raising_function(traceback, path, line)
            assert got == (None if expected is None else encoded(expected)), (path, line)


# ---- a built program's lookup: the line's stored columns ----------------------------

def lua_columns(lua, found: dict) -> object:
    return lua.execute(b"return " + encoded(lua_literal({key_text(key): col for key, col in found.items()})))


# messages naming each name of a program
NAMED = ["attempt to index local '%s' (a nil value)", "attempt to call method '%s' (a nil value)",
         "attempt to perform arithmetic on field '%s' (a nil value)",
         "attempt to concatenate global '%s' (a nil value)",
         "attempt to get length of upvalue '%s' (a nil value)", "bad argument #1 to '%s'", "bad argument #3 to '%s'",
         "calling '%s' on bad self", "T has no member '%s'"]


@pytest.mark.parametrize("case", [*LUA_ERRORS, *MULTI_LINE, *NUPP_ERRORS, *AOT_ERRORS])
def test_the_stored_columns_give_column_fors_column(lua, lua_keys, case):
    """For every line of each program of test_error_positions and every message
    and callee of the corpus: the first of the Lua keys that the line's
    columns (line_columns, as the build stores them) hold, else the first
    non-blank, is column_for's column."""
    program, _, _ = {**LUA_ERRORS, **MULTI_LINE, **NUPP_ERRORS, **AOT_ERRORS}[case]
    source = Source("m.nupp", program)
    lines = program.count("\n") + 1
    named = [shape % name for name in sorted(set(re.findall(r"[A-Za-z_]\w*", program))) for shape in NAMED]
    for line, found in enumerate(line_columns(source, lines), 1):
        columns = lua_columns(lua, found)
        for message in MESSAGES + named:
            for callee in CALLEES if message in MESSAGES else [None]:
                keys = lua_keys.keys_for(encoded(message), None if callee is None else encoded(callee))
                got = lua_keys.column(columns, keys) or first_non_blank_column(source.line_text(line))
                assert got == column_for(source, line, message, callee), (line, message, callee)


def test_line_reports_lay_out_what_diagnostic_renders():
    text = "\ufefflocal a\n\n\tx.y = 1 -- caf\udcc3\n"
    source = Source("dir/m\x01.nupp", text)
    reports = line_reports(source, 5)
    for line in range(1, 6):
        for col in (1, 2, 7, 12):
            assert reports.render(line, col, "msg \udcff") == Diagnostic(source, line, col, "msg \udcff").render()


def test_a_source_without_a_final_line_break_has_lines_past_its_end():
    """Its Lua has a line more (the writer ends the chunk with one): the build asks for that line's
    columns too, and `nupp build` of such a file stopped with an internal error (IndexError)."""
    source = Source("m.nupp", "local x = nil\nprint(x.y)")
    columns = line_columns(source, 4)
    assert columns[2:] == [{}, {}]
    assert columns[1][("index",)] == 7  # ("index", "x") is not stored: its successor gives the column
    assert column_for(source, 3, "attempt to call a nil value") == 1
