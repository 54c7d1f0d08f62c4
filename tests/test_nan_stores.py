"""NaNs stored to float fields (LANGUAGE.md section 3).

The nupp.math.f32 surface is exact to the bit, canonical NaN included: a
store of its result (directly, or through a float local) holds 0x7FC00000 in
every execution, whatever NaN the hardware made (x86's invalid operation
gives 0xFFC00000; an operand's payload propagates).  A NaN from ordinary
binary64 arithmetic stored to a float field is "a NaN": its payload and sign
are not observable.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from nupp.runtime.api import load

from .fuzz.runs import all_executions, runnable_tiers
from .oracles import CANONICAL_NAN

MODULE = """local span = nupp.mem.span
local f32 = nupp.math.f32

local struct In
    x: number
    f: float
end

local struct Out
    diff: float
    root: float
    narrowed: float
    wide: float
end

@aot
local function k(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<In>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = f32.narrow(inp[i].x)
        local d = f32.sub(a, a)
        out[i].diff = d
        out[i].root = f32.sqrt(f32.narrow(inp[i].f))
        out[i].narrowed = f32.narrow(inp[i].x)
        out[i].wide = inp[i].x - inp[i].x
    end
end

return {k = k, In = In, Out = Out}
"""

F64_NANS = (0x7FF8000000000000, 0xFFF8000000000000, 0x7FF4000000001234, 0xFFFC00000000BEEF)
F32_NANS = (0x7FC00000, 0xFFC00000, 0x7FA00001, 0xFFC01234)


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _f32(bits: int) -> np.float32:
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


def _inputs(module, n: int) -> np.ndarray:
    """Rows cycling through infinities (inf - inf: the invalid operation's NaN, 0xFFC00000 on x86),
    NaNs with payloads and signs, negative numbers (sqrt: invalid) and ordinary values."""
    xs = [np.inf, -np.inf, 1.5, -2.0, *(_f64(b) for b in F64_NANS)]
    fs = [np.float32(-1.0), np.float32(4.0), np.float32(-np.inf), *(_f32(b) for b in F32_NANS)]
    rows = np.zeros(n, dtype=module.dtype("In"))
    for i in range(n):
        rows[i]["x"], rows[i]["f"] = xs[i % len(xs)], fs[(i // 2) % len(fs)]
    return rows


def _expected_bits(x: float, f: np.float32) -> dict[str, int]:
    """The f32 surface's results: a NaN canonical, else the IEEE result."""
    def bits(value) -> int:
        value = np.float32(value)
        return CANONICAL_NAN if np.isnan(value) else int(np.array([value]).view(np.uint32)[0])
    with np.errstate(invalid="ignore"):
        a = np.float32(x)
        return {"diff": bits(a - a), "root": bits(np.sqrt(f)), "narrowed": bits(a)}


def _executions():
    """The interpreter, scalar C and lane C at the best tier and every gang under each compiler,
    SPIR-V where a device opens."""
    return [pytest.param(e, id=e.name) for e in all_executions(tiers=runnable_tiers()[-1:])]


@pytest.fixture(scope="module")
def module_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("nan-stores") / "stores.nupp"
    path.write_text(MODULE)
    return path


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "nan-stores-cache"))


@pytest.mark.parametrize("execution", _executions())
def test_a_stored_f32_surface_nan_is_canonical_and_an_ordinary_one_is_a_nan(module_path, execution):
    module = load(str(module_path), **execution.load_arguments())
    n = 2 * 32 + 3  # full gangs of every size and a tail
    inp = _inputs(module, n)
    out = np.zeros(n, dtype=module.dtype("Out"))
    module.k(out, inp)
    for i in range(n):
        x, f = float(inp[i]["x"]), inp[i]["f"]
        want = _expected_bits(x, f)
        for name, bits in want.items():
            got = int(out[i:i + 1][name].view(np.uint32)[0])
            assert got == bits, f"{execution.name}: row {i} {name}: 0x{got:08X}, want 0x{bits:08X} (x={x!r}, f={f!r})"
        wide = out[i]["wide"]
        with np.errstate(invalid="ignore"):
            ordinary = np.float32(x - x)
        assert np.isnan(wide) == np.isnan(ordinary) and (np.isnan(wide) or wide == ordinary), \
            f"{execution.name}: row {i} wide: {wide!r}, want {ordinary!r}"
