"""Ordinary execution of typed @aot code: the interpreter, against Python oracles.

Inside an @aot function annotations govern ordinary execution (LANGUAGE.md
section 1): int32 `+` wraps, a float local narrows, mixed comparisons answer
by mathematical value, integer `//` by zero raises.  Each test builds a small
module, runs it in LuaJIT through nupp, and compares every result with an
oracle written from the spec in Python integers / floats / numpy.float32.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from nupp.errors import Source
from nupp.runtime.host import Host, LuaRunError
from nupp.scalar_ir.widths import Width

WIDTHS = {"int32": Width.I32, "uint32": Width.U32, "int64": Width.I64, "uint64": Width.U64}


def edge_values(width: Width) -> list[int]:
    lo, hi = width.int_range
    values = {0, 1, 2, 3, 7, lo, lo + 1, hi, hi - 1, hi // 2, (hi // 2) + 1, 12345, 65535, 65536, 65537}
    if width.is_signed:
        values |= {-1, -2, -3, -7, -65536, -12345}
    return sorted(v for v in values if lo <= v <= hi)


def lua_literal(value: int, width: Width) -> str:
    """A Lua argument of `width`: numbers for 32-bit widths, LL/ULL cdata for 64-bit ones."""
    if width in (Width.I64, Width.U64):
        suffix = "LL" if width == Width.I64 else "ULL"
        return f"({'-' if value < 0 else ''}{abs(value)}{suffix})"
    return f"({value})"


def wrap(value: int, width: Width) -> int:
    value &= (1 << width.bits) - 1
    if width.is_signed and value >= 1 << (width.bits - 1):
        value -= 1 << width.bits
    return value


def run_module(text: str) -> list[str]:
    host = Host()
    out = host.capture_output()
    host.run_source(Source("typed.nupp", text))
    return out().split("\n")[:-1]


SHOW = """
local function show(v)
    if type(v) == "number" then return string.format("%.17g", v) end
    return (tostring(v):gsub("U?LL$", ""))
end
"""


def binary_program(type_name: str, op: str, pairs) -> str:
    width = WIDTHS[type_name]
    calls = "\n".join(f"print(show(f({lua_literal(a, width)}, {lua_literal(b, width)})))" for a, b in pairs)
    return (f"@aot\nlocal function f(a: {type_name}, b: {type_name}): {type_name}\n"
            f"    return a {op} b\nend\n{SHOW}\n{calls}\n")


@pytest.mark.parametrize("type_name", WIDTHS)
@pytest.mark.parametrize("op", ["+", "-", "*"])
def test_wrapping_arithmetic_at_every_width(type_name, op):
    width = WIDTHS[type_name]
    pairs = list(itertools.product(edge_values(width), repeat=2))
    results = run_module(binary_program(type_name, op, pairs))
    python = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}[op]
    assert [int(r) for r in results] == [wrap(python(a, b), width) for a, b in pairs]


@pytest.mark.parametrize("type_name", WIDTHS)
@pytest.mark.parametrize("op", ["//", "%"])
def test_floor_division_and_remainder_signs(type_name, op):
    width = WIDTHS[type_name]
    pairs = [(a, b) for a, b in itertools.product(edge_values(width), repeat=2) if b != 0]
    results = run_module(binary_program(type_name, op, pairs))
    # Python's // and % on ints are floor division and the divisor-signed remainder
    expected = [wrap(a // b if op == "//" else a % b, width) for a, b in pairs]
    assert [int(r) for r in results] == expected


@pytest.mark.parametrize("type_name", WIDTHS)
@pytest.mark.parametrize("op", ["//", "%"])
def test_integer_division_by_zero_raises_at_the_operator_line(type_name, op):
    with pytest.raises(LuaRunError) as err:
        run_module(binary_program(type_name, op, [(5, 0)]))
    assert err.value.message == "typed.nupp:3: integer division by zero"


def test_unary_minus_wraps():
    text = ("@aot\nlocal function n32(a: int32): int32 return -a end\n"
            "@aot\nlocal function u32(a: uint32): uint32 return -a end\n"
            f"{SHOW}print(show(n32(-2147483648)), show(n32(5)), show(u32(1)), show(u32(0)))\n")
    assert run_module(text) == ["-2147483648\t-5\t4294967295\t0"]


# ---- mixed comparisons: by mathematical value ---------------------------------------------

COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
           ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "~=": lambda a, b: a != b}

MIXED = [  # (left type, right type, left values, right values)
    ("int32", "uint32", [-1, 0, 2**31 - 1, -2**31], [0, 1, 2**31 - 1, 2**31, 2**32 - 1]),
    ("int32", "uint64", [-1, 0, 5, -2**31], [0, 5, 2**63, 2**64 - 1]),
    ("int64", "uint64", [-1, 0, 2**63 - 1, -2**63], [0, 2**63 - 1, 2**63, 2**64 - 1]),
    ("uint64", "int64", [0, 2**63, 2**64 - 1], [-1, 0, 2**63 - 1]),
    ("uint32", "int64", [0, 2**32 - 1], [-1, 2**32 - 1, 2**32]),
]


@pytest.mark.parametrize("left, right, lvalues, rvalues", MIXED, ids=[f"{m[0]}-{m[1]}" for m in MIXED])
def test_mixed_integer_comparisons_answer_by_value(left, right, lvalues, rvalues):
    funcs = "\n".join(f"@aot\nlocal function c{i}(a: {left}, b: {right}): boolean return a {op} b end"
                      for i, op in enumerate(COMPARE))
    calls = []
    expected = []
    for a, b in itertools.product(lvalues, rvalues):
        args = f"{lua_literal(a, WIDTHS[left])}, {lua_literal(b, WIDTHS[right])}"
        calls.append("print(" + ", ".join(f"c{i}({args})" for i in range(len(COMPARE))) + ")")
        expected.append("\t".join(str(f(a, b)).lower() for f in COMPARE.values()))
    assert run_module(funcs + "\n" + "\n".join(calls) + "\n") == expected


def test_int64_beyond_2_53_meets_number_in_binary64():
    # the integer rounds to binary64 first: 2^53 + 1 compares equal to 2^53
    text = ("@aot\nlocal function eq(a: int64, b: number): boolean return a == b end\n"
            "@aot\nlocal function lt(a: int64, b: number): boolean return a < b end\n"
            "print(eq(9007199254740993LL, 2^53), lt(9007199254740993LL, 2^53), eq(-1LL, -1), lt(5LL, 0/0))\n")
    assert run_module(text) == ["true\tfalse\ttrue\tfalse"]


def test_binary32_meets_integers_in_binary64():
    text = ("@aot\nlocal function lt(a: float, b: int32): boolean return a < b end\n"
            "@aot\nlocal function eq(a: float, b: uint32): boolean return a == b end\n"
            "print(lt(16777216, 16777217), eq(16777216, 16777216), eq(0.5, 0), lt(-1, 0))\n")
    assert run_module(text) == ["true\ttrue\tfalse\ttrue"]


# ---- stores, narrowing and the switch initializer ------------------------------------------

FLOAT_INPUTS = [0.1, 1 / 3, 3.4028235677973366e38, 3.5e38, -0.0, 1e-46, 2.0**-149 * 1.5, 16777217.0,
                math.inf, -math.inf]


def test_float_local_narrows_round_to_nearest_even():
    text = ("@aot\nlocal function narrow(x: number): number\n    local y: float = x\n    return y\nend\n"
            + SHOW + "".join(f"print(show(narrow({x!r})))\n" for x in FLOAT_INPUTS).replace("inf", "math.huge"))
    with np.errstate(over="ignore"):
        expected = [float(np.float32(x)) for x in FLOAT_INPUTS]
    got = [float(v) for v in run_module(text)]
    assert [math.copysign(1, g) for g in got] == [math.copysign(1, e) for e in expected]
    assert got == expected


def test_float_result_narrows_and_nan_is_a_nan():
    text = ("@aot\nlocal function half(x: number): float return x / 2 end\n"
            "print(half(0.1) == 0.05 , half(0/0) ~= half(0/0))\n")
    assert run_module(text) == [f"{str(float(np.float32(0.05)) == 0.05).lower()}\ttrue"]


def test_switch_initializer_picks_arms_by_exact_value():
    text = """
@aot
local function classify(code: int32): int32
    local result: int32 = switch code do
        case -2147483648 -> 10
        case 1, 2 -> 20
        else -> 30
    end
    return result
end
@aot
local function wide(x: number): number
    local r = switch x do
        case 0 -> 1.5
        case -3 -> 2.5
        else -> 0
    end
    return r
end
print(classify(-2147483648), classify(1), classify(2), classify(3), classify(2147483647))
print(wide(0), wide(-0.0), wide(-3), wide(0.5), wide(0/0))
"""
    assert run_module(text) == ["10\t20\t20\t30\t30", "1.5\t1.5\t2.5\t0\t0"]


def test_bitwise_normalizes_uint32_and_keeps_64_bit_widths():
    text = """
@aot
local function mix(s: uint32): uint32
    local x = s ~ (s << 13)
    x = x ~ (x >> 17)
    x = x ~ (x << 5)
    return nupp.math.u32.fromI32(x)
end
@aot
local function rot64(a: uint64): uint64
    return (a << 1) | (a >> 63)
end
print(string.format("%.17g", mix(4294967295)), tostring(rot64(0x8000000000000001ULL)))
"""
    def xorshift(s):
        x = s & 0xFFFFFFFF
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        return x
    assert run_module(text) == [f"{xorshift(0xFFFFFFFF)}\t3ULL"]


def test_assert_failure_raises_its_message_with_position():
    text = ("local struct S\n  v: int32\nend\n@aot\nlocal function f(exclusive a: span.WriteSpan<S>, "
            "borrows b: span.Span<S>): nil\n    assert(#a == #b, \"length mismatch\")\nend\n"
            "local span = nupp.mem.span\nf(span.new(S, 2), span.new(S, 3))\n")
    text = "local span = nupp.mem.span\n" + text
    with pytest.raises(LuaRunError) as err:
        run_module(text)
    assert err.value.message == "typed.nupp:7: length mismatch"


def test_every_opcode_has_a_lua_rendering():
    from nupp.emit_lua.aot_to_lua import runtime_ops
    host = Host()
    kind = host.lua.eval("function(ops, op) return type(ops[op]) end")
    missing = [op for op in runtime_ops() if kind(host.internals.ops, op) != "function"]
    assert missing == []
