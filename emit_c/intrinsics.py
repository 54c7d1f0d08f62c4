"""The x86 instructions lane C's forms use, without <immintrin.h>.

Parsing <immintrin.h> costs GCC about 0.2 s in every lane unit, most of a
cold compile, for the two dozen intrinsics the lane forms (lane_helpers.py)
call.  Each is written here as the compilers' own headers define it (GCC
12's and Clang 14's): its builtin, or __builtin_convertvector where Clang's
header converts that way, under the predefined macro of the instructions it
needs.  A unit carries the typedefs and intrinsics its forms name
(`section`), so a unit without them parses nothing more.

    nu_mm256_fmadd_ps(a, b, c)     _mm256_fmadd_ps, on nu_v8sf (GCC's __v8sf)

An operand or result is a vector of the builtin's own element type
(`nu_v8sf`: eight floats; `nu_v4di`: four long longs): callers cast to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

SSE, SSE2, SSE4_1 = "defined(__SSE__)", "defined(__SSE2__)", "defined(__SSE4_1__)"
AVX, AVX2, FMA = "defined(__AVX__)", "defined(__AVX2__)", "defined(__FMA__)"
AVX512F, AVX512VL = "defined(__AVX512F__)", "defined(__AVX512F__) && defined(__AVX512VL__)"

# the builtins' vector types: name -> (element C type, bytes)
TYPES = {
    "nu_v4sf": ("float", 16), "nu_v8sf": ("float", 32), "nu_v16sf": ("float", 64),
    "nu_v2df": ("double", 16), "nu_v4df": ("double", 32), "nu_v8df": ("double", 64),
    "nu_v4si": ("int", 16), "nu_v8si": ("int", 32), "nu_v4su": ("unsigned", 16), "nu_v8su": ("unsigned", 32),
    "nu_v4di": ("long long", 32), "nu_v8di": ("long long", 64), "nu_v16si": ("int", 64),
}
# the all-lanes masks of the AVX-512 builtins' masked forms, and their rounding
# operand: the current direction (_MM_FROUND_CUR_DIRECTION)
M8, M16, CURRENT = "(unsigned char)-1", "(unsigned short)-1", "4"
FLOOR, CEIL = "1", "2"  # _MM_FROUND_FLOOR, _MM_FROUND_CEIL (exceptions raised, as the intrinsics)


@dataclass(frozen=True)
class Intrinsic:
    macro: str                  # the predefined macros of the instructions it needs
    returns: str                # a TYPES name, or a scalar C type
    params: tuple[str, ...]     # TYPES names (or a mask's C type), the operands a, b, c
    gcc: str                    # the expression GCC's header returns
    clang: Optional[str] = None  # Clang's, where it is not the same

    def definition(self, name: str) -> str:
        args = ", ".join(f"{t} {x}" for t, x in zip(self.params, "abc"))
        head = [f"#if {self.macro}", f"static inline __attribute__((unused)) {self.returns} {name}({args})", "{"]
        if self.clang is None:
            body = [f"    return {self.gcc};"]
        else:
            body = ["#if defined(__clang__)", f"    return {self.clang};", "#else", f"    return {self.gcc};", "#endif"]
        return "\n".join(head + body + ["}", "#endif"]) + "\n"


def _convert(macro: str, source: str, target: str, builtin: str, masked: Optional[str] = None,
             unsigned: bool = False) -> Intrinsic:
    """A conversion of `source` to `target` lanes (TYPES names): GCC's `builtin(a)`, or
    with `masked` (the all-lanes mask, then the rest) its masked form onto zeros;
    Clang's header a __builtin_convertvector (of the lanes as unsigned: `unsigned`)."""
    gcc = f"{builtin}(a)" if masked is None else f"{builtin}(a, ({target}){{0}}, {masked})"
    lanes = f"({source.replace('si', 'su')})a" if unsigned else "a"
    return Intrinsic(macro, target, (source,), gcc, f"__builtin_convertvector({lanes}, {target})")


# AVX-512 compares give a mask register: (name, predicate) as the headers' _mm512_cmp<name>_p<s>_mask
_COMPARES = (("lt", "1"), ("eq", "0"), ("unord", "3"))  # _CMP_LT_OS, _CMP_EQ_OQ, _CMP_UNORD_Q


def _compares() -> dict[str, Intrinsic]:
    """`nu_mm512_cmp<name>_p<s>_mask(a, b)`: lane k of a and b compared, as bit k
    of a mask (16 binary32 lanes, 8 binary64)."""
    kinds = (("ps", "nu_v16sf", "unsigned short", M16), ("pd", "nu_v8df", "unsigned char", M8))
    return {f"nu_mm512_cmp{name}_{s}_mask":
            Intrinsic(AVX512F, mask, (vector, vector), f"__builtin_ia32_cmp{s}512_mask(a, b, {predicate}, {full}, {CURRENT})")
            for s, vector, mask, full in kinds for name, predicate in _COMPARES}


def _blend(lanes: str, vector: str, mask: str) -> Intrinsic:
    """`nu_mm512_mask_blend_epi<w>(k, a, b)`: b's lane where the mask's bit is set, else a's."""
    return Intrinsic(AVX512F, vector, (mask, vector, vector), f"__builtin_ia32_blendm{lanes}_512_mask(b, c, a)",
                     f"__builtin_ia32_select{lanes}_512(a, c, b)")


INTRINSICS: dict[str, Intrinsic] = {
    # the sign bits of a mask's lanes (a 16-lane mask as its two 8-lane halves)
    "nu_mm_movemask_ps": Intrinsic(SSE, "int", ("nu_v4sf",), "__builtin_ia32_movmskps(a)"),
    "nu_mm256_movemask_ps": Intrinsic(AVX, "int", ("nu_v8sf",), "__builtin_ia32_movmskps256(a)"),
    "nu_mm512_extracti64x4_epi64_0": Intrinsic(AVX512F, "nu_v4di", ("nu_v8di",),
                                               f"__builtin_ia32_extracti64x4_mask(a, 0, (nu_v4di){{0}}, {M8})"),
    "nu_mm512_extracti64x4_epi64_1": Intrinsic(AVX512F, "nu_v4di", ("nu_v8di",),
                                               f"__builtin_ia32_extracti64x4_mask(a, 1, (nu_v4di){{0}}, {M8})"),
    # fused multiply-add of binary32
    "nu_mm_fmadd_ps": Intrinsic(FMA, "nu_v4sf", ("nu_v4sf",) * 3, "__builtin_ia32_vfmaddps(a, b, c)"),
    "nu_mm256_fmadd_ps": Intrinsic(FMA, "nu_v8sf", ("nu_v8sf",) * 3, "__builtin_ia32_vfmaddps256(a, b, c)"),
    "nu_mm512_fmadd_ps": Intrinsic(AVX512F, "nu_v16sf", ("nu_v16sf",) * 3,
                                   f"__builtin_ia32_vfmaddps512_mask(a, b, c, {M16}, {CURRENT})"),
    # selects by a mask register (min and max of binary32 and binary64)
    **_compares(),
    "nu_mm512_mask_blend_epi32": _blend("d", "nu_v16si", "unsigned short"),
    "nu_mm512_mask_blend_epi64": _blend("q", "nu_v8di", "unsigned char"),
    # floor and ceil of binary64
    **{f"nu_mm{w}_{kind}_pd": Intrinsic(macro, t, (t,), call.format(mode))
       for kind, mode in (("floor", FLOOR), ("ceil", CEIL))
       for w, macro, t, call in (("", SSE4_1, "nu_v2df", "__builtin_ia32_roundpd(a, {0})"),
                                 ("256", AVX, "nu_v4df", "__builtin_ia32_roundpd256(a, {0})"),
                                 ("512", AVX512F, "nu_v8df", f"__builtin_ia32_rndscalepd_mask(a, {{0}}, a, {M8}, {CURRENT})"))},
    # square roots, correctly rounded
    "nu_mm_sqrt_pd": Intrinsic(SSE2, "nu_v2df", ("nu_v2df",), "__builtin_ia32_sqrtpd(a)"),
    "nu_mm_sqrt_ps": Intrinsic(SSE, "nu_v4sf", ("nu_v4sf",), "__builtin_ia32_sqrtps(a)"),
    "nu_mm256_sqrt_pd": Intrinsic(AVX, "nu_v4df", ("nu_v4df",), "__builtin_ia32_sqrtpd256(a)"),
    "nu_mm256_sqrt_ps": Intrinsic(AVX, "nu_v8sf", ("nu_v8sf",), "__builtin_ia32_sqrtps256(a)"),
    "nu_mm512_sqrt_pd": Intrinsic(AVX512F, "nu_v8df", ("nu_v8df",), f"__builtin_ia32_sqrtpd512_mask(a, a, {M8}, {CURRENT})",
                                  f"__builtin_ia32_sqrtpd512(a, {CURRENT})"),
    "nu_mm512_sqrt_ps": Intrinsic(AVX512F, "nu_v16sf", ("nu_v16sf",),
                                  f"__builtin_ia32_sqrtps512_mask(a, a, {M16}, {CURRENT})",
                                  f"__builtin_ia32_sqrtps512(a, {CURRENT})"),
    # conversions that change the lanes' size
    "nu_mm256_cvtps_pd": _convert(AVX, "nu_v4sf", "nu_v4df", "__builtin_ia32_cvtps2pd256"),
    "nu_mm512_cvtps_pd": _convert(AVX512F, "nu_v8sf", "nu_v8df", "__builtin_ia32_cvtps2pd512_mask", f"{M8}, {CURRENT}"),
    "nu_mm256_cvtepi32_pd": _convert(AVX, "nu_v4si", "nu_v4df", "__builtin_ia32_cvtdq2pd256"),
    "nu_mm512_cvtepi32_pd": _convert(AVX512F, "nu_v8si", "nu_v8df", "__builtin_ia32_cvtdq2pd512_mask", M8),
    "nu_mm256_cvtepu32_pd": _convert(AVX512VL, "nu_v4si", "nu_v4df", "__builtin_ia32_cvtudq2pd256_mask", M8, True),
    "nu_mm512_cvtepu32_pd": _convert(AVX512F, "nu_v8si", "nu_v8df", "__builtin_ia32_cvtudq2pd512_mask", M8, True),
    "nu_mm256_cvtepi32_epi64": _convert(AVX2, "nu_v4si", "nu_v4di", "__builtin_ia32_pmovsxdq256"),
    "nu_mm512_cvtepi32_epi64": _convert(AVX512F, "nu_v8si", "nu_v8di", "__builtin_ia32_pmovsxdq512_mask", M8),
    "nu_mm256_cvtepu32_epi64": _convert(AVX2, "nu_v4si", "nu_v4di", "__builtin_ia32_pmovzxdq256", unsigned=True),
    "nu_mm512_cvtepu32_epi64": _convert(AVX512F, "nu_v8si", "nu_v8di", "__builtin_ia32_pmovzxdq512_mask", M8, True),
    "nu_mm256_cvtepi64_epi32": _convert(AVX512VL, "nu_v4di", "nu_v4si", "__builtin_ia32_pmovqd256_mask", M8),
    "nu_mm512_cvtepi64_epi32": _convert(AVX512F, "nu_v8di", "nu_v8si", "__builtin_ia32_pmovqd512_mask", M8),
}

_NAMES = re.compile(r"\bnu_(?:mm\d*_\w+|v\d+[a-z]+)\b")


def section(code: str) -> str:
    """The typedefs and intrinsics that `code` names ("" for none), each once,
    typedefs first."""
    names = set(_NAMES.findall(code))
    names |= {t for n in names & INTRINSICS.keys() for t in _NAMES.findall(INTRINSICS[n].definition(n))}
    typedefs = [f"typedef {element} {n} __attribute__((vector_size({size})));\n"
                for n, (element, size) in TYPES.items() if n in names]
    return "".join(typedefs + [INTRINSICS[n].definition(n) for n in INTRINSICS if n in names])


def macro(name: str) -> str:
    return INTRINSICS[name].macro


def operand(name: str) -> str:
    """The type of the intrinsic's first operand (a vector, or a blend's mask)."""
    return INTRINSICS[name].params[0]


def result(name: str) -> str:
    """The type of the intrinsic's result."""
    return INTRINSICS[name].returns
