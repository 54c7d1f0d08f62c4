"""Independent oracles for Nupp's numeric semantics (LANGUAGE.md sections 3-5).

Written from the spec with numpy.float32, fractions.Fraction and Python
integers, never by calling the Lua runtime, so that a test comparing the two
compares two separate readings of the spec.

binary32 values travel as their uint32 bit patterns (Python ints, or numpy
uint32 arrays for the vectorised helpers); every NaN result is the canonical
quiet NaN CANONICAL_NAN.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

import numpy as np

CANONICAL_NAN = 0x7FC00000
SIGN_BIT = 0x80000000
POS_INF = 0x7F800000
NEG_INF = 0xFF800000

# ---------------------------------------------------------------------------
# binary32 bit patterns
# ---------------------------------------------------------------------------


def is_nan_bits(u: int) -> bool:
    return (u & 0x7FFFFFFF) > POS_INF


def is_inf_bits(u: int) -> bool:
    return (u & 0x7FFFFFFF) == POS_INF


def is_negative_bits(u: int) -> bool:
    return bool(u & SIGN_BIT)


def f32_of_bits(u: int) -> np.float32:
    return np.array([u], dtype=np.uint32).view(np.float32)[0]


def bits_of_f32(x) -> int:
    """The bit pattern of a binary32 value; any NaN gives CANONICAL_NAN."""
    x = np.float32(x)
    if np.isnan(x):
        return CANONICAL_NAN
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def canonicalize_bits(u: int) -> int:
    return CANONICAL_NAN if is_nan_bits(u) else u


def fraction_of_bits(u: int) -> Fraction:
    """The exact value of a finite binary32 pattern."""
    exponent_field = (u >> 23) & 0xFF
    mantissa = u & 0x7FFFFF
    assert exponent_field != 0xFF, "not finite"
    if exponent_field == 0:
        magnitude = Fraction(mantissa, 1 << 149)
    else:
        magnitude = (mantissa | 0x800000) * Fraction(2) ** (exponent_field - 150)
    return -magnitude if is_negative_bits(u) else magnitude


def round_to_f32_bits(q: Fraction, negative_zero: bool = False) -> int:
    """q rounded to binary32, to nearest with ties to even.

    Handles subnormals and overflow to infinity.  A nonzero q keeps its sign
    when it rounds to zero; an exact zero is -0 only if negative_zero says so.
    """
    sign = SIGN_BIT if q < 0 or (q == 0 and negative_zero) else 0
    magnitude = abs(q)
    if magnitude == 0:
        return sign
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if magnitude < Fraction(2) ** exponent:
        exponent -= 1  # now 2^exponent <= magnitude < 2^(exponent + 1)
    quantum_exponent = max(exponent, -126) - 23
    units = round(magnitude / Fraction(2) ** quantum_exponent)  # half to even
    # With units in [2^23, 2^24] (or below 2^23 for subnormals) this one formula
    # yields the pattern, including a carry into the next binade.
    pattern = ((quantum_exponent + 149) << 23) + units
    return sign | min(pattern, POS_INF)


def round_double_to_f32_bits(x: float) -> int:
    """binary64 -> binary32 (narrow), via exact rational arithmetic."""
    if math.isnan(x):
        return CANONICAL_NAN
    if math.isinf(x):
        return NEG_INF if x < 0 else POS_INF
    return round_to_f32_bits(Fraction(x), negative_zero=math.copysign(1.0, x) < 0)


# ---------------------------------------------------------------------------
# nupp.math.f32 operations, vectorised over uint32 arrays with numpy
# ---------------------------------------------------------------------------


def _as_f32(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def _to_bits(values: np.ndarray) -> np.ndarray:
    out = np.asarray(values, dtype=np.float32).view(np.uint32).copy()
    out[np.isnan(values)] = CANONICAL_NAN
    return out


def _numpy_binary(op: Callable) -> Callable:
    def oracle(a_bits, b_bits) -> np.ndarray:
        with np.errstate(all="ignore"):
            return _to_bits(op(_as_f32(a_bits), _as_f32(b_bits)))

    return oracle


def _numpy_unary(op: Callable) -> Callable:
    def oracle(a_bits) -> np.ndarray:
        with np.errstate(all="ignore"):
            return _to_bits(op(_as_f32(a_bits)))

    return oracle


def _min_max_bits(a: int, b: int, want_min: bool) -> int:
    if is_nan_bits(a) or is_nan_bits(b):
        return CANONICAL_NAN
    x, y = f32_of_bits(a), f32_of_bits(b)
    if x == y:  # equal values differ at most in the sign of zero
        if want_min:
            negative = is_negative_bits(a) or is_negative_bits(b)
        else:
            negative = is_negative_bits(a) and is_negative_bits(b)
        return (a & ~SIGN_BIT) | (SIGN_BIT if negative else 0)
    return a if (x < y) == want_min else b


def f32_min_bits(a_bits, b_bits) -> np.ndarray:
    return np.array([_min_max_bits(int(a), int(b), True) for a, b in zip(a_bits, b_bits)],
                    dtype=np.uint32)


def f32_max_bits(a_bits, b_bits) -> np.ndarray:
    return np.array([_min_max_bits(int(a), int(b), False) for a, b in zip(a_bits, b_bits)],
                    dtype=np.uint32)


BINARY_ORACLES = {
    "add": _numpy_binary(np.add),
    "sub": _numpy_binary(np.subtract),
    "mul": _numpy_binary(np.multiply),
    "div": _numpy_binary(np.divide),
    "min": f32_min_bits,
    "max": f32_max_bits,
}

UNARY_ORACLES = {
    "sqrt": _numpy_unary(np.sqrt),
    "neg": _numpy_unary(np.negative),
    "abs": _numpy_unary(np.abs),
}


def f32_mul_bits(a: int, b: int) -> int:
    with np.errstate(all="ignore"):
        return bits_of_f32(f32_of_bits(a) * f32_of_bits(b))


# ---------------------------------------------------------------------------
# fma: exact rational product and sum, rounded once
# ---------------------------------------------------------------------------


def f32_fma_bits(a: int, b: int, c: int) -> int:
    """The correctly rounded binary32 a * b + c (IEEE 754 fusedMultiplyAdd)."""
    if is_nan_bits(a) or is_nan_bits(b) or is_nan_bits(c):
        return CANONICAL_NAN
    product_negative = is_negative_bits(a) != is_negative_bits(b)
    if is_inf_bits(a) or is_inf_bits(b):
        other = b if is_inf_bits(a) else a
        if (other & 0x7FFFFFFF) == 0:
            return CANONICAL_NAN  # inf * 0
        if is_inf_bits(c) and is_negative_bits(c) != product_negative:
            return CANONICAL_NAN  # inf - inf
        return NEG_INF if product_negative else POS_INF
    if is_inf_bits(c):
        return c
    product = fraction_of_bits(a) * fraction_of_bits(b)
    addend = fraction_of_bits(c)
    # An exact zero sum is -0 only when both terms are -0 (round to nearest).
    negative_zero = product == 0 and addend == 0 and product_negative and is_negative_bits(c)
    return round_to_f32_bits(product + addend, negative_zero)


def double_rounded_fma_bits(a: int, b: int, c: int) -> int:
    """a * b + c computed in binary64 and then rounded to binary32: the wrong
    answer a naive implementation gives (used to show a case is a hard one)."""
    x, y, z = (float(f32_of_bits(u)) for u in (a, b, c))
    with np.errstate(all="ignore"):
        return bits_of_f32(np.float32(x * y + z))


# ---------------------------------------------------------------------------
# exp: the sequence LANGUAGE.md section 5 defines
# ---------------------------------------------------------------------------

EXP_COEFFICIENT_BITS = [round_to_f32_bits(Fraction(1, math.factorial(k))) for k in range(13)]
EXP_SCALE_BITS = bits_of_f32(0.0078125)


def f32_exp_bits(x: int) -> int:
    if is_nan_bits(x):
        return CANONICAL_NAN
    value = float(f32_of_bits(x))
    clamped = bits_of_f32(min(max(value, -104.0), 88.0))
    t = f32_mul_bits(clamped, EXP_SCALE_BITS)
    p = EXP_COEFFICIENT_BITS[12]
    for k in range(11, -1, -1):
        p = f32_fma_bits(p, t, EXP_COEFFICIENT_BITS[k])
    for _ in range(7):
        p = f32_mul_bits(p, p)
    return p


# ---------------------------------------------------------------------------
# Integer conversions and binary64 min/max
# ---------------------------------------------------------------------------


def wrap_int(x: float, width: int, signed: bool) -> int:
    """ECMAScript ToInt32/ToUint32 generalised to `width` bits."""
    if math.isnan(x) or math.isinf(x):
        return 0
    reduced = int(Fraction(x)) % (1 << width)  # int() truncates toward zero
    if signed and reduced >= 1 << (width - 1):
        reduced -= 1 << width
    return reduced


def same_bits_int32(u: int) -> int:
    """A uint32 read as int32."""
    return u - (1 << 32) if u >= 1 << 31 else u


def same_bits_uint32(i: int) -> int:
    """An int32 read as uint32."""
    return i % (1 << 32)


def f64_min_max(a: float, b: float, want_min: bool) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b:  # equal values differ at most in the sign of zero
        a_negative = math.copysign(1.0, a) < 0
        b_negative = math.copysign(1.0, b) < 0
        negative = (a_negative or b_negative) if want_min else (a_negative and b_negative)
        return math.copysign(abs(a), -1.0 if negative else 1.0)
    return min(a, b) if want_min else max(a, b)


# ---------------------------------------------------------------------------
# Interesting inputs
# ---------------------------------------------------------------------------

INTERESTING_F32_BITS = [
    0x00000000, 0x80000000,  # +0, -0
    0x00000001, 0x80000001,  # smallest subnormals
    0x007FFFFF, 0x807FFFFF,  # largest subnormals
    0x00800000, 0x80800000,  # smallest normals
    0x3F800000, 0xBF800000,  # +1, -1
    0x3F7FFFFF, 0x3F800001,  # neighbours of +1
    0xBF7FFFFF, 0xBF800001,  # neighbours of -1
    0x7F7FFFFF, 0xFF7FFFFF,  # largest finite
    0x7F800000, 0xFF800000,  # +inf, -inf
    0x7FC00000,  # canonical quiet NaN
    0x7FC01234,  # quiet NaN with a payload
    0xFFC00000, 0xFFD00001, 0xFFFFFFFF,  # negative NaNs
    0x7F800001, 0x7FA00000,  # signalling NaNs
    0x3DCCCCCD,  # 0.1f
    0x40400000,  # 3.0
    0x7149F2CA,  # 1e30f
    0x0DA24260,  # 1e-30f
    0x4B800000, 0x4B800001,  # 2^24, 2^24 + 2
    0xCB7FFFFF,  # -(2^24 - 1)
]

HOSTILE_NAN_BITS = [
    0xFFD00001, 0xFFFFFFFF, 0xFFC00000, 0xFFC00001, 0xFFBFFFFF, 0xFF800001,
    0xFFE12345, 0x7F800001, 0x7FA00000, 0x7FC01234, 0x7FFFFFFF,
]
