"""What a gang body loaded before a loop is stale inside it once the loop's body
stores to that span (emit_c/lane.py forget_stored): a masked for takes its
bounds once, before its rounds, so a field of the stored span those bounds
loaded (a block of the gang's elements) must be loaded again by the body, or
the second round reads the value the first round overwrote.  Found by the fuzz
(tests/fuzz_regressions/spans-lane4-baseline-gcc-8ae7a50f): every lane
execution, both compilers, every gang, got it wrong before.

The oracle is the kernels written again in Python integers from the spec
(int32 arithmetic wraps), at every span length 0..2G+1 for each gang."""

from __future__ import annotations

import numpy as np
import pytest

from nupp.runtime.api import load
from nupp.scalar_ir.lanes import GANG_SIZES

from .conftest import require_tool

SOURCE = """\
local span = nupp.mem.span

local struct R
    r1: int32
    r2: uint32
    r3: float
    r4: int32
end

local struct Q
    a: int32
    b: uint32
end

@aot
local function bounded(exclusive out: span.WriteSpan<R>, borrows inp: span.Span<Q>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        for j = (out[i].r2 & 3), (inp[i].b & 7) do
            out[i].r1 = out[i].r1 * 3 + inp[i].a
        end
    end
end

@aot
local function counted(exclusive out: span.WriteSpan<R>): nil
    for i = 1, #out do
        local o = out[i]
        for j = 1, o.r4 & 7 do
            o.r4 = o.r4 - 1
            o.r1 = o.r1 + o.r4
        end
        while (o.r2 & 7) ~= 0 do
            o.r2 = o.r2 - 1
            o.r1 = o.r1 * 5 + nupp.math.i32.fromU32(o.r2)
        end
    end
end

return {R = R, Q = Q, bounded = bounded, counted = counted}
"""


def wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def bounded_oracle(r1: int, r2: int, a: int, b: int) -> int:
    for _ in range(r2 & 3, (b & 7) + 1):
        r1 = wrap32(r1 * 3 + a)
    return r1


def counted_oracle(r1: int, r2: int, r4: int) -> tuple[int, int, int]:
    for _ in range(1, (r4 & 7) + 1):
        r4 = wrap32(r4 - 1)
        r1 = wrap32(r1 + r4)
    while r2 & 7:
        r2 -= 1
        r1 = wrap32(r1 * 5 + wrap32(r2))  # i32.fromU32: the same 32 bits
    return r1, r2, r4


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    file = tmp_path_factory.mktemp("loop-loads") / "loop_loads.nupp"
    file.write_text(SOURCE)
    return str(file)


def spans(kernels, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    out, inp = np.zeros(n, dtype=kernels.dtype("R")), np.zeros(n, dtype=kernels.dtype("Q"))
    for array in (out, inp):
        for name in array.dtype.names:
            if array.dtype[name].kind in "iu":
                info = np.iinfo(array.dtype[name])
                array[name] = rng.integers(info.min, info.max, n, endpoint=True)
    out["r3"] = rng.standard_normal(n)
    return out, inp


@pytest.mark.parametrize("cc", ["gcc", "clang"])
@pytest.mark.parametrize("gang", GANG_SIZES)
def test_a_loop_reads_what_its_rounds_stored(path, gang, cc):
    require_tool(cc)
    kernels = load(path, cc=cc, gang=gang)
    for n in range(2 * gang + 2):
        out, inp = spans(kernels, n, seed=n)
        before = out.copy()
        kernels.bounded(out, inp)
        want = [bounded_oracle(int(o["r1"]), int(o["r2"]), int(q["a"]), int(q["b"])) for o, q in zip(before, inp)]
        assert out["r1"].tolist() == want, f"bounded, gang {gang}, {cc}, length {n}"
        assert (out[["r2", "r3", "r4"]] == before[["r2", "r3", "r4"]]).all()

        before = out.copy()
        kernels.counted(out)
        want = [counted_oracle(int(o["r1"]), int(o["r2"]), int(o["r4"])) for o in before]
        got = list(zip(out["r1"].tolist(), out["r2"].tolist(), out["r4"].tolist()))
        assert got == want, f"counted, gang {gang}, {cc}, length {n}"
