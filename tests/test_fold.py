"""scalar_ir/fold.py: the constant folder against independent oracles.

The folder is one of the three witnesses (interpreter, folder, native code),
so nothing here checks `evaluate` against itself.  Oracles: Python integers
(reduced modulo 2^N by a helper written here), truncating division corrected
to floor division, fractions.Fraction, numpy's float32/float64 (IEEE
arithmetic in C), tests/oracles.py (the runtime library's oracles), and
LuaJIT itself for the binary64 operators and the `bit` library, which is
what ordinary execution runs.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
import struct
from dataclasses import fields, is_dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nupp.errors import InternalError
from nupp.scalar_ir import fold
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.fold import FoldError, evaluate, fold_function, fold_module
from nupp.scalar_ir.numerics import EXP_COEFFICIENTS
from nupp.scalar_ir.ops import COMPARISONS, INT_WIDTHS, OPS
from nupp.scalar_ir.widths import Width
from tests import oracles as o

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)
NAN, INF = math.nan, math.inf


# ---------------------------------------------------------------------------
# Helpers (independent of the folder)
# ---------------------------------------------------------------------------


def reduce(value: int, width: Width) -> int:
    """value modulo 2^N, read with the width's signedness."""
    n = width.bits
    value %= 2 ** n
    if width in (I32, I64) and value >= 2 ** (n - 1):
        value -= 2 ** n
    return value


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def same_f64(actual, expected) -> bool:
    """Bit for bit, except that any NaN equals any NaN (LANGUAGE.md section 3:
    the payload of an ordinary NaN is not observable)."""
    if not isinstance(actual, float):
        return False
    if math.isnan(expected):
        return math.isnan(actual)
    return f64_bits(actual) == f64_bits(expected)


def f32_in(u: int) -> float:
    """The folder's value for a binary32 pattern (a NaN pattern is a NaN)."""
    return float(o.f32_of_bits(u))


def f32_out(x) -> int:
    """The bits of a folder binary32 value, read by numpy (NaN: canonical)."""
    assert isinstance(x, float)
    assert math.isnan(x) or float(np.float32(x)) == x, "not a binary32 value"
    return o.bits_of_f32(x)


def boundary_values(width: Width) -> list[int]:
    """0, +-1, +-2, MIN, MIN+1, MAX, MAX-1 and +-2^k+-1, reduced to the width."""
    n = width.bits
    raw = {0, 1, -1, 2, -2, 3, -3, 7, -7,
           -(2 ** (n - 1)), -(2 ** (n - 1)) + 1, 2 ** (n - 1) - 1, 2 ** (n - 1) - 2,
           2 ** n - 1, 2 ** n - 2}
    for k in (1, 4, 7, 8, 15, 16, 24, 31, 32, 33, 53, 62, 63):
        for d in (-1, 0, 1):
            raw |= {2 ** k + d, -(2 ** k) + d}
    return sorted({reduce(v, width) for v in raw})


def floor_divmod_oracle(a: int, b: int) -> tuple[int, int]:
    """Floor division built from truncating division (C's rule), corrected
    when the remainder is nonzero and the signs differ: not Python's //."""
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    r = a - q * b
    if r != 0 and (r < 0) != (b < 0):
        q -= 1
        r += b
    return q, r


def int_to_f64_oracle(n: int) -> int:
    """n rounded to 53 significant bits, ties to even, as an integer."""
    m = abs(n)
    shift = max(m.bit_length() - 53, 0)
    q, r = divmod(m, 1 << shift)
    half = (1 << shift) >> 1
    if shift and (r > half or (r == half and q & 1)):
        q += 1
    m = q << shift
    return -m if n < 0 else m


def assert_same_tree(actual, expected, path="tree"):
    """Structural equality of IR trees, floats by their bits (NaN: any NaN)
    and locations included (dataclass equality ignores `loc`, and NaN is not
    == NaN)."""
    assert type(actual) is type(expected), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
    if is_dataclass(actual):
        for f in fields(actual):
            assert_same_tree(getattr(actual, f.name), getattr(expected, f.name), f"{path}.{f.name}")
    elif isinstance(actual, tuple):
        assert len(actual) == len(expected), f"{path}: lengths differ"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_tree(a, e, f"{path}[{i}]")
    elif isinstance(actual, float):
        assert same_f64(actual, expected), f"{path}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


# ---------------------------------------------------------------------------
# Every op of the table has a rule
# ---------------------------------------------------------------------------

SAMPLE = {I32: -7, U32: 7, I64: -7, U64: 7, F64: -1.5, F32: 2.5, BOOL: True}


def sample_args(name: str) -> tuple:
    return tuple(SAMPLE[w] if not (name.startswith(("shl.", "shr.")) and i == 1) else 3
                 for i, w in enumerate(OPS[name].operands))


def value_of_width(value, width: Width) -> bool:
    if width is BOOL:
        return type(value) is bool
    if width.is_int:
        lo, hi = width.int_range
        return type(value) is int and lo <= value <= hi
    if type(value) is not float:
        return False
    return width is F64 or math.isnan(value) or float(np.float32(value)) == value


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_evaluates(name):
    result = evaluate(name, sample_args(name))
    assert value_of_width(result, OPS[name].result), (name, result)


def test_every_raising_op_raises_fold_error_with_the_run_time_text():
    raising = [name for name, info in OPS.items() if info.raises]
    assert sorted(raising) == sorted(f"{b}.{w}" for b in ("idiv", "mod") for w in INT_WIDTHS)
    for name in raising:
        with pytest.raises(FoldError, match="integer division by zero"):
            evaluate(name, (SAMPLE[OPS[name].operands[0]], 0))


def test_malformed_operands_are_refused():
    for name, args in [("add.i32", (2 ** 31, 1)), ("add.i32", (True, 1)), ("add.f64", (2 ** 53 + 1, 2.0)),
                       ("add.f64", (2 ** 1024, 2.0)), ("add.f32", (16777217, 1.0)), ("add.f64", ("1", 2.0)),
                       ("add.f32", (0.1, 1.0)), ("not.bool", (1,)), ("neg.i32", (1, 2)),
                       ("add.u32", (-1, 0))]:
        with pytest.raises(TypeError):
            evaluate(name, args)
    with pytest.raises(NotImplementedError):
        evaluate("frob.i32", (1,))


def test_exact_int_constants_are_admitted_at_float_widths():
    # the text form reads `2:f64` as an int
    assert same_f64(evaluate("add.f64", (1, 2.0)), 3.0)
    assert same_f64(evaluate("mul.f32", (3, 16777216)), 50331648.0)
    assert same_f64(evaluate("promote.f32.f64", (-5,)), -5.0)


def test_the_folder_imports_nothing_from_tests():
    tree = ast.parse(Path(fold.__file__).read_text())
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in imported if "tests" in m.split(".") or "oracles" in m], imported


# ---------------------------------------------------------------------------
# Integer arithmetic: every pair of boundary values, every width
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("width", INT_WIDTHS, ids=str)
def test_wrapping_arithmetic_over_boundary_pairs(width):
    values = boundary_values(width)
    for a in values:
        assert evaluate(f"neg.{width}", (a,)) == reduce(-a, width)
        for b in values:
            assert evaluate(f"add.{width}", (a, b)) == reduce(a + b, width), (a, b)
            assert evaluate(f"sub.{width}", (a, b)) == reduce(a - b, width), (a, b)
            assert evaluate(f"mul.{width}", (a, b)) == reduce(a * b, width), (a, b)


@pytest.mark.parametrize("width", INT_WIDTHS, ids=str)
def test_floor_division_over_boundary_pairs(width):
    values = boundary_values(width)
    for a, b in itertools.product(values, values):
        if b == 0:
            for base in ("idiv", "mod"):
                with pytest.raises(FoldError):
                    evaluate(f"{base}.{width}", (a, b))
            continue
        q, r = evaluate(f"idiv.{width}", (a, b)), evaluate(f"mod.{width}", (a, b))
        oracle_q, oracle_r = floor_divmod_oracle(a, b)
        assert (q, r) == (reduce(a // b, width), a % b), (a, b)
        assert (q, r) == (reduce(oracle_q, width), oracle_r), (a, b)
        assert r == 0 or (r < 0) == (b < 0), "the remainder takes the divisor's sign"
        assert abs(r) < abs(b)


@pytest.mark.parametrize("width", [I32, I64], ids=str)
def test_floor_division_signs(width):
    # (a, b) -> (a // b, a % b) for every sign combination, exact and inexact
    table = {(7, 2): (3, 1), (-7, 2): (-4, 1), (7, -2): (-4, -1), (-7, -2): (3, -1),
             (6, 3): (2, 0), (-6, 3): (-2, 0), (6, -3): (-2, 0), (-6, -3): (2, 0),
             (0, -5): (0, 0), (1, -5): (-1, -4), (-1, 5): (-1, 4), (-1, -5): (0, -1)}
    for (a, b), (q, r) in table.items():
        assert evaluate(f"idiv.{width}", (a, b)) == q, (a, b)
        assert evaluate(f"mod.{width}", (a, b)) == r, (a, b)
    lo, hi = width.int_range
    assert evaluate(f"idiv.{width}", (lo, -1)) == lo  # MIN // -1 wraps to MIN
    assert evaluate(f"mod.{width}", (lo, -1)) == 0
    assert evaluate(f"idiv.{width}", (lo, 1)) == lo
    assert evaluate(f"idiv.{width}", (hi, -1)) == -hi
    assert evaluate(f"neg.{width}", (lo,)) == lo
    assert evaluate(f"mul.{width}", (lo, -1)) == lo


@pytest.mark.parametrize("width", [U32, U64], ids=str)
def test_unsigned_division(width):
    top = width.int_range[1]
    assert evaluate(f"idiv.{width}", (top, 2)) == top // 2
    assert evaluate(f"mod.{width}", (top, 2)) == 1
    assert evaluate(f"idiv.{width}", (7, top)) == 0
    assert evaluate(f"mod.{width}", (7, top)) == 7
    assert evaluate(f"sub.{width}", (0, 1)) == top
    assert evaluate(f"neg.{width}", (1,)) == top


@pytest.mark.slow
@pytest.mark.parametrize("width", INT_WIDTHS, ids=str)
@settings(max_examples=3000, deadline=None)
@given(data=st.data())
def test_integer_arithmetic_on_drawn_pairs(width, data):
    lo, hi = width.int_range
    a, b = data.draw(st.integers(lo, hi)), data.draw(st.integers(lo, hi))
    assert evaluate(f"add.{width}", (a, b)) == reduce(a + b, width)
    assert evaluate(f"mul.{width}", (a, b)) == reduce(a * b, width)
    if b:
        assert evaluate(f"idiv.{width}", (a, b)) == reduce(floor_divmod_oracle(a, b)[0], width)
        assert evaluate(f"mod.{width}", (a, b)) == floor_divmod_oracle(a, b)[1]


# ---------------------------------------------------------------------------
# Bitwise operators and shifts
# ---------------------------------------------------------------------------

SHIFT_COUNTS = [0, 1, 2, 5, 31, 32, 33, 63, 64, 65, 100, -1, -31, -32, -33, -64,
                -(2 ** 31), 2 ** 31 - 1]


@pytest.mark.parametrize("width", [I32, I64, U64], ids=str)
def test_bitwise_over_boundary_pairs(width):
    n = width.bits
    mask = 2 ** n - 1
    values = boundary_values(width)
    for a in values:
        ua = a % 2 ** n
        assert evaluate(f"bnot.{width}", (a,)) == reduce(mask - ua, width)
        for b in values:
            ub = b % 2 ** n
            # bit by bit on the unsigned patterns
            bits = [((ua >> i) & 1, (ub >> i) & 1) for i in range(n)]
            want_and = sum((x & y) << i for i, (x, y) in enumerate(bits))
            want_or = sum((x | y) << i for i, (x, y) in enumerate(bits))
            want_xor = sum((x ^ y) << i for i, (x, y) in enumerate(bits))
            assert evaluate(f"band.{width}", (a, b)) == reduce(want_and, width)
            assert evaluate(f"bor.{width}", (a, b)) == reduce(want_or, width)
            assert evaluate(f"bxor.{width}", (a, b)) == reduce(want_xor, width)
        for c in SHIFT_COUNTS:
            k = c % n  # the count's low 5 or 6 bits
            assert evaluate(f"shl.{width}", (a, c)) == reduce(ua * 2 ** k, width), (a, c)
            assert evaluate(f"shr.{width}", (a, c)) == reduce(ua // 2 ** k, width), (a, c)


def test_bitwise_examples():
    assert evaluate("shr.i32", (-1, 0)) == -1
    assert evaluate("shr.i32", (-1, 1)) == 2 ** 31 - 1
    assert evaluate("shr.i32", (-1, 32)) == -1  # count 32 uses its low 5 bits: 0
    assert evaluate("shl.i32", (1, 31)) == -(2 ** 31)
    assert evaluate("shl.i32", (1, 32)) == 1
    assert evaluate("shr.i64", (-1, 1)) == 2 ** 63 - 1
    assert evaluate("shr.i64", (-1, 64)) == -1
    assert evaluate("shl.u64", (1, 63)) == 2 ** 63
    assert evaluate("shl.i64", (1, 63)) == -(2 ** 63)
    assert evaluate("bnot.i32", (0,)) == -1
    assert evaluate("bnot.u64", (0,)) == 2 ** 64 - 1
    assert evaluate("band.i32", (-1, 2 ** 31 - 1)) == 2 ** 31 - 1


# ---------------------------------------------------------------------------
# Comparisons, mixed widths included
# ---------------------------------------------------------------------------

PY_COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
              "le": operator.le, "gt": operator.gt, "ge": operator.ge}


@pytest.mark.parametrize("width", INT_WIDTHS, ids=str)
def test_integer_comparisons_over_boundary_pairs(width):
    values = boundary_values(width)
    for a, b in itertools.product(values, values):
        fa, fb = Fraction(a), Fraction(b)
        for c in COMPARISONS:
            assert evaluate(f"{c}.{width}", (a, b)) is PY_COMPARE[c](fa, fb), (c, a, b)


def test_int32_with_uint32_compares_in_int64():
    signed = [-(2 ** 31), -1, 0, 1, 2 ** 31 - 1]
    unsigned = [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1]
    for a, b in itertools.product(signed, unsigned):
        wa = evaluate("widen.i32.i64", (a,))
        wb = evaluate("widen.u32.i64", (b,))
        assert (wa, wb) == (a, b)
        for c in COMPARISONS:
            assert evaluate(f"{c}.i64", (wa, wb)) is PY_COMPARE[c](Fraction(a), Fraction(b))
            assert evaluate(f"{c}.i64", (wb, wa)) is PY_COMPARE[c](Fraction(b), Fraction(a))
    # C's usual conversions would put -1 above 0 here
    assert evaluate("lt.i64", (evaluate("widen.i32.i64", (-1,)), evaluate("widen.u32.i64", (0,))))


def test_signed_with_uint64_compares_by_value():
    signed = [-(2 ** 63), -(2 ** 63) + 1, -1, 0, 1, 2 ** 63 - 1]
    unsigned = [0, 1, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1]
    for a, b in itertools.product(signed, unsigned):
        for c in COMPARISONS:
            assert evaluate(f"{c}.i64.u64", (a, b)) is PY_COMPARE[c](Fraction(a), Fraction(b))
            assert evaluate(f"{c}.u64.i64", (b, a)) is PY_COMPARE[c](Fraction(b), Fraction(a))
    assert evaluate("lt.i64.u64", (-1, 2 ** 64 - 1)) is True
    assert evaluate("eq.i64.u64", (-1, 2 ** 64 - 1)) is False
    assert evaluate("gt.u64.i64", (2 ** 63, 2 ** 63 - 1)) is True


def f64_compare_oracle(c: str, a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return c == "ne"
    # exact values, the infinities beyond every finite one
    key = lambda x: (math.copysign(1, x), 0) if math.isinf(x) else (0, Fraction(x))  # noqa: E731
    ka, kb = key(a), key(b)
    return PY_COMPARE[c](ka, kb)


def test_int64_beyond_2_pow_53_compares_with_number_in_binary64():
    ints = [2 ** 53 - 1, 2 ** 53, 2 ** 53 + 1, 2 ** 53 + 2, 2 ** 53 + 3, 2 ** 63 - 1, -(2 ** 63),
            -(2 ** 53 + 1), 2 ** 62 + 2 ** 9 + 1, 0, -1]
    numbers = [2.0 ** 53, 2.0 ** 53 + 2, 2.0 ** 53 + 4, 2.0 ** 63, -(2.0 ** 63), 9007199254740991.0,
               -(2.0 ** 53), 0.5, -0.0, INF, -INF, NAN]
    for n, y in itertools.product(ints, numbers):
        x = evaluate("round.i64.f64", (n,))
        assert x == int_to_f64_oracle(n)
        for c in COMPARISONS:
            want = f64_compare_oracle(c, float(Fraction(int_to_f64_oracle(n))), y)
            assert evaluate(f"{c}.f64", (x, y)) is want, (c, n, y)
    # binary64's exactness boundary: 2^53 + 1 meets 2^53 as equal
    assert evaluate("eq.f64", (evaluate("round.i64.f64", (2 ** 53 + 1,)), 2.0 ** 53)) is True
    assert evaluate("eq.f64", (evaluate("round.u64.f64", (2 ** 64 - 1,)), 2.0 ** 64)) is True


def test_binary32_with_integer_compares_in_binary64():
    ints = [(I32, -(2 ** 31)), (I32, -1), (I32, 0), (I32, 1), (I32, 16777217), (I32, 2 ** 31 - 1),
            (U32, 2 ** 32 - 1), (U32, 16777216), (U32, 3)]
    for u, (width, n) in itertools.product(o.INTERESTING_F32_BITS, ints):
        x = evaluate("promote.f32.f64", (f32_in(u),))
        y = evaluate(f"promote.{width}.f64", (n,))
        assert y == n
        for c in COMPARISONS:
            if o.is_nan_bits(u):
                want = c == "ne"
            elif o.is_inf_bits(u):
                want = PY_COMPARE[c](-1 if o.is_negative_bits(u) else 1, 0)
            else:
                want = PY_COMPARE[c](o.fraction_of_bits(u), Fraction(n))
            assert evaluate(f"{c}.f64", (x, y)) is want, (c, hex(u), n)
    # 16777217 is no binary32 value: as a number it is above 2^24
    assert evaluate("lt.f64", (float(2 ** 24), evaluate("promote.i32.f64", (16777217,))))


F64_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.0, 3.0, -3.0, 5.0, -5.0, 5.5, -5.5,
              0.1, 1e300, -1e300, 1e-300, 5e-324, -5e-324, 2.0 ** 53, 2.0 ** 53 + 2, 2.0 ** 63,
              1.7976931348623157e308, INF, -INF, NAN]


def test_f64_comparisons_over_all_pairs():
    for a, b in itertools.product(F64_VALUES, F64_VALUES):
        for c in COMPARISONS:
            assert evaluate(f"{c}.f64", (a, b)) is f64_compare_oracle(c, a, b), (c, a, b)


def test_boolean_ops():
    for a, b in itertools.product([False, True], repeat=2):
        assert evaluate("and.bool", (a, b)) is (a and b)
        assert evaluate("or.bool", (a, b)) is (a or b)
        assert evaluate("eq.bool", (a, b)) is (a == b)
        assert evaluate("ne.bool", (a, b)) is (a != b)
    assert evaluate("not.bool", (True,)) is False
    assert evaluate("not.bool", (False,)) is True


# ---------------------------------------------------------------------------
# binary64 arithmetic: numpy (IEEE in C) and LuaJIT as oracles
# ---------------------------------------------------------------------------


def numpy_f64(name: str, *args: float) -> float:
    a = [np.float64(x) for x in args]
    with np.errstate(all="ignore"):
        result = {
            "add": lambda: a[0] + a[1],
            "sub": lambda: a[0] - a[1],
            "mul": lambda: a[0] * a[1],
            "div": lambda: a[0] / a[1],
            "idiv": lambda: np.floor(a[0] / a[1]),
            "mod": lambda: a[0] - np.floor(a[0] / a[1]) * a[1],
            "neg": lambda: -a[0],
            "sqrt": lambda: np.sqrt(a[0]),
            "abs": lambda: np.abs(a[0]),
            "floor": lambda: np.floor(a[0]),
            "ceil": lambda: np.ceil(a[0]),
            "min": lambda: o.f64_min_max(args[0], args[1], True),
            "max": lambda: o.f64_min_max(args[0], args[1], False),
        }[name]()
    return float(result)


F64_BINARY = ["add", "sub", "mul", "div", "idiv", "mod", "min", "max"]
F64_UNARY = ["neg", "sqrt", "abs", "floor", "ceil"]


@pytest.mark.parametrize("name", F64_BINARY)
def test_f64_binary_over_all_pairs(name):
    for a, b in itertools.product(F64_VALUES, F64_VALUES):
        result = evaluate(f"{name}.f64", (a, b))
        assert same_f64(result, numpy_f64(name, a, b)), (name, a, b, result)


@pytest.mark.parametrize("name", F64_UNARY)
def test_f64_unary(name):
    for a in F64_VALUES + [0.3, -0.3, 2.5, -2.5, 4503599627370495.5, -4503599627370495.5, 2.0]:
        result = evaluate(f"{name}.f64", (a,))
        assert same_f64(result, numpy_f64(name, a)), (name, a, result)


def test_f64_floor_division_and_modulo_edges():
    # (a, b) -> (a // b, a % b) under Lua 5.1's definitions
    table = [
        (5.0, INF, 0.0, NAN), (-5.0, INF, -0.0, NAN), (5.0, -INF, -0.0, NAN),
        (5.0, 0.0, INF, NAN), (-5.0, 0.0, -INF, NAN), (5.0, -0.0, -INF, NAN),
        (0.0, 0.0, NAN, NAN), (INF, 1.0, INF, NAN), (-INF, 2.0, -INF, NAN), (NAN, 1.0, NAN, NAN),
        (1.0, NAN, NAN, NAN), (0.0, 1.0, 0.0, 0.0), (-0.0, 1.0, -0.0, 0.0), (-0.0, -1.0, 0.0, 0.0),
        (0.0, -1.0, -0.0, 0.0),
        (5.5, 2.0, 2.0, 1.5), (-5.5, 2.0, -3.0, 0.5), (5.5, -2.0, -3.0, -0.5), (-5.5, -2.0, 2.0, -1.5),
        (7.0, 7.0, 1.0, 0.0), (-7.0, 7.0, -1.0, 0.0), (1e300, 1e-300, INF, -INF),
    ]
    for a, b, q, r in table:
        assert same_f64(evaluate("idiv.f64", (a, b)), q), (a, b)
        assert same_f64(evaluate("mod.f64", (a, b)), r), (a, b)
    assert same_f64(evaluate("div.f64", (-0.0, 5.0)), -0.0)
    assert same_f64(evaluate("div.f64", (1.0, -0.0)), -INF)
    assert same_f64(evaluate("div.f64", (-INF, -0.0)), INF)
    assert same_f64(evaluate("ceil.f64", (-0.5,)), -0.0)
    assert same_f64(evaluate("floor.f64", (-0.0,)), -0.0)
    assert same_f64(evaluate("sqrt.f64", (-0.0,)), -0.0)
    assert math.isnan(evaluate("sqrt.f64", (-1.0,)))
    assert math.isnan(evaluate("sqrt.f64", (-INF,)))


def test_f64_min_max_rules():
    for name, want_min in (("min", True), ("max", False)):
        for a, b in itertools.product(F64_VALUES, F64_VALUES):
            assert same_f64(evaluate(f"{name}.f64", (a, b)), o.f64_min_max(a, b, want_min))
    assert same_f64(evaluate("min.f64", (0.0, -0.0)), -0.0)
    assert same_f64(evaluate("min.f64", (-0.0, 0.0)), -0.0)
    assert same_f64(evaluate("max.f64", (0.0, -0.0)), 0.0)
    assert same_f64(evaluate("max.f64", (-0.0, 0.0)), 0.0)
    assert math.isnan(evaluate("min.f64", (1.0, NAN)))
    assert math.isnan(evaluate("max.f64", (NAN, 1.0)))


@settings(max_examples=300, deadline=None)
@given(a=st.floats(), b=st.floats(), name=st.sampled_from(F64_BINARY + F64_UNARY))
def test_f64_on_drawn_values(a, b, name):
    args = (a, b) if name in F64_BINARY else (a,)
    assert same_f64(evaluate(f"{name}.f64", args), numpy_f64(name, *args))


# LuaJIT: what ordinary execution computes.  Results come back as bit
# patterns, so the sign of a zero survives the trip.
LUAJIT_F64 = r"""
local ffi = require("ffi")
local view = ffi.new("union { double d; uint64_t u; }")
local function bits(x) view.d = x; return tostring(view.u) end
local floor, ceil, sqrt, abs = math.floor, math.ceil, math.sqrt, math.abs
return {
    add = function(a, b) return bits(a + b) end,
    sub = function(a, b) return bits(a - b) end,
    mul = function(a, b) return bits(a * b) end,
    div = function(a, b) return bits(a / b) end,
    idiv = function(a, b) return bits(floor(a / b)) end,
    mod = function(a, b) return bits(a % b) end,
    neg = function(a) return bits(-a) end,
    sqrt = function(a) return bits(sqrt(a)) end,
    abs = function(a) return bits(abs(a)) end,
    floor = function(a) return bits(floor(a)) end,
    ceil = function(a) return bits(ceil(a)) end,
    band = function(a, b) return bit.band(a, b) end,
    bor = function(a, b) return bit.bor(a, b) end,
    bxor = function(a, b) return bit.bxor(a, b) end,
    bnot = function(a) return bit.bnot(a) end,
    shl = function(a, b) return bit.lshift(a, b) end,
    shr = function(a, b) return bit.rshift(a, b) end,
}
"""


@pytest.fixture(scope="module")
def luajit():
    lupa = pytest.importorskip("lupa")
    runtime = lupa.luajit21.LuaRuntime()
    runtime.execute("jit.off()")  # the interpreter; traces are test_runtime_math's business
    return runtime.execute(LUAJIT_F64)


def from_lua_bits(text: str) -> float:
    return struct.unpack("<d", struct.pack("<Q", int(text.rstrip("ULL"))))[0]


@pytest.mark.parametrize("name", F64_BINARY[:6] + F64_UNARY)
def test_f64_against_luajit(luajit, name):
    fn = luajit[name]
    pairs = itertools.product(F64_VALUES, F64_VALUES) if name in F64_BINARY else \
        ((a,) for a in F64_VALUES + [0.3, -0.3, 2.5, -2.5])
    for args in pairs:
        assert same_f64(evaluate(f"{name}.f64", args), from_lua_bits(fn(*args))), (name, args)


@pytest.mark.parametrize("name", ["band", "bor", "bxor", "shl", "shr", "bnot"])
def test_int32_bitwise_against_luajit_bit(luajit, name):
    fn = luajit[name]
    values = boundary_values(I32)
    if name == "bnot":
        for a in values:
            assert evaluate("bnot.i32", (a,)) == fn(a)
        return
    seconds = SHIFT_COUNTS if name in ("shl", "shr") else values
    for a, b in itertools.product(values, seconds):
        assert evaluate(f"{name}.i32", (a, b)) == fn(a, b), (name, a, b)


# ---------------------------------------------------------------------------
# nupp.math.f32: every op over every pair of interesting binary32 values
# ---------------------------------------------------------------------------

INTERESTING = np.array(o.INTERESTING_F32_BITS, dtype=np.uint32)


@pytest.mark.parametrize("name", sorted(o.BINARY_ORACLES))
def test_f32_binary_over_all_pairs(name):
    a, b = (m.ravel() for m in np.meshgrid(INTERESTING, INTERESTING, indexing="ij"))
    expected = o.BINARY_ORACLES[name](a, b)
    for x, y, want in zip(a, b, expected):
        got = f32_out(evaluate(f"{name}.f32", (f32_in(int(x)), f32_in(int(y)))))
        assert got == int(want), f"{name}({int(x):08x}, {int(y):08x}) = {got:08x}, want {int(want):08x}"


@pytest.mark.parametrize("name", sorted(o.UNARY_ORACLES) + ["exp"])
def test_f32_unary_over_interesting_values(name):
    patterns = np.concatenate([INTERESTING, np.array(o.HOSTILE_NAN_BITS, dtype=np.uint32)])
    if name == "exp":
        expected = [o.f32_exp_bits(int(u)) for u in patterns]
    else:
        expected = o.UNARY_ORACLES[name](patterns)
    for x, want in zip(patterns, expected):
        got = f32_out(evaluate(f"{name}.f32", (f32_in(int(x)),)))
        assert got == int(want), f"{name}({int(x):08x}) = {got:08x}, want {int(want):08x}"


def test_f32_nan_results_are_canonical():
    nan_in = f32_in(0xFFD00001)
    for name, info in OPS.items():
        if info.result is F32 and F32 in info.operands:
            args = tuple(nan_in for _ in info.operands)
            assert evaluate("bits.f32.u32", (evaluate(name, args),)) == o.CANONICAL_NAN, name
    assert evaluate("bits.f32.u32", (evaluate("sub.f32", (INF, INF)),)) == o.CANONICAL_NAN
    assert evaluate("bits.f32.u32", (evaluate("div.f32", (0.0, 0.0)),)) == o.CANONICAL_NAN
    assert evaluate("bits.f32.u32", (evaluate("sqrt.f32", (-1.0,)),)) == o.CANONICAL_NAN
    assert evaluate("bits.f32.u32", (evaluate("narrow.f64.f32", (-NAN,)),)) == o.CANONICAL_NAN


def test_f32_min_max_order_signed_zeros():
    assert f32_out(evaluate("min.f32", (0.0, -0.0))) == 0x80000000
    assert f32_out(evaluate("min.f32", (-0.0, 0.0))) == 0x80000000
    assert f32_out(evaluate("max.f32", (-0.0, 0.0))) == 0x00000000
    assert f32_out(evaluate("max.f32", (0.0, -0.0))) == 0x00000000
    assert math.isnan(evaluate("min.f32", (1.0, NAN)))


f32_patterns = st.integers(0, 2 ** 32 - 1)


@settings(max_examples=300, deadline=None)
@given(a=f32_patterns, b=f32_patterns, name=st.sampled_from(sorted(o.BINARY_ORACLES)))
def test_f32_binary_on_drawn_patterns(a, b, name):
    want = int(o.BINARY_ORACLES[name]([a], [b])[0])
    assert f32_out(evaluate(f"{name}.f32", (f32_in(a), f32_in(b)))) == want


# ---- fma --------------------------------------------------------------------


def exact_f32(significand: int, exponent: int, negative: bool = False) -> int:
    """The pattern of +-significand * 2^exponent, which must be a binary32 value."""
    value = Fraction(significand) * Fraction(2) ** exponent
    pattern = o.round_to_f32_bits(value)
    assert o.fraction_of_bits(pattern) == value
    return pattern | (o.SIGN_BIT if negative else 0)


def hard_fma_cases() -> list[tuple[int, int, int]]:
    """Triples whose binary64 a * b + c lands on a binary32 midpoint that the
    exact value is not on, so that rounding twice gives another answer."""
    below_one = exact_f32(2 ** 24 - 2, -24)  # 1 - 2^-23
    just_above = exact_f32(2 ** 23 + 1, -47)  # 2^-24 (1 + 2^-23)
    # (1 + 2^-23)(1 - 2^-23) = 1 - 2^-46: the product is 2^-24 - 2^-70
    cases = [
        # 1 + 2^-23 + 2^-24 - 2^-70: below the midpoint, binary64 rounds onto
        # it and ties go to the even 1 + 2^-22
        (just_above, below_one, exact_f32(2 ** 23 + 1, -23)),
        (just_above | o.SIGN_BIT, below_one, exact_f32(2 ** 23 + 1, -23, True)),
        # the same shape at 2^100
        (exact_f32(2 ** 23 + 1, -47 + 100), below_one, exact_f32(2 ** 23 + 1, -23 + 100)),
    ]
    # 8384513 * 8392705 = 2^46 + 1: the product's last bit is below binary64's reach
    x, y = 8384513, 8392705
    assert x * y == 2 ** 46 + 1
    cases.append((exact_f32(x, -23), exact_f32(y, -23), exact_f32(1, 24)))  # 2^24 + 1 + 2^-46
    cases.append((exact_f32(x, -98), exact_f32(y, -98), exact_f32(1, -130)))  # a subnormal tie
    return cases


def test_fma_hard_cases_defeat_double_rounding():
    for a, b, c in hard_fma_cases():
        want = o.f32_fma_bits(a, b, c)
        assert want != o.double_rounded_fma_bits(a, b, c), "the case must be hard"
        got = f32_out(evaluate("fma.f32", (f32_in(a), f32_in(b), f32_in(c))))
        assert got == want, f"fma({a:08x}, {b:08x}, {c:08x}) = {got:08x}, want {want:08x}"


def test_fma_special_cases():
    big = float(np.finfo(np.float32).max)
    cases = [
        ((-0.0, 1.0, -0.0), 0x80000000), ((0.0, 1.0, -0.0), 0x00000000),
        ((-0.0, -1.0, -0.0), 0x00000000), ((1.0, 1.0, -1.0), 0x00000000),
        ((-1.0, 1.0, 1.0), 0x00000000), ((1.0, -0.0, -0.0), 0x80000000),
        ((INF, 0.0, 1.0), o.CANONICAL_NAN), ((INF, 1.0, -INF), o.CANONICAL_NAN),
        ((INF, -1.0, -INF), 0xFF800000), ((1.0, 1.0, INF), 0x7F800000),
        ((big, 2.0, -big), o.bits_of_f32(big)),  # no overflow in the middle
        ((big, 2.0, 0.0), 0x7F800000),
        ((2.0 ** -149, 0.5, 0.0), 0x00000000), ((2.0 ** -149, 0.75, 0.0), 0x00000001),
        ((2.0 ** -149, -0.5, 0.0), 0x80000000),  # a nonzero result that rounds to zero keeps its sign
    ]
    for args, want in cases:
        got = f32_out(evaluate("fma.f32", args))
        assert got == want, f"fma{args} = {got:08x}, want {want:08x}"
        assert o.f32_fma_bits(*(o.bits_of_f32(x) for x in args)) == want


def interesting_triples(patterns):
    return itertools.product(patterns, repeat=3)


@settings(max_examples=300, deadline=None)
@given(a=f32_patterns, b=f32_patterns, c=f32_patterns)
def test_fma_on_drawn_patterns(a, b, c):
    got = f32_out(evaluate("fma.f32", (f32_in(a), f32_in(b), f32_in(c))))
    assert got == o.f32_fma_bits(a, b, c)


@settings(max_examples=300, deadline=None)
@given(sa=st.integers(2 ** 23, 2 ** 24 - 1), sb=st.integers(2 ** 23, 2 ** 24 - 1),
       sc=st.integers(2 ** 23, 2 ** 24 - 1), k=st.integers(-150, 103),
       signs=st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_fma_near_midpoints_on_drawn_significands(sa, sb, sc, k, signs):
    """a * b near 2^k and c's half-ulp at 2^k: the sums sit near binary32
    midpoints in every binade, subnormal results and overflow included."""
    a_exp = (k - 47) // 2
    a = exact_f32(sa, a_exp, signs[0])
    b = exact_f32(sb, k - 47 - a_exp, signs[1])
    c = exact_f32(sc, min(k + 1, 104), signs[2])
    got = f32_out(evaluate("fma.f32", (f32_in(a), f32_in(b), f32_in(c))))
    assert got == o.f32_fma_bits(a, b, c)


# ---- exp --------------------------------------------------------------------


def test_exp_coefficients_are_one_over_k_factorial_rounded():
    for k, coefficient in enumerate(EXP_COEFFICIENTS):
        assert f32_out(coefficient) == o.EXP_COEFFICIENT_BITS[k]
        assert coefficient == float(np.float32(1.0) / np.float32(math.factorial(k)))


def test_exp_at_special_inputs():
    inputs = [-104.0, -105.0, -1000.0, 88.0, 89.0, 1000.0, 0.0, -0.0, 1.0, -1.0, INF, -INF, NAN,
              2.0 ** -149, -(2.0 ** -149), 1e-30, -1e-30, 87.99, -103.97, 0.5]
    results = {}
    for x in inputs:
        got = f32_out(evaluate("exp.f32", (float(np.float32(x)),)))
        assert got == o.f32_exp_bits(o.bits_of_f32(x)), x
        results[x] = got
    assert results[0.0] == results[-0.0] == 0x3F800000
    assert results[-105.0] == results[-104.0] == results[-INF] == results[-1000.0]
    assert results[89.0] == results[88.0] == results[INF] == results[1000.0]
    assert results[NAN] == o.CANONICAL_NAN
    assert abs(f32_in(results[1.0]) - math.e) < 1e-4  # seven squarings amplify the error


@settings(max_examples=200, deadline=None)
@given(x=st.floats(width=32))
def test_exp_on_drawn_values(x):
    got = f32_out(evaluate("exp.f32", (x,)))
    assert got == o.f32_exp_bits(o.bits_of_f32(x))


@pytest.mark.slow
def test_exp_over_a_sweep_of_patterns():
    for u in range(0, 2 ** 32, 2 ** 32 // 20011):
        got = f32_out(evaluate("exp.f32", (f32_in(u),)))
        assert got == o.f32_exp_bits(u), hex(u)


# ---------------------------------------------------------------------------
# Conversions at their edges
# ---------------------------------------------------------------------------

WRAP_INPUTS = [NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.0 ** 31,
               -(2.0 ** 31), 2.0 ** 31 - 1, 2.0 ** 31 + 0.5, 2.0 ** 32, 2.0 ** 32 + 5,
               -(2.0 ** 32) - 5, 4294967295.9, -4294967295.9, 4294967296.5, 2.0 ** 53,
               2.0 ** 53 + 2, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 64, 2.0 ** 64 + 4096, -(2.0 ** 64),
               2.0 ** 65 + 2.0 ** 13, 1e300, -1e300, 5e-324, -5e-324,
               1.7976931348623157e308, 123456789.75, -123456789.75]


@pytest.mark.parametrize("width", INT_WIDTHS, ids=str)
def test_wrap_at_edges(width):
    for x in WRAP_INPUTS:
        got = evaluate(f"wrap.f64.{width}", (x,))
        assert got == o.wrap_int(x, width.bits, width.is_signed), (width, x)
    assert evaluate(f"wrap.f64.{width}", (4294967295.9,)) == reduce(4294967295, width)
    assert evaluate(f"wrap.f64.{width}", (-1.5,)) == reduce(-1, width)


@settings(max_examples=300, deadline=None)
@given(x=st.floats(), width=st.sampled_from(INT_WIDTHS))
def test_wrap_on_drawn_doubles(x, width):
    assert evaluate(f"wrap.f64.{width}", (x,)) == o.wrap_int(x, width.bits, width.is_signed)


NARROW_INPUTS = [
    0.1, -0.1, 1 + 2.0 ** -24, 1 + 2.0 ** -24 + 2.0 ** -52, 1 + 3 * 2.0 ** -24, 1 - 2.0 ** -25,
    2.0 ** 128 - 2.0 ** 103, -(2.0 ** 128 - 2.0 ** 103), math.nextafter(2.0 ** 128 - 2.0 ** 103, 0),
    3.4028234663852886e38, 2.0 ** 128, 1e300, -1e300, 1.7976931348623157e308,
    2.0 ** -150, -(2.0 ** -150), math.nextafter(2.0 ** -150, 1), math.nextafter(2.0 ** -150, 0),
    3 * 2.0 ** -150, 2.0 ** -126 - 2.0 ** -150, 5e-324, -5e-324, 0.0, -0.0, INF, -INF, NAN, -NAN,
    16777217.0, 16777219.0, 1e-30, 1e30, 0.5, -1.5, 2.0 ** 31, 2.0 ** 32 + 5,
]


def test_narrow_at_edges():
    for x in NARROW_INPUTS:
        got = f32_out(evaluate("narrow.f64.f32", (x,)))
        assert got == o.round_double_to_f32_bits(x), x
    assert evaluate("narrow.f64.f32", (2.0 ** 128 - 2.0 ** 103,)) == INF  # the tie goes to even: up
    assert evaluate("narrow.f64.f32", (math.nextafter(2.0 ** 128 - 2.0 ** 103, 0),)) == \
        float(np.finfo(np.float32).max)
    assert evaluate("narrow.f64.f32", (2.0 ** -150,)) == 0.0


@settings(max_examples=300, deadline=None)
@given(x=st.floats())
def test_narrow_on_drawn_doubles(x):
    assert f32_out(evaluate("narrow.f64.f32", (x,))) == o.round_double_to_f32_bits(x)


def test_round_int64_and_uint64_to_f64():
    cases = [(I64, 2 ** 53 + 1), (I64, 2 ** 53 + 3), (I64, 2 ** 53 - 1), (I64, 2 ** 63 - 1),
             (I64, -(2 ** 63)), (I64, -(2 ** 53) - 1), (I64, 2 ** 54 + 2), (I64, 2 ** 54 + 6),
             (I64, 0), (I64, -1), (U64, 2 ** 64 - 1), (U64, 2 ** 63), (U64, 2 ** 64 - 2 ** 11),
             (U64, 2 ** 64 - 2 ** 10), (U64, 2 ** 64 - 2 ** 10 - 1), (U64, 0)]
    for width, n in cases:
        got = evaluate(f"round.{width}.f64", (n,))
        assert type(got) is float and Fraction(got) == int_to_f64_oracle(n), (width, n)
    assert evaluate("round.u64.f64", (2 ** 64 - 1,)) == 2.0 ** 64
    assert evaluate("round.i64.f64", (2 ** 53 + 1,)) == 2.0 ** 53
    assert evaluate("round.i64.f64", (2 ** 53 + 3,)) == 2.0 ** 53 + 4


@settings(max_examples=300, deadline=None)
@given(n=st.integers(-(2 ** 63), 2 ** 64 - 1))
def test_round_on_drawn_integers(n):
    width = I64 if n < 2 ** 63 else U64
    assert Fraction(evaluate(f"round.{width}.f64", (n,))) == int_to_f64_oracle(n)


def test_exact_conversions():
    for n in boundary_values(I32):
        assert same_f64(evaluate("promote.i32.f64", (n,)), float(Fraction(n)))
        assert evaluate("widen.i32.i64", (n,)) == n
        assert evaluate("reinterpret.i32.u32", (n,)) == o.same_bits_uint32(n)
    for n in boundary_values(U32):
        assert same_f64(evaluate("promote.u32.f64", (n,)), float(Fraction(n)))
        assert evaluate("widen.u32.i64", (n,)) == n
        assert evaluate("widen.u32.u64", (n,)) == n
        assert evaluate("reinterpret.u32.i32", (n,)) == o.same_bits_int32(n)
    for u in o.INTERESTING_F32_BITS:
        promoted = evaluate("promote.f32.f64", (f32_in(u),))
        if o.is_nan_bits(u):
            assert math.isnan(promoted)
        else:
            assert same_f64(promoted, float(o.f32_of_bits(u)))
    assert evaluate("reinterpret.i32.u32", (-1,)) == 2 ** 32 - 1
    assert evaluate("reinterpret.u32.i32", (2 ** 31,)) == -(2 ** 31)


def test_bits_and_frombits():
    for u in o.INTERESTING_F32_BITS + o.HOSTILE_NAN_BITS:
        x = evaluate("frombits.u32.f32", (u,))
        if o.is_nan_bits(u):
            assert math.isnan(x)
        else:
            assert f32_out(x) == u
        assert evaluate("bits.f32.u32", (x,)) == o.canonicalize_bits(u)
    assert evaluate("bits.f32.u32", (NAN,)) == 0x7FC00000
    assert evaluate("bits.f32.u32", (-0.0,)) == 0x80000000


@settings(max_examples=500, deadline=None)
@given(u=f32_patterns)
def test_bits_round_trip_on_drawn_patterns(u):
    assert evaluate("bits.f32.u32", (evaluate("frombits.u32.f32", (u,)),)) == o.canonicalize_bits(u)


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


def L(line: int, col: int = 1) -> ir.Loc:
    return ir.Loc(line, col)


def c(value, width, loc=ir.NO_LOC):
    return ir.Const(value, width, loc)


def op(name, *args, loc=ir.NO_LOC):
    return ir.Op(name, tuple(args), loc)


X = ir.Var("x", I32, L(1, 1))
MIN32 = -(2 ** 31)


def function_of(*body, params=(ir.Param("x", I32),), result=I32):
    return ir.Function("f", tuple(params), result, tuple(body))


def test_nested_constant_ops_fold_to_consts_at_the_op_locations():
    fn = function_of(
        ir.Let("a", I32, op("mul.i32", op("add.i32", X, c(2, I32), loc=L(2, 5)),
                            op("sub.i32", c(7, I32), c(4, I32), loc=L(2, 20)), loc=L(2, 3)), L(2)),
        ir.Let("b", I32, op("add.i32", op("mul.i32", c(3, I32), c(4, I32), loc=L(3, 9)),
                            op("neg.i32", c(MIN32, I32), loc=L(3, 15)), loc=L(3, 7)), L(3)),
        ir.Let("w", F64, op("div.f64", op("promote.i32.f64", c(1, I32), loc=L(4, 4)),
                            c(-0.0, F64), loc=L(4, 2)), L(4)),
        ir.Return(op("add.i32", X, c(1, I32), loc=L(5, 8)), L(5)),
    )
    expected = function_of(
        ir.Let("a", I32, op("mul.i32", op("add.i32", X, c(2, I32), loc=L(2, 5)),
                            c(3, I32, L(2, 20)), loc=L(2, 3)), L(2)),
        ir.Let("b", I32, c(12 + MIN32, I32, L(3, 7)), L(3)),
        ir.Let("w", F64, c(-INF, F64, L(4, 2)), L(4)),
        ir.Return(op("add.i32", X, c(1, I32), loc=L(5, 8)), L(5)),
    )
    folded = fold_function(fn)
    assert_same_tree(folded, expected)
    assert folded.body[3] is fn.body[3], "an unchanged statement is shared"


def test_division_by_zero_stays_unfolded():
    raising = op("idiv.i32", c(1, I32), c(0, I32), loc=L(2, 4))
    fn = function_of(
        ir.Let("q", I32, raising, L(2)),
        ir.Let("r", I32, op("add.i32", raising, op("add.i32", c(1, I32), c(1, I32), loc=L(3, 9)),
                            loc=L(3, 2)), L(3)),
        ir.Return(X),
    )
    folded = fold_function(fn)
    assert folded.body[0] is fn.body[0]
    assert_same_tree(folded.body[1].value, op("add.i32", raising, c(2, I32, L(3, 9)), loc=L(3, 2)))
    assert folded.body[1].value.args[0] is raising
    for name, width in (("idiv", U64), ("mod", I64), ("mod", U32)):
        stays = op(f"{name}.{width}", c(0, width), c(0, width))
        assert fold_function(function_of(ir.Return(stays))).body[0].value is stays


def test_short_circuit_folds_when_the_left_operand_decides():
    decided_false = op("and.bool", c(False, BOOL, L(2, 4)),
                       op("eq.i32", op("idiv.i32", X, c(0, I32)), c(0, I32)), loc=L(2, 3))
    decided_true = op("or.bool", op("not.bool", c(False, BOOL)),
                      op("lt.i32", X, c(0, I32)), loc=L(3, 3))
    undecided = op("and.bool", c(True, BOOL), op("lt.i32", X, c(0, I32)), loc=L(4, 3))
    both = op("or.bool", c(False, BOOL), op("lt.i32", c(1, I32), c(0, I32)), loc=L(5, 3))
    fn = function_of(*(ir.Let(f"v{i}", BOOL, e) for i, e in
                       enumerate([decided_false, decided_true, undecided, both])), result=None)
    folded = [s.value for s in fold_function(fn).body]
    assert_same_tree(folded[0], c(False, BOOL, L(2, 3)))
    assert_same_tree(folded[1], c(True, BOOL, L(3, 3)))
    assert folded[2] is undecided
    assert_same_tree(folded[3], c(False, BOOL, L(5, 3)))


def test_control_flow_is_kept_and_every_statement_kind_is_folded():
    two = op("add.i32", c(1, I32), c(1, I32), loc=L(9, 9))
    always = op("lt.i32", c(0, I32), c(1, I32), loc=L(2, 4))
    fn = ir.Function("g", (ir.Param("x", I32), ir.Param("out", ir.SpanType("P", True), "exclusive")),
                     None, (
        ir.If(always, (ir.Assign("x", two, L(3)),), (ir.Break(L(4)),), loc=L(2)),
        ir.For("i", two, op("mul.i32", c(3, I32), c(5, I32)), 1, (
            ir.Store("out", "i", "v", op("narrow.f64.f32", c(0.1, F64))),
            ir.While(op("ne.f64", c(NAN, F64), c(NAN, F64)), (ir.Break(),)),
        )),
        ir.Assert(op("eq.i32", two, c(2, I32)), "two", L(7)),
        ir.Eval(ir.Call("h", (two, X), I32)),
        ir.Return(None),
    ))
    folded = fold_function(fn)
    if_stmt, for_stmt, assert_stmt, eval_stmt, _ = folded.body
    assert isinstance(if_stmt, ir.If) and if_stmt.orelse == (ir.Break(L(4)),), "both branches stay"
    assert_same_tree(if_stmt.cond, c(True, BOOL, L(2, 4)))
    assert_same_tree(if_stmt.then[0].value, c(2, I32, L(9, 9)))
    assert_same_tree(for_stmt.start, c(2, I32, L(9, 9)))
    assert_same_tree(for_stmt.stop, c(15, I32))
    store, loop = for_stmt.body
    assert_same_tree(store.value, c(float(np.float32(0.1)), F32))
    assert_same_tree(loop.cond, c(True, BOOL))
    assert_same_tree(assert_stmt.cond, c(True, BOOL))
    assert_same_tree(eval_stmt.expr.args, (c(2, I32, L(9, 9)), X))


def test_nan_results_fold_to_nan_consts():
    fn = function_of(
        ir.Let("n", F64, op("mod.f64", c(5.0, F64), c(INF, F64), loc=L(2))),
        ir.Let("p", U32, op("bits.f32.u32", op("frombits.u32.f32", c(0xFFC00001, U32)), loc=L(3))),
        ir.Let("e", F32, op("exp.f32", op("narrow.f64.f32", c(NAN, F64)))),
        ir.Return(X))
    folded = fold_function(fn)
    assert folded.body[0].value.width is F64 and math.isnan(folded.body[0].value.value)
    assert_same_tree(folded.body[1].value, c(0x7FC00000, U32, L(3)))
    assert folded.body[2].value.width is F32 and math.isnan(folded.body[2].value.value)


def test_an_unchanged_function_is_returned_as_is():
    fn = function_of(ir.Return(op("add.i32", X, c(1, I32))))
    assert fold_function(fn) is fn


def test_fold_module_folds_every_function():
    f = function_of(ir.Return(op("add.i32", c(1, I32), c(2, I32))))
    g = ir.Function("g", (), U64, (ir.Return(op("sub.u64", c(0, U64), c(1, U64))),))
    module = ir.Module((ir.StructDef("P", (("v", "float"),)),), (f, g))
    folded = fold_module(module)
    assert folded.structs == module.structs
    assert_same_tree(folded.functions[0].body[0].value, c(3, I32))
    assert_same_tree(folded.functions[1].body[0].value, c(2 ** 64 - 1, U64))
    assert_same_tree(fold_function(f, module), folded.functions[0])


def test_ill_formed_constants_are_a_compiler_bug():
    fn = function_of(ir.Return(op("add.i32", c(1.5, I32), c(2, I32))))
    with pytest.raises(InternalError, match="fold"):
        fold_function(fn)
