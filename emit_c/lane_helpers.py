"""Lane forms of the C helpers: each rule of emit_c/helpers.py, on a whole gang at once.

    lane_form("min.f32", 8) -> LaneForm(name="nu_min_f32x8", needs=(...), vectors=(...), code="...")

The lane C (emit_c/lane.py) calls `nu_<op>x<W>(&r, &a, &b)` on vectors of W
lanes for an op listed in LANE_FORMS instead of the scalar helper once per
lane.  Each form states the same rule as its scalar helper beside it in
helpers.py, in vector operations, and is checked against it bit for bit by
the lane differentials (tests/test_lane_c.py, test_tiers.py,
test_lane_forms.py) on edge inputs: NaNs of every kind, signed zeros,
infinities, the clamps of exp, shift counts around every boundary, the
wraps' ranges.

  min / max       the canonical NaN if either operand is NaN; a < b picks a, b < a
                  picks b, equal (zeros of either sign) picks by a's sign: three
                  selects, by AVX-512 mask registers where the tier has them
  fma.f32         correctly rounded: the FMA instruction where the tier has it
                  (__FMA__ / AVX-512), else fmaf per lane
  exp.f32         numerics.EXP_COEFFICIENTS, the same clamp, Horner order with fma
                  and seven squarings as nu_exp_f32
  bits / fromBits the canonical NaN pattern 0x7FC00000 for any NaN (a NaN pattern:
                  the binary32 unequal to itself)
  neg             modular, in the unsigned type
  shl / shr       the count's low 5 or 6 bits, the unsigned pattern shifted
  floor / ceil /  the instruction where the tier has it (SSE4.1 rounds, SSE2
  sqrt            sqrt), else C's function per lane: each has one exact result
  abs             the sign bit cleared
  idiv / mod .f64 floor(a / b), a - floor(a / b) * b, each step rounded once
  wrap.f64.*      partial: the C conversion where every lane's truncation fits
                  it, else 0, and the lane C runs the scalar nu_wrap_f64 per lane
  eq.bool         masks equal where their xor is 0

`conversion_form` gives the same for C's conversions that change the lanes'
size (binary32 / int32 / uint32 to binary64, 32- to 64-bit integers and
back): the one instruction where the tier has it for the whole register.

Operands and the result are passed by pointer: a GCC/Clang vector wider
than the tier's registers passed by value changes the psABI (a warning).
Every form is `__attribute__((unused))`: a unit carries the forms of each
register width its gangs run at, and a target compiles one width's loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from nupp.emit_c import intrinsics
from nupp.emit_c.helpers import _f32_literal
from nupp.emit_c.lane_vectors import SHORT, SIZES
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
    # covers only the common range: returns 0 when some lane is outside it,
    # and the lane C then computes every lane by the scalar helper
    partial: bool = False
    lanes: bool = False        # calls the mask-lanes helper nu_lanes_xG


def lane_form(op: str, g: int) -> Optional[LaneForm]:
    make = LANE_FORMS.get(op)
    return None if make is None else make(g)


def _splat(value: str, g: int) -> str:
    return "{" + ", ".join([value] * g) + "}"


# A unit carries the forms of each register width its gangs run at, and a
# target compiles the gang loop of one width: the others' forms go unused.
_INLINE = "static inline __attribute__((unused))"


def _signature(name: str, vector: str, arity: int, operands: Optional[tuple[str, ...]] = None,
               returns: str = "void") -> str:
    """`static inline void name(vector *r, const vector *a, ...)`; `operands`
    names each operand's vector type where they differ from the result's."""
    operands = operands or (vector,) * arity
    args = ", ".join(f"const {v} *{x}" for v, x in zip(operands, "abc"))
    return f"{_INLINE} {returns} {name}({vector} *r, {args})"


def _by_isa(g: int, chunks, chunk_lines, fallback: list[str]) -> list[str]:
    """C choosing, by the tier's predefined macros, the widest intrinsic
    (emit_c/intrinsics.py) whose `width` lanes divide the gang, run over the
    gang `width` lanes at a time (`chunk_lines(intrinsic)`: the loop body over
    chunk k), else the portable `fallback` lines."""
    lines, first, seen = [], True, set()
    for width, intrinsic in chunks:
        macro = intrinsics.macro(intrinsic)
        if width > g or macro in seen:  # a narrower chunk under the same macro is never chosen
            continue
        seen.add(macro)
        lines.append(f"#{'if' if first else 'elif'} {macro}")
        lines.append(f"    for (int k = 0; k < {g}; k += {width}) {{")
        lines += ["        " + line for line in chunk_lines(intrinsic)]
        lines.append("    }")
        first = False
    return lines + (["#else"] + fallback + ["#endif"] if not first else fallback)


def _in_chunk(vtype: str, element: str, names: str, body: list[str]) -> list[str]:
    """A chunk loop's body: operands `names` copied to `<x>k` (of `vtype`) from
    lane k on, `body`, and its result `rk` copied to the result's lane k on."""
    lines = [f"{vtype} " + ", ".join(f"{x}k" for x in names) + ";"]
    lines += [f"memcpy(&{x}k, (const {element} *){x} + k, sizeof {x}k);" for x in names]
    return lines + body + [f"memcpy(({element} *)r + k, &rk, sizeof rk);"]


def _chunked(name: str, vector: str, element: str, arity: int, chunks, fallback: str, g: int) -> str:
    """A lane-wise op done by the widest intrinsic the tier has, else by the
    scalar C function per lane."""
    names = "abc"[:arity]

    def chunk(intrinsic):
        vtype = intrinsics.operand(intrinsic)
        body = [f"const {vtype} rk = {intrinsic}(" + ", ".join(f"{x}k" for x in names) + ");"]
        return _in_chunk(vtype, element, names, body)

    operands = ", ".join(f"(*{x})[l]" for x in names)
    fallback_lines = [f"    for (int l = 0; l < {g}; l++) (*r)[l] = {fallback}({operands});"]
    return "\n".join([_signature(name, vector, arity), "{", *_by_isa(g, chunks, chunk, fallback_lines), "}"]) + "\n"


# No AVX-512 mask form: its compare gives a k-register mask, and GCC 12.2
# spills that 16 bits wide and reloads it 32 bits wide, so under register
# pressure the lanes read back had stack garbage in bits 16..31 and a masked
# while never ended (tests/gcc_kmask_spill.md).  vmovmskps writes a general
# register.  The mask is read whole, by a vector cast: a memcpy of part of it
# sent it through memory every round of a masked while.
_MOVEMASK = {
    16: ("nu_mm512_extracti64x4_epi64_0",
         ["const nu_v8di v = (nu_v8di)*m;",
          "return (unsigned)nu_mm256_movemask_ps((nu_v8sf)nu_mm512_extracti64x4_epi64_0(v))",
          "       | (unsigned)nu_mm256_movemask_ps((nu_v8sf)nu_mm512_extracti64x4_epi64_1(v)) << 8;"]),
    8: ("nu_mm256_movemask_ps", ["return (unsigned)nu_mm256_movemask_ps((nu_v8sf)*m);"]),
    4: ("nu_mm_movemask_ps", ["return (unsigned)nu_mm_movemask_ps((nu_v4sf)*m);"]),
}


def lanes_helper(g: int) -> str:
    """`nu_lanes_xG(&mask)`: the sign bits of a mask's lanes as an unsigned, bit
    k for lane k, by movemask where the target has a register of the mask's
    width (SSE: 4 lanes, AVX: 8, AVX-512: 16), else lane by lane."""
    fallback = ["    unsigned bits = 0;", f"    for (int l = 0; l < {g}; l++) bits |= ((uint32_t)(*m)[l] >> 31) << l;",
                "    return bits;"]
    if g in _MOVEMASK:
        intrinsic, lines = _MOVEMASK[g]
        fallback = [f"#if {intrinsics.macro(intrinsic)}", *("    " + line for line in lines), "#else", *fallback, "#endif"]
    return "\n".join(["\n/* the set lanes of a mask: bit k is lane k */",
                      f"{_INLINE} unsigned nu_lanes_x{g}(const nu_i32x{g} *m)", "{", *fallback, "}"]) + "\n"


def _min_max(kind: str, element: str, bits: str, nan: str):
    """min: a where a < b, else b; max: a where b < a, else b.  Equal values are
    the same bits or zeros of opposite signs, and the rule's pick by a's sign is
    then a | b for min (-0 if either is), a & b for max; a NaN in either gives
    the canonical NaN.  Three selects, as the hand-written SIMD: by mask
    registers where the tier has AVX-512 (GCC 12 turns a chain of selects by
    vector masks into two or three instructions each), else by vector masks.
    Those masks only select lanes of one register (the bits past its lanes are
    ignored), so GCC 12.2's k-register spill (_MOVEMASK) cannot reach them."""
    less, tie = (("a", "b"), "|") if kind == "min" else (("b", "a"), "&")
    s, lanes, mask = ("ps", 16, "unsigned short") if bits == "32" else ("pd", 8, "unsigned char")
    blend = f"nu_mm512_mask_blend_epi{bits}"
    vector, words = intrinsics.operand(f"nu_mm512_cmplt_{s}_mask"), intrinsics.result(blend)

    def by_mask_registers(_blend: str) -> list[str]:
        x, y = (f"{v}k" for v in less)
        return _in_chunk(vector, element, "ab", [
            f"const {mask} take_a = nu_mm512_cmplt_{s}_mask({x}, {y}), equal = nu_mm512_cmpeq_{s}_mask(ak, bk);",
            f"const {mask} nan = nu_mm512_cmpunord_{s}_mask(ak, bk);",
            f"const {words} ia = ({words})ak, ib = ({words})bk, canonical = {_splat(nan, lanes)};",
            f"{words} rk = {blend}(take_a, ib, ia);",
            f"rk = {blend}(equal, rk, ia {tie} ib);",
            f"rk = {blend}(nan, rk, canonical);"])

    def make(g: int) -> LaneForm:
        f, i = f"nu_f{bits}x{g}", f"nu_i{bits}x{g}"
        name = f"nu_{kind}_f{bits}x{g}"
        x, y = (f"*{v}" for v in less)
        by_vector_masks = [
            f"    const {i} ia = ({i})*a, ib = ({i})*b;",
            f"    const {i} take_a = ({x} < {y}), equal = (*a == *b);",
            f"    const {i} nan = (*a != *a) | (*b != *b), canonical = {_splat(nan, g)};",
            f"    const {i} ordered = (ia & take_a) | (ib & ~take_a);",
            f"    const {i} picked = (ordered & ~equal) | ((ia {tie} ib) & equal);",
            f"    *r = ({f})((picked & ~nan) | (canonical & nan));"]
        code = "\n".join([f"\n/* {kind}.f{bits} per lane: the canonical NaN if either is NaN; -0 < +0 */",
                          _signature(name, f, 2), "{",
                          *_by_isa(g, ((lanes, blend),), by_mask_registers, by_vector_masks), "}"]) + "\n"
        return LaneForm(name, (), (element, f"int{bits}_t"), code)
    return make


_FMA_F32 = ((16, "nu_mm512_fmadd_ps"), (8, "nu_mm256_fmadd_ps"), (4, "nu_mm_fmadd_ps"))


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
{_signature(name, f, 1)}
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
{_signature(name, u, 1, (f,))}
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
{_signature(name, f, 1, (u,))}
{{
    const {f} x = ({f})*a; /* a NaN pattern is exactly a binary32 unequal to itself */
    const {i} nan = (x != x), canonical = {_splat(F32_NAN, g)};
    *r = ({f})((({i})*a & ~nan) | (canonical & nan));
}}
"""
    return LaneForm(name, (), ("float", "int32_t", "uint32_t"), code)


# ---- integers: modular negation and shifts, as nu_neg_* / nu_shl_* / nu_shr_* state them

_UNSIGNED = {"i32": "uint32_t", "u32": "uint32_t", "i64": "uint64_t", "u64": "uint64_t"}
_ELEMENT = {short: element for element, short in SHORT.items()}


def _vector(short: str, g: int) -> str:
    return f"nu_{short}x{g}"


def _unsigned_vector(short: str, g: int) -> str:
    return _vector("u" + short[1:], g)


def _neg(short: str):
    def make(g: int) -> LaneForm:
        t, u = _vector(short, g), _unsigned_vector(short, g)
        name = f"nu_neg_{short}x{g}"
        code = f"""
/* neg.{short} per lane: modulo 2^{short[1:]} (-MIN is MIN), computed as {_UNSIGNED[short]} */
{_signature(name, t, 1)}
{{
    *r = ({t})(-({u})*a);
}}
"""
        return LaneForm(name, (), (_ELEMENT[short], _UNSIGNED[short]), code)
    return make


def _shift(kind: str, short: str):
    """shl / shr: the count's low 5 (32-bit) or 6 (64-bit) bits, the value's
    unsigned pattern shifted (>> logical).  The count is an int32 vector,
    taken as uint32 and widened to the value's lanes for a 64-bit shift."""
    def make(g: int) -> LaneForm:
        t, u, n = _vector(short, g), _unsigned_vector(short, g), _vector("i32", g)
        bits = int(short[1:])
        name = f"nu_{kind}_{short}x{g}"
        count = f"({_vector('u32', g)})*b"
        if bits == 64:
            count = f"__builtin_convertvector({count}, {u})"
        code = f"""
/* {kind}.{short} per lane: the count's low {5 if bits == 32 else 6} bits, shifted as {_UNSIGNED[short]}{', logical' if kind == 'shr' else ''} */
{_signature(name, t, 2, (t, n))}
{{
    const {u} low = {_splat(f"{bits - 1}u", g)};
    *r = ({t})(({u})*a {'<<' if kind == 'shl' else '>>'} ({count} & low));
}}
"""
        return LaneForm(name, (), (_ELEMENT[short], _UNSIGNED[short], "int32_t", "uint32_t"), code)
    return make


# ---- binary64 and binary32: floor, ceil, sqrt by the instruction; abs by the sign bit

def _x86(name: str, double: bool) -> tuple:
    """(lanes, intrinsic) of `nu_mm*_<name>_pd` / `_ps` at each register width, widest first."""
    lanes, suffix = (8, "pd") if double else (16, "ps")
    return ((lanes, f"nu_mm512_{name}_{suffix}"), (lanes // 2, f"nu_mm256_{name}_{suffix}"),
            (lanes // 4, f"nu_mm_{name}_{suffix}"))


_ROUND = {
    "floor.f64": _x86("floor", True),
    "ceil.f64": _x86("ceil", True),
    "sqrt.f64": _x86("sqrt", True),
    "sqrt.f32": _x86("sqrt", False),
}
_LIBM = {"floor.f64": "floor", "ceil.f64": "ceil", "sqrt.f64": "sqrt", "sqrt.f32": "sqrtf"}


def _instruction(op: str):
    """An IEEE operation with one correct result (floor, ceil, a correctly rounded
    sqrt): the widest instruction the tier has, else C's function per lane."""
    base, short = op.split(".")

    def make(g: int) -> LaneForm:
        name = f"nu_{base}_{short}x{g}"
        code = (f"\n/* {op} per lane: exact, the instruction where the tier has it, else {_LIBM[op]} */\n"
                + _chunked(name, _vector(short, g), _ELEMENT[short], 1, _ROUND[op], _LIBM[op], g))
        return LaneForm(name, (), (_ELEMENT[short],), code)
    return make


def _abs(short: str):
    def make(g: int) -> LaneForm:
        t, i = _vector(short, g), _vector("i" + short[1:], g)
        name = f"nu_abs_{short}x{g}"
        magnitude = "0x7FFFFFFF" if short == "f32" else "0x7FFFFFFFFFFFFFFF"
        code = f"""
/* abs.{short} per lane: the sign bit cleared (fabs) */
{_signature(name, t, 1)}
{{
    const {i} magnitude = {_splat(magnitude, g)};
    *r = ({t})(({i})*a & magnitude);
}}
"""
        return LaneForm(name, (), (_ELEMENT[short], f"int{short[1:]}_t"), code)
    return make


def _floor_division(kind: str):
    """idiv.f64 = floor(a / b); mod.f64 = a - floor(a / b) * b, each step rounded once."""
    def make(g: int) -> LaneForm:
        f = _vector("f64", g)
        name = f"nu_{kind}_f64x{g}"
        result = "q" if kind == "idiv" else "*a - q * *b"
        code = f"""
/* {kind}.f64 per lane: {'floor(a / b)' if kind == 'idiv' else "Lua's a - floor(a / b) * b"}, each step rounded once */
{_signature(name, f, 2)}
{{
    nu_f64x{g} q = *a / *b;
    nu_floor_f64x{g}(&q, &q);
    *r = {result};
}}
"""
        return LaneForm(name, ("floor.f64",), ("double",), code)
    return make


# ---- the ECMAScript wraps of a binary64: the fast range by conversion, the rest by nu_wrap_f64

def _wrap(short: str):
    """Where every lane's truncation fits the conversion (-2^31 - 1 < x < 2^31
    for a 32-bit result, -2^63 <= x < 2^63 for a 64-bit one), the C conversion gives
    nu_wrap_f64's bits (truncated, modulo 2^bits); otherwise 0 and the lane C
    computes each lane by the scalar rule."""
    def make(g: int) -> LaneForm:
        t, f, i = _vector(short, g), _vector("f64", g), _vector("i64", g)
        name = f"nu_wrap_f64_{short}x{g}"
        low, high = ("-0x1.00000002p+31", "0x1p+31") if short[1:] == "32" else ("-0x1p+63", "0x1p+63")
        inside = "(*a > lo)" if short[1:] == "32" else "(*a >= lo)"
        signed = _vector("i" + short[1:], g)
        code = f"""
/* wrap.f64.{short} per lane where every lane's truncation fits int{short[1:]}_t; else 0 (nu_wrap_f64 per lane) */
{_signature(name, t, 1, (f,), "int")}
{{
    const {f} lo = {_splat(low, g)}, hi = {_splat(high, g)};
    const nu_i32x{g} fits = __builtin_convertvector(({i})({inside} & (*a < hi)), nu_i32x{g});
    if (nu_lanes_x{g}(&fits) != {_full(g)}) return 0;
    *r = ({t})__builtin_convertvector(*a, {signed});
    return 1;
}}
"""
        vectors = ("double", "int64_t", "int32_t", _ELEMENT[short], _ELEMENT["i" + short[1:]])
        return LaneForm(name, (), vectors, code, partial=True, lanes=True)
    return make


def _full(g: int) -> str:
    """The lanes of a full mask, as nu_lanes_xG returns them."""
    return f"{(1 << g) - 1}u"


def _eq_bool(g: int) -> LaneForm:
    name, m = f"nu_eq_boolx{g}", f"nu_i32x{g}"
    code = f"""
/* eq.bool per lane: masks (0 / -1) are equal where their xor is 0 */
{_signature(name, m, 2)}
{{
    *r = ~(*a ^ *b);
}}
"""
    return LaneForm(name, (), ("int32_t",), code)


# ---- conversions that change the lanes' size, by the instruction ------------------------------

# GCC 12 writes a __builtin_convertvector that doubles the lanes' size as two
# conversions of halves and an insert (and a 64-to-32-bit truncation as a
# two-source permute), even where one instruction converts the whole
# register.  (source, target) element -> {lanes: intrinsic (emit_c/intrinsics.py)}: each the C conversion exactly (integers sign- or zero-extended by the
# source's signedness, truncated modulo 2^32; binary32 and int32 to binary64
# exact).
_TO_F64 = {"float": "cvtps_pd", "int32_t": "cvtepi32_pd", "uint32_t": "cvtepu32_pd"}
_EXTEND = {"int32_t": "cvtepi32_epi64", "uint32_t": "cvtepu32_epi64"}


def _conversions() -> dict:
    def by_lanes(name: str) -> dict:
        return {8: f"nu_mm512_{name}", 4: f"nu_mm256_{name}"}
    table = {(source, "double"): by_lanes(name) for source, name in _TO_F64.items()}
    for source, name in _EXTEND.items():
        for target in ("int64_t", "uint64_t"):
            table[(source, target)] = by_lanes(name)
    for source in ("int64_t", "uint64_t"):
        for target in ("int32_t", "uint32_t"):
            table[(source, target)] = by_lanes("cvtepi64_epi32")
    return table


CONVERSIONS = _conversions()


def conversion_form(source: str, target: str, g: int) -> Optional[LaneForm]:
    """`nu_cvt_<s>_<t>x<g>(&r, &a)`: C's conversion of g `source` lanes to
    `target`, one instruction where the tier has it; None where no
    instruction converts g lanes in one register (__builtin_convertvector does)."""
    intrinsic = CONVERSIONS.get((source, target), {}).get(g)
    if intrinsic is None:
        return None
    macro, operand = intrinsics.macro(intrinsic), intrinsics.operand(intrinsic)
    name, t, a = f"nu_cvt_{SHORT[source]}_{SHORT[target]}x{g}", _vector(SHORT[target], g), _vector(SHORT[source], g)
    code = f"""
/* {source} to {target} per lane, C's conversion: {intrinsic} where the tier has it */
{_signature(name, t, 1, (a,))}
{{
#if {macro}
    *r = ({t}){intrinsic}(({operand})*a);
#else
    *r = __builtin_convertvector(*a, {t});
#endif
}}
"""
    return LaneForm(name, (), (source, target), code)


# The macro of the narrowest x86 extension whose registers hold a vector of this many bytes.
_REGISTER_ISA = {16: "defined(__SSE2__)", 32: "defined(__AVX__)", 64: "defined(__AVX512F__)"}


def block_load_form(element: str, g: int) -> LaneForm:
    """`nu_load_<e>x<g>(&r, p)`: one vector of a gang's block of elements
    (emit_c/lane_memory.py), copied from p.  GCC would fold the load into each
    shuffle that reads it, as a memory operand: one reload of the block per
    field.  An empty asm taking the vector in a register keeps it there where a
    register holds it (Clang keeps it unasked)."""
    t = _vector(SHORT[element], g)
    name = f"nu_load_{SHORT[element]}x{g}"
    code = f"""
/* a vector of {g} {element} lanes of a gang's block of elements, loaded once, kept in a register */
{_INLINE} void {name}({t} *r, const void *p)
{{
    memcpy(r, p, sizeof *r);
#if !defined(__clang__) && {_REGISTER_ISA.get(SIZES[element] * g, "0")}
    __asm__("" : "+v"(*r));
#endif
}}
"""
    return LaneForm(name, (), (element,), code)


LANE_FORMS = {
    "min.f32": _min_max("min", "float", "32", F32_NAN),
    "max.f32": _min_max("max", "float", "32", F32_NAN),
    "min.f64": _min_max("min", "double", "64", F64_NAN),
    "max.f64": _min_max("max", "double", "64", F64_NAN),
    "fma.f32": _fma_f32,
    "exp.f32": _exp_f32,
    "bits.f32.u32": _bits_f32,
    "frombits.u32.f32": _frombits_f32,
    **{f"neg.{w}": _neg(w) for w in ("i32", "u32", "i64", "u64")},
    **{f"{kind}.{w}": _shift(kind, w) for kind in ("shl", "shr") for w in ("i32", "i64", "u64")},
    **{op: _instruction(op) for op in _ROUND},
    "abs.f64": _abs("f64"),
    "abs.f32": _abs("f32"),
    "idiv.f64": _floor_division("idiv"),
    "mod.f64": _floor_division("mod"),
    **{f"wrap.f64.{w}": _wrap(w) for w in ("i32", "u32", "i64", "u64")},
    "eq.bool": _eq_bool,
}
# Forms whose lanes run one long chain of dependent instructions (exp: clamp,
# 12 fmas in Horner order, 7 squarings): a vector waits on each step's latency
# (what targets/gang_choice.py reads: such a loop may take two vectors a gang).
SERIAL_FORMS = frozenset({"exp.f32"})
# Ops whose lanes hold the canonical NaN 0x7FC00000 for any NaN, as their forms
# and scalar rules (the fallback of a partial form) both leave it: bits.f32 of
# one is its bits as they are (emit_c/lane.py), no second NaN select.
CANONICAL_NAN_RESULTS = frozenset({"min.f32", "max.f32", "exp.f32", "frombits.u32.f32"})
# lane C runs operators and casts natively (lane_vectors.py): a form is for a rule
check_rendered("emit_c/lane_helpers.py LANE_FORMS", LANE_FORMS,
               expected=[op for op, info in OPS.items() if info.vector == RULE], partial=True)
