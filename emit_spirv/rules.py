"""Every scalar IR op in SPIR-V: `SPIRV_OPS[op](writer, operand ids) -> result id`.

The rules are the C helpers' (emit_c/helpers.py), restated with SPIR-V
instructions, never a driver's idea of them:

    integers        Int* arithmetic wraps modulo 2^N as SPIR-V defines; unary
                    minus is 0 - a; floor division and remainder correct the
                    truncating OpSDiv / OpSRem, with the divisor made safe
                    (never 0, never -1 with MIN: that quotient is undefined)
                    and MIN // -1 = MIN, MIN % -1 = 0 selected afterwards
    shifts          the count's low 5 or 6 bits, shifted as unsigned
    comparisons     ordered, and ~= as not ==; int64 against uint64 by value
    min, max        compare and select, NaN and -0 < +0 as the C helpers
                    (GLSL's FMin/FMax pick the other operand of a NaN)
    binary32        single operations, each rounded once, decorated
                    NoContraction and hidden from a driver's rewriting
                    (KernelWriter.op); NaN canonical where it can be seen
                    (`canonical_f32` at stores, bits, min, max, exp)
    fma.f32         correctly rounded from exact operations, never a driver's
                    Fma (lavapipe's is not fused): a * b is exact in binary64,
                    the sum rounds to odd (TwoSum gives its exact error; a
                    sign-magnitude pattern one up or down is the neighbour
                    away from or toward zero), and rounding that to binary32
                    rounds the exact a * b + c once
    exp.f32         the defined clamp / Horner-with-fma / squaring sequence
    wraps           NaN and infinities give 0; below 2^63 the truncation
                    converts exactly; beyond, x is a multiple of 2^11 and
                    x - floor(x / 2^64) * 2^64 is its exact residue; the 32-bit
                    wraps take x - floor(x / 2^32) * 2^32 in binary64 (exact)

`check_rendered` holds the table to OPS when this module is imported.
"""

from __future__ import annotations

from nupp.scalar_ir.numerics import EXP_COEFFICIENTS, EXP_DEGREE, EXP_HIGH, EXP_LOW, EXP_SCALE, EXP_SQUARINGS
from nupp.scalar_ir.ops import COMPARISONS, INT_WIDTHS, OPS, check_rendered
from nupp.scalar_ir.widths import Width

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)
CANONICAL_NAN_F32 = 0x7FC00000
QUIET_NAN_F64 = 0x7FF8000000000000
SPIRV_OPS: dict = {}


def _plain(opname: str, width: Width):
    return lambda w, a: w.op(opname, width, *a)


def _unsigned(width: Width) -> Width:
    return {I32: U32, I64: U64}.get(width, width)


# ---- integers ----------------------------------------------------------------------

def _floor_division(remainder: bool, width: Width):
    """a // b or a % b of a signed width, b != 0 (tested before)."""
    def render(w, args):
        a, b = args
        zero, one, minus_one = (w.const(v, width) for v in (0, 1, -1))
        by_minus_one = w.op("OpIEqual", BOOL, b, minus_one)
        safe = w.select(width, by_minus_one, one, b)
        r = w.op("OpSRem", width, a, safe)
        sign_differs = w.op("OpLogicalNotEqual", BOOL, w.op("OpSLessThan", BOOL, r, zero),
                            w.op("OpSLessThan", BOOL, safe, zero))
        inexact = w.op("OpLogicalAnd", BOOL, w.op("OpINotEqual", BOOL, r, zero), sign_differs)
        if remainder:
            floored = w.select(width, inexact, w.op("OpIAdd", width, r, safe), r)
            # an opaque 0: lavapipe carries a known 0 through the select into a later
            # float division and folds it wrongly (0.0 / float(x % -1) came out 0)
            return w.select(width, by_minus_one, w.opaque(zero, width), floored)
        q = w.op("OpSDiv", width, a, safe)
        floored = w.select(width, inexact, w.op("OpISub", width, q, one), q)
        return w.select(width, by_minus_one, w.op("OpISub", width, zero, a), floored)
    return render


def _unsigned_division(opname: str, width: Width):
    return lambda w, a: w.op(opname, width, a[0], a[1])


for _w in INT_WIDTHS:
    _n = _w.value
    SPIRV_OPS[f"add.{_n}"] = _plain("OpIAdd", _w)
    SPIRV_OPS[f"sub.{_n}"] = _plain("OpISub", _w)
    SPIRV_OPS[f"mul.{_n}"] = _plain("OpIMul", _w)
    SPIRV_OPS[f"neg.{_n}"] = lambda w, a, _w=_w: w.op("OpISub", _w, w.const(0, _w), a[0])
    if _w.is_signed:
        SPIRV_OPS[f"idiv.{_n}"] = _floor_division(False, _w)
        SPIRV_OPS[f"mod.{_n}"] = _floor_division(True, _w)
    else:
        SPIRV_OPS[f"idiv.{_n}"] = _unsigned_division("OpUDiv", _w)
        SPIRV_OPS[f"mod.{_n}"] = _unsigned_division("OpUMod", _w)


# ---- bitwise ---------------------------------------------------------------------------

def _shift(opname: str, width: Width):
    """The count's low 5 or 6 bits; the pattern shifted as unsigned."""
    def render(w, args):
        a, n = args
        unsigned = _unsigned(width)
        count = w.op("OpBitwiseAnd", U32, w.op("OpBitcast", U32, n), w.const(width.bits - 1, U32))
        if width.bits == 64:
            count = w.op("OpUConvert", U64, count)
        pattern = a if unsigned is width else w.op("OpBitcast", unsigned, a)
        shifted = w.op(opname, unsigned, pattern, count)
        return shifted if unsigned is width else w.op("OpBitcast", width, shifted)
    return render


for _w in (I32, I64, U64):
    _n = _w.value
    SPIRV_OPS[f"band.{_n}"] = _plain("OpBitwiseAnd", _w)
    SPIRV_OPS[f"bor.{_n}"] = _plain("OpBitwiseOr", _w)
    SPIRV_OPS[f"bxor.{_n}"] = _plain("OpBitwiseXor", _w)
    SPIRV_OPS[f"bnot.{_n}"] = _plain("OpNot", _w)
    SPIRV_OPS[f"shl.{_n}"] = _shift("OpShiftLeftLogical", _w)
    SPIRV_OPS[f"shr.{_n}"] = _shift("OpShiftRightLogical", _w)


# ---- comparisons ------------------------------------------------------------------------

_FLOAT_COMPARE = {"eq": "OpFOrdEqual", "lt": "OpFOrdLessThan",
                  "le": "OpFOrdLessThanEqual", "gt": "OpFOrdGreaterThan", "ge": "OpFOrdGreaterThanEqual"}
_INT_COMPARE = {"eq": "OpIEqual", "ne": "OpINotEqual", "lt": "LessThan", "le": "LessThanEqual",
                "gt": "GreaterThan", "ge": "GreaterThanEqual"}


def _int_compare(c: str, width: Width) -> str:
    name = _INT_COMPARE[c]
    return name if name.startswith("Op") else ("OpS" if width.is_signed else "OpU") + name


def _signed_against_unsigned(c: str, signed_first: bool):
    """An int64 against a uint64 by value: a negative int64 is below every uint64."""
    def render(w, args):
        s, u = args if signed_first else args[::-1]
        negative = w.op("OpSLessThan", BOOL, s, w.const(0, I64))
        as_unsigned = w.op("OpBitcast", U64, s)
        left, right = (as_unsigned, u) if signed_first else (u, as_unsigned)
        unsigned = w.op(_int_compare(c, U64), BOOL, left, right)
        # when negative, the signed side is the smaller one
        below = {"lt": signed_first, "le": signed_first, "gt": not signed_first, "ge": not signed_first,
                 "eq": False, "ne": True}[c]
        return w.select(BOOL, negative, w.const(below, BOOL), unsigned)
    return render


for _c in COMPARISONS:
    if _c != "ne":
        SPIRV_OPS[f"{_c}.f64"] = _plain(_FLOAT_COMPARE[_c], BOOL)
    for _w in INT_WIDTHS:
        SPIRV_OPS[f"{_c}.{_w.value}"] = _plain(_int_compare(_c, _w), BOOL)
    SPIRV_OPS[f"{_c}.i64.u64"] = _signed_against_unsigned(_c, True)
    SPIRV_OPS[f"{_c}.u64.i64"] = _signed_against_unsigned(_c, False)
# ~= is true with a NaN: not (a == b) (naga reads OpFUnordNotEqual as ordered)
SPIRV_OPS["ne.f64"] = lambda w, a: w.op("OpLogicalNot", BOOL, w.op("OpFOrdEqual", BOOL, *a))
SPIRV_OPS["eq.bool"] = _plain("OpLogicalEqual", BOOL)
SPIRV_OPS["ne.bool"] = _plain("OpLogicalNotEqual", BOOL)
SPIRV_OPS["and.bool"] = _plain("OpLogicalAnd", BOOL)  # a b that can fail: KernelWriter.short_circuit
SPIRV_OPS["or.bool"] = _plain("OpLogicalOr", BOOL)
SPIRV_OPS["not.bool"] = _plain("OpLogicalNot", BOOL)


# ---- binary64 and binary32 ----------------------------------------------------------------

def canonical_f32(w, x: int) -> int:
    """A binary32 as it may be seen: any NaN as 0x7FC00000."""
    nan = w.op("OpBitcast", F32, w.const(CANONICAL_NAN_F32, U32))
    return w.select(F32, w.op("OpIsNan", BOOL, x), nan, x)


def narrow(w, x: int) -> int:
    """binary64 to binary32, to nearest even (a NaN canonical where seen)."""
    return w.op("OpFConvert", F32, x)


def _sign_bit(w, x: int, width: Width) -> int:
    words = w.to_words(x, width)
    return w.op("OpINotEqual", BOOL, w.op("OpBitwiseAnd", U32, words[-1], w.const(0x80000000, U32)),
                w.const(0, U32))


def _min_max(kind: str, width: Width):
    """NaN if either is NaN (canonical for binary32); else the smaller (larger),
    and of two equal values (zeros of either sign) a's sign decides: -0 < +0."""
    def render(w, args):
        a, b = args
        order = "OpFOrdLessThan" if kind == "min" else "OpFOrdGreaterThan"
        first, second = (a, b) if kind == "min" else (b, a)
        equal = w.select(width, _sign_bit(w, a, width), first, second)
        picked = w.select(width, w.op(order, BOOL, a, b), a, w.select(width, w.op(order, BOOL, b, a), b, equal))
        nan = w.op("OpLogicalOr", BOOL, w.op("OpIsNan", BOOL, a), w.op("OpIsNan", BOOL, b))
        nan_value = w.op("OpBitcast", F32, w.const(CANONICAL_NAN_F32, U32)) if width is F32 else \
            w.op("OpBitcast", F64, w.const(QUIET_NAN_F64, U64))  # naga refuses a NaN literal
        return w.select(width, nan, nan_value, picked)
    return render


def _mod_f64(w, args):
    """Lua 5.1's a - floor(a / b) * b, each step rounded once."""
    a, b = args
    q = w.ext("Floor", F64, w.op("OpFDiv", F64, a, b))
    return w.op("OpFSub", F64, a, w.op("OpFMul", F64, q, b))


SPIRV_OPS.update({
    "add.f64": _plain("OpFAdd", F64), "sub.f64": _plain("OpFSub", F64),
    "mul.f64": _plain("OpFMul", F64), "div.f64": _plain("OpFDiv", F64),
    "neg.f64": _plain("OpFNegate", F64),
    "idiv.f64": lambda w, a: w.ext("Floor", F64, w.op("OpFDiv", F64, *a)),
    "mod.f64": _mod_f64,
    "sqrt.f64": lambda w, a: w.ext("Sqrt", F64, a[0]),
    "abs.f64": lambda w, a: w.ext("FAbs", F64, a[0]),
    "floor.f64": lambda w, a: w.ext("Floor", F64, a[0]),
    "ceil.f64": lambda w, a: w.ext("Ceil", F64, a[0]),
    "min.f64": _min_max("min", F64), "max.f64": _min_max("max", F64),
    "add.f32": _plain("OpFAdd", F32), "sub.f32": _plain("OpFSub", F32),
    "mul.f32": _plain("OpFMul", F32), "div.f32": _plain("OpFDiv", F32),
    "neg.f32": _plain("OpFNegate", F32),
    "sqrt.f32": lambda w, a: w.ext("Sqrt", F32, a[0]),
    "abs.f32": lambda w, a: w.ext("FAbs", F32, a[0]),
    "min.f32": _min_max("min", F32), "max.f32": _min_max("max", F32),
})


# ---- fma and exp of binary32 ---------------------------------------------------------------

def _fma_f32_body(w, params) -> int:
    a, b, c = params
    p = w.op("OpFMul", F64, w.op("OpFConvert", F64, a), w.op("OpFConvert", F64, b))  # exact
    c64 = w.op("OpFConvert", F64, c)
    s = w.op("OpFAdd", F64, p, c64)
    # TwoSum: s + e == p + c exactly (KernelWriter.op makes each float result opaque: no driver undoes it)
    bb = w.op("OpFSub", F64, s, p)
    e = w.op("OpFAdd", F64, w.op("OpFSub", F64, p, w.op("OpFSub", F64, s, bb)), w.op("OpFSub", F64, c64, bb))
    # round to odd: an inexact s with an even significand moves one unit toward e
    bits = w.op("OpBitcast", U64, s)
    even = w.op("OpIEqual", BOOL, w.op("OpBitwiseAnd", U64, bits, w.const(1, U64)), w.const(0, U64))
    zero = w.const(0.0, F64)
    inexact = w.op("OpLogicalNot", BOOL, w.op("OpFOrdEqual", BOOL, e, zero))  # a NaN e: s is not finite, and stays
    adjust = w.op("OpLogicalAnd", BOOL, w.op("OpLogicalAnd", BOOL, inexact, even), _finite(w, s))
    away = w.op("OpLogicalEqual", BOOL, w.op("OpFOrdGreaterThan", BOOL, e, zero),
                w.op("OpFOrdGreaterThan", BOOL, s, zero))
    odd = w.select(U64, away, w.op("OpIAdd", U64, bits, w.const(1, U64)), w.op("OpISub", U64, bits, w.const(1, U64)))
    return w.op("OpFConvert", F32, w.select(F64, adjust, w.op("OpBitcast", F64, odd), s))


def _fma_f32(w, args):
    return w.call_helper("fma_f32", _fma_f32_body, F32, (F32, F32, F32), args)


def _exp_f32_body(w, params) -> int:
    x = params[0]
    low, high = w.const(EXP_LOW, F32), w.const(EXP_HIGH, F32)
    clamped = w.select(F32, w.op("OpFOrdLessThan", BOOL, x, low), low, x)
    clamped = w.select(F32, w.op("OpFOrdGreaterThan", BOOL, clamped, high), high, clamped)
    t = w.op("OpFMul", F32, clamped, w.const(EXP_SCALE, F32))
    p = w.const(EXP_COEFFICIENTS[EXP_DEGREE], F32)
    for k in range(EXP_DEGREE - 1, -1, -1):
        p = _fma_f32(w, [p, t, w.const(EXP_COEFFICIENTS[k], F32)])
    for _ in range(EXP_SQUARINGS):
        p = w.op("OpFMul", F32, p, p)
    return canonical_f32(w, w.select(F32, w.op("OpIsNan", BOOL, x), x, p))


SPIRV_OPS["fma.f32"] = _fma_f32
SPIRV_OPS["exp.f32"] = lambda w, a: w.call_helper("exp_f32", _exp_f32_body, F32, (F32,), a)


# ---- conversions ---------------------------------------------------------------------------

def _wrap_32(width: Width):
    """ToInt32 / ToUint32: the truncation's residue modulo 2^32, exact in binary64."""
    def render(w, args):
        t = w.ext("Trunc", F64, args[0])
        residue = w.op("OpFSub", F64, t, w.op("OpFMul", F64, w.ext("Floor", F64, w.op(
            "OpFMul", F64, t, w.const(2.0 ** -32, F64))), w.const(2.0 ** 32, F64)))
        ok = _finite(w, t)
        bits = w.op("OpConvertFToU", U32, w.select(F64, ok, residue, w.const(0.0, F64)))
        return bits if width is U32 else w.op("OpBitcast", I32, bits)
    return render


def _finite(w, x: int) -> int:
    return w.op("OpLogicalNot", BOOL, w.op("OpLogicalOr", BOOL, w.op("OpIsNan", BOOL, x), w.op("OpIsInf", BOOL, x)))


def _wrap_64(width: Width):
    """Modulo 2^64: below 2^63 the truncation converts; beyond, the exact residue."""
    def render(w, args):
        t = w.ext("Trunc", F64, args[0])
        limit = w.const(2.0 ** 63, F64)
        small = w.op("OpLogicalAnd", BOOL, w.op("OpFOrdGreaterThanEqual", BOOL, t, w.op("OpFNegate", F64, limit)),
                     w.op("OpFOrdLessThan", BOOL, t, limit))
        zero = w.const(0.0, F64)
        near = w.op("OpBitcast", U64, w.op("OpConvertFToS", I64, w.select(F64, small, t, zero)))
        residue = w.op("OpFSub", F64, t, w.op("OpFMul", F64, w.ext("Floor", F64, w.op(
            "OpFMul", F64, t, w.const(2.0 ** -64, F64))), w.const(2.0 ** 64, F64)))
        far_ok = w.op("OpLogicalAnd", BOOL, w.op("OpLogicalNot", BOOL, small), _finite(w, t))
        far = w.op("OpConvertFToU", U64, w.select(F64, far_ok, residue, zero))
        bits = w.select(U64, small, near, far)
        return bits if width is U64 else w.op("OpBitcast", I64, bits)
    return render


def sign_extend(w, x: int) -> int:
    """int32 to int64 as its two words, the high one the sign's copies: lavapipe
    (LLVM 15) miscompiles a 64-bit comparison of an OpSConvert's result
    (5 <= int64(1) came out true)."""
    high = w.op("OpShiftRightArithmetic", I32, x, w.const(31, I32))
    return w.from_words([w.op("OpBitcast", U32, x), w.op("OpBitcast", U32, high)], I64)


def _frombits(w, args):
    return canonical_f32(w, w.op("OpBitcast", F32, args[0]))


SPIRV_OPS.update({
    "promote.f32.f64": _plain("OpFConvert", F64),
    "promote.i32.f64": _plain("OpConvertSToF", F64),
    "promote.u32.f64": _plain("OpConvertUToF", F64),
    "round.i64.f64": _plain("OpConvertSToF", F64),
    "round.u64.f64": _plain("OpConvertUToF", F64),
    "narrow.f64.f32": lambda w, a: narrow(w, a[0]),
    "wrap.f64.i32": _wrap_32(I32), "wrap.f64.u32": _wrap_32(U32),
    "wrap.f64.i64": _wrap_64(I64), "wrap.f64.u64": _wrap_64(U64),
    "reinterpret.i32.u32": _plain("OpBitcast", U32),
    "reinterpret.u32.i32": _plain("OpBitcast", I32),
    "widen.i32.i64": lambda w, a: sign_extend(w, a[0]),
    "widen.u32.i64": lambda w, a: w.op("OpBitcast", I64, w.op("OpUConvert", U64, a[0])),
    "widen.u32.u64": _plain("OpUConvert", U64),
    "trunc.i64.i32": lambda w, a: w.op("OpBitcast", I32, w.op("OpUConvert", U32, a[0])),
    "trunc.u64.i32": lambda w, a: w.op("OpBitcast", I32, w.op("OpUConvert", U32, a[0])),
    "bits.f32.u32": lambda w, a: w.op("OpBitcast", U32, canonical_f32(w, a[0])),
    "frombits.u32.f32": _frombits,
})

check_rendered("emit_spirv/rules.py SPIRV_OPS", SPIRV_OPS)
assert set(SPIRV_OPS) == set(OPS)
