"""Reductions, results and calls on the device: every exact reduction op, bit for bit.

A function whose span loop accumulates into a local declared before it (an
exact reduction, scalar_ir/varying.py) and that returns a value runs on the
device as two kernels (emit_spirv/kernel.py): each invocation leaves its
partial result, and a finish kernel combines them into the value before the
loop and runs the statements after it.  Here one function per reduction op
of scalar_ir/ops.py (every op with an identity) accumulates a field of every
row until a row's key equals `stop` (a break after the first update, before
the second: the breaking iteration's partial result counts, later ones do not)
and returns the result.  The result is compared, through both runners, with

  * an independent oracle written from the spec (Python integers modulo 2^N,
    tests/oracles.py's binary64 and binary32 min/max),
  * scalar C and the interpreter (`nupp.load` modes "scalar" and "interp"),

at every length across the first workgroups (0..130), a longer span, each
break position, edge values and generated rows (hypothesis).  A binary64 NaN
compares as a NaN (LANGUAGE.md section 3); everything else to the bit.  The
statements after the loop can fail too: that error is the call's.

Calls of other @aot functions (of numbers) run as SPIR-V functions: a kernel
calling helpers with loops, early returns, a result-less helper and an
integer division by zero inside a helper (from the loop, from the statements
before and after it) agrees with scalar C and the interpreter, spans and
errors included.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nupp.emit_spirv import emit_module
from nupp.errors import Source
from nupp.pipeline import compile_module
from nupp.runtime.api import NuppRuntimeError, load
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.widths import Width
from nupp.targets.device import RUNNERS

from . import oracles as o
from .test_device_runner import open_runner

# per width: the Nupp type, the field the loop reads (and how), the NumPy dtype of that field
TYPES = {Width.I32: ("int32", "inp[i].i", "i"), Width.U32: ("uint32", "inp[i].u", "u"),
         Width.I64: ("int64", "inp[i].l", "l"), Width.U64: ("uint64", "inp[i].w", "w"),
         Width.F64: ("number", "inp[i].d", "d"), Width.F32: ("float", "f32.fromBits(inp[i].f)", "f")}
UPDATE = {"add": "{acc} + {v}", "sub": "{acc} - {v}", "mul": "{acc} * {v}", "band": "{acc} & {v}",
          "bor": "{acc} | {v}", "bxor": "{acc} ~ {v}"}
REDUCTION_OPS = sorted(name for name, info in OPS.items() if info.identity is not None)

HEADER = """local span = nupp.mem.span
local f32 = nupp.math.f32
local struct In
    k: int32
    i: int32
    u: uint32
    l: int64
    w: uint64
    d: number
    f: uint32
end
"""


def update(op: str, acc: str, v: str) -> str:
    base, width = OPS[op].base, OPS[op].result
    if base in UPDATE:
        return UPDATE[base].format(acc=acc, v=v)
    return f"{'f32.' if width is Width.F32 else 'math.'}{base}({acc}, {v})"


def function_name(op: str) -> str:
    return "r_" + op.replace(".", "_")


def reduction_function(op: str) -> str:
    """acc starts at `init`; each row until the key `stop` adds its field twice (the
    second time after the break test); then the function returns acc."""
    type_name, value, _ = TYPES[OPS[op].result]
    return f"""
@aot
local function {function_name(op)}(borrows inp: span.Span<In>, stop: int32, init: {type_name}): {type_name}
    local acc: {type_name} = init
    for i = 1, #inp do
        acc = {update(op, "acc", value)}
        if inp[i].k == stop then break end
        acc = {update(op, "acc", value)}
    end
    return acc
end
"""


# the statements after the loop fail (an integer division by zero when stop is 7),
# and a boolean result
EPILOGUES = """
@aot
local function divided(borrows inp: span.Span<In>, stop: int32): int32
    local acc: int32 = 0
    for i = 1, #inp do
        acc = acc ~ inp[i].i
    end
    local q: int32 = acc // (stop - 7)
    return q
end

@aot
local function any_odd(borrows inp: span.Span<In>, stop: int32): boolean
    local odd: int32 = 0
    for i = 1, #inp do
        if inp[i].k == stop then break end
        odd = odd | (inp[i].i & 1)
    end
    return odd ~= 0
end
"""


def module_text() -> str:
    exports = [function_name(op) for op in REDUCTION_OPS] + ["divided", "any_odd"]
    table = ", ".join(f"{name} = {name}" for name in ["In"] + exports)
    return HEADER + "".join(reduction_function(op) for op in REDUCTION_OPS) + EPILOGUES + f"return {{{table}}}\n"


# ---- the oracle --------------------------------------------------------------------------------

def combine(op: str, acc, v):
    """op(acc, v) by the spec: integers modulo 2^N, min/max by tests/oracles.py."""
    base, width = OPS[op].base, OPS[op].result
    if width is Width.F64:
        return o.f64_min_max(acc, v, base == "min")
    if width is Width.F32:
        return o._min_max_bits(acc, v, base == "min")
    exact = {"add": acc + v, "sub": acc - v, "mul": acc * v, "band": acc & v, "bor": acc | v, "bxor": acc ^ v}
    return wrap(exact[base], width)


def wrap(x: int, width: Width) -> int:
    x %= 1 << width.bits
    return x - (1 << width.bits) if width.is_signed and x >= 1 << (width.bits - 1) else x


def expected(op: str, rows: np.ndarray, stop: int, init):
    """The oracle's result (a binary32 as its bits)."""
    field = TYPES[OPS[op].result][2]
    acc = o.bits_of_f32(np.float32(init)) if field == "f" else init
    for row in rows:
        v = row[field].item()
        acc = combine(op, acc, v)
        if row["k"] == stop:
            break
        acc = combine(op, acc, v)
    return acc


def comparable(value, width: Width):
    """A result as what must match: bits, but a NaN as a NaN.  A float result
    reaches the caller as a Lua number (binary32 widened), and LuaJIT keeps one
    NaN of its own: the sign and payload of a NaN result are not observable."""
    if width.is_float:
        if isinstance(value, int):  # the oracle's binary32 bits
            value = float(o.f32_of_bits(value))
        return "NaN" if math.isnan(value) else struct.pack("<d", value)
    return int(value)


# ---- running it -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("spirv-results") / "reductions.nupp"
    path.write_text(module_text())
    return path


@pytest.fixture(scope="module", params=RUNNERS)
def loaded(request, source, tmp_path_factory):
    """The module on the device through each runner, as scalar C and interpreted."""
    open_runner(request.param)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NUPP_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return {mode: load(str(source), mode=mode, spirv_runner=request.param)
                for mode in ("spirv", "scalar", "interp")}


def outcome(module, name: str, *args):
    try:
        return getattr(module, name)(*args), None
    except NuppRuntimeError as err:
        return None, str(err)


def rows_of(dtype, n: int, seed: int) -> np.ndarray:
    """n rows: keys 0..n-1, every other field random bits with edge values mixed in."""
    rng = np.random.default_rng(seed)
    rows = np.zeros(n, dtype=dtype)
    rows["k"] = np.arange(n)
    for name in ("i", "u", "l", "w", "f"):
        kind = rows[name].dtype
        rows[name] = rng.integers(0, 256, size=n * kind.itemsize, dtype=np.uint8).view(kind)
    rows["d"] = rng.standard_normal(n) * 1e3
    edges = {"i": [0, 1, -1, 2**31 - 1, -2**31], "u": [0, 1, 2**32 - 1], "l": [0, -1, 2**63 - 1, -2**63],
             "w": [0, 2**64 - 1], "d": [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324],
             "f": [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 1]}
    for name, values in edges.items():
        for k, v in enumerate(values):
            if n > 3 * k + 1:
                rows[name][3 * k + 1] = v
    return rows


def initial(width: Width, seed: int):
    return {Width.F64: [0.0, -0.0, 1.5, math.inf][seed % 4], Width.F32: [0.0, -0.0, 2.5, -math.inf][seed % 4],
            Width.I32: [0, 7, -1][seed % 3], Width.U32: [0, 1, 2**32 - 1][seed % 3],
            Width.I64: [0, -1, 2**62][seed % 3], Width.U64: [0, 2**64 - 1][seed % 2]}[width]


def check_all_ways(loaded, op: str, rows: np.ndarray, stop: int, init) -> None:
    name, width = function_name(op), OPS[op].result
    want = comparable(expected(op, rows, stop, init), width)
    for mode, module in loaded.items():
        got, error = outcome(module, name, rows, stop, init)
        assert error is None, (mode, op, error)
        assert comparable(got, width) == want, f"{op} in {mode}, {len(rows)} rows, stop {stop}, init {init}: " \
                                               f"{got!r} against the oracle's {want!r}"


LENGTHS = list(range(0, 131)) + [1000]


@pytest.mark.parametrize("op", REDUCTION_OPS)
def test_a_reduction_agrees_with_the_oracle_every_way(loaded, op):
    dtype = loaded["spirv"].dtype("In")
    for n in LENGTHS[:: 1 if n_all(op) else 7] + [64, 65, 1000]:
        rows = rows_of(dtype, n, seed=n)
        for stop in {-1, 0, n // 2, n - 1}:
            check_all_ways(loaded, op, rows, stop, initial(OPS[op].result, n + stop))


def n_all(op: str) -> bool:
    """Every length for a few ops (one per width), every seventh for the rest: time."""
    return op in ("add.i32", "mul.u64", "max.f64", "min.f32")


@given(data=st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_generated_rows(loaded, data):
    op = data.draw(st.sampled_from(REDUCTION_OPS))
    n = data.draw(st.integers(0, 300))
    rows = rows_of(loaded["spirv"].dtype("In"), n, seed=data.draw(st.integers(0, 2**32 - 1)))
    stop = data.draw(st.integers(-1, n))
    check_all_ways(loaded, op, rows, stop, initial(OPS[op].result, data.draw(st.integers(0, 11))))


def test_statements_after_the_loop_fail_and_return_booleans(loaded):
    rows = rows_of(loaded["spirv"].dtype("In"), 200, seed=3)
    for stop in (-1, 0, 7, 100, 199):
        results = {mode: outcome(module, "divided", rows, stop) for mode, module in loaded.items()}
        assert len(set(results.values())) == 1, results
        results = {mode: outcome(module, "any_odd", rows, stop) for mode, module in loaded.items()}
        assert len(set(results.values())) == 1, results
    assert "integer division by zero" in outcome(loaded["spirv"], "divided", rows, 7)[1]
    assert outcome(loaded["spirv"], "any_odd", rows[:0], -1) == (False, None)


def test_every_function_runs_on_the_device_with_a_finish_kernel(source):
    device = emit_module(compile_module(Source.from_file(str(source))), str(source))
    assert not device.refused, device.refused
    assert all(k.finish is not None and len(k.partials) == 1 for k in device.kernels.values())


CALLS = """local span = nupp.mem.span
local struct P
    x: int32
    y: number
end
@aot
local function clampdiv(a: int32, b: int32): int32
    if a > 100 then
        return 100
    end
    local r: int32 = a // b
    return r
end
@aot
local function thrice(v: number): number
    local t: number = 0
    for k = 1, 3 do
        t = t + v
    end
    return t
end
@aot
local function check(a: int32): nil
    local z: int32 = 10 // a
end
@aot
local function f(exclusive ps: span.WriteSpan<P>, d: int32, e: int32): int32
    local s: int32 = clampdiv(5, d + 1)
    for i = 1, #ps do
        ps[i].x = clampdiv(ps[i].x, d)
        ps[i].y = thrice(ps[i].y)
        check(ps[i].x + e)
        s = s + ps[i].x
    end
    return s + clampdiv(s, e)
end
return {P = P, f = f}
"""


def test_calls_agree_with_scalar_c_and_the_interpreter(tmp_path_factory):
    """d = 0 fails in the loop's first iteration (or never, on an empty span),
    d = -1 in the prologue, e makes `check` fail at one element or the epilogue fail."""
    path = tmp_path_factory.mktemp("spirv-calls") / "calls.nupp"
    path.write_text(CALLS)
    device = emit_module(compile_module(Source.from_file(str(path))), str(path))
    assert set(device.kernels) == {"f"}, device.refused
    for runner_kind in RUNNERS:
        open_runner(runner_kind)
        modules = {mode: load(str(path), mode=mode, spirv_runner=runner_kind) for mode in ("spirv", "scalar", "interp")}
        for n in (0, 1, 2, 63, 64, 65, 130, 1000):
            for d, e in ((1, 1), (3, -7), (0, 1), (-1, 1), (2, 0), (1, -60), (-4, 5)):
                answers = {}
                for mode, module in modules.items():
                    ps = np.zeros(n, dtype=module.dtype("P"))
                    ps["x"], ps["y"] = np.arange(n) * 3 - 20, np.arange(n) * 0.1
                    answers[mode] = (outcome(module, "f", ps, d, e), ps.tobytes())
                assert len(set(answers.values())) == 1, (runner_kind, n, d, e, {m: a[0] for m, a in answers.items()})
