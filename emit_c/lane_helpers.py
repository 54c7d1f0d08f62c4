"""Lane forms of the C helpers: each rule of emit_c/helpers.py, on a whole gang at once.

    lane_form("min.f32", 8) -> LaneForm(name="nu_min_f32x8", needs=(...), vectors=(...), code="...")

The lane C (emit_c/lane.py) calls `nu_<op>x<G>(&r, &a, &b)` for an op listed
in LANE_FORMS instead of the scalar helper once per lane.  Each form states
the same rule as its scalar helper beside it in helpers.py, in vector
operations, and is checked against it bit for bit by the lane differential
(tests/test_lane_c.py, test_tiers.py) on edge inputs: NaNs of every kind,
signed zeros, infinities, the clamps of exp.

  min / max       the canonical NaN if either operand is NaN; a < b picks a, b < a
                  picks b, equal (zeros of either sign) picks by a's sign
  fma.f32         correctly rounded: the FMA instruction where the tier has it
                  (__FMA__ / AVX-512), else fmaf per lane
  exp.f32         numerics.EXP_COEFFICIENTS, the same clamp, Horner order with fma
                  and seven squarings as nu_exp_f32
  bits / fromBits the canonical NaN pattern 0x7FC00000 for any NaN

Operands and the result are passed by pointer: a GCC/Clang vector wider
than the tier's registers passed by value changes the psABI (a warning).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from nupp.emit_c.helpers import _f32_literal
from nupp.scalar_ir.numerics import (EXP_COEFFICIENTS, EXP_DEGREE, EXP_HIGH, EXP_LOW, EXP_SCALE,
                                     EXP_SQUARINGS)
from nupp.scalar_ir.ops import OPS, RULE, check_rendered

F32_NAN, F64_NAN = "0x7FC00000", "0x7FF8000000000000"


@dataclass(frozen=True)
class LaneForm:
    name: str
    needs: tuple[str, ...]     # other lane forms it calls (ops)
    vectors: tuple[str, ...]   # element C types whose vector typedefs it uses
    code: str


def lane_form(op: str, g: int) -> Optional[LaneForm]:
    make = LANE_FORMS.get(op)
    return None if make is None else make(g)


def _splat(value: str, g: int) -> str:
    return "{" + ", ".join([value] * g) + "}"


def _signature(name: str, vector: str, arity: int) -> str:
    args = ", ".join(f"const {vector} *{x}" for x in "abc"[:arity])
    return f"static inline void {name}({vector} *r, {args})"


def _min_max(kind: str, element: str, bits: str, nan: str):
    """min: a where a < b, or where neither is less and a is negative (signbit);
    max: a where a > b, or where neither is less and a is not negative."""
    less, other = ("<", ">") if kind == "min" else (">", "<")

    def make(g: int) -> LaneForm:
        f, i = f"nu_f{bits}x{g}", f"nu_i{bits}x{g}"
        name = f"nu_{kind}_f{bits}x{g}"
        neg = "negative" if kind == "min" else "~negative"
        code = f"""
/* {kind}.f{bits} per lane: the canonical NaN if either is NaN; -0 < +0 */
{_signature(name, f, 2)}
{{
    const {i} ia = ({i})*a, ib = ({i})*b;
    const {i} first = (*a {less} *b), second = (*a {other} *b), negative = ia < 0;
    const {i} take_a = first | (~second & {neg});
    const {i} nan = (*a != *a) | (*b != *b);
    const {i} canonical = {_splat(nan, g)};
    *r = ({f})((((ia & take_a) | (ib & ~take_a)) & ~nan) | (canonical & nan));
}}
"""
        return LaneForm(name, (), (element, f"int{bits}_t"), code)
    return make


def _by_isa(g: int, chunks, chunk_lines, fallback: list[str]) -> list[str]:
    """C choosing, by the tier's predefined macros, the widest intrinsic whose
    `width` lanes divide the gang, run over the gang `width` lanes at a time
    (`chunk_lines(width, vtype, intrinsic)`: the loop body over chunk k), else
    the portable `fallback` lines."""
    lines, first, seen = [], True, set()
    for width, macro, vtype, intrinsic in chunks:
        if width > g or macro in seen:  # a narrower chunk under the same macro is never chosen
            continue
        seen.add(macro)
        lines.append(f"#{'if' if first else 'elif'} {macro}")
        lines.append(f"    for (int k = 0; k < {g}; k += {width}) {{")
        lines += ["        " + line for line in chunk_lines(width, vtype, intrinsic)]
        lines.append("    }")
        first = False
    return lines + (["#else"] + fallback + ["#endif"] if not first else fallback)


def _chunked(name: str, vector: str, element: str, arity: int, chunks, fallback: str, g: int) -> str:
    """A lane-wise op done by the widest intrinsic the tier has, else by the
    scalar C function per lane."""
    names = "abc"[:arity]

    def chunk(width, vtype, intrinsic):
        body = [f"{vtype} " + ", ".join(f"{x}k" for x in names) + ";"]
        body += [f"memcpy(&{x}k, (const {element} *){x} + k, sizeof {x}k);" for x in names]
        body.append(f"const {vtype} rk = {intrinsic}(" + ", ".join(f"{x}k" for x in names) + ");")
        return body + [f"memcpy(({element} *)r + k, &rk, sizeof rk);"]

    operands = ", ".join(f"(*{x})[l]" for x in names)
    fallback_lines = [f"    for (int l = 0; l < {g}; l++) (*r)[l] = {fallback}({operands});"]
    return "\n".join([_signature(name, vector, arity), "{", *_by_isa(g, chunks, chunk, fallback_lines), "}"]) + "\n"


# No AVX-512 form: its compare gives a k-register mask, and GCC 12.2 spills
# that 16 bits wide and reloads it 32 bits wide, so under register pressure
# the lanes read back had stack garbage in bits 16..31 and a masked while
# never ended (tests/gcc_kmask_spill.md).  vmovmskps writes a general register.
_MOVEMASK = ((8, "defined(__AVX__)", "__m256i", "_mm256_movemask_ps((__m256)c)"),
             (4, "defined(__SSE__)", "__m128i", "_mm_movemask_ps((__m128)c)"))


def lanes_helper(g: int) -> str:
    """`nu_lanes_xG(&mask)`: the sign bits of a mask's lanes as an unsigned, bit
    k for lane k, by movemask where the target has it (SSE: 4 lanes, AVX and
    AVX-512: 8 at a time), else lane by lane."""
    def chunk(width, vtype, movemask):
        return [f"{vtype} c;", "memcpy(&c, (const int32_t *)m + k, sizeof c);",
                f"bits |= (unsigned){movemask} << k;"]

    fallback = [f"    for (int l = 0; l < {g}; l++) bits |= ((uint32_t)(*m)[l] >> 31) << l;"]
    return "\n".join(["\n/* the set lanes of a mask: bit k is lane k */",
                      f"static inline unsigned nu_lanes_x{g}(const nu_i32x{g} *m)", "{", "    unsigned bits = 0;",
                      *_by_isa(g, _MOVEMASK, chunk, fallback), "    return bits;", "}"]) + "\n"


_FMA_F32 = ((16, "defined(__AVX512F__)", "__m512", "_mm512_fmadd_ps"),
            (8, "defined(__FMA__)", "__m256", "_mm256_fmadd_ps"),
            (4, "defined(__FMA__)", "__m128", "_mm_fmadd_ps"))


def _fma_f32(g: int) -> LaneForm:
    name = f"nu_fma_f32x{g}"
    code = ("\n/* fma.f32 per lane: correctly rounded, the instruction where the tier has it */\n"
            + _chunked(name, f"nu_f32x{g}", "float", 3, _FMA_F32, "fmaf", g))
    return LaneForm(name, (), ("float",), code)


def _exp_f32(g: int) -> LaneForm:
    f, i = f"nu_f32x{g}", f"nu_i32x{g}"
    name, fma = f"nu_exp_f32x{g}", f"nu_fma_f32x{g}"
    low, high = _splat(f"{EXP_LOW!r}f", g), _splat(f"{EXP_HIGH!r}f", g)
    scale = _splat(_f32_literal(EXP_SCALE), g)
    horner = "\n".join(f"    {{ const {f} c = {_splat(_f32_literal(c), g)}; {fma}(&p, &p, &t, &c); }}"
                       for c in reversed(EXP_COEFFICIENTS[:EXP_DEGREE]))
    code = f"""
/* exp.f32 per lane: nu_exp_f32's sequence (clamp, t = x / 128, Horner with fma, seven squarings) */
static inline void {name}({f} *r, const {f} *a)
{{
    const {i} nan = (*a != *a);
    const {f} lo = {low}, hi = {high}, scale = {scale};
    const {i} below = *a < lo, above = *a > hi;
    {f} x = ({f})((({i})*a & ~below) | (({i})lo & below));
    x = ({f})((({i})x & ~above) | (({i})hi & above));
    const {f} t = x * scale;
    {f} p = {_splat(_f32_literal(EXP_COEFFICIENTS[EXP_DEGREE]), g)};
{horner}
    for (int k = 0; k < {EXP_SQUARINGS}; k++) p = p * p;
    const {i} canonical = {_splat(F32_NAN, g)};
    *r = ({f})((({i})p & ~nan) | (canonical & nan));
}}
"""
    return LaneForm(name, ("fma.f32",), ("float", "int32_t"), code)


def _bits_f32(g: int) -> LaneForm:
    f, i, u = f"nu_f32x{g}", f"nu_i32x{g}", f"nu_u32x{g}"
    name = f"nu_bits_f32x{g}"
    code = f"""
/* bits.f32 per lane: the 32 bits; any NaN gives 0x7FC00000 */
static inline void {name}({u} *r, const {f} *a)
{{
    const {i} nan = (*a != *a), canonical = {_splat(F32_NAN, g)};
    *r = ({u})((({i})*a & ~nan) | (canonical & nan));
}}
"""
    return LaneForm(name, (), ("float", "int32_t", "uint32_t"), code)


def _frombits_f32(g: int) -> LaneForm:
    f, i, u = f"nu_f32x{g}", f"nu_i32x{g}", f"nu_u32x{g}"
    name = f"nu_frombits_f32x{g}"
    code = f"""
/* fromBits.f32 per lane: the binary32 of 32 bits; a NaN pattern gives 0x7FC00000 */
static inline void {name}({f} *r, const {u} *a)
{{
    const {u} sign = {_splat("0x80000000u", g)}, infinity = {_splat("0x7F800000u", g)};
    const {i} nan = ({i})((*a & ~sign) > infinity), canonical = {_splat(F32_NAN, g)};
    *r = ({f})((({i})*a & ~nan) | (canonical & nan));
}}
"""
    return LaneForm(name, (), ("float", "int32_t", "uint32_t"), code)


LANE_FORMS = {
    "min.f32": _min_max("min", "float", "32", F32_NAN),
    "max.f32": _min_max("max", "float", "32", F32_NAN),
    "min.f64": _min_max("min", "double", "64", F64_NAN),
    "max.f64": _min_max("max", "double", "64", F64_NAN),
    "fma.f32": _fma_f32,
    "exp.f32": _exp_f32,
    "bits.f32.u32": _bits_f32,
    "frombits.u32.f32": _frombits_f32,
}
# lane C runs operators and casts natively (lane_vectors.py): a form is for a rule
check_rendered("emit_c/lane_helpers.py LANE_FORMS", LANE_FORMS,
               expected=[op for op, info in OPS.items() if info.vector == RULE], partial=True)
