"""The constant folder: one of the three witnesses of Nupp's arithmetic.

`evaluate(op, args)` computes one op of `ops.OPS` on Python values exactly as
LANGUAGE.md sections 3-5 define it, which is what LuaJIT's ordinary execution
and the native code compute; `fold_function` / `fold_module` replace every
`Op` whose operands are (after folding) all `Const` by the `Const` of its
result, keeping the op's source location.  In the IR's text form:

    return mul.i32(add.i32(%x, 2:i32), sub.i32(7:i32, 4:i32))
        becomes  return mul.i32(add.i32(%x, 2:i32), 3:i32)
    if and.bool(false, lt.i32(%x, 0:i32)) { ... }
        becomes  if false { ... }
    let %q: i32 = idiv.i32(1:i32, 0:i32)
        stays as it is: it raises "integer division by zero" at run time

An op that would raise at run time (integer `//` or `%` by zero) is left
unfolded, so the error happens at run time, if the program gets there.
`and.bool` / `or.bool` also fold when their left operand alone decides them
(the right one is never evaluated).  Only expressions fold: an `If` with a
constant condition keeps both branches, because the verifier and the golden
tests rely on the structure the lowering wrote.

Values, by width:

    i32 u32 i64 u64   Python int in the width's range
    f64               Python float
    f32               Python float exactly representable in binary32; every
                      binary32 NaN is float('nan') (its bits are 0x7FC00000)
    bool              Python bool

The folder is meant to be an independent reading of the spec: it shares no
code with runtime/lua/math.lua or tests/oracles.py.  binary32 rounding of a
binary64 value is C's `(float)x`, exactly rounded rationals (`fma`, the `exp`
coefficients) use integer arithmetic (both in numerics.py); Python's own float
operators supply binary64's, except where Python departs from IEEE 754
(division by zero, `math.floor` of an infinity, `math.sqrt` of a negative).
"""

from __future__ import annotations

import math
import operator
import struct
from dataclasses import replace
from fractions import Fraction
from typing import Callable

from nupp.errors import InternalError
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.numerics import (EXP_COEFFICIENTS, EXP_DEGREE, EXP_HIGH, EXP_LOW, EXP_SCALE,
                                     EXP_SQUARINGS, INF, NAN, f32_of_rational, round_f32)
from nupp.scalar_ir.ops import COMPARISONS, INT_WIDTHS, OPS, SHORT_CIRCUIT, check_rendered
from nupp.scalar_ir.transform import Transform
from nupp.scalar_ir.widths import CONVERSIONS, Width, holds_in_binary32

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)

CANONICAL_NAN_BITS = 0x7FC00000


class FoldError(Exception):
    """The op raises at run time for these operands (the message is the
    run-time error text); the folder leaves it for run time."""


# ---------------------------------------------------------------------------
# Integers: wrapping modulo 2^N, floor division
# ---------------------------------------------------------------------------


def _wrap(value: int, width: Width) -> int:
    """value reduced modulo 2^N, read with the width's signedness."""
    value &= (1 << width.bits) - 1
    if width.is_signed and value >> (width.bits - 1):
        value -= 1 << width.bits
    return value


def _idiv_int(a: int, b: int, width: Width) -> int:
    if b == 0:
        raise FoldError(OPS[f"idiv.{width}"].raises)
    return _wrap(a // b, width)  # Python's // floors; MIN // -1 = 2^(N-1) wraps to MIN


def _mod_int(a: int, b: int, width: Width) -> int:
    if b == 0:
        raise FoldError(OPS[f"mod.{width}"].raises)
    return _wrap(a % b, width)  # Python's % takes the divisor's sign; MIN % -1 = 0


def _shift_count(count: int, width: Width) -> int:
    return count & (width.bits - 1)  # the low 5 (32-bit) or 6 (64-bit) bits


def _shl(a: int, count: int, width: Width) -> int:
    return _wrap(a << _shift_count(count, width), width)


def _shr(a: int, count: int, width: Width) -> int:
    """Logical: shift the unsigned bit pattern, then read it back."""
    pattern = a & ((1 << width.bits) - 1)
    return _wrap(pattern >> _shift_count(count, width), width)


# ---------------------------------------------------------------------------
# binary64 where Python is not IEEE 754
# ---------------------------------------------------------------------------


def _is_finite(x: float) -> bool:
    return x - x == 0.0  # false for NaN and the infinities


def _div_f64(a: float, b: float) -> float:
    """IEEE division: Python raises ZeroDivisionError where IEEE answers."""
    if b == 0.0:
        if a != a or a == 0.0:
            return NAN
        negative = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
        return -INF if negative else INF
    return a / b


def _floor_f64(x: float) -> float:
    """IEEE floor: infinities, NaN and zeros unchanged; the sign kept."""
    if not _is_finite(x) or x == 0.0:
        return x
    return math.copysign(float(math.floor(x)), x)


def _ceil_f64(x: float) -> float:
    """IEEE ceil: ceil(-0.5) is -0."""
    if not _is_finite(x) or x == 0.0:
        return x
    return math.copysign(float(math.ceil(x)), x)


def _sqrt_f64(x: float) -> float:
    if x != x or x < 0.0:  # -0.0 is not < 0: sqrt(-0) = -0
        return NAN
    if x == INF:
        return INF
    return math.sqrt(x)


def _idiv_f64(a: float, b: float) -> float:
    return _floor_f64(_div_f64(a, b))


def _mod_f64(a: float, b: float) -> float:
    """Lua 5.1: a - floor(a / b) * b, each step rounded once (5 % inf is NaN)."""
    return a - _floor_f64(_div_f64(a, b)) * b


def _min_max(a: float, b: float, want_min: bool) -> float:
    """math.min / math.max and their binary32 twins: NaN if either is NaN,
    and -0 < +0 (two equal operands differ at most in the sign of a zero)."""
    if a != a or b != b:
        return NAN
    if a == b:
        a_negative = math.copysign(1.0, a) < 0
        b_negative = math.copysign(1.0, b) < 0
        negative = (a_negative or b_negative) if want_min else (a_negative and b_negative)
        return math.copysign(a, -1.0 if negative else 1.0)
    return (a if a < b else b) if want_min else (a if a > b else b)


# ---------------------------------------------------------------------------
# binary32
# ---------------------------------------------------------------------------

_FLOAT32 = struct.Struct("<f")
_UINT32 = struct.Struct("<I")


def _f32_nan(x: float) -> float:
    """Any NaN result is the canonical NaN (one Python NaN stands for it)."""
    return NAN if x != x else x


# add/sub/mul/div/sqrt: computed in binary64 and rounded once, which equals
# the binary32 operation because 53 >= 2 * 24 + 2.
def _add_f32(a: float, b: float) -> float:
    return round_f32(a + b)


def _sub_f32(a: float, b: float) -> float:
    return round_f32(a - b)


def _mul_f32(a: float, b: float) -> float:
    return round_f32(a * b)


def _div_f32(a: float, b: float) -> float:
    return round_f32(_div_f64(a, b))


def _sqrt_f32(a: float) -> float:
    return round_f32(_sqrt_f64(a))


def _fma_f32(a: float, b: float, c: float) -> float:
    """The correctly rounded a * b + c: exact rational sum, one rounding."""
    if not (_is_finite(a) and _is_finite(b) and _is_finite(c)):
        # NaN and infinities: binary64 has the same IEEE rules, and the
        # product of two binary32 values cannot overflow it
        return _f32_nan(a * b + c)
    product = Fraction(a) * Fraction(b)
    total = product + Fraction(c)
    if total == 0:
        # an exact zero sum is -0 only when both terms are -0
        product_negative = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
        both_negative_zeros = (product == 0 and c == 0.0 and product_negative
                               and math.copysign(1.0, c) < 0)
        return -0.0 if both_negative_zeros else 0.0
    return f32_of_rational(total)


# exp: clamp, t = x / 128, degree-12 Taylor polynomial in Horner order with
# fma, seven squarings (LANGUAGE.md section 5; the constants: numerics.py).
def _exp_f32(x: float) -> float:
    if x != x:
        return NAN
    x = min(max(x, EXP_LOW), EXP_HIGH)
    t = _mul_f32(x, EXP_SCALE)
    p = EXP_COEFFICIENTS[EXP_DEGREE]
    for k in range(EXP_DEGREE - 1, -1, -1):
        p = _fma_f32(p, t, EXP_COEFFICIENTS[k])
    for _ in range(EXP_SQUARINGS):
        p = _mul_f32(p, p)
    return p


def _bits_f32(x: float) -> int:
    if x != x:
        return CANONICAL_NAN_BITS
    return _UINT32.unpack(_FLOAT32.pack(x))[0]


def _frombits_f32(u: int) -> float:
    if (u & 0x7FFFFFFF) > 0x7F800000:  # a NaN pattern, never reinterpreted
        return NAN
    return _FLOAT32.unpack(_UINT32.pack(u))[0]


# ---------------------------------------------------------------------------
# Conversions
# ---------------------------------------------------------------------------


def _wrap_f64(x: float, width: Width) -> int:
    """ECMAScript ToInt32/ToUint32 and the 64-bit analogues."""
    if not _is_finite(x):
        return 0
    return _wrap(int(x), width)  # int() truncates toward zero, exactly


def _conversion(kind: str, src: Width, dst: Width) -> Callable:
    if kind in ("promote", "round"):
        return float  # f32 -> f64 is the same value; int -> f64 rounds to nearest even
    if kind == "narrow":
        return round_f32
    if kind == "wrap":
        return lambda x: _wrap_f64(x, dst)
    if kind in ("reinterpret", "widen", "trunc"):
        return lambda x: _wrap(x, dst)  # the same (low) bits; widening is exact
    if kind == "bits":
        return _bits_f32
    if kind == "frombits":
        return _frombits_f32
    raise NotImplementedError(f"no folding rule for conversion {kind}.{src}.{dst}")


# ---------------------------------------------------------------------------
# The rules, one per op of OPS
# ---------------------------------------------------------------------------

_COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
            "le": operator.le, "gt": operator.gt, "ge": operator.ge}

RULES: dict[str, Callable] = {}

# Integer arithmetic: Python's unbounded result, reduced modulo 2^N.
for _w in INT_WIDTHS:
    RULES[f"add.{_w}"] = lambda a, b, w=_w: _wrap(a + b, w)
    RULES[f"sub.{_w}"] = lambda a, b, w=_w: _wrap(a - b, w)
    RULES[f"mul.{_w}"] = lambda a, b, w=_w: _wrap(a * b, w)
    RULES[f"neg.{_w}"] = lambda a, w=_w: _wrap(-a, w)
    RULES[f"idiv.{_w}"] = lambda a, b, w=_w: _idiv_int(a, b, w)
    RULES[f"mod.{_w}"] = lambda a, b, w=_w: _mod_int(a, b, w)

# binary64: Python's float operators round once to nearest even.
RULES.update({
    "add.f64": operator.add,
    "sub.f64": operator.sub,
    "mul.f64": operator.mul,
    "div.f64": _div_f64,
    "neg.f64": operator.neg,
    "idiv.f64": _idiv_f64,
    "mod.f64": _mod_f64,
    "sqrt.f64": _sqrt_f64,
    "abs.f64": math.fabs,
    "floor.f64": _floor_f64,
    "ceil.f64": _ceil_f64,
    "min.f64": lambda a, b: _min_max(a, b, True),
    "max.f64": lambda a, b: _min_max(a, b, False),
})

# nupp.math.f32: canonical NaN results.
RULES.update({
    "add.f32": _add_f32,
    "sub.f32": _sub_f32,
    "mul.f32": _mul_f32,
    "div.f32": _div_f32,
    "sqrt.f32": _sqrt_f32,
    "neg.f32": lambda a: _f32_nan(-a),
    "abs.f32": lambda a: _f32_nan(math.fabs(a)),
    "min.f32": lambda a, b: _min_max(a, b, True),
    "max.f32": lambda a, b: _min_max(a, b, False),
    "fma.f32": _fma_f32,
    "exp.f32": _exp_f32,
})

# Bitwise: Python's ints are two's complement without end, so the low N bits
# of the result are right; then read them with the width's signedness.
for _w in (I32, I64, U64):
    RULES[f"band.{_w}"] = lambda a, b, w=_w: _wrap(a & b, w)
    RULES[f"bor.{_w}"] = lambda a, b, w=_w: _wrap(a | b, w)
    RULES[f"bxor.{_w}"] = lambda a, b, w=_w: _wrap(a ^ b, w)
    RULES[f"bnot.{_w}"] = lambda a, w=_w: _wrap(~a, w)
    RULES[f"shl.{_w}"] = lambda a, c, w=_w: _shl(a, c, w)
    RULES[f"shr.{_w}"] = lambda a, c, w=_w: _shr(a, c, w)

# Comparisons: Python compares ints (i64 with u64 included) by mathematical
# value, and floats as IEEE does (false with NaN, but ne).
for _c in COMPARISONS:
    for _w in (F64,) + INT_WIDTHS:
        RULES[f"{_c}.{_w}"] = _COMPARE[_c]
    RULES[f"{_c}.i64.u64"] = RULES[f"{_c}.u64.i64"] = _COMPARE[_c]
RULES["eq.bool"], RULES["ne.bool"] = operator.eq, operator.ne

RULES["and.bool"] = lambda a, b: a and b
RULES["or.bool"] = lambda a, b: a or b
RULES["not.bool"] = operator.not_

for (_src, _dst), (_kind, _) in CONVERSIONS.items():
    RULES[f"{_kind}.{_src}.{_dst}"] = _conversion(_kind, _src, _dst)
check_rendered("scalar_ir/fold.py RULES", RULES)


# ---------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------


def is_value_of(value, width: Width) -> bool:
    """Whether value is how the folder represents a value of width."""
    if width is BOOL:
        return isinstance(value, bool)
    if width.is_int:
        return (isinstance(value, int) and not isinstance(value, bool)
                and width.int_range[0] <= value <= width.int_range[1])
    if not isinstance(value, float):
        return False
    return width is F64 or holds_in_binary32(value)


def _operand(value, width: Width):
    """value as an operand of width: an int constant at a float width (the
    text form reads `2:f64` as an int) becomes its float if that is exact."""
    if width.is_float and isinstance(value, int) and not isinstance(value, bool):
        try:
            exact = float(value)
        except OverflowError:
            return value
        if int(exact) == value:
            return exact
    return value


def evaluate(op: str, args: tuple):
    """The result of `op` on `args`, exactly as every backend computes it.

    Raises FoldError where the op raises at run time (integer division by
    zero), NotImplementedError for an op without a rule here, and TypeError
    for operands that are not values of the op's operand widths (an exact
    int is admitted at a float width)."""
    info = OPS.get(op)
    rule = RULES.get(op)
    if info is None or rule is None:
        raise NotImplementedError(f"no folding rule for {op!r}")
    if len(args) != len(info.operands):
        raise TypeError(f"{op} takes {len(info.operands)} operands, got {len(args)}")
    args = tuple(_operand(value, width) for value, width in zip(args, info.operands))
    for i, (value, width) in enumerate(zip(args, info.operands)):
        if not is_value_of(value, width):
            raise TypeError(f"operand {i + 1} of {op} is not a {width} value: {value!r}")
    result = rule(*args)
    if info.result is BOOL:
        result = bool(result)
    assert is_value_of(result, info.result), (op, args, result)
    return result


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


class _Folder(Transform):
    def expr_Op(self, node: ir.Op):
        args = tuple(self.expr(a) for a in node.args)
        folded = self._fold(node, args)
        if folded is not None:
            return folded
        if all(new is old for new, old in zip(args, node.args)):
            return node
        return replace(node, args=args)

    @staticmethod
    def _fold(node: ir.Op, args: tuple):
        info = OPS[node.op]
        left = args[0]
        if info.lane == SHORT_CIRCUIT and isinstance(left, ir.Const):
            # `false and x` is false, `true or x` is true: x never runs
            decides = (not left.value) if info.base == "and" else left.value
            if decides:
                return ir.Const(left.value, BOOL, node.loc)
        if not all(isinstance(a, ir.Const) for a in args):
            return None
        try:
            value = evaluate(node.op, tuple(a.value for a in args))
        except FoldError:
            return None  # the error belongs to run time
        except (TypeError, NotImplementedError) as e:
            raise InternalError("fold", f"{node.loc}: {node.op} of constants: {e}") from e
        return ir.Const(value, info.result, node.loc)


def fold_function(fn: ir.Function, module: ir.Module | None = None) -> ir.Function:
    """fn with every constant expression folded.  `module` is accepted so
    that every pass has the same signature; folding needs nothing from it
    (a Call is never folded)."""
    return _Folder().function(fn)


def fold_module(module: ir.Module) -> ir.Module:
    return _Folder().module(module)
