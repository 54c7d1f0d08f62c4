"""The lane forms of min and max (emit_c/lane_helpers.py _min_max) and of
f32.fromBits / f32.bits, against oracles written from LANGUAGE.md section 3
(tests/oracles.py): binary32 min / max / fromBits compared bit for bit (the
canonical NaN 0x7FC00000 for any NaN, -0 < +0), binary64 math.min / math.max
bit for bit except a NaN, which is compared by class (section 3: its payload is
unobservable).

  * every ordered pair of the binary32 edge patterns (NaNs of both signs, quiet
    and signalling with payloads, zeros, infinities, subnormals, exp's clamps)
    and of the binary64 edges, then random patterns, at every span length
    0..2G+1 for gangs 4, 8, 16, 32, under GCC and Clang: the widest tier this
    CPU runs (AVX-512's mask-register forms where it has them) and baseline
    (the vector-mask forms); slow, every tier;
  * what the AVX-512 form is: three compares and three selects by mask
    registers, as the hand-written SIMD (bench/handwritten/simd_kernels.c
    min_bits), under both compilers: GCC 12 made a chain of selects by vector
    masks two or three instructions each, with k-register logic between.
"""

from __future__ import annotations

import re
import subprocess
import struct

import numpy as np
import pytest

from nupp.emit_c import intrinsics
from nupp.emit_c.lane import emit_lane_module
from nupp.emit_c.lane_helpers import lane_form
from nupp.errors import Source
from nupp.pipeline import compile_module, lanes_at
from nupp.runtime.api import load
from nupp.scalar_ir.lanes import GANG_SIZES
from nupp.targets.cross import host_machine
from nupp.targets.tiers import TIERS

from .conftest import require_tool
from .kernelgen import F32_EDGE_BITS, F64_EDGES
from .oracles import canonicalize_bits, f32_exp_bits, f32_max_bits, f32_min_bits, f64_min_max

RUNNABLE = host_machine().runnable_tiers()
QUICK_TIERS = sorted({RUNNABLE[0], RUNNABLE[-1]}, key=RUNNABLE.index)

SOURCE = """\
local span = nupp.mem.span
local f32 = nupp.math.f32

local struct Pair32
    a: uint32
    b: uint32
end

local struct Picked32
    lo: uint32
    hi: uint32
    same: uint32
    raw: float
    e: uint32
    direct: uint32
end

local struct Pair64
    x: number
    y: number
end

@aot
local function pick32(exclusive out: span.WriteSpan<Picked32>, borrows inp: span.Span<Pair32>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = f32.fromBits(inp[i].a)
        local b = f32.fromBits(inp[i].b)
        out[i].lo = f32.bits(f32.min(a, b))
        out[i].hi = f32.bits(f32.max(a, b))
        out[i].same = f32.bits(a)
        out[i].raw = a
        out[i].e = f32.bits(f32.exp(a))
        out[i].direct = f32.bits(f32.fromBits(inp[i].b))
    end
end

@aot
local function pick64(exclusive out: span.WriteSpan<Pair64>, borrows inp: span.Span<Pair64>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local x = inp[i].x
        local y = inp[i].y
        out[i].x = math.min(x, y)
        out[i].y = math.max(x, y)
    end
end

return {Pair32 = Pair32, Picked32 = Picked32, Pair64 = Pair64, pick32 = pick32, pick64 = pick64}
"""


def pairs(edges: np.ndarray, random_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of `edges`, then `random_rows` pairs of random patterns."""
    first, second = np.repeat(edges, len(edges)), np.tile(edges, len(edges))
    noise = np.random.default_rng(seed).integers(0, np.iinfo(edges.dtype).max, (2, random_rows),
                                                 dtype=edges.dtype, endpoint=True)
    return np.concatenate([first, noise[0]]), np.concatenate([second, noise[1]])


F32_A, F32_B = pairs(np.array(F32_EDGE_BITS, dtype=np.uint32), 500, seed=1)
F64_BITS = np.array([struct.unpack("<Q", struct.pack("<d", v))[0] for v in F64_EDGES], dtype=np.uint64)
F64_X, F64_Y = (p.view(np.float64) for p in pairs(F64_BITS, 500, seed=2))


def called(kernels, function: str, result: str, operands: str, **fields) -> np.ndarray:
    """`function`'s out span (of struct `result`) from an in span of struct `operands` holding `fields`."""
    n = len(next(iter(fields.values())))
    inp, out = np.zeros(n, dtype=kernels.dtype(operands)), np.zeros(n, dtype=kernels.dtype(result))
    for name, values in fields.items():
        inp[name] = values
    getattr(kernels, function)(out, inp)
    return out


def check32(kernels, rows: slice, what: str) -> None:
    a, b = F32_A[rows], F32_B[rows]
    out = called(kernels, "pick32", "Picked32", "Pair32", a=a, b=b)
    canonical = np.array([canonicalize_bits(int(u)) for u in a], dtype=np.uint32)
    exp = np.array([f32_exp_bits(int(u)) for u in a], dtype=np.uint32)
    direct = np.array([canonicalize_bits(int(u)) for u in b], dtype=np.uint32)
    for field, want in (("lo", f32_min_bits(a, b)), ("hi", f32_max_bits(a, b)), ("same", canonical),
                        ("raw", canonical), ("e", exp), ("direct", direct)):  # fromBits' result stored as it is
        got = out[field].view(np.uint32)
        wrong = np.flatnonzero(got != want)
        assert wrong.size == 0, (f"{what}: {field} of {a[wrong[0]]:#010x}, {b[wrong[0]]:#010x} is "
                                 f"{got[wrong[0]]:#010x}, the rule gives {want[wrong[0]]:#010x}")


def same_f64(got: float, want: float) -> bool:
    """Bit for bit, a NaN by class."""
    return (np.isnan(got) and np.isnan(want)) or np.float64(got).tobytes() == np.float64(want).tobytes()


def check64(kernels, rows: slice, what: str) -> None:
    x, y = F64_X[rows], F64_Y[rows]
    out = called(kernels, "pick64", "Pair64", "Pair64", x=x, y=y)
    for field, want_min in (("x", True), ("y", False)):
        for k, got in enumerate(out[field]):
            want = f64_min_max(float(x[k]), float(y[k]), want_min)
            assert same_f64(got, want), f"{what}: {'min' if want_min else 'max'}({x[k]!r}, {y[k]!r}) is {got!r}"


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    file = tmp_path_factory.mktemp("min-max") / "min_max.nupp"
    file.write_text(SOURCE)
    return str(file)


def agree_at_every_length(path: str, gang: int, cc: str, tier: str) -> None:
    require_tool(cc)
    kernels = load(path, cc=cc, gang=gang, tier=tier)
    where = f"gang {gang}, {tier}, {cc}"
    check32(kernels, slice(None), f"every pair, {where}")
    check64(kernels, slice(None), f"every pair, {where}")
    for n in range(2 * gang + 2):
        rows = slice(37 * n, 37 * n + n)  # each length its own pairs
        check32(kernels, rows, f"length {n}, {where}")
        check64(kernels, rows, f"length {n}, {where}")


@pytest.mark.parametrize("tier", QUICK_TIERS)
@pytest.mark.parametrize("cc", ["gcc", "clang"])
@pytest.mark.parametrize("gang", GANG_SIZES)
def test_min_max_and_bits_follow_the_rules_at_every_length(path, gang, cc, tier):
    agree_at_every_length(path, gang, cc, tier)


@pytest.mark.slow
@pytest.mark.parametrize("tier", [t for t in RUNNABLE if t not in QUICK_TIERS])
@pytest.mark.parametrize("cc", ["gcc", "clang"])
@pytest.mark.parametrize("gang", GANG_SIZES)
def test_min_max_and_bits_follow_the_rules_at_every_other_tier(path, gang, cc, tier):
    agree_at_every_length(path, gang, cc, tier)


# ---- what the AVX-512 form compiles to ------------------------------------------------------

def form_instructions(op: str, lanes: int, cc: str, tmp_path) -> list[str]:
    """The instructions of a function calling the lane form of `op` on one
    AVX-512 register, compiled at x86-64-v4 with nupp's flags."""
    form = lane_form(op, lanes)
    element, short = ("float", "f32") if op.endswith("f32") else ("double", "f64")
    integer = "int32_t" if short == "f32" else "int64_t"
    vectors = (f"typedef {element} nu_{short}x{lanes} __attribute__((vector_size(64)));\n"
               f"typedef {integer} nu_i{short[1:]}x{lanes} __attribute__((vector_size(64)));\n")
    unit = tmp_path / "form.c"
    unit.write_text("#include <stdint.h>\n#include <string.h>\n" + vectors + intrinsics.section(form.code) + form.code
                    + f"void probe(nu_{short}x{lanes} *r, const nu_{short}x{lanes} *a, const nu_{short}x{lanes} *b)"
                    f" {{ {form.name}(r, a, b); }}\n")
    flags = next(t.flags for t in TIERS if t.name == "v4")
    asm = subprocess.run([cc, "-std=c11", "-O2", "-ffp-contract=off", "-fno-math-errno", *flags, "-S", "-o", "-",
                          str(unit)], capture_output=True, text=True, check=True).stdout
    body = asm.split("probe:", 1)[1].split("ret", 1)[0]
    return [line.split()[0] for line in body.splitlines()
            if line.strip() and not line.strip().startswith((".", "#")) and not line.strip().endswith(":")]


@pytest.mark.parametrize("cc", ["gcc", "clang"])
@pytest.mark.parametrize("op", ["min.f32", "max.f32", "min.f64", "max.f64"])
def test_the_avx512_form_is_three_compares_and_three_selects(op, cc, tmp_path):
    require_tool(cc)
    instructions = form_instructions(op, 16 if op.endswith("f32") else 8, cc, tmp_path)
    compares = [i for i in instructions if i.startswith("vcmp")]
    mask_logic = [i for i in instructions if re.fullmatch(r"k(or|and|andn|not|xor)[bwdq]", i)]
    vector_work = [i for i in instructions if i.startswith("v") and not i.startswith(("vmov", "vzeroupper"))]
    assert len(compares) <= 3 and not mask_logic, instructions
    # the three compares, a blend, the tie's masked and / or, and the canonical NaN's
    # blend or masked move (a masked load of the constant); the rest moves operands
    assert len(vector_work) <= 7, instructions


def test_bits_of_a_result_already_canonical_is_its_bits_as_they_are(path):
    """min, max, exp and fromBits leave the canonical NaN in their lanes
    (lane_helpers.CANONICAL_NAN_RESULTS): bits of one is a plain cast, no second
    NaN select; bits of a local (it may hold any binary32) keeps the select."""
    with open(path) as f:
        module = lanes_at(compile_module(Source("min_max.nupp", f.read())), 16)
    body = emit_lane_module(module, "min_max.nupp").source.split("pick32", 1)[1].split("pick64", 1)[0]
    operands = re.findall(r"nu_bits_f32x\d+\(&\w+, &(\w+)\)", body)
    assert operands and all(name.startswith("v_a") for name in operands), operands  # f32.bits(a) only
