"""Each span loop's gang and vector width per feature tier (targets/gang_choice.py).

  * the cost model's choices, from its documented rule: a masked while runs
    two full registers per gang, any other loop one, work done lane by lane
    vectors of at most 256 bits, a gang 4 to 32 lanes, a pinned gang every
    loop's, in full registers; the features it reads (the widest lane as lane
    C writes it, lane-by-lane work);
  * Gang.vector_bits in the IR text (printed, parsed, verified);
  * lane C honors a vector width below the register (several vectors per
    gang, in every register width's variant) and one unit holds loops of
    different gangs; both give scalar C's bits at every length 0..2G+1.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import replace

import numpy as np
import pytest

from nupp.emit_c.lane import emit_lane_module
from nupp.errors import Source
from nupp.lane_rewrite.gang_size import GangShape, shape_gangs
from nupp.pipeline import compile_module, lane_ir
from nupp.runtime.api import load
from nupp.runtime.cli import main
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.text import parse_module, print_module
from nupp.scalar_ir.walk import statements
from nupp.targets import gang_choice
from nupp.targets.gang_choice import LoopFeatures, choose, gang_choices, loop_features
from nupp.targets.tiers import TIERS
from nupp.errors import InternalError
from nupp.verifier import check as verify
from nupp.verifier import verify_module

from .conftest import require_tool
from .test_lane_forms import BENCH, _variants

# Two span loops of different shapes in one module: a masked while over binary32
# lanes (latency-bound) and a streaming loop over binary64 lanes.
TWO_LOOPS = """\
local span = nupp.mem.span
local f32 = nupp.math.f32

local struct Point
    x: float
    y: float
end

local struct Out
    n: int32
end

local struct Wide
    w: number
end

@aot
local function two(exclusive out: span.WriteSpan<Out>, exclusive wide: span.WriteSpan<Wide>,
                   borrows pts: span.Span<Point>, limit: int32): nil
    assert(#out == #pts and #wide == #pts, "length mismatch")
    for i = 1, #out do
        local x = f32.narrow(pts[i].x)
        local n: int32 = 0
        while n < limit and f32.mul(x, x) < 1000 do
            x = f32.add(f32.mul(x, 1.5), 0.25)
            n = n + 1
        end
        out[i].n = n
    end
    for i = 1, #out do
        wide[i].w = pts[i].x * 2.0 + pts[i].y
    end
end

return {Point = Point, Out = Out, Wide = Wide, two = two}
"""

# A loop that moves a struct of 8- and 4-byte fields lane by lane, and one with a call.
PER_LANE = """\
local span = nupp.mem.span

local struct Body
    x: number
    m: int32
    tag: int16
end

@aot
local function half(x: number): number
    return x * 0.5
end

@aot
local function step(exclusive bodies: span.WriteSpan<Body>): nil
    for i = 1, #bodies do
        bodies[i].x = bodies[i].x + 1.0
    end
    for i = 1, #bodies do
        bodies[i].m = bodies[i].m + 1
    end
end

return {Body = Body, half = half, step = step}
"""


def _features(text: str) -> list[LoopFeatures]:
    module = lane_ir(compile_module(Source("k.nupp", text)))
    return [loop_features(module, fn, g) for fn in module.functions for g in statements(fn.body)
            if isinstance(g, ir.Gang)]


def _shapes(text: str, register_bytes: int, pinned=None) -> list[tuple[int, int]]:
    module = lane_ir(compile_module(Source("k.nupp", text)))
    return [(c.shape.size, c.shape.vector_bits) for _, _, c in gang_choices(module, register_bytes, pinned)]


# ---- the model ------------------------------------------------------------------------------------

def test_the_features_are_the_widest_lane_as_lane_c_writes_it_and_the_masked_while():
    """A binary32 field loaded and narrowed stays 32-bit lanes; a binary64 op makes 64-bit ones."""
    masked, streaming = _features(TWO_LOOPS)
    assert masked == LoopFeatures(element_bytes=4, masked_while=True, per_lane=0, reductions=0)
    assert streaming == LoopFeatures(element_bytes=8, masked_while=False, per_lane=0, reductions=0)


def test_lane_by_lane_work_is_counted_per_access():
    """Body (a 2-byte field beside 8- and 4-byte ones) moves lane by lane: a load and a store each;
    the loop over `m` holds 32-bit lanes alone."""
    first, second = _features(PER_LANE)
    assert first.per_lane == 2 and first.element_bytes == 8
    assert second.per_lane == 2 and second.element_bytes == 4


@pytest.mark.parametrize("register_bytes, masked, streaming", [
    (16, (8, 128), (4, 128)),    # binary64 at 128 bits: 2 lanes a register, a gang of 4 (2 x 128)
    (32, (16, 256), (4, 256)),
    (64, (32, 256), (8, 512)),    # a masked while in 256-bit vectors at 512-bit registers
])
def test_a_masked_while_takes_two_registers_and_a_streaming_loop_one(register_bytes, masked, streaming):
    assert _shapes(TWO_LOOPS, register_bytes) == [masked, streaming]


def test_lane_by_lane_work_runs_vectors_of_at_most_256_bits():
    assert _shapes(PER_LANE, 64) == [(4, 256), (8, 256)]  # one 256-bit vector of 4 binary64 / 8 int32 lanes
    assert _shapes(PER_LANE, 32) == [(4, 256), (8, 256)]
    assert _shapes(PER_LANE, 16) == [(4, 128), (4, 128)]
    per_lane = LoopFeatures(element_bytes=4, masked_while=False, per_lane=3, reductions=0)
    assert choose(per_lane, 64).shape == GangShape(8, 256)
    # a masked while wins over lane-by-lane work: two full registers (measured, gang_choice.py)
    both = LoopFeatures(element_bytes=8, masked_while=True, per_lane=3, reductions=1)
    assert choose(both, 64).shape == GangShape(16, 256)


SERIAL = """\
local span = nupp.mem.span
local f32 = nupp.math.f32

local struct P
    x: uint32
end

@aot
local function grow(exclusive out: span.WriteSpan<P>, borrows inp: span.Span<P>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        out[i].x = f32.bits(f32.exp(f32.fromBits(inp[i].x)))
    end
    for i = 1, #out do
        out[i].x = f32.bits(f32.max(f32.fromBits(inp[i].x), f32.fromBits(out[i].x)))
    end
end

return {grow = grow}
"""


def test_a_long_dependent_chain_takes_two_registers_where_the_tier_has_512_bits():
    """exp's lane form is one chain of ~20 dependent ops: two vectors overlap at v4
    (32 registers); at 256 bits (16 registers) GCC spilled, so one."""
    exp_loop, plain_loop = _features(SERIAL)
    assert exp_loop.serial_chain and not plain_loop.serial_chain
    assert _shapes(SERIAL, 64) == [(32, 512), (16, 512)]
    assert _shapes(SERIAL, 32) == [(8, 256), (8, 256)]
    assert "a long dependent chain (exp)" in choose(exp_loop, 64).text
    lane_by_lane = replace(exp_loop, per_lane=1)  # lane-by-lane work keeps its own rule
    assert choose(lane_by_lane, 64).shape == GangShape(8, 256)


def test_gangs_stay_within_4_and_32_lanes():
    narrow = LoopFeatures(element_bytes=4, masked_while=True, per_lane=0, reductions=0)
    assert choose(narrow, 64).shape.size == 32  # two 512-bit registers of binary32: 32
    wide = LoopFeatures(element_bytes=8, masked_while=False, per_lane=0, reductions=0)
    assert choose(wide, 16).shape == GangShape(4, 128)  # not 2: the smallest gang, as 2 x 128
    assert "but a gang is at least 4 lanes" in choose(wide, 16).text


def test_a_pinned_gang_is_every_loops_in_full_registers():
    assert _shapes(TWO_LOOPS, 64, pinned=8) == [(8, 512), (8, 512)]
    assert _shapes(PER_LANE, 64, pinned=32) == [(32, 512), (32, 512)]


def test_the_choice_says_what_and_why():
    text = choose(LoopFeatures(4, True, 0, 0), 64).text
    assert text.startswith("gang 32 as 4 x 256-bit vectors of 32-bit lanes: a masked while")
    assert choose(LoopFeatures(8, False, 0, 0), 32).text.startswith("gang 4 as 1 x 256-bit vector of 64-bit lanes")


def test_the_report_says_each_loops_shape_at_every_tier(tmp_path):
    path = tmp_path / "k.nupp"
    path.write_text(TWO_LOOPS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["emit", "--report", str(path)]) == 0
    lines = [line for line in out.getvalue().splitlines() if ": at " in line]
    assert len(lines) == 2 * len(TIERS)
    assert f"{path}:21:5: loop over %i: at v4: gang 32 as 4 x 256-bit vectors of 32-bit lanes: a masked while" \
        in out.getvalue()
    assert f"{path}:30:5: loop over %i_2: at v3: gang 4 as 1 x 256-bit vector of 64-bit lanes: independent" \
        in out.getvalue()


# ---- the IR ---------------------------------------------------------------------------------------

def _shaped(text: str, *shapes: GangShape) -> ir.Module:
    lanes = lane_ir(compile_module(Source("k.nupp", text)))
    order = iter(shapes)
    return shape_gangs(lanes, lambda fn, g: next(order))


def test_the_vector_width_prints_parses_and_verifies():
    module = _shaped(TWO_LOOPS, GangShape(32, 256), GangShape(8))
    text = print_module(module)
    assert "gang 32 vector 256 %i = " in text and "gang 8 %i_2 = " in text
    assert print_module(parse_module(text)) == text
    verify(parse_module(text), "test", lane_ir=True)


@pytest.mark.parametrize("head, problem", [("gang 32 vector 64 %i", "vector width 64"),
                                           ("gang 32 vector 384 %i", "vector width 384")])
def test_the_verifier_refuses_a_vector_width_no_register_has(head, problem):
    text = print_module(_shaped(TWO_LOOPS, GangShape(32, 256), GangShape(8))).replace("gang 32 vector 256 %i", head)
    with pytest.raises(InternalError) as caught:
        verify(parse_module(text), "test", lane_ir=True)
    assert "gang-size" in str(caught.value) and problem in str(caught.value)


def test_the_verifier_refuses_a_vector_width_on_an_unsized_gang():
    module = lane_ir(compile_module(Source("k.nupp", TWO_LOOPS)))

    def with_gangs(**fields):
        fn = module.functions[0]
        body = tuple(replace(s, **fields) if isinstance(s, ir.Gang) else s for s in fn.body)
        return replace(module, functions=(replace(fn, body=body),))
    assert [e.rule for e in verify_module(with_gangs(vector_bits=256), lane_ir=True)] == ["gang-size"] * 2
    assert verify_module(with_gangs(size=16, vector_bits=256), lane_ir=True) == []


# ---- the C, and its bits ----------------------------------------------------------------------------

def test_a_capped_gang_is_several_vectors_of_the_cap_in_every_register_width():
    """mandelbrot's gang 32 of binary32 capped at 256 bits: four vectors of 8
    under AVX-512 and AVX2 (one variant), eight of 4 elsewhere."""
    module = shape_gangs(lane_ir(compile_module(Source("m.nupp", (BENCH / "mandelbrot.nupp").read_text()))),
                         lambda fn, g: GangShape(32, 256))
    variants = _variants(emit_lane_module(module, "m.nupp").source)
    assert list(variants) == ["#if defined(__AVX2__)", "#else"]
    for (macro, text), lanes in zip(variants.items(), (8, 4)):
        assert "+= 32) {" in text and set(re.findall(r"nu_[a-z]\d+x(\d+)", text)) == {str(lanes)}, macro
        assert f"v_zx_p{32 // lanes - 1}" in text and f"v_zx_p{32 // lanes}" not in text, macro


def test_one_unit_holds_loops_of_different_gangs():
    c = emit_lane_module(_shaped(TWO_LOOPS, GangShape(32), GangShape(8)), "k.nupp").source
    assert "lane C (gangs of 8, 32)" in c
    assert "+= 32) {" in c and "+= 8) {" in c and "nu_f32x16" in c and "nu_f64x8" in c


def _differential(tmp_path, monkeypatch, shapes=None) -> str:
    """TWO_LOOPS in lane C (the cost model's shapes, or `shapes` forced) against its
    scalar C at every length 0..2G+1 for G = 32: the lane execution's name."""
    require_tool("gcc")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "two.nupp"
    path.write_text(TWO_LOOPS)
    if shapes is not None:
        order = {}
        real = gang_choice.choose

        def forced(features, register_bytes, pinned=None):
            shape = shapes[len(order) % len(shapes)]
            order[len(order)] = shape
            return gang_choice.GangChoice(shape, real(features, register_bytes, pinned).text)
        monkeypatch.setattr(gang_choice, "choose", forced)
        monkeypatch.setenv("NUPP_TEST_SHAPES", repr(shapes))  # its own cache entry
    scalar, lane = load(path, mode="scalar"), load(path, mode="lane")
    rng = np.random.default_rng(5)
    for n in range(2 * 32 + 2):
        pts = np.zeros(n, dtype=scalar.dtype("Point"))
        pts["x"], pts["y"] = rng.uniform(-40, 40, n), rng.standard_normal(n)
        edges = [np.nan, np.inf, -0.0, 31.6, 1e-30][:n]  # a NaN, an infinity, a long and a short while
        pts["x"][:len(edges)] = edges
        outs = [(np.zeros(n, dtype=scalar.dtype("Out")), np.zeros(n, dtype=scalar.dtype("Wide"))) for _ in range(2)]
        scalar.two(*outs[0], pts, 40)
        lane.two(*outs[1], pts, 40)
        for s, v in zip(*outs):
            assert s.tobytes() == v.tobytes(), (n, lane.execution)
    return lane.execution


def test_loops_of_different_gangs_in_one_unit_agree_with_scalar_c(tmp_path, monkeypatch):
    assert "+" in _differential(tmp_path, monkeypatch)  # lane8+32-v4, lane4+16-v3, lane4+8-baseline


def test_a_gang_capped_below_its_register_agrees_with_scalar_c(tmp_path, monkeypatch):
    assert _differential(tmp_path, monkeypatch, (GangShape(32, 128), GangShape(16, 256))).startswith("lane16+32-")
