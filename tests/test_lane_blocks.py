"""Structs whose fields differ in size move as blocks in lane C (emit_c/lane_memory.py
block_place): a gang's elements are loaded as vectors of 8-byte words and
shuffled into fields (a binary32 field shifted out of its word), and a store
merges the field into those vectors and writes them back whole.  Every byte
outside the stored fields, padding too, keeps its value.

The oracle is NumPy on the struct's dtype, from the spec's rules (binary64
arithmetic, a binary32 store rounds to nearest), over every span length
0..2G+1 at each gang, with the padding filled with random bytes."""

from __future__ import annotations

import re
import subprocess
from dataclasses import astuple

import numpy as np
import pytest

from nupp.emit_c.lane import emit_lane_module
from nupp.emit_c.lane_memory import CLANG_HALVES, HALVES, block_place, moves_whole
from nupp.errors import Source
from nupp.pipeline import compile_module, lanes_at
from nupp.runtime.api import NuppRuntimeError, load
from nupp.targets.gang_choice import _lane_by_lane, gang_choices
from nupp.targets.tiers import TIERS

from .conftest import require_tool

SOURCE = """\
local span = nupp.mem.span

local struct Rec
    a: number
    f: float
    g: float
    b: number
    c: float
end

@aot
local function step(exclusive recs: span.WriteSpan<Rec>, k: number): nil
    for i = 1, #recs do
        local r = recs[i]
        r.c = r.g + k
        r.b = r.a * k + r.b
        r.f = r.c * 2.0
    end
end

@aot
local function copy(exclusive out: span.WriteSpan<Rec>, borrows inp: span.Span<Rec>, k: number): nil
    assert(#inp == #out, "length mismatch")
    for i = 1, #out do
        local o = out[i]
        local x = inp[i]
        o.a = x.b + k
        o.g = x.f
    end
end

return {Rec = Rec, step = step, copy = copy}
"""
GANGS = (4, 8, 16, 32)
K = 0.75


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("blocks") / "blocks.nupp"
    p.write_text(SOURCE)
    return p


def records(dtype: np.dtype, n: int, seed: int) -> np.ndarray:
    """n records: random bytes everywhere (the padding), finite values in the fields."""
    rng = np.random.default_rng(seed)
    array = np.frombuffer(bytearray(rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).tobytes()), dtype=dtype)
    for name in dtype.names:
        array[name] = rng.normal(0, 100, n)
    return array


def with_fields(before: np.ndarray, **fields) -> bytes:
    """The bytes of `before` with the named fields set: what the kernel must leave."""
    after = before.copy()
    after.view(np.uint8)[:] = before.view(np.uint8)  # every byte, the padding too
    for name, values in fields.items():
        after[name] = values
    return after.tobytes()


def step_oracle(r: np.ndarray) -> bytes:
    c = (r["g"].astype(np.float64) + K).astype(np.float32)
    b = r["a"] * K + r["b"]
    f = (c.astype(np.float64) * 2.0).astype(np.float32)
    return with_fields(r, c=c, b=b, f=f)


def copy_oracle(out: np.ndarray, inp: np.ndarray) -> bytes:
    return with_fields(out, a=inp["b"] + K, g=inp["f"])


def test_rec_moves_as_blocks_of_words_and_the_model_knows():
    module = compile_module(Source("rec.nupp", SOURCE))
    rec = module.struct("Rec")
    # a@0 f@8 g@12 b@16 c@24, 4 bytes of padding: 4 words per element
    assert [astuple(block_place(rec, n)) for n in ("a", "f", "g", "b", "c")] == [
        (0, 4, 8, None, True), (1, 4, 8, 0, True), (1, 4, 8, 1, True), (2, 4, 8, None, True), (3, 4, 8, 0, True)]
    assert moves_whole(rec, 32) and _lane_by_lane(rec, 64) == 0


def test_in_two_word_vectors_gcc_moves_fields_of_two_sizes_lane_by_lane_and_the_model_knows(tmp_path):
    """In 128-bit vectors GCC moves Rec lane by lane (its block merges ran
    slower: lane_memory.NARROW_BYTES), Clang as blocks; in wider vectors both
    move blocks.  The cost model counts the accesses lane by lane at 128-bit
    registers only, and the report says so."""
    module = compile_module(Source("rec.nupp", SOURCE))
    rec = module.struct("Rec")
    assert not moves_whole(rec, 16) and _lane_by_lane(rec, 16) == 1 and moves_whole(rec, 32)
    lanes = lanes_at(module, 4)
    texts = {width: next(c.text for fn, _, c in gang_choices(lanes, width) if fn.name == "step") for width in (16, 32)}
    assert "lane by lane" in texts[16] and "independent iterations" in texts[32]
    text = emit_lane_module(lanes, "rec.nupp", "nupp_").source
    assert f"#if {CLANG_HALVES}" in text and f"#if {HALVES}" in text
    c_file = tmp_path / "rec.c"
    c_file.write_text(text)
    for tier, cc, blocks in (("baseline", "gcc", False), ("baseline", "clang", True), ("v3", "gcc", True)):
        require_tool(cc)
        flags = next(t.flags for t in TIERS if t.name == tier)
        seen = subprocess.run([cc, "-E", "-P", *flags, str(c_file)], capture_output=True, text=True, check=True).stdout
        step = seen.split("nuppi_step(", 1)[1].split("nuppi_copy(", 1)[0]
        assert ("__builtin_shufflevector" in step) == blocks, (tier, cc)


@pytest.mark.parametrize("tier", [None, "baseline"])  # the widest registers; 128-bit vectors
@pytest.mark.parametrize("cc", ["gcc", "clang"])
@pytest.mark.parametrize("gang", GANGS)
def test_stores_to_some_fields_keep_every_other_byte(path, gang, cc, tier):
    require_tool(cc)
    kernels = load(path, cc=cc, gang=gang, tier=tier)
    dtype = kernels.dtype("Rec")
    for n in range(2 * gang + 2):
        recs = records(dtype, n, seed=n)
        expected = step_oracle(recs)
        kernels.step(recs, K)
        assert recs.tobytes() == expected, f"step, length {n}"
        out, inp = records(dtype, n, seed=1000 + n), records(dtype, n, seed=2000 + n)
        expected, inp_bytes = copy_oracle(out, inp), inp.tobytes()
        kernels.copy(out, inp, K)
        assert out.tobytes() == expected and inp.tobytes() == inp_bytes, f"copy, length {n}"


def test_an_exclusive_span_overlapping_the_borrowed_one_is_refused_untouched(path):
    kernels = load(path, gang=8)
    recs = records(kernels.dtype("Rec"), 20, seed=7)
    before = recs.tobytes()
    with pytest.raises(NuppRuntimeError):
        kernels.copy(recs[2:], recs[:-2], K)
    assert recs.tobytes() == before


def gang_body(gang: int, function: str) -> str:
    """The C of one gang of `function` (its first gang loop: the widest registers')."""
    source = Source("rec.nupp", SOURCE)
    text = emit_lane_module(lanes_at(compile_module(source), gang), source.path, "nupp_").source
    text = text.split(f"nuppi_{function}(", 1)[1].split(f"c1 += {gang}) {{", 1)[1]
    return re.split(r"const int32_t b\d+ = ", text)[1]  # from its base index to the next gang's


def test_a_gang_reads_its_block_once_and_writes_it_back_once():
    """step at gang 8: Rec is 32 bytes, four vectors of 8 words per gang; the
    three stores merge into them and the last writes each back once."""
    body = gang_body(8, "step")
    assert body.count("nu_load_i64x8(&") == 4
    assert body.count("memcpy((char *)&p_recs[b") == 4
    assert "__builtin_convertvector(" in body and ">> 32" in body  # g: the high half of word 1
    copy = gang_body(8, "copy")
    assert copy.count("memcpy((char *)&p_out[b") == 4 and copy.count("nu_load_i64x8(&") == 8  # out and inp
