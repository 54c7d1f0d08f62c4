"""The BENCH.md kernels as a strong Numba user writes them: `@njit` loops over the
same NumPy structured arrays nupp takes (records read and written field by field,
as the Nupp source does), with the same arithmetic, so every output has the same
bits as nupp's scalar C (tests/test_bench_peers.py checks it).

Numba's defaults keep the numerics exact: no fast math, so LLVM neither contracts
nor reassociates, and float32 arithmetic stays float32 when both operands are
float32 (the constants below are float32 for that reason).  Two things NumPy and
Numba lack are LLVM one-liners a strong user writes as intrinsics: the
correctly rounded binary32 `fma` that `f32.fma` and `f32.exp` need (a float64
`a * b + c` rounds twice) and the bit views of `f32.bits`/`f32.fromBits`.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

F32 = np.float32
CANONICAL_NAN = np.uint32(0x7FC00000)  # f32.bits of any NaN


@intrinsic
def fma32(typingctx, a, b, c):
    """The binary32 fused multiply-add, rounded once (llvm.fma.f32)."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float32(types.float32, types.float32, types.float32), codegen


@intrinsic
def from_bits(typingctx, u):
    """The binary32 with the bits of a uint32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@intrinsic
def raw_bits(typingctx, x):
    """The bits of a binary32, as a uint32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@njit(inline="always")
def bits(x):
    return CANONICAL_NAN if x != x else raw_bits(x)


@njit(cache=True)
def mandelbrot(out, pixels, max_iter):
    four = F32(4)
    for i in range(len(out)):
        cx, cy = pixels[i].cx, pixels[i].cy
        zx = zy = F32(0)
        n = 0
        while n < max_iter and zx * zx + zy * zy <= four:
            nx = zx * zx - zy * zy + cx
            zy = (zx + zx) * zy + cy
            zx = nx
            n += 1
        out[i].n = n


@njit(inline="always")
def f32_min(a, b):
    if a != a or b != b:
        return np.float32(np.nan)
    if a == b:  # -0 < +0: the one with its sign bit set
        return a if raw_bits(a) >> 31 else b
    return a if a < b else b


@njit(inline="always")
def f32_max(a, b):
    if a != a or b != b:
        return np.float32(np.nan)
    if a == b:
        return b if raw_bits(a) >> 31 else a
    return a if a > b else b


EXP_COEFFICIENTS = np.array([1.0 / np.prod(np.arange(1, k + 1, dtype=np.float64)) for k in range(13)], dtype=np.float32)


@njit(inline="always")
def f32_exp(x):
    """LANGUAGE.md's exp: clamp, a degree-12 Taylor polynomial by fma in Horner order, seven squarings."""
    if x != x:
        return x
    x = max(min(x, F32(88)), F32(-104))
    t = x * F32(0.0078125)
    c = EXP_COEFFICIENTS
    p = c[12]
    for k in range(11, -1, -1):
        p = fma32(p, t, c[k])
    for _ in range(7):
        p = p * p
    return p


@njit(cache=True)
def correct(out, inp):
    for i in range(len(out)):
        a, b, c = from_bits(inp[i].a), from_bits(inp[i].b), from_bits(inp[i].c)
        out[i].lo = bits(f32_min(a, b))
        out[i].hi = bits(f32_max(a, b))
        out[i].fused = bits(fma32(a, b, c))
        out[i].e = bits(f32_exp(a))


@njit(cache=True)
def query(out, ents, required, excluded):
    for i in range(len(out)):
        m = ents[i].mask
        hit = (m & required) == required and (m & excluded) == 0
        x = ents[i].seed
        x ^= np.uint32(x << np.uint32(13))
        x ^= x >> np.uint32(17)
        x ^= np.uint32(x << np.uint32(5))
        tag = ents[i].tag
        if tag == -2147483648:
            cls = 3
        elif tag == 0:
            cls = 1
        elif tag == 1 or tag == 2:
            cls = 2
        else:
            cls = 0
        out[i].selected = cls if hit else 0
        out[i].hash = x


@njit(cache=True)
def mix(outputs, inputs):
    for i in range(len(outputs)):
        narrow = inputs[i].value + inputs[i].value  # binary32
        wide = np.float64(inputs[i].value)
        outputs[i].value = np.float64(narrow) + (wide + wide)  # rounded to binary32 by the store


@njit(cache=True)
def advance(bodies, dt, damping):
    for i in range(len(bodies)):
        v = bodies[i].v * damping - bodies[i].x * dt
        bodies[i].v = v
        bodies[i].x = bodies[i].x + v * dt
        m = np.float64(bodies[i].m)
        bodies[i].m = np.sqrt(m * m + dt)
