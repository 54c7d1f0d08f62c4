"""A shift count of any integer width, and 32-bit operands widening to a 64-bit one, in every execution.

LANGUAGE.md section 3: a shift count may be any established integer of any
width or an integer literal; only its low 5 (32-bit shift) or 6 (64-bit
shift) bits count.  A bitwise operator meeting a 64-bit operand widens a
32-bit one of the same signedness, whichever side it stands on.  One kernel
does each, on counts around every boundary (0, 31, 32, 63, 64, 2^32 + 3,
negative, the 64-bit extremes), and runs as the interpreter, scalar C and
lane C at every gang, through GCC and Clang; every field must equal the
oracle's, which is written here in Python integers from the rule above.
"""

from __future__ import annotations

import numpy as np
import pytest

from nupp.targets.tiers import TierError
from nupp.errors import Source
from nupp.lane_rewrite.rewrite import lane_decisions
from nupp.scalar_ir.lanes import GANG_SIZES
from nupp.pipeline import compile_module
from nupp.runtime.api import load
from nupp.scalar_ir.text import print_module

from .conftest import require_tool

KERNEL = """\
local span = nupp.mem.span

local struct In
    x: int64
    z: uint64
    c: int64
    d: uint64
    y: int32
    u: uint32
end

local struct Out
    a: int64
    b: int64
    p: uint64
    q: uint64
    r: int32
    s: int32
    t: int64
    v: uint64
end

@aot
local function shifts(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<In>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local e = inp[i]
        out[i].a = e.x << e.c
        out[i].b = e.x >> e.d
        out[i].p = e.z << e.u
        out[i].q = e.z >> e.c
        out[i].r = e.y << e.d
        out[i].s = e.u >> e.c
        out[i].t = e.y & e.x
        out[i].v = e.u | e.z
    end
end

@aot
local function shift64(x: int64, c: uint64): int64
    return (x << c) ~ (x >> c)
end

return {shifts = shifts, shift64 = shift64, In = In, Out = Out}
"""

M64, M32 = (1 << 64) - 1, (1 << 32) - 1


def signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def oracle(row) -> dict:
    x, z, c, d, y, u = (int(row[name]) for name in ("x", "z", "c", "d", "y", "u"))
    return {
        "a": signed(x << (c & 63), 64),
        "b": signed((x & M64) >> (d & 63), 64),
        "p": (z << (u & 63)) & M64,
        "q": z >> (c & 63),
        "r": signed(y << (d & 31), 32),
        "s": signed(u >> (c & 31), 32),
        "t": signed(y & x, 64),
        "v": u | z,
    }


COUNTS = [0, 1, 5, 31, 32, 33, 63, 64, 65, 127, 2 ** 32 + 3, 2 ** 32 - 1, 2 ** 62 + 7, 2 ** 63 - 1,
          -1, -31, -32, -63, -64, -(2 ** 63)]
VALUES = {
    "x": [1, -1, 3, 0x0123456789ABCDEF, -(2 ** 63), 2 ** 63 - 1, -0x5555],
    "z": [1, M64, 0xDEADBEEFCAFEBABE, 2 ** 63],
    "c": COUNTS,
    "d": [n & M64 for n in COUNTS[3:] + COUNTS[:3]],
    "y": [1, -1, 0x7FFFFFFF, -(2 ** 31), 0x12345678, -7],
    "u": [0, 1, 31, 32, 33, 63, 64, 2 ** 31, M32, M32 - 32],
}


def rows(module, n: int) -> np.ndarray:
    """n rows cycling through each field's values at a different pace: every count meets every value."""
    inp = np.zeros(n, dtype=module.dtype("In"))
    for k, (name, values) in enumerate(VALUES.items()):
        inp[name] = [values[(i // (k + 1) + i * k) % len(values)] for i in range(n)]
    return inp


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "shift-cache"))


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("shifts") / "shifts.nupp"
    p.write_text(KERNEL)
    return p


def test_a_64_bit_count_keeps_its_low_32_bits_in_the_ir():
    ir_text = print_module(compile_module(Source("shifts.nupp", KERNEL)))
    assert "trunc.i64.i32" in ir_text and "trunc.u64.i32" in ir_text


def test_the_kernel_runs_in_gangs():
    module = compile_module(Source("shifts.nupp", KERNEL))
    assert [d.reason for d in lane_decisions(module) if d.function == "shifts"] == [None]


EXECUTIONS = [("interp", None, "gcc")] + [("scalar", None, cc) for cc in ("gcc", "clang")] + [
    ("lane", gang, cc) for gang in GANG_SIZES for cc in ("gcc", "clang")]


@pytest.mark.parametrize("mode, gang, cc", EXECUTIONS, ids=[f"{m}{g or ''}-{cc}" for m, g, cc in EXECUTIONS])
def test_every_execution_gives_the_oracles_bits(path, mode, gang, cc):
    require_tool(cc)
    try:
        module = load(str(path), mode=mode, cc=cc, gang=gang)
    except TierError as err:
        pytest.skip(f"this CPU runs no gang {gang}: {err}")
    for n in list(range(2 * 16 + 2)) + [997]:
        inp = rows(module, n)
        out = np.zeros(n, dtype=module.dtype("Out"))
        module.shifts(out, inp)
        for i in range(n):
            want = oracle(inp[i])
            got = {name: int(out[i][name]) for name in want}
            assert got == want, f"row {i} of {n}: {dict(zip(VALUES, (int(inp[i][f]) for f in VALUES)))}"
    for x in VALUES["x"]:
        for c in VALUES["d"]:
            want = signed((x << (c & 63)) ^ ((x & M64) >> (c & 63)), 64)
            assert int(module.shift64(x, c)) == want, (x, c)
