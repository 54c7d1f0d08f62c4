"""The constants and roundings of Nupp's numeric rules, derived once.

LANGUAGE.md section 5 defines binary32 arithmetic by rounding, and
`nupp.math.f32.exp` by a fixed sequence: clamp x to [EXP_LOW, EXP_HIGH]
(a NaN stays NaN), t = x * EXP_SCALE, the degree-12 Taylor polynomial of
exp(t) with the binary32 coefficients EXP_COEFFICIENTS[k] = 1/k! in Horner
order with fma, then EXP_SQUARINGS binary32 squarings.  The constant folder,
the C helpers and the lane C forms import these; runtime/lua/math.lua states
them in Lua and tests/test_op_table.py checks them equal bit for bit.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

INF = float("inf")
NAN = float("nan")
FLT_MAX = math.ldexp(2.0 ** 24 - 1, 104)  # (2 - 2^-23) * 2^127

_FLOAT32 = struct.Struct("<f")


def round_f32(x: float) -> float:
    """binary64 -> nearest binary32, ties to even (C's (float)x), as a float.

    struct raises OverflowError exactly when (float)x rounded a finite x to an
    infinity, which is then the answer."""
    if x != x:
        return NAN
    try:
        return _FLOAT32.unpack(_FLOAT32.pack(x))[0]
    except OverflowError:
        return math.copysign(INF, x)


def f32_of_rational(q: Fraction) -> float:
    """A nonzero rational rounded once to binary32, to nearest with ties to
    even, subnormals and overflow included (integer arithmetic only)."""
    num, den = abs(q.numerator), q.denominator
    # e with 2^e <= num/den < 2^(e+1)
    e = num.bit_length() - den.bit_length()
    if (num << max(-e, 0)) < (den << max(e, 0)):
        e -= 1
    quantum = max(e, -126) - 23  # exponent of the binary32 ulp there (2^-149 at the bottom)
    n, d = (num, den << quantum) if quantum >= 0 else (num << -quantum, den)
    units, rest = divmod(n, d)
    if 2 * rest > d or (2 * rest == d and units & 1):
        units += 1  # may carry into the next binade: still exact below
    magnitude = math.ldexp(units, quantum)  # units <= 2^24: exact in binary64
    if magnitude > FLT_MAX:
        magnitude = INF
    return -magnitude if q < 0 else magnitude


# ---- nupp.math.f32.exp ------------------------------------------------------------
EXP_LOW, EXP_HIGH = -104.0, 88.0  # the clamp
EXP_SCALE = 0.0078125             # 2^-7, a binary32 value: t = x / 128 exactly
EXP_SQUARINGS = 7                 # exp(x) = exp(t)^(2^7)
EXP_DEGREE = 12
EXP_COEFFICIENTS: tuple[float, ...] = tuple(f32_of_rational(Fraction(1, math.factorial(k)))
                                            for k in range(EXP_DEGREE + 1))
