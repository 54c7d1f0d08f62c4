"""Syntax errors and ordinary-Nupp refusals: position, wording, never a traceback."""

from __future__ import annotations

import pytest

from nupp.errors import NuppError, Source
from nupp.pipeline import translate

# (source, line, column, words the message must contain)
SYNTAX_ERRORS = [
    ("local x = 1 +", 1, 14, ["an expression expected", "end of file"]),
    ("if a = b then end", 1, 6, ["unexpected '='", "condition"]),
    ("x = a ~ = b", 1, 7, ["'='", "'~'"]),
    ('local s = "abc\nprint(s)', 1, 11, ["unfinished string"]),
    ("local s = 'abc", 1, 11, ["unfinished string"]),
    ("local struct P\n  x: int32\n", 2, 11, ["'end' expected", "'struct' at line 1"]),
    ("x = 1 != 2", 1, 7, ["'!='"]),
    ("x = 1\n--[[ never closed", 2, 1, ["unfinished long comment"]),
    ("x = [==[ abc ]]", 1, 5, ["unfinished long string"]),
    ("function f()\n  return 1\n", 2, 11, ["'end' expected", "'function' at line 1"]),
    ("if x print(1) end", 1, 6, ["'then' expected", "'print'"]),
    ("local t = {1, 2", 1, 16, ["'}'", "end of file"]),
    ("f(", 1, 3, ["an expression expected"]),
    ("while true print(1) end", 1, 12, ["'do' expected"]),
    ("for i = 1 do end", 1, 11, ["','"]),
    ("repeat\n  x = 1\n", 2, 8, ["'until' expected", "'repeat' at line 1"]),
    ("local function (x) end", 1, 16, ["a name expected"]),
    ("x = = 1", 1, 5, ["an expression expected"]),
    ("local 1 = 2", 1, 7, ["near '1'"]),
    ("return return", 1, 8, ["near 'return'"]),
    ("x = 1 y", 1, 7, ["not a statement"]),
    ("f() = 1", 1, 5, ["cannot assign to the expression before '='"]),
    ("x + 1", 1, 3, ["near '+'"]),
    ("(x)", 1, 1, ["not a statement"]),
    ("if x then\n  y = 1\nelse\n  y = 2\n", 4, 8, ["'end' expected", "'if' at line 1"]),
    ("local x = switch v do case 1 => 2 end", 1, 30, ["'=>'", "case 1 -> value"]),
    ("x = !a", 1, 5, ["'!'", "not"]),
    ("local struct P\n  x int32\nend", 2, 5, ["':' expected"]),
    ("@aot local function f() end end", 1, 29, ["near 'end'"]),
    ("x = 3 $ 4", 1, 7, ["unexpected symbol '$'"]),
    ("local function f(exclusiv o: span.WriteSpan<P>): nil end", 1, 18, ["unknown parameter qualifier 'exclusiv'"]),
    ("for i = 1, 2 do\n  x = 1\n", 2, 8, ["'end' expected", "'for' at line 1"]),
    ("switch x do\n  case 1 -> 2\n", 2, 14, ["'end' expected", "'switch' at line 1"]),
    # a string after a string is no unfinished string
    ('print("a" "b")', 1, 11, ["')' or ',' expected near '\"b\"'"]),
    ("x = 'a' [[b]]", 1, 9, ["unexpected symbol near '[[b]]'"]),
    # after a whole expression an operand is not what is missing
    ("local x = 1 2", 1, 13, ["unexpected symbol near '2'"]),
    ("print(1))", 1, 9, ["unexpected symbol near ')'"]),
    ("local t = {1 2}", 1, 14, ["',' or ';' or '}' expected near '2'"]),
    ("a.b:c = 1", 1, 7, ["function arguments expected near '='"]),
    ("x = function end", 1, 14, ["'(' expected near 'end'"]),
    # the block an `else` would close was closed already: its opener is named
    ("if x then else else end", 1, 16, ["'end' expected (to close 'if' at line 1) near 'else'"]),
]


def diagnostics_of(text: str, path: str = "bad.nupp"):
    with pytest.raises(NuppError) as err:
        translate(Source(path, text))
    return err.value.diagnostics


@pytest.mark.parametrize("text, line, col, words", SYNTAX_ERRORS, ids=[c[0][:30] for c in SYNTAX_ERRORS])
def test_syntax_error_position_and_words(text, line, col, words):
    (diag,) = diagnostics_of(text)
    assert (diag.line, diag.col) == (line, col), diag.render()
    for word in words:
        assert word in diag.render(), diag.render()


def test_rendered_diagnostic_has_position_source_line_and_caret():
    (diag,) = diagnostics_of("local a = 1\nlocal s = 'abc\n")
    rendered = diag.render().split("\n")
    assert rendered[0] == "bad.nupp:2:11: error: unfinished string"
    assert rendered[1].endswith("| local s = 'abc")
    assert rendered[2].index("^") == rendered[1].index("'")
    assert rendered[3].startswith("hint:")


# Ordinary-Nupp refusals after parsing: (source, [(line, col, words)])
REFUSALS = [
    ("@inline\nlocal function f() end", [(1, 1, ["unknown attribute '@inline'", "@aot"])]),
    ("@aot(fast = true)\nlocal function f(): nil end", [(1, 13, ["unknown key 'fast'", "vectorize"])]),
    ("@aot(vectorize = 1)\nlocal function f(): nil end", [(1, 18, ["true or false"])]),
    ("local struct P\n  x: string\nend", [(2, 6, ["unknown field type 'string'"])]),
    ("local struct P\n  x: int32\n  x: float\nend", [(3, 3, ["field 'x' twice"])]),
    ("@aot\nlocal function f(x): nil end", [(2, 18, ["parameter 'x'", "no type"])]),
    ("@aot\nlocal function f(x: int32) end", [(2, 17, ["return type"])]),
    ("@aot\nlocal function f(x: vector): nil end", [(2, 21, ["unknown type 'vector'"])]),
    ("@aot\nlocal function f(o: span.WriteSpan<Q>): nil end",
     [(2, 18, ["needs its ownership", "exclusive o"]), (2, 36, ["unknown struct 'Q'"])]),
    ("local struct P x: int32 end\n@aot\nlocal function f(borrows o: span.WriteSpan<P>): nil end",
     [(3, 18, ["WriteSpan parameter is `exclusive`"])]),
    ("@aot\nlocal function f(...): nil end", [(2, 17, ["cannot take '...'"])]),
    ("local x = switch v do case 1 do print(1) end end", [(1, 23, ["switch expression's arm"])]),
    ("switch v do case is int32 -> 1 end", [(1, 21, ["is int32", "cannot be tested"])]),
    ("local __nupp_s = 1", [(1, 7, ["reserved"])]),
    ("local function f()\n  local struct P x: int32 end\nend", [(2, 3, ["top level"])]),
    ("@aot\nfunction t:m(x: int32): nil end", [(1, 1, ["cannot mark the method"])]),
]


@pytest.mark.parametrize("text, expected", REFUSALS, ids=[c[0][:30] for c in REFUSALS])
def test_refusals_are_collected_with_positions(text, expected):
    diags = diagnostics_of(text)
    assert len(diags) == len(expected), "\n".join(d.render() for d in diags)
    for diag, (line, col, words) in zip(diags, expected):
        assert (diag.line, diag.col) == (line, col), diag.render()
        for word in words:
            assert word in diag.render(), diag.render()


def test_all_errors_of_a_file_are_reported_together():
    text = "@inline\nlocal function f() end\nlocal struct P\n  x: text\nend\n@aot(speed = 1)\nlocal function g(): nil end\n"
    assert [d.line for d in diagnostics_of(text)] == [1, 4, 6]
