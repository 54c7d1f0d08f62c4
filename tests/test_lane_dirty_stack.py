"""Lane C gives the same bits whatever garbage its stack frame starts with.

An outside fuzzer saw the default mode hang on AVX-512: GCC 12.2 spilled the
k-register mask behind `nu_lanes_x16` 16 bits wide and reloaded it 32 bits
wide, so the "no lanes left" test of a masked while read stack garbage and
the loop never ended (tests/gcc_kmask_spill.md).  The mask test now reads
lanes with vmovmskps into a general register.  This test is the guard: each
lane kernel with masks, built for every tier this CPU runs at the tier's
widest gang, is called through a wrapper that first fills 64 KiB of stack
below it with 0xFF bytes (where the kernel's frame will be), in a child
process with a timeout (a hang is a failure), and must agree with scalar C.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nupp.targets.tiers import tier_named

from .conftest import require_tool
from .test_lane_c import (Kernel, call, lane_cases, loaded,
                          save_lane_outcomes, saved_outputs_match, write_test_kernels)
from .test_native_differential import COMPILERS, ROOT
from .test_tiers import runnable_tiers

# Register pressure around masked loops: twelve int32 fields live across a
# masked while whose condition is never true for some k (`and k > 100`), an
# empty inner for, then a masked while that runs (at most 7 rounds).
PRESSURE_KERNEL = """\
local span = nupp.mem.span

local struct Wide
    a: int32
    b: int32
    c: int32
    d: int32
    e: int32
    f: int32
    g: int32
    h: int32
    p: int32
    q: int32
    r: int32
    s: int32
end

local struct Two
    v: int32
    u: int32
end

@aot
local function pressure(exclusive out: span.WriteSpan<Two>, borrows inp: span.Span<Wide>, k: int32): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local x = inp[i]
        local w: int32 = x.a & 15
        local t1: int32 = x.a * x.b + x.c * x.d - x.e * x.f + x.g * x.h - x.p * x.q + x.r * x.s + w
        while w < (k & 3) and k > 100 do
            w = w + 1
        end
        for j = 1, 3, 2 do end
        while w < (x.b & 7) do
            w = w + 1
        end
        local t2: int32 = (x.a ~ x.b) * (x.c | x.d) + (x.e & x.f) * (x.g ~ x.h) - (x.p | x.q) * (x.r & x.s) + t1
        out[i].v = t1 + w * x.a + x.b * x.c + x.d * x.e + x.f * x.g + x.h * x.p + x.q * x.r + x.s
        out[i].u = t2 - w + x.a * x.s + x.b * x.r + x.c * x.q + x.d * x.p + x.e * x.h + x.f * x.g
    end
end

return {Wide = Wide, Two = Two, pressure = pressure}
"""

MASKED = ("masked", "whiles", "fors", "breaks", "guards")
DIRTY_BYTES = 1 << 16


def dirty_stack_wrapper(fn) -> tuple[str, str, str]:
    """C calling the kernel right after a function that fills the stack below
    the caller with 0xFF (the kernel's frame then starts on that garbage)."""
    params = [f"{ctype} a{k}" for k, (_, ctype) in enumerate(fn.params)]
    args = [f"a{k}" for k in range(len(fn.params))]
    if fn.result is not None:
        params.append(f"{fn.result} *result")
        args.append("result")
    symbol = f"dirty_{fn.symbol}"
    prototype = f"int32_t {symbol}({', '.join(params)});"
    source = f"""
__attribute__((noinline)) static void nu_test_dirty_stack(void)
{{
    volatile unsigned char junk[{DIRTY_BYTES}];
    for (unsigned k = 0; k < sizeof junk; k++) junk[k] = 0xFF;
}}

{prototype[:-1]}
{{
    nu_test_dirty_stack();
    return {fn.symbol}({', '.join(args)});
}}
"""
    return source, prototype, symbol


def write_kernels(folder: Path) -> dict[str, Kernel]:
    every = write_test_kernels(folder)
    found = {name: every[name] for name in MASKED}
    path = folder / "pressure.nupp"
    path.write_text(PRESSURE_KERNEL)
    found["pressure"] = Kernel(path, "pressure", ("Two", "Wide"), ((3,), (200,), (-1,)))
    return found


def tier_gang(tier: str) -> int:
    return min(max(tier_named(tier).gang, 4), 16)


def dirty_stack_child(cc: str, tier: str, out_dir: str, folder: str) -> None:
    """In a child process: every kernel's lane C for `tier` at its gang, called on a dirtied stack."""
    from nupp.targets.toolchain import find_toolchain

    toolchain = find_toolchain(cc, extra_flags=tier_named(tier).flags)
    save_lane_outcomes(toolchain, Path(out_dir), write_kernels(Path(folder)), (tier_gang(tier),),
                       dirty_stack_wrapper)


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("tier", ["v2", "v3", "v4"])
def test_lane_c_agrees_with_scalar_on_a_dirtied_stack(cc, tier, tmp_path):
    require_tool(cc)
    if tier not in runnable_tiers():
        pytest.skip(f"this CPU does not run {tier}")
    (tmp_path / "kernels").mkdir()
    kernels = write_kernels(tmp_path / "kernels")  # the parent's copy, for the expected answers
    out = tmp_path / "out"
    out.mkdir()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", "import sys; from tests.test_lane_dirty_stack import dirty_stack_child; "
             "dirty_stack_child(*sys.argv[1:])", cc, tier, str(out), str(tmp_path / "kernels")],
            capture_output=True, text=True, cwd=ROOT, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail(f"lane C for {tier} ({cc}) hung on a dirtied stack")
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-6000:]}"
    gang, compared = tier_gang(tier), 0
    for name in sorted(kernels):
        kernel = kernels[name]
        scalar = loaded(kernel.path, "scalar", cc)
        for index, (label, args) in enumerate(lane_cases(scalar, kernel, gang)):
            compared += saved_outputs_match(out, f"{name}-{gang}-{index}", call(scalar, kernel.function, args),
                                            f"{name} {tier} G={gang} {label} (dirtied stack, {cc})")
    assert compared > 0


def test_the_pressure_kernel_runs_in_gangs_with_masked_whiles(tmp_path):
    from .test_lane_c import compiled, reasons
    path = write_kernels(tmp_path)["pressure"].path
    _, module = compiled(path)
    assert reasons(module) == [None]
