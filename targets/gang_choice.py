"""The cost model: each span loop's gang and vectors per gang at a feature tier.

    features = loop_features(module, fn, gang, tier.vector_bytes)   # what the model reads of one Gang
    choice = choose(features, tier.vector_bytes)      # GangChoice: its GangShape, and why in words
    choices = gang_choices(lane_ir, tier.vector_bytes, pinned_gang)   # every Gang of a module
    shaped = shaped_as(lane_ir, choices)              # lane IR with each Gang so (lane_rewrite/gang_size.py)

The model reads a span loop's own features (`LoopFeatures`: the widest lane
its vectors hold, a masked while, work lane C does lane by lane, reductions,
a long dependent chain) and a tier's register width, and picks the loop's gang
and the width of its vectors, so that one module's loops may run at different gangs:

    a masked while           LATENCY_VECTORS full registers per gang (two),
                             in vectors of at most MASKED_WHILE_BITS (256)
    a long dependent chain   the same, at 512-bit registers (SERIAL_CHAIN_BYTES)
    work done lane by lane   one vector of at most PER_LANE_BITS (256) bits
    anything else            one full register per gang
    always                   a gang of 4 to 32 (binary64 lanes at 128-bit tiers: 2 x 128)

Each coefficient's comment gives the measurement behind it.  A pinned gang
(`gang=`, `--gang`) is every loop's gang, in full registers.  The choice
changes which vectors compute each lane, never a bit of output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from nupp.emit_c.lane import MASKED_TAIL_WORDS, binary32_operands, masked_tail
from nupp.emit_c.lane_helpers import LANE_FORMS, SERIAL_FORMS
from nupp.emit_c.lane_memory import moves_whole
from nupp.lane_rewrite.gang_size import GangShape, shape_gangs
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.lanes import GANG_SIZES, is_varying
from nupp.scalar_ir.ops import OPS, RULE
from nupp.scalar_ir.walk import own_exprs, statements, subexprs
from nupp.scalar_ir.widths import FIELD_STORAGE, Width


@dataclass(frozen=True)
class LoopFeatures:
    """What the cost model reads of one span loop run in gangs."""

    element_bytes: int   # the widest lane of its varying values (4 or 8): lanes per register
    masked_while: bool   # a while runs under a mask: each round waits on the one before
    per_lane: int        # ops and accesses lane C runs lane by lane (calls, ops with no lane
                         # form, loads and stores of a struct whose fields differ in size)
    reductions: int      # outside locals accumulated per lane
    serial_chain: bool = False  # an op whose lane form is one long dependent chain (exp)


@dataclass(frozen=True)
class GangChoice:
    """The model's answer for one loop at one tier: its shape, and what it is and why, in words."""

    shape: GangShape
    text: str  # "gang 32 as 2 x 512-bit vectors of 32-bit lanes: a masked while ...; tail: the scalar loop ..."


def loop_features(module: ir.Module, fn: ir.Function, gang: ir.Gang, register_bytes: int = 64) -> LoopFeatures:
    """The loop's features in registers of `register_bytes` (which structs move
    lane by lane depends on the vector width: lane_memory.moves_whole)."""
    structs = {p.name: module.struct(p.type.struct) for p in fn.span_params()}
    varying = frozenset(gang.varying)
    widest, per_lane, masked_while, serial = 4, 0, False, False
    for s in statements(gang.body):
        masked_while |= isinstance(s, ir.While) and s.masked
        if isinstance(s, ir.Store):
            per_lane += _lane_by_lane(structs[s.span], register_bytes)
            widest = max(widest, _storage_bytes(structs[s.span], s.field))
        for x in (x for e in own_exprs(s) for x in subexprs(e) if is_varying(x, varying)):
            widest = max(widest, _element_bytes(x, structs))
            per_lane += _runs_per_lane(x, structs, register_bytes)
            serial |= isinstance(x, ir.Op) and x.op in SERIAL_FORMS
    return LoopFeatures(widest, masked_while, per_lane, len(gang.reductions), serial)


def _element_bytes(x, structs) -> int:
    """The widest lane a varying expression's vectors hold, as lane C writes them:
    a load as stored (lane C loads a binary32 field as binary32 and promotes it
    where an op needs binary64, which that op's width shows); an op or call its
    result and operands, except a promotion, its narrowing back and a binary64
    comparison lane C makes in binary32 (lane.binary32_operands); a mask is int32 lanes."""
    if isinstance(x, ir.Load):
        return _storage_bytes(structs[x.span], x.field)
    if isinstance(x, ir.Op):
        exact_in_binary32 = (x.op == "promote.f32.f64" or binary32_operands(x) is not None
                             or x.op == "narrow.f64.f32" and _element_bytes(x.args[0], structs) == 4)
        widths = [] if exact_in_binary32 else [OPS[x.op].result, *OPS[x.op].operands]
    elif isinstance(x, ir.Call):
        widths = [a.width for a in x.args] + ([x.width] if x.width else [])
    else:
        widths = []
    return max([4] + [8 for w in widths if w.bits == 64])


def _runs_per_lane(x, structs, register_bytes: int) -> int:
    if isinstance(x, ir.Call):
        return 1
    if isinstance(x, ir.Load):
        return _lane_by_lane(structs[x.span], register_bytes)
    return int(isinstance(x, ir.Op) and OPS[x.op].vector == RULE and x.op not in LANE_FORMS)


def _storage_bytes(struct: ir.StructDef, field: str) -> int:
    return FIELD_STORAGE[struct.field_type(field)].bits // 8


def _lane_by_lane(struct: ir.StructDef, register_bytes: int) -> int:
    """1 where lane C moves the struct's elements lane by lane in registers of
    `register_bytes` (emit_c/lane_memory.py)."""
    return int(not moves_whole(struct, register_bytes))


# The coefficients, each measured with `nupp bench`'s kernels at 10^6 elements
# (GCC 12, AMD EPYC with AVX-512, 2 shared cores; medians of 7-15 interleaved
# rounds, every (tier, gang, vector width) side by side).
#
# A masked while runs LATENCY_VECTORS vectors per gang: each round of one
# vector waits on the last (a multiply-add chain and the mask test), and a
# second independent vector fills those cycles.  mandelbrot at v3: 1 x 256 bits
# 6.9x scalar C, 2 x 256 11.0x, 4 x 256 6.8x (16 ymm registers spill); at v4:
# 1 x 512 10.1x, 2 x 512 13.4x, 4 x 256 13.5x.  With lane-by-lane loads as
# well (a Pixel of binary64 and int32 fields) the same: 2 x 512 7.1x against
# 2 x 256 5.4x and 1 x 512 5.3x.
LATENCY_VECTORS = 2
# ... in vectors of at most MASKED_WHILE_BITS: the gang of two full registers,
# as 4 x 256 at v4.  A masked round of a 512-bit vector costs about 1.4x a
# scalar round on this CPU (Zen 4 runs 512-bit ops as two halves), a 256-bit
# one about 1x (masked_tail's measurements).  mandelbrot, `nupp bench` with
# every change of 2026-12-02 in, quiet machine, 10^5 / 10^7: gang 32 as
# 4 x 256 112.5 / 150.3 M/s (14.0x / 18.7x scalar C) against 2 x 512 95.3 /
# 128.6 (11.9x / 16.0x), hand SIMD32 by Clang 98.2 / 126.3.
MASKED_WHILE_BITS = 256
# Any other loop runs one full register per gang: its work is independent
# from one iteration to the next already, and a second vector only adds
# registers.  tecsbits at v4: 1 x 512 1,314 M/s, 2 x 512 1,158; at v3 1 x 256
# 1,070, 2 x 256 1,022; mixedwidth at v4
# 4,030 against 4,026.  A vector narrower than the register never won:
# mixedwidth at v3 in 128-bit vectors 1,392 M/s, in 256-bit 2,709.
STREAM_VECTORS = 1
# A loop that moves or computes lane by lane (loads of a struct with a 1- or
# 2-byte field, calls, ops without a lane form) and has no masked while runs
# vectors of at most PER_LANE_BITS: filling a 512-bit vector lane by lane
# costs more than it saves.  Measured on simd when its Body still moved lane
# by lane (before its blocks, 9d5b5fa), at v4: 4 binary64 lanes (256 bits)
# 542 M/s, 8 (512 bits) 510; in `nupp bench` 625 against 519.  Its Body (fields
# of 8 and 4 bytes) moves as blocks now, but in vectors of two words under GCC
# (lane_memory.NARROW_BYTES: there lane by lane is 1.14x-1.61x faster), where
# the cap is moot: such a loop counts as lane by lane at 128-bit registers.
PER_LANE_BITS = 256
# A loop computing a lane form that is one long dependent chain (lane_helpers
# SERIAL_FORMS: exp) also runs LATENCY_VECTORS, at registers of at least
# SERIAL_CHAIN_BYTES: AVX-512's 32 registers hold two chains and their
# constants, AVX2's 16 do not.  corrected, `nupp bench` at 10^5 / 10^7 in one
# run each: v4 gang 32 (2 x 512) 520 / 553 M/s against gang 16 390 / 366
# under GCC, 466 / 422 against 465 / 393 under Clang; v3 gang 16 (2 x 256)
# 199 / 184 against gang 8 250 / 248 under GCC (spills), 262 / 230 against
# 228 / 223 under Clang.
SERIAL_CHAIN_BYTES = 64
# Reductions change nothing: an exact reduction adds one integer or min/max
# op per vector per gang, whose one-cycle chain the loop's loads hide.


def choose(features: LoopFeatures, register_bytes: int, pinned: Optional[int] = None) -> GangChoice:
    """The gang and vector width of one loop in registers of `register_bytes`
    (every loop's gang `pinned` where given, in full registers)."""
    bits = 8 * register_bytes
    if pinned is not None:
        return _choice(pinned, bits, features, "the gang pinned (gang=, --gang)")
    if features.masked_while:
        vectors, why = LATENCY_VECTORS, "a masked while (latency-bound): independent vectors overlap"
    elif features.serial_chain and not features.per_lane and register_bytes >= SERIAL_CHAIN_BYTES:
        vectors, why = LATENCY_VECTORS, "a long dependent chain (exp): independent vectors overlap"
    elif features.per_lane:
        vectors, why = STREAM_VECTORS, (f"{features.per_lane} op(s) or access(es) lane by lane: "
                                        f"vectors of at most {PER_LANE_BITS} bits")
        bits = min(bits, PER_LANE_BITS)
    else:
        vectors, why = STREAM_VECTORS, "independent iterations: one register per gang"
    lanes = vectors * bits // (8 * features.element_bytes)
    if features.masked_while and bits > MASKED_WHILE_BITS:
        bits, why = MASKED_WHILE_BITS, why + f" (in vectors of {MASKED_WHILE_BITS} bits)"
    if lanes < min(GANG_SIZES):
        why += f", but a gang is at least {min(GANG_SIZES)} lanes"
    return _choice(min(max(lanes, min(GANG_SIZES)), max(GANG_SIZES)), bits, features, why)


def _choice(gang: int, bits: int, features: LoopFeatures, why: str) -> GangChoice:
    """Gang `gang` in vectors of at most `bits`, and the words the report says it in."""
    gang_bits = gang * 8 * features.element_bytes
    vectors, width = max(1, gang_bits // bits), min(bits, gang_bits)
    lanes = f"{features.element_bytes * 8}-bit lanes"
    return GangChoice(GangShape(gang, bits), f"gang {gang} as {vectors} x {width}-bit vector"
                      f"{'s' if vectors > 1 else ''} of {lanes}: {why}")


def gang_choices(module: ir.Module, register_bytes: int,
                 pinned: Optional[int] = None) -> list[tuple[ir.Function, ir.Gang, GangChoice]]:
    """Each Gang of lane IR (unsized), its function, and the model's choice for
    registers of `register_bytes` (every loop's gang `pinned` where given), its
    words saying which tail lane C gives the loop (emit_c/lane.py masked_tail)."""
    return [(fn, g, _with_tail(choose(loop_features(module, fn, g, register_bytes), register_bytes, pinned), g))
            for fn in module.functions for g in statements(fn.body) if isinstance(g, ir.Gang)]


def _with_tail(choice: GangChoice, gang: ir.Gang) -> GangChoice:
    tail = MASKED_TAIL_WORDS if masked_tail(gang) else "the scalar loop"
    return GangChoice(choice.shape, f"{choice.text}; tail: {tail}")


def shaped_as(module: ir.Module, choices: list[tuple[ir.Function, ir.Gang, GangChoice]]) -> ir.Module:
    """The lane IR with each Gang shaped as `choices` (gang_choices of this module) say."""
    shapes = {id(g): c.shape for _, g, c in choices}
    return shape_gangs(module, lambda fn, g: shapes[id(g)])
