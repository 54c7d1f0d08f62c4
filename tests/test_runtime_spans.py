"""Struct types and spans (runtime/lua/mem.lua): LANGUAGE.md sections 2, 4, 5.

Each test gets a fresh LuaJIT state.  Lua snippets run as the chunk `test`
with a few locals predeclared (see HEADER), so error positions read
`test:<line>:`.
"""

from __future__ import annotations

import ctypes
import random
import re

import numpy as np
import pytest

from .lua_internals import lua_with_internals

# No newline, so a snippet's line numbers are its own.
HEADER = (
    'local ffi = require("ffi"); local span = nupp.mem.span; local mem = __nupp.mem; '
    "local Pixel, Escape = Pixel, Escape; "
)
POSITION = re.compile(r"^test:\d+: ")


@pytest.fixture
def lua():
    lua = lua_with_internals()
    lua.execute(
        'Pixel = __nupp.struct("Pixel", {{"cx", "float"}, {"cy", "float"}})\n'
        'Escape = __nupp.struct("Escape", {{"n", "int32"}, {"value", "number"}})\n'
    )
    return lua


def compile_snippet(lua, code):
    loader = lua.eval("function(src) return assert(loadstring(src, '=test')) end")
    return loader(HEADER + code)


def run(lua, code, *args):
    return compile_snippet(lua, code)(*args)


def raw_error(lua, code):
    ok, message = lua.globals().pcall(compile_snippet(lua, code))
    assert ok is False, "expected an error"
    return message


def error_of(lua, code):
    """The error text `code` raises, without its position."""
    return POSITION.sub("", raw_error(lua, code))


def parse_int(text: str) -> int:
    """An integer as Lua's tostring writes it (numbers, 64-bit cdata)."""
    return int(text.removesuffix("ULL").removesuffix("LL"))


# --- span.new / fromTable / # / index -------------------------------------


def test_new_is_zeroed_and_has_length(lua):
    length, cx, kind, escape_n = run(lua, """
        local s = span.new(Pixel, 5)
        local e = span.new(Escape, 3)
        return #s, s[5].cx, type(#s), e[3].n
    """)
    assert (length, cx, kind, escape_n) == (5, 0, "number", 0)


def test_new_empty_span(lua):
    assert run(lua, "return #span.new(Pixel, 0)") == 0
    assert error_of(lua, "return span.new(Pixel, 0)[1]") == "span index 1 out of range (the span is empty)"


@pytest.mark.parametrize("count, shown", [("-1", "-1"), ("1.5", "1.5"), ('"3"', "string"), ("nil", "nil")])
def test_new_refuses_bad_counts(lua, count, shown):
    message = error_of(lua, f"return span.new(Pixel, {count})")
    assert message == f"span.new: element count must be a non-negative integer, got {shown}"


@pytest.mark.parametrize("count, shown", [("2^28", 2**28), ("2^32", 2**32), ("2^32 + 3", 2**32 + 3), ("2^40", 2**40)])
def test_new_refuses_impossible_sizes(lua, count, shown):
    # LuaJIT's ffi.new reduces a VLA count modulo 2^32: 2^32 would allocate nothing
    assert error_of(lua, f"return span.new(Pixel, {count})") == f"span.new: cannot allocate {shown} elements of Pixel"


def test_new_refuses_non_struct_types(lua):
    assert error_of(lua, "return span.new({}, 3)") == "span.new: struct type expected, got table"
    assert error_of(lua, 'return span.new(ffi.typeof("int"), 3)') == "span.new: struct type expected, got cdata"


def test_from_table_stores_with_the_store_rules(lua):
    n1, v1, n2, v2, cx = run(lua, """
        local s = span.fromTable(Escape, {{n = -1, value = 2.5}, {n = 2^32 + 5}})
        local p = span.fromTable(Pixel, {{cx = 0.1}})
        return s[1].n, s[1].value, s[2].n, s[2].value, p[1].cx
    """)
    assert (n1, v1, n2, v2) == (-1, 2.5, 5, 0)
    assert cx == float(np.float32(0.1))


def test_from_table_errors_name_the_element(lua):
    assert error_of(lua, "return span.fromTable(Escape, {{n = 1}, {n = 1.5}})") == (
        "span.fromTable: element 2: cannot store 1.5 in int32 field 'n' of Escape (use nupp.math.i32.wrap)"
    )
    assert error_of(lua, "return span.fromTable(Escape, {{m = 1}})") == (
        "span.fromTable: element 1: Escape has no field 'm'"
    )
    assert error_of(lua, "return span.fromTable(Escape, {{n = 1}, 7})") == (
        "span.fromTable: element 2 must be a table of field values, got 7"
    )
    assert error_of(lua, "return span.fromTable(Escape, 7)") == "span.fromTable: table expected, got 7"


def test_index_is_one_based_and_writes_through(lua):
    values = run(lua, """
        local s = span.new(Escape, 4)
        for i = 1, #s do s[i].n = i * 10 end
        local e = s[3]
        e.value = 0.5
        local int_index = s[2LL].n
        return s[1].n, s[4].n, s[3].value, int_index
    """)
    assert values == (10, 40, 0.5, 20)


@pytest.mark.parametrize(
    "index, message",
    [
        ("0", "span index 0 out of range 1..5"),
        ("6", "span index 6 out of range 1..5"),
        ("-1", "span index -1 out of range 1..5"),
        ("1.5", "span index 1.5 is not an integer"),
        ("0/0", "span index nan is not an integer"),
        ("true", "span index must be an integer, got boolean"),
        ("{}", "span index must be an integer, got table"),
        ("nil", "span index must be an integer, got nil"),
        ("9LL", "span index 9 out of range 1..5"),
        ('"foo"', "span has no member 'foo'"),
    ],
)
def test_index_errors(lua, index, message):
    assert error_of(lua, f"local s = span.new(Pixel, 5)\nreturn s[{index}]") == message


def test_index_error_points_at_the_indexing_line(lua):
    message = raw_error(lua, "local s = span.new(Pixel, 5)\n\nlocal x = s[7].cx\nreturn x")
    assert message.startswith("test:3: span index 7")


def test_elements_cannot_be_assigned_whole(lua):
    assert error_of(lua, "local s = span.new(Pixel, 2)\ns[1] = s[2]") == (
        "cannot assign to span element 1: assign its fields instead"
    )


def test_unknown_fields(lua):
    assert error_of(lua, "local s = span.new(Escape, 2)\nreturn s[1].m") == "Escape has no field 'm'"
    assert error_of(lua, "local s = span.new(Escape, 2)\ns[1].m = 1") == "Escape has no field 'm'"
    message = raw_error(lua, "local s = span.new(Escape, 2)\n\ns[1].m = 1")
    assert message.startswith("test:3: ")


def test_span_fields_are_read_only(lua):
    message = error_of(lua, "local s = span.new(Pixel, 2)\ns.length = 100")
    assert "constant" in message
    assert run(lua, "local s = span.new(Pixel, 2)\nreturn #s") == 2


# --- sub / readonly / isSpan -------------------------------------------------


def test_sub_views_share_memory(lua):
    values = run(lua, """
        local s = span.new(Escape, 6)
        for i = 1, 6 do s[i].n = i end
        local v = s:sub(2, 4)
        v[1].n = 20
        local w = v:sub(2, 3)
        return #v, v[3].n, s[2].n, #w, w[2].n, #s:sub(4, 3), #s:sub(3)
    """)
    assert values == (3, 4, 20, 2, 4, 0, 4)


@pytest.mark.parametrize(
    "args, message",
    [
        ("0, 2", "span:sub(0, 2) out of range for a span of 6 elements"),
        ("2, 7", "span:sub(2, 7) out of range for a span of 6 elements"),
        ("4, 2", "span:sub(4, 2) out of range for a span of 6 elements"),
        ("1.5, 2", "span:sub: integer indices expected, got 1.5"),
        ('1, "2"', "span:sub: integer indices expected, got string"),
    ],
)
def test_sub_validates_its_range(lua, args, message):
    assert error_of(lua, f"local s = span.new(Pixel, 6)\nlocal v = s:sub({args})\nreturn v") == message


def test_readonly_view_shares_memory_and_refuses_writes(lua):
    cx, text, same = run(lua, """
        local s = span.new(Pixel, 3)
        local r = span.readonly(s)
        s[2].cx = 1.5
        return r[2].cx, tostring(r:sub(1, 2)), span.readonly(r) == r
    """)
    assert (cx, same) == (1.5, True)
    assert text == "read-only span.Span<Pixel> (2 elements)"
    message = raw_error(lua, "local r = span.readonly(span.new(Pixel, 3))\n\nr[1].cx = 2")
    assert message == "test:3: cannot store to field 'cx' of Pixel: the span is read-only"
    assert error_of(lua, "local r = span.readonly(span.new(Pixel, 3))\nlocal e = r:sub(2, 3)[1]\ne.cy = 1") == (
        "cannot store to field 'cy' of Pixel: the span is read-only"
    )
    assert error_of(lua, "local r = span.readonly(span.new(Pixel, 3))\nr[1].zz = 2") == "Pixel has no field 'zz'"


def test_is_span(lua):
    results = run(lua, """
        local s = span.new(Pixel, 3)
        return span.isSpan(s), span.isSpan(span.readonly(s)), span.isSpan(s:sub(1, 1)),
            span.isSpan({}), span.isSpan(s[1]), span.isSpan(3), span.isSpan(nil)
    """)
    assert results == (True, True, True, False, False, False, False)


def test_misuse_raises_clear_errors(lua):
    assert error_of(lua, "return span.readonly({})") == "span.readonly: span expected, got table"
    assert error_of(lua, "local s = span.new(Pixel, 3)\nreturn s.sub(5, 1, 2)") == "span:sub: span expected, got 5"


def test_span_info(lua):
    length, writable, bytes_, same_address, sub_offset, ro_writable = run(lua, """
        local s = span.new(Escape, 4)
        local info = mem.span_info(s)
        local sub = mem.span_info(s:sub(2, 3))
        local ro = mem.span_info(span.readonly(s))
        return info.length, info.writable, info.bytes,
            info.address == tonumber(ffi.cast("uintptr_t", mem.span_pointer_getter(Escape)(s))),
            sub.address - info.address, ro.writable
    """)
    assert (length, writable, bytes_, same_address, sub_offset, ro_writable) == (4, True, 64, True, 16, False)
    assert run(lua, "return mem.span_info({})") is None


# --- store rules -------------------------------------------------------------

INT_WIDTHS = {
    "int8": (8, True), "uint8": (8, False), "int16": (16, True), "uint16": (16, False),
    "int32": (32, True), "uint32": (32, False), "int64": (64, True), "uint64": (64, False),
}

# (Lua expression, its exact value)
STORE_CASES = [
    ("0", 0), ("1", 1), ("-1", -1), ("127", 127), ("128", 128), ("-128", -128), ("-129", -129),
    ("255", 255), ("256", 256), ("32767", 32767), ("32768", 32768), ("-32769", -32769), ("65535", 65535),
    ("65536", 65536), ("2^31 - 1", 2**31 - 1), ("2^31", 2**31), ("-2^31", -(2**31)), ("-2^31 - 1", -(2**31) - 1),
    ("2^32 - 1", 2**32 - 1), ("2^32", 2**32), ("2^32 + 5", 2**32 + 5), ("-2^32 - 5", -(2**32) - 5),
    ("2^53", 2**53), ("-2^53", -(2**53)), ("2^63", 2**63), ("-2^63", -(2**63)), ("2^64 - 2048", 2**64 - 2048),
    ("2^64", 2**64), ("-2^63 - 2048", -(2**63) - 2048), ("2^70 + 2^20", 2**70 + 2**20), ("-2^70", -(2**70)),
    ("-0.0", 0), ("-1LL", -1), ("0x7FFFFFFFFFFFFFFFLL", 2**63 - 1), ("0x8000000000000000ULL", 2**63),
    ("0xFFFFFFFFFFFFFFFFULL", 2**64 - 1), ("0x123456789ABCDEF0ULL", 0x123456789ABCDEF0), ("-5LL", -5),
]


def modular(value: int, bits: int, signed: bool) -> int:
    r = value % (1 << bits)
    if signed and r >= 1 << (bits - 1):
        r -= 1 << bits
    return r


@pytest.mark.parametrize("field_type", list(INT_WIDTHS))
def test_integer_stores_reduce_modulo_2n(lua, field_type):
    bits, signed = INT_WIDTHS[field_type]
    exprs = ", ".join(expr for expr, _ in STORE_CASES)
    text = run(lua, f"""
        local W = __nupp.struct("W", {{{{"v", "{field_type}"}}}})
        local s = span.new(W, 1)
        local out = {{}}
        for round = 1, 100 do  -- the later rounds run compiled
            for i, v in ipairs({{{exprs}}}) do
                s[1].v = v
                local back = s[1].v
                out[i] = tostring(back) .. ":" .. type(back)
            end
        end
        return table.concat(out, " ")
    """)
    got = [item.split(":") for item in text.split(" ")]
    want_type = "cdata" if bits == 64 else "number"
    for (expr, value), (back, kind) in zip(STORE_CASES, got, strict=True):
        assert kind == want_type, expr
        assert parse_int(back) == modular(value, bits, signed), expr


WRAP_HINT = {
    "int8": "nupp.math.i32.wrap", "uint8": "nupp.math.u32.wrap", "int16": "nupp.math.i32.wrap",
    "uint16": "nupp.math.u32.wrap", "int32": "nupp.math.i32.wrap", "uint32": "nupp.math.u32.wrap",
    "int64": "nupp.math.i64.wrap", "uint64": "nupp.math.u64.wrap",
}


@pytest.mark.parametrize("field_type", list(INT_WIDTHS))
@pytest.mark.parametrize("value, shown", [("3.5", "3.5"), ("0/0", "nan"), ("1/0", "inf"), ("-1/0", "-inf")])
def test_non_integral_integer_stores_are_refused(lua, field_type, value, shown):
    message = error_of(lua, f"""
        local W = __nupp.struct("W", {{{{"v", "{field_type}"}}}})
        local s = span.new(W, 1)
        s[1].v = {value}
    """)
    assert message == f"cannot store {shown} in {field_type} field 'v' of W (use {WRAP_HINT[field_type]})"


def test_the_documented_integer_store_example(lua):
    assert error_of(lua, "local s = span.new(Escape, 1)\ns[1].n = 3.5") == (
        "cannot store 3.5 in int32 field 'n' of Escape (use nupp.math.i32.wrap)"
    )
    assert run(lua, """
        local U = __nupp.struct("U", {{"u", "uint32"}})
        local s = span.new(U, 1)
        s[1].u = -1
        return s[1].u
    """) == 4294967295


@pytest.mark.parametrize("field", ["n", "value"])
@pytest.mark.parametrize("value, shown", [('"7"', "string"), ("true", "boolean"), ("{}", "table"), ("nil", "nil")])
def test_non_numbers_are_refused(lua, field, value, shown):
    field_type = {"n": "int32", "value": "number"}[field]
    assert error_of(lua, f"local s = span.new(Escape, 1)\ns[1].{field} = {value}") == (
        f"cannot store {shown} in {field_type} field '{field}' of Escape"
    )
    assert error_of(lua, f"local s = span.new(Pixel, 1)\ns[1].cx = {value}") == (
        f"cannot store {shown} in float field 'cx' of Pixel"
    )


def test_store_error_points_at_the_storing_line(lua):
    message = raw_error(lua, "local s = span.new(Escape, 1)\nlocal x = 1\ns[1].n = 0.25")
    assert message.startswith("test:3: cannot store 0.25")
    message = raw_error(lua, "local s = span.new(Pixel, 1)\nlocal x = 1\ns[1].cx = 'a'")
    assert message.startswith("test:3: cannot store string")


FLT_MAX = float(np.finfo(np.float32).max)
FLOAT_CASES = [
    0.1, -0.1, 1.0, 1 + 2**-24, 1 + 3 * 2**-24, -(1 + 2**-24), 1 + 2**-23, 16777217.0, 2**-149, 2**-150,
    3 * 2**-150, 2**-151, 1.5 * 2**-149, FLT_MAX, FLT_MAX + 2**103, FLT_MAX + 2**103 - 2**70, 1e39, -1e39,
    float("inf"), float("-inf"), -0.0, 0.0, 1e-46, 2**-126, 2**-126 - 2**-150, 3.4028235677973366e38,
]


def float32_bits(x: float) -> int:
    with np.errstate(over="ignore"):
        return int(np.array([x], dtype=np.float64).astype(np.float32).view(np.uint32)[0])


def narrow_in_lua(lua, values):
    """Stores each value in a float field; returns (bits stored, bits of nupp.math.f32.narrow)."""
    text = run(lua, """
        local values = ...
        local s = span.new(Pixel, 1)
        local bits = ffi.cast("uint32_t *", mem.span_pointer_getter(Pixel)(s))
        local view = ffi.new("union { float f; uint32_t u; }")
        local out = {}
        for i = 1, #values do
            s[1].cx = values[i]
            view.f = nupp.math.f32.narrow(values[i])
            out[i] = string.format("%d/%d", bits[0], view.u)
        end
        return table.concat(out, " ")
    """, lua.table_from(values))
    return [tuple(int(b) for b in item.split("/")) for item in text.split(" ")]


def test_float_stores_round_to_nearest_even(lua):
    for value, (stored, narrowed) in zip(FLOAT_CASES, narrow_in_lua(lua, FLOAT_CASES), strict=True):
        assert stored == float32_bits(value), value
        assert stored == narrowed, value


def test_float_stores_match_numpy_on_random_doubles(lua):
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**64, size=3000, dtype=np.uint64)
    doubles = bits.view(np.float64)
    values = [float(x) for x in doubles if not np.isnan(x)]
    # and values near binary32's range, where rounding is interesting
    values += [float(x) for x in rng.uniform(-2.0**40, 2.0**40, 500)]
    values += [float(np.float32(x)) + float(d) for x, d in zip(rng.normal(size=300), rng.normal(size=300) * 1e-9)]
    for value, (stored, narrowed) in zip(values, narrow_in_lua(lua, values), strict=True):
        assert stored == float32_bits(value), value
        assert stored == narrowed, value


def test_float_store_of_nan_is_the_canonical_nan(lua):
    bits, is_nan = run(lua, """
        local s = span.new(Pixel, 1)
        s[1].cx = 0/0
        local x = s[1].cx
        return ffi.cast("uint32_t *", mem.span_pointer_getter(Pixel)(s))[0], x ~= x
    """)
    assert (bits, is_nan) == (0x7FC00000, True)


def test_float_store_keeps_the_sign_of_zero(lua):
    assert run(lua, "local s = span.new(Pixel, 1)\ns[1].cx = -0.0\nreturn 1 / s[1].cx") == float("-inf")


def test_number_stores(lua):
    values = run(lua, """
        local s = span.new(Escape, 1)
        local out = {}
        for i, v in ipairs({0.1, -2.5e300, 1/0, 2^53 + 1LL, 0xFFFFFFFFFFFFFFFFULL, -1LL, 2^53 + 3LL}) do
            s[1].value = v
            out[i] = string.format("%.17g", s[1].value)
        end
        return table.concat(out, " ")
    """)
    assert values.split(" ") == [
        "0.10000000000000001", "-2.5000000000000001e+300", "inf", "9007199254740992",
        "1.8446744073709552e+19", "-1", "9007199254740996",
    ]


def test_64_bit_integers_stored_to_a_float_field_round_through_binary64(lua):
    # 2^60 + 2^36 + 1: binary64 rounds to 2^60 + 2^36, an exact binary32 tie
    # that goes to even (2^60); a direct conversion would give 2^60 + 2^37.
    value = run(lua, "local s = span.new(Pixel, 1)\ns[1].cx = 2^60 + 2^36 + 1LL\nreturn s[1].cx")
    assert value == 2**60
    assert run(lua, "local s = span.new(Pixel, 1)\ns[1].cx = 16777217LL\nreturn s[1].cx") == 16777216


def test_aliasing_views_stay_coherent_in_compiled_loops(lua):
    # LuaJIT's trace optimizer assumes loads and stores of different types
    # through different pointers never alias; the accessors touch float and
    # number fields with one access type so a view never sees stale bits.
    mismatches = run(lua, """
        local s, p = span.new(Escape, 2), span.new(Pixel, 2)
        local ro, pro = span.readonly(s), span.readonly(p):sub(2, 2)
        local bad = 0
        for i = 1, 5000 do
            s[1].value = 0/0
            p[2].cx = 0/0
            local a, b = ro[1].value, pro[1].cx
            if a == a or b == b then bad = bad + 1 end
            s[1].value = i
            p[2].cx = i
            if ro[1].value ~= i or pro[1].cx ~= i then bad = bad + 1 end
        end
        return bad
    """)
    assert mismatches == 0


# --- struct declarations -----------------------------------------------------

CTYPES = {
    "float": ctypes.c_float, "number": ctypes.c_double, "double": ctypes.c_double, "int8": ctypes.c_int8,
    "uint8": ctypes.c_uint8, "int16": ctypes.c_int16, "uint16": ctypes.c_uint16, "int32": ctypes.c_int32,
    "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
}


def layout_cases():
    rng = random.Random(7)
    cases = [["float", "float"], ["int32", "number"], ["int8", "double", "uint16", "float", "int64", "uint8"],
             ["uint8", "uint8", "int16"], ["number"], ["uint8", "float", "uint8"]]
    for _ in range(10):
        cases.append([rng.choice(list(CTYPES)) for _ in range(rng.randint(1, 7))])
    return cases


@pytest.mark.parametrize("types", layout_cases())
def test_layout_is_the_natural_c_layout(lua, types):
    names = [f"f{i}" for i in range(len(types))]
    decl = ", ".join(f'{{"{n}", "{t}"}}' for n, t in zip(names, types))
    text = run(lua, f"""
        local info = mem.struct_info(__nupp.struct("L", {{{decl}}}))
        local out = {{info.size}}
        for i, f in ipairs(info.fields) do out[#out + 1] = f.name .. "=" .. f.offset .. "=" .. f.type end
        return table.concat(out, " ")
    """)
    size, *fields = text.split(" ")
    c_struct = type("C", (ctypes.Structure,), {"_fields_": [(n, CTYPES[t]) for n, t in zip(names, types)]})
    assert int(size) == ctypes.sizeof(c_struct)
    assert fields == [f"{n}={getattr(c_struct, n).offset}={t}" for n, t in zip(names, types)]


def test_pixel_is_exactly_two_floats(lua):
    size, cx, cy = run(lua, "local i = mem.struct_info(Pixel)\nreturn i.size, i.fields[1].offset, i.fields[2].offset")
    assert (size, cx, cy) == (8, 0, 4)


def test_two_modules_may_declare_the_same_struct_name(lua):
    a, b, names_differ, name = run(lua, """
        local A = __nupp.struct("Pixel", {{"cx", "float"}, {"cy", "float"}})
        local B = __nupp.struct("Pixel", {{"x", "int32"}})
        local C = __nupp.struct("Pixel", {{"cx", "float"}, {"cy", "float"}})
        local sa, sb, sc = span.new(A, 2), span.new(B, 2), span.new(C, 1)
        sa[2].cx = 1.25
        sb[2].x = -7
        sc[1].cy = 3
        local ia, ib = mem.struct_info(A), mem.struct_info(B)
        return sa[2].cx, sb[2].x, ia.c_name ~= ib.c_name and ia.c_name ~= mem.struct_info(C).c_name, ia.name
    """)
    assert (a, b, names_differ, name) == (1.25, -7, True, "Pixel")


def test_struct_names_are_sanitized_for_c(lua):
    c_name, value = run(lua, """
        local T = __nupp.struct("geo.points/Pixel 2", {{"x", "int8"}})
        local s = span.new(T, 1)
        s[1].x = 300
        return mem.struct_info(T).c_name, s[1].x
    """)
    assert re.fullmatch(r"nupp_\d+_geo_points_Pixel_2", c_name)
    assert value == 44


def test_declaration_errors(lua):
    assert error_of(lua, 'return __nupp.struct("P", {{"cx", "vec3"}})') == "struct P: field 'cx' has unknown type 'vec3'"
    assert error_of(lua, 'return __nupp.struct("P", {{"cx", "float"}, {"cx", "int32"}})') == (
        "struct P: duplicate field 'cx'"
    )
    assert error_of(lua, 'return __nupp.struct("P", {{"1x", "float"}})') == 'struct P: invalid field name "1x"'
    assert error_of(lua, 'return __nupp.struct("P", {{"__nf1", "float"}})') == 'struct P: invalid field name "__nf1"'
    assert error_of(lua, 'return __nupp.struct("P", 3)') == "struct P: fields must be an array of {name, type} pairs"
    assert error_of(lua, "return __nupp.struct(3, {})") == "struct name must be a string, got 3"


def test_struct_info_only_answers_for_struct_types(lua):
    assert run(lua, "return mem.struct_info(102LL), mem.struct_info({}), mem.struct_info(ffi.typeof('int'))") == (
        None, None, None
    )
    assert run(lua, "return mem.struct_info(span.new(Pixel, 1))") is None


def test_element_tostring(lua):
    text = run(lua, "local s = span.fromTable(Escape, {{n = 3, value = 0.5}})\nreturn tostring(s[1])")
    assert text == "Escape { n = 3, value = 0.5 }"


# --- lifetime ----------------------------------------------------------------


def test_views_keep_the_memory_alive(lua):
    ok = run(lua, """
        local function make()
            local s = span.new(Escape, 1000)
            for i = 1, #s do s[i].n = i; s[i].value = i / 4 end
            return s:sub(10, 20), span.readonly(s):sub(500, 501)
        end
        local view, ro = make()
        for round = 1, 5 do
            collectgarbage("collect")
            local churn = {}
            for i = 1, 200 do churn[i] = span.new(Escape, 1000) end
            for i = 1, 200 do for j = 1, 1000, 97 do churn[i][j].n = -1 end end
        end
        for i = 1, #view do
            if view[i].n ~= i + 9 or view[i].value ~= (i + 9) / 4 then return false end
        end
        return ro[1].n == 500 and ro[2].n == 501
    """)
    assert ok is True


def test_dropped_spans_free_their_memory(lua):
    freed_kib = run(lua, """
        collectgarbage("collect")
        local s = span.new(Pixel, 1000000)
        local view = span.readonly(s):sub(1, 10)
        s = nil
        collectgarbage("collect")
        local held = collectgarbage("count")
        view = nil
        collectgarbage("collect")
        collectgarbage("collect")
        return held - collectgarbage("count")
    """)
    assert freed_kib > 7000  # the 8 MB block went with its last view


# --- hostile bit patterns ----------------------------------------------------
#
# What the raw hazard looks like (seen in a subprocess on this LuaJIT 2.1,
# GC64, reading a plain FFI `float`/`double` field in a 20000-iteration loop):
#   float 0xFFD00001 (widens to 0xFFFA000020000000)   the process segfaulted
#   float 0xFFFFFFFF (widens to 0xFFFFFFFFE0000000)   every read gave nil
#   double 0xFFFFFFFFFFFFFFFF                          every read gave nil
#   double 0xFFFA000000000000                          the process segfaulted
#   double 0xFFF8000000000001, 0x7FF0000000000001,
#          0xFFF0000000000001                          read as numbers (NaN)
# The guarded accessors never load a NaN pattern as floating point, so all of
# these read as Lua's own NaN.

HOSTILE_FLOATS = [0xFFD00001, 0xFFFFFFFF, 0x7F800001, 0xFF800001, 0x7FC00000, 0xFFC00000, 0x7FFFFFFF]
HOSTILE_DOUBLES = [
    0xFFFFFFFFFFFFFFFF, 0xFFF8000000000001, 0x7FF0000000000001, 0xFFF0000000000001, 0xFFFA000000000000,
    0x7FFFFFFFFFFFFFFF, 0xFFF8000000000000,
]
HOSTILE_LOOP = """
    local H = __nupp.struct("H", {{"f", "float"}, {"gap", "int32"}, {"d", "number"}})
    local float_bits, double_bits = ...
    local s = span.new(H, #float_bits + 2)
    local words = ffi.cast("uint32_t *", mem.span_pointer_getter(H)(s))
    local quads = ffi.cast("uint64_t *", mem.span_pointer_getter(H)(s))
    for i = 1, #float_bits do
        words[(i - 1) * 4] = float_bits[i]
        quads[(i - 1) * 2 + 1] = double_bits[i]
    end
    s[#s - 1].f = 1.5; s[#s - 1].d = -2.5   -- ordinary values among them
    s[#s].f = 1/0; s[#s].d = -1/0
    local function scan(s)
        local nans, numbers, wrong = 0, 0, 0
        for round = 1, 20000 do
            for i = 1, #s do
                local e = s[i]
                local f, d = e.f, e.d
                if type(f) ~= "number" or type(d) ~= "number" then wrong = wrong + 1 end
                if f ~= f then nans = nans + 1 else numbers = numbers + 1 end
                if d ~= d then nans = nans + 1 else numbers = numbers + 1 end
            end
        end
        return nans, numbers, wrong
    end
    MODE(scan)
    local nans, numbers, wrong = scan(s)
    return nans, numbers, wrong, s[#s - 1].f, s[#s - 1].d, s[#s].f, s[#s].d, tostring(s[1])
"""


@pytest.mark.parametrize("mode", ["jit.on", "jit.off"])
def test_hostile_nan_bits_read_as_nan(lua, mode):
    # as uint64 cdata: a Lua number cannot hold these bits
    double_bits = run(lua, """
        local src, out = ..., {}
        for i = 1, #src do out[i] = loadstring("return " .. src[i] .. "ULL")() end
        return out
    """, lua.table_from([hex(b) for b in HOSTILE_DOUBLES]))
    code = HOSTILE_LOOP.replace("MODE(scan)", f"{mode}(scan)")
    results = run(lua, code, lua.table_from(HOSTILE_FLOATS), double_bits)
    nans, numbers, wrong, f1, d1, f2, d2, text = results
    rounds = 20000
    assert wrong == 0
    assert nans == 2 * len(HOSTILE_FLOATS) * rounds
    assert numbers == 4 * rounds
    assert (f1, d1, f2, d2) == (1.5, -2.5, float("inf"), float("-inf"))
    assert text == "H { f = nan, gap = 0, d = nan }"


def test_hostile_loop_is_jit_compiled(lua):
    traced = run(lua, """
        local s = span.new(Pixel, 4)
        ffi.cast("uint32_t *", mem.span_pointer_getter(Pixel)(s))[0] = 0xFFD00001
        local util = require("jit.util")
        local before = 0
        while util.traceinfo(before + 1) do before = before + 1 end
        local n = 0
        for round = 1, 20000 do
            for i = 1, #s do local x = s[i].cx if x ~= x then n = n + 1 end end
        end
        return util.traceinfo(before + 1) ~= nil and n == 20000
    """)
    assert traced is True
