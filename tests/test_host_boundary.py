"""The host boundary of @aot functions (runtime/lua/boundary.lua): LANGUAGE.md
sections 6 and 7, exercised with ordinary (Lua) calls.

Snippets run as the chunk `test` with `wrap`, `span`, the struct types Pixel
and Escape, and `errmsg(f, ...)` (the text f raises, position stripped)
predeclared.
"""

from __future__ import annotations


import numpy as np
import pytest

from .lua_internals import lua_with_internals

SETUP = r"""
Pixel = __nupp.struct("Pixel", {{"cx", "float"}, {"cy", "float"}})
Escape = __nupp.struct("Escape", {{"n", "int32"}})
function errmsg(f, ...)
    local ok, message = pcall(f, ...)
    if ok then return "no error" end
    return (tostring(message):gsub("^.-:%d+: ", "", 1))
end
"""
# No newline, so a snippet's line numbers are its own.
HEADER = (
    'local ffi = require("ffi"); local span = nupp.mem.span; local wrap = __nupp.boundary.wrap; '
    "local Pixel, Escape, errmsg = Pixel, Escape, errmsg; "
)


@pytest.fixture
def lua():
    lua = lua_with_internals()
    lua.execute(SETUP)
    return lua


def run(lua, code, *args):
    loader = lua.eval("function(src) return assert(loadstring(src, '=test')) end")
    return loader(HEADER + code)(*args)


def identity(type_name: str) -> str:
    """Lua: a wrapped identity function of one parameter of that type."""
    return f'wrap(function(x) return x end, "id", {{{{name = "x", type = "{type_name}"}}}}, "{type_name}")'


def call_error(lua, signature_lua, args_lua):
    return run(lua, f"local f = {signature_lua}\nreturn errmsg(f, {args_lua})")


# --- scalar arguments --------------------------------------------------------

ADD = 'wrap(function(a, b) return a + b end, "add", {{name = "a", type = "int32"}, {name = "b", type = "int32"}}, "int32")'


@pytest.mark.parametrize(
    "args, message",
    [
        ("1, 3.5", "bad argument #2 to 'add' (int32 expected, got 3.5)"),
        ("4294967296, 1", "bad argument #1 to 'add' (int32 expected, got 4294967296)"),
        ("1", "bad argument #2 to 'add' (int32 expected, got nil)"),
        ("'1', 2", "bad argument #1 to 'add' (int32 expected, got string)"),
        ("1, {}", "bad argument #2 to 'add' (int32 expected, got table)"),
        ("1, 0/0", "bad argument #2 to 'add' (int32 expected, got nan)"),
        ("1, 1/0", "bad argument #2 to 'add' (int32 expected, got inf)"),
        ("1, 2, 3", "bad argument #3 to 'add' (no value expected, got 3)"),
        ("1, 2, nil", "bad argument #3 to 'add' (no value expected, got nil)"),
        ("1, 2^31LL", "bad argument #2 to 'add' (int32 expected, got 2147483648LL)"),
    ],
)
def test_int32_argument_errors(lua, args, message):
    assert call_error(lua, ADD, args) == message


def test_error_points_at_the_calling_line(lua):
    ok, message = run(lua, f"local add = {ADD}\nlocal function g()\n  local r = add(1, 0.5)\n  return r\nend\nreturn pcall(g)")
    assert ok is False
    assert message == "test:3: bad argument #2 to 'add' (int32 expected, got 0.5)"


INT_EDGES = [
    ("int32", "2^31 - 1", True), ("int32", "-2^31", True), ("int32", "2^31", False), ("int32", "-2^31 - 1", False),
    ("int32", "-0.0", True), ("int32", "2147483647LL", True), ("int32", "-2147483649LL", False),
    ("int32", "5ULL", True),
    ("uint32", "0", True), ("uint32", "2^32 - 1", True), ("uint32", "-1", False), ("uint32", "2^32", False),
    ("uint32", "4294967295ULL", True), ("uint32", "-1LL", False), ("uint32", "0.5", False),
    ("int64", "2^53", True), ("int64", "-2^53", True), ("int64", "2^62 + 2^40", True), ("int64", "-2^63", True),
    ("int64", "2^63", False), ("int64", "2^64", False), ("int64", "0x7FFFFFFFFFFFFFFFLL", True),
    ("int64", "-0x8000000000000000LL", True), ("int64", "0x7FFFFFFFFFFFFFFFULL", True),
    ("int64", "0x8000000000000000ULL", False), ("int64", "2.5", False), ("int64", "0/0", False),
    ("uint64", "0", True), ("uint64", "2^64 - 2048", True), ("uint64", "2^63", True), ("uint64", "2^64", False),
    ("uint64", "-1", False), ("uint64", "0xFFFFFFFFFFFFFFFFULL", True), ("uint64", "5LL", True),
    ("uint64", "-1LL", False), ("uint64", "1/0", False),
]


@pytest.mark.parametrize("type_name, value, accepted", INT_EDGES)
def test_integer_ranges(lua, type_name, value, accepted):
    wide = "true" if type_name in ("int64", "uint64") else "false"
    ok, back = run(lua, f"""
        local f = {identity(type_name)}
        local v = {value}
        local ok, r = pcall(f, v)
        if not ok then return false, (r:gsub("^.-:%d+: ", "", 1)) end
        -- accepted: the parameter's representation, the same value
        if {wide} then return true, ffi.istype("{type_name}_t", r) and r == ffi.cast("{type_name}_t", v) end
        return true, type(r) == "number" and r == tonumber(v)
    """)
    assert ok is accepted, back
    if accepted:
        assert back is True
    else:
        assert back.startswith(f"bad argument #1 to 'id' ({type_name} expected, got ")


def test_integer_values_come_through_exactly(lua):
    values = run(lua, f"""
        local i32, u32, i64, u64 = {identity("int32")}, {identity("uint32")}, {identity("int64")}, {identity("uint64")}
        return 1 / i32(-0.0), i32(-2147483648), u32(4294967295), tostring(i64(2^53)), tostring(i64(-1)),
            tostring(u64(2^63)), tostring(u64(7LL)), tostring(i64(0xFFFFFFFFULL)), i32(-7LL), type(i32(-7LL))
    """)
    assert values == (
        float("inf"), -2147483648, 4294967295, "9007199254740992LL", "-1LL", "9223372036854775808ULL", "7ULL",
        "4294967295LL", -7, "number",
    )


def test_error_values_are_described(lua):
    assert call_error(lua, identity("int64"), "2^63") == "bad argument #1 to 'id' (int64 expected, got 9.223372036854776e+18)"
    assert call_error(lua, identity("uint64"), "-1LL") == "bad argument #1 to 'id' (uint64 expected, got -1LL)"
    assert call_error(lua, identity("uint32"), "-1") == "bad argument #1 to 'id' (uint32 expected, got -1)"


FLOAT_VALUES = [0.1, 1 + 2**-24, 1 + 3 * 2**-24, 16777217.0, 2**-150, 3 * 2**-150, 1e39, -1e39, -0.0, 3.0,
                float(np.finfo(np.float32).max) + 2**103, 2**-149, -2.5e-40]


def test_float_arguments_narrow_like_f32_narrow(lua):
    got = run(lua, f"""
        local f = {identity("float")}
        local values, out = ..., {{}}
        local view = ffi.new("union {{ float f; uint32_t u; }}")
        for i = 1, #values do
            local r = f(values[i])
            view.f = r
            out[i] = tostring(r == nupp.math.f32.narrow(values[i]) and 1 / r == 1 / nupp.math.f32.narrow(values[i]))
                .. "/" .. tostring(view.u)
        end
        return table.concat(out, " ")
    """, lua.table_from(FLOAT_VALUES))
    with np.errstate(over="ignore"):
        want = [int(np.array([v]).astype(np.float32).view(np.uint32)[0]) for v in FLOAT_VALUES]
    assert got.split(" ") == [f"true/{w}" for w in want]


def test_float_and_number_arguments(lua):
    values = run(lua, f"""
        local f, n, d = {identity("float")}, {identity("number")}, {identity("double")}
        local nan = f(0/0)
        return nan ~= nan, n(0.1), d(-2.5e300), f(16777217LL), n(2^53 + 1LL), n(0xFFFFFFFFFFFFFFFFULL)
    """)
    assert values == (True, 0.1, -2.5e300, 16777216, 2**53, 2**64)
    assert call_error(lua, identity("float"), "'x'") == "bad argument #1 to 'id' (float expected, got string)"
    assert call_error(lua, identity("number"), "nil") == "bad argument #1 to 'id' (number expected, got nil)"
    assert call_error(lua, identity("double"), "true") == "bad argument #1 to 'id' (double expected, got boolean)"


def test_boolean_arguments(lua):
    assert run(lua, f"local f = {identity('boolean')}\nreturn f(true), f(false)") == (True, False)
    assert call_error(lua, identity("boolean"), "1") == "bad argument #1 to 'id' (boolean expected, got 1)"
    assert call_error(lua, identity("boolean"), "nil") == "bad argument #1 to 'id' (boolean expected, got nil)"


# --- results -----------------------------------------------------------------


def test_results_come_back_exactly(lua):
    values = run(lua, """
        local function returns(t, v) return wrap(function() return v end, "r", {}, t)() end
        local f = returns("float", 0.1)
        return f == nupp.math.f32.narrow(0.1), tostring(returns("int64", 5)), tostring(returns("uint64", 2^63)),
            tostring(returns("int64", 7ULL)), returns("int32", -3LL), returns("uint32", 4294967295),
            returns("number", 2.5), returns("boolean", false), tostring(returns("int64", -1LL))
    """)
    assert values == (True, "5LL", "9223372036854775808ULL", "7LL", -3, 4294967295, 2.5, False, "-1LL")


def test_nil_result_returns_nothing(lua):
    count = run(lua, """
        local f = wrap(function() return 1, 2 end, "f", {}, "nil")
        return select("#", f())
    """)
    assert count == 0


def test_bad_results_are_reported(lua):
    message = run(lua, """
        local f = wrap(function() return 3.5 end, "f", {}, "int32")
        return errmsg(f)
    """)
    assert message == "bad result from 'f' (int32 expected, got 3.5)"
    assert run(lua, 'return errmsg(wrap(function() end, "g", {}, "float"))') == "bad result from 'g' (float expected, got nil)"


def test_function_errors_pass_through(lua):
    message = run(lua, """
        local f = wrap(function(x) assert(x > 0, "length mismatch") return x end, "f", {{name = "x", type = "int32"}}, "int32")
        return errmsg(f, -1)
    """)
    assert message == "length mismatch"


def test_the_called_function_is_named_as_the_program_names_it(lua):
    """A traceback names the wrapped function's frame by the function's name, not
    the wrapper's internal one; names the wrapper itself uses do not collide."""
    frames = run(lua, """
        local check = wrap(function(x) assert(x > 0, "negative") return x end, "check",
                           {{name = "x", type = "int32"}}, "int32")
        local ok, text = xpcall(check, debug.traceback, -1)
        return text
    """)
    assert "test:2: in function 'check'" in frames, frames
    for name in ("a1", "type", "callee", "fn", "floor", "slow1", "r"):
        increment = f'wrap(function(x) return x + 1 end, "{name}", {{{{name = "x", type = "int32"}}}}, "int32")'
        assert run(lua, f"return {increment}(41)") == 42, name


# --- span arguments ----------------------------------------------------------

MANDELBROT = (
    'wrap(function(out, pixels) for i = 1, #out do out[i].n = 7 end end, "mandelbrot", {'
    '{name = "out", type = {span = Escape, writable = true, qualifier = "exclusive"}}, '
    '{name = "pixels", type = {span = Pixel, writable = false, qualifier = "borrows"}}}, "nil")'
)


@pytest.mark.parametrize(
    "args, message",
    [
        ("{}, span.new(Pixel, 2)", "bad argument #1 to 'mandelbrot' (span.WriteSpan<Escape> expected, got table)"),
        ("span.new(Pixel, 2), span.new(Pixel, 2)",
         "bad argument #1 to 'mandelbrot' (span.WriteSpan<Escape> expected, got span.WriteSpan<Pixel>)"),
        ("span.readonly(span.new(Escape, 2)), span.new(Pixel, 2)",
         "bad argument #1 to 'mandelbrot' (span.WriteSpan<Escape> expected, got read-only span.Span<Escape>)"),
        ("span.new(Escape, 2), span.new(Escape, 2)",
         "bad argument #2 to 'mandelbrot' (span.Span<Pixel> expected, got span.WriteSpan<Escape>)"),
        ("span.new(Escape, 2), nil", "bad argument #2 to 'mandelbrot' (span.Span<Pixel> expected, got nil)"),
        ("span.new(Escape, 2), 3", "bad argument #2 to 'mandelbrot' (span.Span<Pixel> expected, got 3)"),
        ("span.new(Escape, 2), span.new(Pixel, 2)[1]",
         "bad argument #2 to 'mandelbrot' (span.Span<Pixel> expected, got Pixel element)"),
        ("span.new(Escape, 2), span.new(Pixel, 2), 0",
         "bad argument #3 to 'mandelbrot' (no value expected, got 0)"),
    ],
)
def test_span_argument_errors(lua, args, message):
    assert call_error(lua, MANDELBROT, args) == message


def test_span_arguments_accepted(lua):
    values = run(lua, f"""
        local f = {MANDELBROT}
        local out, pixels = span.new(Escape, 3), span.new(Pixel, 3)
        f(out, pixels)
        f(out:sub(1, 2), span.readonly(pixels))
        f(span.new(Escape, 0), span.new(Pixel, 0))
        return out[3].n
    """)
    assert values == 7


def test_same_named_struct_from_another_declaration(lua):
    message = run(lua, f"""
        local f = {MANDELBROT}
        local OtherPixel = __nupp.struct("Pixel", {{{{"cx", "float"}}, {{"cy", "float"}}}})
        return errmsg(f, span.new(Escape, 1), span.new(OtherPixel, 1))
    """)
    assert message == (
        "bad argument #2 to 'mandelbrot' (span.Span<Pixel> expected, "
        "got span.WriteSpan<Pixel> (another declaration of Pixel))"
    )


def test_spans_longer_than_int32_are_refused(lua):
    messages = run(lua, """
        local f = wrap(function(s) return #s end, "f", {{name = "s", type = {span = Escape, writable = false}}}, "number")
        local g = wrap(function(s) return #s end, "g", {{name = "s", type = {span = Escape, writable = true}}}, "number")
        local block = span.new(Escape, 1)
        -- lengths the memory does not have: only the check looks at them
        local huge = __nupp.mem.span_at(Escape, __nupp.mem.span_pointer_getter(Escape)(block), 2^31, true, block)
        local edge = __nupp.mem.span_at(Escape, __nupp.mem.span_pointer_getter(Escape)(block), 2^31 - 1, false, block)
        return errmsg(f, huge), errmsg(g, huge), f(edge)
    """)
    assert messages == (
        "bad argument #1 to 'f' (span.Span<Escape> of at most 2147483647 elements expected, got 2147483648 elements)",
        "bad argument #1 to 'g' (span.WriteSpan<Escape> of at most 2147483647 elements expected, got 2147483648 elements)",
        2147483647,
    )


# --- exclusive spans ---------------------------------------------------------

ALIAS = (
    'wrap(function(a, b) for i = 1, #a do a[i].n = 99 end end, "f", {'
    '{name = "a", type = {span = Escape, writable = true, qualifier = "exclusive"}}, '
    '{name = "b", type = {span = Escape, writable = false, qualifier = "borrows"}}}, "nil")'
)


@pytest.mark.parametrize(
    "a, b, message",
    [
        ("s", "s", "bad argument #1 to 'f' (exclusive span overlaps argument #2)"),
        ("s:sub(1, 3)", "s:sub(3, 6)", "bad argument #1 to 'f' (exclusive span overlaps argument #2)"),
        ("s:sub(2, 2)", "span.readonly(s)", "bad argument #1 to 'f' (exclusive span overlaps argument #2)"),
        ("s:sub(4, 6)", "span.readonly(s):sub(1, 4)", "bad argument #1 to 'f' (exclusive span overlaps argument #2)"),
        ("s:sub(1, 3)", "s:sub(4, 6)", "no error"),
        ("s:sub(4, 6)", "s:sub(1, 3)", "no error"),
        ("s", "s:sub(3, 2)", "no error"),
        ("s", "span.new(Escape, 6)", "no error"),
    ],
)
def test_exclusive_overlap(lua, a, b, message):
    got, untouched = run(lua, f"""
        local f = {ALIAS}
        local s = span.new(Escape, 6)
        for i = 1, 6 do s[i].n = i end
        local got = errmsg(f, {a}, {b})
        local untouched = true
        for i = 1, 6 do untouched = untouched and s[i].n == i end
        return got, untouched
    """)
    assert got == message
    # a refused call runs nothing: the output span is unchanged
    assert untouched is (message != "no error")


def test_overlap_names_the_exclusive_argument(lua):
    messages = run(lua, """
        local span_of = function(w, q) return {span = Escape, writable = w, qualifier = q} end
        local f = wrap(function() end, "f", {
            {name = "a", type = span_of(false, "borrows")},
            {name = "b", type = span_of(true, "exclusive")},
            {name = "c", type = span_of(false, "borrows")}}, "nil")
        local s = span.new(Escape, 4)
        return errmsg(f, s, s:sub(3, 4), s:sub(1, 1)), errmsg(f, s:sub(1, 1), s:sub(3, 4), s),
            errmsg(f, s, s:sub(2, 2), s)
    """)
    assert messages == (
        "bad argument #2 to 'f' (exclusive span overlaps argument #1)",
        "bad argument #2 to 'f' (exclusive span overlaps argument #3)",
        "bad argument #2 to 'f' (exclusive span overlaps argument #1)",
    )


def test_borrowed_spans_may_overlap(lua):
    result = run(lua, """
        local f = wrap(function(a, b) return #a + #b end, "f", {
            {name = "a", type = {span = Escape, writable = false, qualifier = "borrows"}},
            {name = "b", type = {span = Escape, writable = false}}}, "int32")
        local s = span.new(Escape, 4)
        return f(s, s:sub(2, 3))
    """)
    assert result == 6


def test_argument_checks_come_before_overlap(lua):
    assert call_error(lua, ALIAS, "span.new(Escape, 1), 5") == (
        "bad argument #2 to 'f' (span.Span<Escape> expected, got 5)"
    )


# --- the wrapper itself -------------------------------------------------------


def test_spans_as_pointers_for_native_calls(lua):
    values = run(lua, """
        local seen
        local g = wrap(function(p, n, q, m, x) seen = {p, n, q, m} end, "native", {
            {name = "out", type = {span = Escape, writable = true}},
            {name = "inp", type = {span = Pixel, writable = false}},
            {name = "x", type = "int32"}}, "nil", {spans_as_pointers = true})
        local out, inp = span.new(Escape, 3), span.readonly(span.new(Pixel, 2))
        g(out, inp, 1)
        return ffi.istype(ffi.typeof("$ *", Escape), seen[1]), seen[2], ffi.istype(ffi.typeof("$ *", Pixel), seen[3]), seen[4]
    """)
    assert values == (True, 3, True, 2)


def test_signature_errors(lua):
    assert run(lua, 'return errmsg(wrap, print, "f", {{name = "x", type = "vec3"}}, "nil")') == (
        "boundary.wrap: parameter 'x' of 'f' has unknown type vec3"
    )
    assert run(lua, 'return errmsg(wrap, print, "f", {}, "int128")') == "boundary.wrap: 'f' has unknown result type int128"
    assert run(lua, 'return errmsg(wrap, print, "f", {{name = "s", type = {span = Escape, qualifier = "mine"}}}, "nil")') == (
        "boundary.wrap: parameter 's' of 'f' has unknown qualifier mine"
    )


def test_hot_calls_stay_correct(lua):
    # 10^5 calls: the wrapper is compiled into the calling trace
    total, refused = run(lua, f"""
        local add = {ADD}
        local total = 0
        for i = 1, 100000 do total = total + add(i, -1) end
        local refused = 0
        for i = 1, 1000 do
            if not pcall(add, i + 0.5, 1) then refused = refused + 1 end
        end
        return total, refused
    """)
    assert total == sum(range(1, 100001)) - 100000
    assert refused == 1000


def test_long_signatures(lua):
    # more constants than Lua allows upvalues: the wrapper takes another route
    total, message = run(lua, """
        local params = {}
        for i = 1, 70 do params[i] = {name = "p" .. i, type = i % 2 == 0 and "int32" or "float"} end
        local f = wrap(function(...) local t = 0 for i = 1, select("#", ...) do t = t + select(i, ...) end return t end,
            "long", params, "number")
        local args = {}
        for i = 1, 70 do args[i] = i end
        local bad = {unpack(args)}
        bad[70] = 0.5
        return f(unpack(args)), errmsg(f, unpack(bad))
    """)
    assert total == sum(range(1, 71))
    assert message == "bad argument #70 to 'long' (int32 expected, got 0.5)"
