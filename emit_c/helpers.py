"""The C helper library and the opcode rendering table.

`C_OPS` maps every opcode of `ops.OPS` to its C rendering: a template over
the rendered operands (`{0}`, `{1}`, `{2}`, each a side-effect-free C
expression) and the helpers and headers it needs.  A rule that needs more
than one C operator, or reads an operand twice, is a `Helper`: one `static
inline` function per semantic rule and width, written once here with a
comment saying the rule, and emitted into a translation unit only when
something there uses it (`closure` adds what a helper itself calls, in
library order).  The lane renderings of a rule (a later stage) belong beside
its scalar template in this table.

The rules, as LANGUAGE.md sections 3-5 state them and `scalar_ir/fold.py`
computes them:

    signed + - * and unary -   computed in the unsigned type of the width and
                               converted back (GCC's and Clang's documented
                               modular conversion): never signed overflow
    // and % on integers       floor division, remainder with the divisor's
                               sign; MIN // -1 wraps to MIN, MIN % -1 is 0.
                               The divisor is non-zero here: the emitter
                               tests for zero first and returns the status
    shifts                     the count's low 5 (32-bit) or 6 (64-bit) bits;
                               >> is logical; both shift the unsigned pattern
    bitwise on int32/int64     on the unsigned pattern, converted back
    int64 vs uint64            a sign-checked three-way helper
    comparisons with a literal through a helper (`literal_safe`), so that no
                               always-true `u >= 0` or self-comparison ever
                               reaches the C front end's warnings
    binary64                   plain C operators (built with
                               -ffp-contract=off: each rounds once); % and
                               min/max by helpers (NaN, and -0 < +0)
    nupp.math.f32              native float operations (binary32 in, binary32
                               out: FLT_EVAL_METHOD 0, no contraction); fma is
                               C's fmaf (correctly rounded), exp the defined
                               clamp / Horner-with-fmaf / 7 squarings.  Every
                               NaN is the canonical 0x7FC00000 wherever it can
                               be seen: `nu_f32_canon` at a store of binary32
                               to a float field (binary64 narrowed by a store
                               is ordinary arithmetic's NaN: kept as narrowing
                               leaves it) and on a float result, `bits`, min, max,
                               exp and fromBits by their helpers.  (x86 makes
                               0xFFC00000 for an invalid operation and keeps
                               payloads; inside an expression or a local that
                               is invisible, and selecting at every op would
                               sit on every loop-carried chain: mandelbrot ran
                               2.4 times slower that way)
    conversions                casts where C's conversion is the rule and
                               defined for every operand; the ECMAScript wraps
                               by `nu_wrap_f64` (no out-of-range float-to-int
                               conversion for any double); bit views by memcpy
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from textwrap import dedent
from typing import Iterable, Optional

from nupp.scalar_ir.numerics import (EXP_COEFFICIENTS, EXP_DEGREE, EXP_HIGH, EXP_LOW, EXP_SCALE,
                                     EXP_SQUARINGS)
from nupp.scalar_ir.ops import COMPARISONS, INT_WIDTHS, check_rendered
from nupp.scalar_ir.widths import Width

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)

MATH_H, STRING_H = "math.h", "string.h"

# The C type of each width.  A boolean is C's _Bool (LuaJIT and cffi pass a
# Lua/Python boolean to it and read one back); comparisons give 0 or 1.
C_TYPES: dict[Width, str] = {F64: "double", F32: "float", I32: "int32_t", U32: "uint32_t",
                             I64: "int64_t", U64: "uint64_t", BOOL: "_Bool"}

# The C type of each struct field storage type (the natural layout that
# runtime/lua/mem.lua and NumPy structured arrays share).
FIELD_C_TYPES: dict[str, str] = {
    "number": "double", "double": "double", "float": "float",
    "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t",
    "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t",
}


def c_type(width: Width) -> str:
    return C_TYPES[width]


# ==== constants ===============================================================

_INT_MACROS = {I32: "INT32_C", U32: "UINT32_C", I64: "INT64_C", U64: "UINT64_C"}


def c_const(value, width: Width) -> str:
    """An exact C literal of `value` at `width`; see `const_headers` for what it needs."""
    if width is BOOL:
        return "1" if value else "0"
    if width.is_int:
        macro = _INT_MACROS[width]
        lo, _ = width.int_range
        if value == lo and width.is_signed:  # the minimum has no literal of its own
            return f"(-{macro}({-lo - 1}) - {macro}(1))"
        return f"(-{macro}({-value}))" if value < 0 else f"{macro}({value})"
    value = float(value)
    if value != value:
        return "NAN" if width is F32 else "((double)NAN)"  # NAN: the quiet NaN, 0x7FC00000 as a float
    if math.isinf(value):
        text = "INFINITY" if width is F32 else "(double)INFINITY"
    else:
        text = _hex_float(abs(value)) + ("f" if width is F32 else "")
    return f"(-{text})" if math.copysign(1.0, value) < 0 else text


def const_headers(value, width: Width) -> tuple[str, ...]:
    if width.is_float and not math.isfinite(float(value)):
        return (MATH_H,)
    return ()


def _hex_float(x: float) -> str:
    """`0x1.8p+1` for 3.0: Python's exact hex form with the trailing zeros dropped."""
    mantissa, exponent = x.hex().split("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}"


# ==== helpers =================================================================

@dataclass(frozen=True)
class Helper:
    name: str
    code: str                       # the C definition, preceded by its rule as a comment
    needs: tuple[str, ...] = ()     # helpers it calls
    headers: tuple[str, ...] = ()


HELPERS: dict[str, Helper] = {}     # in definition order: callees first


def _helper(name: str, code: str, needs: Iterable[str] = (), headers: Iterable[str] = ()) -> None:
    assert name not in HELPERS, name
    for dep in needs:
        assert dep in HELPERS, (name, dep)
    HELPERS[name] = Helper(name, dedent(code).strip("\n") + "\n", tuple(needs), tuple(headers))


def closure(names: Iterable[str]) -> list[Helper]:
    """The helpers named and everything they call, in library order."""
    wanted: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo.extend(HELPERS[name].needs)
    return [h for name, h in HELPERS.items() if name in wanted]


# ---- integers -----------------------------------------------------------------

for _w, _u in ((I32, "uint32_t"), (I64, "uint64_t")):
    _t, _n = c_type(_w), _w.value
    _helper(f"nu_add_{_n}", f"""
        /* {_n} + {_n} modulo 2^{_w.bits}: computed in {_u}, converted back */
        static inline {_t} nu_add_{_n}({_t} a, {_t} b) {{ return ({_t})(({_u})a + ({_u})b); }}
    """)
    _helper(f"nu_sub_{_n}", f"""
        /* {_n} - {_n} modulo 2^{_w.bits}: computed in {_u}, converted back */
        static inline {_t} nu_sub_{_n}({_t} a, {_t} b) {{ return ({_t})(({_u})a - ({_u})b); }}
    """)
    _helper(f"nu_mul_{_n}", f"""
        /* {_n} * {_n} modulo 2^{_w.bits}: computed in {_u}, converted back */
        static inline {_t} nu_mul_{_n}({_t} a, {_t} b) {{ return ({_t})(({_u})a * ({_u})b); }}
    """)
    _helper(f"nu_neg_{_n}", f"""
        /* -{_n} modulo 2^{_w.bits} (-MIN is MIN): computed in {_u}, converted back */
        static inline {_t} nu_neg_{_n}({_t} a) {{ return ({_t})(({_u})0 - ({_u})a); }}
    """)
    _helper(f"nu_idiv_{_n}", f"""
        /* {_n} floor division, b != 0: the quotient rounded toward minus infinity;
           MIN // -1 wraps to MIN */
        static inline {_t} nu_idiv_{_n}({_t} a, {_t} b)
        {{
            if (b == -1) return nu_neg_{_n}(a);
            const {_t} q = a / b;
            return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
        }}
    """, needs=[f"nu_neg_{_n}"])
    _helper(f"nu_mod_{_n}", f"""
        /* {_n} floor remainder, b != 0: takes the divisor's sign; MIN % -1 is 0 */
        static inline {_t} nu_mod_{_n}({_t} a, {_t} b)
        {{
            if (b == -1) return 0;
            const {_t} r = a % b;
            return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
        }}
    """)

for _w, _u, _mask in ((I32, "uint32_t", "31u"), (I64, "uint64_t", "63u"), (U64, "uint64_t", "63u")):
    _t, _n = c_type(_w), _w.value
    _bits = 5 if _w.bits == 32 else 6
    _a = "a" if _t == _u else f"({_u})a"
    _shl = f"{_a} << ((uint32_t)n & {_mask})"
    _shr = f"{_a} >> ((uint32_t)n & {_mask})"
    if _t != _u:
        _shl, _shr = f"({_t})({_shl})", f"({_t})({_shr})"
    _helper(f"nu_shl_{_n}", f"""
        /* {_n} << n: the count's low {_bits} bits, shifted as {_u} */
        static inline {_t} nu_shl_{_n}({_t} a, int32_t n) {{ return {_shl}; }}
    """)
    _helper(f"nu_shr_{_n}", f"""
        /* {_n} >> n, logical: the count's low {_bits} bits, shifted as {_u} */
        static inline {_t} nu_shr_{_n}({_t} a, int32_t n) {{ return {_shr}; }}
    """)

_helper("nu_cmp_i64_u64", """
    /* int64 against uint64 by value: -1, 0 or 1 (a negative int64 is below every uint64) */
    static inline int nu_cmp_i64_u64(int64_t a, uint64_t b)
    {
        if (a < 0) return -1;
        return ((uint64_t)a > b) - ((uint64_t)a < b);
    }
""")

_C_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

for _w in INT_WIDTHS + (BOOL,):
    _t, _n = c_type(_w), _w.value
    for _c in (COMPARISONS if _w is not BOOL else ("eq", "ne")):
        _helper(f"nu_{_c}_{_n}", f"""
            /* {_n} a {_C_COMPARE[_c]} b for a literal operand: no always-true/false warning */
            static inline _Bool nu_{_c}_{_n}({_t} a, {_t} b) {{ return a {_C_COMPARE[_c]} b; }}
        """)

# ---- binary64 -------------------------------------------------------------------

def _min_max_helper(kind: str, width: Width, library: str, nan: str, nan_c: str) -> None:
    """nu_min_<w> / nu_max_<w>: `nan_c` if either is NaN; a < b picks a for min
    (b for max), equal values (zeros of either sign) pick by a's sign."""
    t, n = c_type(width), width.value
    first, second = ("a", "b") if kind == "min" else ("b", "a")
    order = "<" if kind == "min" else ">"
    _helper(f"nu_{kind}_{n}", f"""
        /* {library}.{kind}: {nan} if either is NaN; -0 < +0 */
        static inline {t} nu_{kind}_{n}({t} a, {t} b)
        {{
            if (isnan(a) || isnan(b)) return {nan_c};
            if (a {order} b) return a;
            if (b {order} a) return b;
            return signbit(a) ? {first} : {second}; /* equal: zeros of either sign */
        }}
    """, headers=[MATH_H])


_helper("nu_mod_f64", """
    /* Lua 5.1's a % b = a - floor(a / b) * b, each step rounded once (5 % inf is NaN) */
    static inline double nu_mod_f64(double a, double b) { return a - floor(a / b) * b; }
""", headers=[MATH_H])
for _kind in ("min", "max"):
    _min_max_helper(_kind, F64, "math", "NaN", "(double)NAN")
_helper("nu_result_f64", """
    /* a binary64 result leaving for the host: any NaN as the quiet NaN 0x7FF8000000000000
       (LuaJIT misreads some NaN patterns, e.g. a negative one with a large payload) */
    static inline double nu_result_f64(double x) { return isnan(x) ? (double)NAN : x; }
""", headers=[MATH_H])

# ---- binary32: nupp.math.f32 ----------------------------------------------------------

_helper("nu_f32_canon", """
    /* nupp.math.f32: every NaN result is the canonical quiet NaN 0x7FC00000.  Applied where
       a binary32 value can be observed (a store to a float field, a result for the host; bits
       canonicalizes itself): every op on binary32 gives a NaN for a NaN operand, and a NaN
       promoted to binary64 shows no payload, so a NaN computed earlier needs no select */
    static inline float nu_f32_canon(float x) { return isnan(x) ? NAN : x; }
""", headers=[MATH_H])
for _kind in ("min", "max"):
    _min_max_helper(_kind, F32, "nupp.math.f32", "the canonical NaN", "NAN")


def _f32_literal(x: float) -> str:
    return _hex_float(x) + "f"


_EXP_HORNER = "\n".join(f"        p = fmaf(p, t, {_f32_literal(c)}); /* 1/{k}! */"
                        for k, c in reversed(list(enumerate(EXP_COEFFICIENTS[:EXP_DEGREE]))))
_EXP_SQUARE = "\n".join(["        p = p * p;"] * EXP_SQUARINGS)
_helper("nu_exp_f32", f"""
    /* nupp.math.f32.exp, the defined sequence: clamp to [{EXP_LOW:g}, {EXP_HIGH:g}] (NaN stays NaN),
       t = x / 128, the degree-12 Taylor polynomial of exp(t) with binary32 coefficients
       1/k! in Horner order with fmaf, then seven binary32 squarings */
    static inline float nu_exp_f32(float x)
    {{
        if (isnan(x)) return NAN;
        if (x < {EXP_LOW!r}f) x = {EXP_LOW!r}f;
        if (x > {EXP_HIGH!r}f) x = {EXP_HIGH!r}f;
        const float t = x * {_f32_literal(EXP_SCALE)};
        float p = {_f32_literal(EXP_COEFFICIENTS[EXP_DEGREE])}; /* 1/{EXP_DEGREE}! */
{_EXP_HORNER}
{_EXP_SQUARE}
        return p;
    }}
""", headers=[MATH_H])
_helper("nu_bits_f32", """
    /* nupp.math.f32.bits: the 32 bits of a binary32; a NaN gives the canonical 0x7FC00000 */
    static inline uint32_t nu_bits_f32(float x)
    {
        uint32_t u;
        if (isnan(x)) return UINT32_C(0x7FC00000);
        memcpy(&u, &x, sizeof u);
        return u;
    }
""", headers=[MATH_H, STRING_H])
_helper("nu_frombits_f32", """
    /* nupp.math.f32.fromBits: the binary32 of 32 bits; a NaN pattern gives the canonical NaN */
    static inline float nu_frombits_f32(uint32_t u)
    {
        float x;
        if ((u & UINT32_C(0x7FFFFFFF)) > UINT32_C(0x7F800000)) return NAN;
        memcpy(&x, &u, sizeof x);
        return x;
    }
""", headers=[MATH_H, STRING_H])

# ---- the entry conversions -------------------------------------------------------------

_helper("nu_wrap_f64", """
    /* ECMAScript-style wrap of a binary64: NaN and the infinities give 0, anything else is
       truncated toward zero and reduced modulo 2^64 (the 32-bit wraps reduce this further).
       No conversion here is ever out of range: below 2^63 in magnitude the truncation fits
       int64_t; beyond, x is an integer and fmod's exact remainder has |m| < 2^64. */
    static inline uint64_t nu_wrap_f64(double x)
    {
        if (x >= -0x1p63 && x < 0x1p63) return (uint64_t)(int64_t)x;
        if (isnan(x) || isinf(x)) return 0;
        {
            const double m = fmod(x, 0x1p64);
            return m >= 0 ? (uint64_t)m : UINT64_C(0) - (uint64_t)-m;
        }
    }
""", headers=[MATH_H])


# ==== the opcode table ==========================================================

@dataclass(frozen=True)
class Rendering:
    """How an opcode is written in scalar C."""

    scalar: str                              # template over the rendered operands {0}, {1}, {2}
    helpers: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    literal_safe: Optional["Rendering"] = None  # comparisons: the form for a literal operand


def _r(scalar: str, helpers: Iterable[str] = (), headers: Iterable[str] = (),
       literal_safe: Optional[Rendering] = None) -> Rendering:
    return Rendering(scalar, tuple(helpers), tuple(headers), literal_safe)


def _call(helper: str, arity: int) -> Rendering:
    """`helper({0}, ...)`."""
    return _r(f"{helper}({', '.join('{%d}' % k for k in range(arity))})", [helper])


C_OPS: dict[str, Rendering] = {}

# ---- integer arithmetic
for _w in INT_WIDTHS:
    _t, _n = c_type(_w), _w.value
    if _w.is_signed:
        for _base in ("add", "sub", "mul", "idiv", "mod"):
            C_OPS[f"{_base}.{_n}"] = _call(f"nu_{_base}_{_n}", 2)
        C_OPS[f"neg.{_n}"] = _call(f"nu_neg_{_n}", 1)
    else:  # unsigned C arithmetic is already modular, and its division floors
        for _base, _sym in (("add", "+"), ("sub", "-"), ("mul", "*")):
            C_OPS[f"{_base}.{_n}"] = _r(f"(({_t})({{0}} {_sym} {{1}}))")
        C_OPS[f"neg.{_n}"] = _r(f"(({_t})(({_t})0 - {{0}}))")
        C_OPS[f"idiv.{_n}"] = _r("({0} / {1})")
        C_OPS[f"mod.{_n}"] = _r("({0} % {1})")

# ---- binary64
C_OPS.update({
    "add.f64": _r("({0} + {1})"),
    "sub.f64": _r("({0} - {1})"),
    "mul.f64": _r("({0} * {1})"),
    "div.f64": _r("({0} / {1})"),
    "neg.f64": _r("(-{0})"),
    "idiv.f64": _r("floor({0} / {1})", headers=[MATH_H]),
    "mod.f64": _call("nu_mod_f64", 2),
    "sqrt.f64": _r("sqrt({0})", headers=[MATH_H]),
    "abs.f64": _r("fabs({0})", headers=[MATH_H]),
    "floor.f64": _r("floor({0})", headers=[MATH_H]),
    "ceil.f64": _r("ceil({0})", headers=[MATH_H]),
    "min.f64": _call("nu_min_f64", 2),
    "max.f64": _call("nu_max_f64", 2),
})

# ---- nupp.math.f32: native float operations (the NaN is canonicalized where it
# can be observed: bits, a store to a float field, a result; see nu_f32_canon)
C_OPS.update({
    "add.f32": _r("({0} + {1})"),
    "sub.f32": _r("({0} - {1})"),
    "mul.f32": _r("({0} * {1})"),
    "div.f32": _r("({0} / {1})"),
    "sqrt.f32": _r("sqrtf({0})", headers=[MATH_H]),
    "neg.f32": _r("(-{0})"),
    "abs.f32": _r("fabsf({0})", headers=[MATH_H]),
    "min.f32": _call("nu_min_f32", 2),
    "max.f32": _call("nu_max_f32", 2),
    "fma.f32": _r("fmaf({0}, {1}, {2})", headers=[MATH_H]),  # correctly rounded (C11 7.12.13.1)
    "exp.f32": _call("nu_exp_f32", 1),
})

# ---- bitwise: on the unsigned pattern
for _w, _u in ((I32, "uint32_t"), (I64, "uint64_t"), (U64, "uint64_t")):
    _t, _n = c_type(_w), _w.value
    for _base, _sym in (("band", "&"), ("bor", "|"), ("bxor", "^")):
        C_OPS[f"{_base}.{_n}"] = _r(f"({{0}} {_sym} {{1}})" if _t == _u
                                    else f"(({_t})(({_u}){{0}} {_sym} ({_u}){{1}}))")
    C_OPS[f"bnot.{_n}"] = _r("(~{0})" if _t == _u else f"(({_t})~({_u}){{0}})")
    C_OPS[f"shl.{_n}"] = _call(f"nu_shl_{_n}", 2)
    C_OPS[f"shr.{_n}"] = _call(f"nu_shr_{_n}", 2)

# ---- comparisons
for _c, _sym in _C_COMPARE.items():
    for _w in (F64,) + INT_WIDTHS:
        _safe = None if _w is F64 else _call(f"nu_{_c}_{_w.value}", 2)
        C_OPS[f"{_c}.{_w.value}"] = _r(f"({{0}} {_sym} {{1}})", literal_safe=_safe)
    # by value: int64 against uint64 through the sign-checked three-way helper
    C_OPS[f"{_c}.i64.u64"] = _r(f"(nu_cmp_i64_u64({{0}}, {{1}}) {_sym} 0)", ["nu_cmp_i64_u64"])
    _mirror = {"lt": ">", "le": ">=", "gt": "<", "ge": "<="}.get(_c, _sym)
    C_OPS[f"{_c}.u64.i64"] = _r(f"(nu_cmp_i64_u64({{1}}, {{0}}) {_mirror} 0)", ["nu_cmp_i64_u64"])
for _c in ("eq", "ne"):
    C_OPS[f"{_c}.bool"] = _r(f"({{0}} {_C_COMPARE[_c]} {{1}})", literal_safe=_call(f"nu_{_c}_bool", 2))

# ---- booleans (the emitter keeps && and || short-circuiting)
C_OPS.update({
    "and.bool": _r("({0} && {1})"),
    "or.bool": _r("({0} || {1})"),
    "not.bool": _r("(!{0})"),
})

# ---- conversions (widths.CONVERSIONS)
C_OPS.update({
    "promote.f32.f64": _r("((double){0})"),
    "promote.i32.f64": _r("((double){0})"),
    "promote.u32.f64": _r("((double){0})"),
    "round.i64.f64": _r("((double){0})"),        # round to nearest even
    "round.u64.f64": _r("((double){0})"),
    "narrow.f64.f32": _r("((float){0})"),        # round to nearest even (Annex F: overflow is inf)
    "wrap.f64.i32": _r("((int32_t)(uint32_t)nu_wrap_f64({0}))", ["nu_wrap_f64"]),
    "wrap.f64.u32": _r("((uint32_t)nu_wrap_f64({0}))", ["nu_wrap_f64"]),
    "wrap.f64.i64": _r("((int64_t)nu_wrap_f64({0}))", ["nu_wrap_f64"]),
    "wrap.f64.u64": _call("nu_wrap_f64", 1),
    "reinterpret.i32.u32": _r("((uint32_t){0})"),
    "reinterpret.u32.i32": _r("((int32_t){0})"),  # modular, as the signed wraps
    "widen.i32.i64": _r("((int64_t){0})"),
    "widen.u32.i64": _r("((int64_t){0})"),
    "widen.u32.u64": _r("((uint64_t){0})"),
    "trunc.i64.i32": _r("((int32_t){0})"),       # the low 32 bits, modular as the signed wraps
    "trunc.u64.i32": _r("((int32_t){0})"),
    "bits.f32.u32": _call("nu_bits_f32", 1),
    "frombits.u32.f32": _call("nu_frombits_f32", 1),
})

check_rendered("emit_c/helpers.py C_OPS", C_OPS)
for _rendering in C_OPS.values():
    for _name in _rendering.helpers + (_rendering.literal_safe.helpers if _rendering.literal_safe else ()):
        assert _name in HELPERS, _name
