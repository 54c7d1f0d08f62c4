"""The checker's refusals: one table row per kind, each with its line, column and key words.

Every snippet is the body of an @aot function with these parameters (see
HEADER): out (WriteSpan<P>), inp (Span<P>), a: int32, b: uint32, x: number,
y: float, w: int64, z: uint64.  Lines are counted from the first body line.
"""

from __future__ import annotations

import pytest

from nupp.frontend.checker import check_module
from nupp.errors import NuppError, Source
from nupp.frontend.parser import parse
from nupp.frontend.validate import validate

HEADER = """local span = nupp.mem.span
local f32 = nupp.math.f32
local struct P
    v: float
    n: int32
    u: uint32
    w: int64
    b: uint8
end
@aot
local function g(q: int32): int32
    return q
end
@aot
local function f(exclusive out: span.WriteSpan<P>, borrows inp: span.Span<P>,
                 a: int32, b: uint32, x: number, y: float, w: int64, z: uint64): nil
"""
BODY_LINE = HEADER.count("\n") + 1

# (body, body line, column, words)
REFUSALS = [
    ('local s = "text"', 1, 11, ["strings", "outside the AOT subset"]),
    ("local t = {1, 2}", 1, 11, ["tables"]),
    ("local h = function() end", 1, 11, ["closures"]),
    ("local v = ...", 1, 11, ["varargs"]),
    ("local v = nil", 1, 11, ["nil"]),
    ("local v = x:floor()", 1, 11, ["method calls"]),
    ("local v = unknown + 1", 1, 11, ["global 'unknown'"]),
    ("unknown = 1", 1, 1, ["global 'unknown'", "declare it"]),
    ("local v = print(1)", 1, 11, ["call to print", "outside the AOT subset"]),
    ("local v = g(1, 2)", 1, 11, ["takes 1 arguments, got 2"]),
    ("local v = f32.add(y)", 1, 11, ["takes 2 arguments, got 1"]),
    ('local r: int32 = switch a do\n    case "x" -> 1\n    else -> 2\nend', 2, 10, ["string case"]),
    ("local r: int32 = switch a do\n    case is number -> 1\n    else -> 2\nend", 2, 10, ["type pattern"]),
    ("local r: int32 = switch a do\n    case 1 do end\n    else -> 2\nend", 2, 5, ["block arm"]),
    ("local r: int32 = switch a do\n    case 1 -> 1\nend", 1, 18, ["not exhaustive", "else"]),
    ("local r: int32 = switch a do\n    case 1.5 -> 1\n    else -> 2\nend", 2, 10, ["1.5", "not an integer"]),
    ("local r: int32 = switch a do\n    case 4294967295 -> 1\n    else -> 2\nend", 2, 10, ["does not fit", "int32"]),
    ("local r: int32 = switch a == 1 do\n    case 1 -> 1\n    else -> 2\nend", 1, 25, ["selector", "boolean"]),
    ("switch a do\n    case 1 -> 1\n    else -> 2\nend", 1, 1, ["switch statement"]),
    ("local r = 1 + switch a do case 1 -> 1 else -> 2 end", 1, 15, ["sole initializer"]),
    ("for i = 1, #out do\n    local v = inp[1].n\nend", 2, 19, ["counted loop's counter"]),
    ("for i = 1, #out do\n    local v = a[i]\nend", 2, 15, ["only a span parameter can be indexed"]),
    ("local v = out", 1, 11, ["'out' is a span", "cannot be used as a value"]),
    ("for i = 1, #out do\n    i = 2\nend", 2, 5, ["loop counter"]),
    ("out = 1", 1, 1, ["span parameter"]),
    ("for i = 1, #inp do\n    inp[i].n = 1\nend", 2, 5, ["read-only", "WriteSpan"]),
    ("for i = 1, #out do\n    out[i].n = x\nend", 2, 16, ["cannot store a number", "i32.wrap"]),
    ("local v: int32 = x", 1, 18, ["cannot assign a number", "i32.wrap"]),
    ("local v: int32 = b", 1, 18, ["uint32", "fromU32"]),
    ("local v = a + b", 1, 11, ["mixes int32 and uint32"]),
    ("local v = w * z", 1, 11, ["mixes int64 and uint64"]),
    ("local v = x & 3", 1, 11, ["bitwise operand", "number", "i32.wrap"]),
    ("local v = f32.add(x, y)", 1, 19, ["float", "number", "f32.narrow"]),
    ("local v: int32 = 3000000000", 1, 18, ["does not fit int32"]),
    ("local v: int32 = 1.5", 1, 18, ["not an integer", "int32"]),
    ("local v = x ^ a", 1, 15, ["exponent", "integer literal"]),
    ("local v = x ^ 17", 1, 15, ["exponent", "0 to 16"]),
    ("local v = x .. x", 1, 11, ["concatenation"]),
    ("for i = 1, #out do\n    return\nend", 2, 5, ["return inside a loop over spans"]),
    ("for i = 1, #out do\n    while true do\n        return\n    end\nend", 3, 9, ["return inside a loop over spans"]),
    ('for i = 1, #out do\n    assert(a == 1, "no")\nend', 2, 5, ["assert", "before the first loop"]),
    ('local m = "no"\nassert(a == 1, m)', 1, 11, ["strings"]),
    ("local function h() end", 1, 1, ["closures"]),
    ("for k, v in pairs(x) do end", 1, 1, ["generic for"]),
    ("for i = 1, #out do\n    local v = out[i].missing\nend", 2, 15, ["no field 'missing'"]),
    ("for i = 1, #out do\n    local v = inp[i].n\nend", 2, 15, ["'inp' is not proven", "assert(#inp == #out"]),
    ("if a then end", 1, 4, ["condition must be a boolean", "int32"]),
    ("local v = a and true", 1, 11, ["`and` takes booleans", "int32"]),
    ("local v = f(out, inp, 1, 2, 3, 4, 5, 6)", 1, 11, ["calls itself", "recursion"]),
    ("local v: int32", 1, 1, ["exactly one initial value"]),
    ("local p, q = 1", 1, 1, ["exactly one initial value"]),
    ("local p = 1\nlocal q = 2\np, q = q, p", 3, 1, ["multiple assignment"]),
    ("for i = 1, #out, a do end", 1, 18, ["step", "int32 literal"]),
    ("for i = 1, x do end", 1, 12, ["loop's bound must be an int32", "number"]),
    ("break", 1, 1, ["break outside a loop"]),
    ("f32.add(y, y)", 1, 1, ["result of this call is unused"]),
    ("local v = not a", 1, 11, ["`not` takes a boolean"]),
    ("local v = 1LL + 2i", 1, 17, ["imaginary"]),
    ("local v: string = 1", 1, 10, ["cannot have type 'string'"]),
    ("local v = a == true", 1, 11, ["cannot compare", "int32", "boolean"]),
    ("local v = y + (a < 1)", 1, 11, ["takes numbers", "boolean"]),
]


def check(body: str):
    text = HEADER + "\n".join("    " + line if line else line for line in body.split("\n")) + "\nend\n"
    source = Source("kernel.nupp", text)
    chunk = parse(source)
    validate(source, chunk)
    return check_module(source, chunk)


@pytest.mark.parametrize("body, line, col, words", REFUSALS, ids=[r[0][:40] for r in REFUSALS])
def test_refusal(body, line, col, words):
    with pytest.raises(NuppError) as err:
        check(body)
    diags = err.value.diagnostics
    first = diags[0]
    assert (first.line - BODY_LINE + 1, first.col - 4) == (line, col), first.render()
    rendered = first.render()
    for word in words:
        assert word in rendered, rendered


def test_there_are_at_least_forty_refusal_kinds():
    assert len(REFUSALS) >= 40


def test_all_errors_of_a_file_are_collected():
    with pytest.raises(NuppError) as err:
        check('local s = "a"\nlocal t = {}\nlocal v: int32 = x\nlocal u = a + b')
    assert [d.line - BODY_LINE + 1 for d in err.value.diagnostics] == [1, 2, 3, 4]


def test_return_inside_a_loop_over_a_plain_range_is_admitted():
    check("for k = 1, a do\n    if k == 3 then\n        return\n    end\nend")


def test_clean_body_checks():
    module = check("local v: int32 = a + 1\nlocal u = b + 1\nlocal q = f32.add(y, 1)")
    assert [f.name for f in module.functions] == ["g", "f"]


def test_only_integer_numerals_take_an_integer_width():
    # `2` is an exact integer literal and takes b's width; `2.0` and `2e0` are binary64
    body = check("local u = 2 + b\nlocal v = 2.0 + b\nlocal t = 2e0 + b\nlocal s = 0xFF + b").functions[1].body
    assert [(s.name, s.width.value) for s in body] == [("u", "u32"), ("v", "f64"), ("t", "f64"), ("s", "u32")]


# One mistake, one diagnostic, naming the construct and the fix: (body, body line, column, message, hint)
ONE_DIAGNOSTIC = [
    # a fractional literal stored to an integer field: not one diagnostic per width tried
    ("for i = 1, #out do\n    out[i].w = 2.5\nend", 2, 16,
     "cannot store 2.5 in integer field 'w' (int64) of P", "convert it with nupp.math.i64.wrap"),
    ("for i = 1, #out do\n    out[i].n = 2.5\nend", 2, 16,
     "cannot store 2.5 in integer field 'n' (int32) of P", "convert it with nupp.math.i32.wrap"),
    ("for i = 1, #out do\n    out[i].b = -0.5\nend", 2, 16,
     "cannot store -0.5 in integer field 'b' (uint8) of P", "convert it with nupp.math.u32.wrap"),
    ("for i = 1, #out do\n    out[i].u = -1\nend", 2, 16,
     "the literal -1 does not fit uint32 (0 to 4294967295)", None),
    # a block arm in a switch expression: validate's diagnostic alone, saying what to write
    ("local r: int32 = switch a do\n    case 1 do end\n    else -> 2\nend", 2, 5,
     "a switch expression's arm must be `-> expression`",
     "give the arm one value, as in `case 1 -> 10`; block arms (`case ... do ... end`) belong to a switch statement"),
    # a library function as a value, and the local's uses after it
    ("local sq = nupp.math.f32.sqrt\nlocal v = sq(y)", 1, 12,
     "the library function nupp.math.f32.sqrt can only be called in an @aot function, not used as a value",
     "call it: `nupp.math.f32.sqrt(x)`; for a shorter name, alias its library at module level: "
     "`local f32 = nupp.math.f32`"),
    ("local add = f32.add\nlocal v = add(y, y)", 1, 13,
     "the library function f32.add can only be called in an @aot function, not used as a value",
     "call it: `f32.add(x, y)`; for a shorter name, alias its library at module level: `local f32 = nupp.math.f32`"),
    ("local lib = nupp.math.f32\nlocal v = lib.sqrt(y)", 1, 13, "nupp.math.f32 is outside the AOT subset",
     "alias a library at module level, before the function (`local f32 = nupp.math.f32`), "
     "and call its functions: `f32.sqrt(x)`"),
    # a refused local's later uses report nothing more
    ("local v: int32 = x\nlocal u = v + 1", 1, 18, "cannot assign a number to local 'v' (int32)",
     "convert it with nupp.math.i32.wrap"),
    ("local p, q = 1\nlocal v = p + q", 1, 1, "each local of an @aot function needs exactly one initial value",
     "write `local x: int32 = 0`; multiple values and nil locals are outside the subset"),
    ("local e = x.field\nlocal v = e.n + #e", 1, 11, "only span elements (s[i].field) have fields in an @aot function",
     None),
]


@pytest.mark.parametrize("body, line, col, message, hint", ONE_DIAGNOSTIC, ids=[r[0][:40] for r in ONE_DIAGNOSTIC])
def test_one_mistake_one_diagnostic(body, line, col, message, hint):
    with pytest.raises(NuppError) as err:
        check(body)
    assert [(d.line - BODY_LINE + 1, d.col - 4, d.message, d.hint) for d in err.value.diagnostics] == [
        (line, col, message, hint)]


def test_literals_stored_to_integer_fields_take_the_fields_widths():
    """An integer literal takes the width a load of the field gives (LANGUAGE.md sections 2
    and 4): 3000000000 to an int64 field and 4000000000 to a uint32 one are admitted."""
    body = check("for i = 1, #out do\n    out[i].w = 3000000000\n    out[i].u = 4000000000\n"
                 "    out[i].b = 300\nend").functions[1].body
    stores = [s for s in body[0].body]
    assert [(s.field, s.value.value, s.value.width.value) for s in stores] == [
        ("w", 3000000000, "i64"), ("u", 4000000000, "u32"), ("b", 300, "i32")]
