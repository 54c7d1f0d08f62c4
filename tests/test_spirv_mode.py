"""`--mode spirv` end to end: programs run with their span loops on the Vulkan device.

The BENCH host scripts compare every execution nupp.executions lists with the
interpreter and say "NO" (and exit 1) on any difference; under --mode spirv
the device's execution is among them.  A break out of a span loop and an
error after it leave the spans as scalar C does, through the Python API.
The CLI emits, disassembles and reports the kernels.  Device tests skip
locally without a Vulkan driver and fail under CI (tests/test_device_runner.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nupp.runtime.api import NuppRuntimeError, load
from nupp.targets.device import RUNNERS

from .spirv_tools import spirv_val_problem
from .test_device_runner import open_runner

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "kernel-subset-spike"
# each host script with a size that keeps the interpreter's share of the run short
HOSTS = {"mandelbrot": (), "tecsbits": ("20000",), "corrected": ("20000",), "mixedwidth": ("20000",),
         "simd": ("2000", "20")}


def nupp(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nupp.runtime.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(params=RUNNERS)
def runner_kind(request) -> str:
    open_runner(request.param)
    return request.param


@pytest.mark.parametrize("host", HOSTS)
def test_bench_host_scripts_agree_with_the_interpreter_on_the_device(runner_kind, host):
    run = nupp("run", str(BENCH / f"{host}_main.nupp"), "--mode", "spirv", "--spirv-runner", runner_kind,
               *HOSTS[host])
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line.strip().startswith("spirv-lavapipe")]
    assert rows, run.stdout  # the device ran the kernel ...
    assert all(line.split()[-1] == "yes" for line in rows if "yes" in line or "NO" in line), run.stdout
    assert " NO" not in run.stdout  # ... and every execution agreed with the interpreter


BREAKS = """
local span = nupp.mem.span
local struct P
    x: int32
    r: int32
end
@aot
local function f(exclusive ps: span.WriteSpan<P>, stop: int32): nil
    local k: int32 = 0
    while k < 3 do
        k = k + 1
        if k == stop then break end
    end
    for i = 1, #ps do
        ps[i].r = ps[i].x * 2 + k
        if ps[i].x == stop then
            break
        end
        ps[i].r = ps[i].r + 1
        if ps[i].x == 1000 then ps[i].r = ps[i].r // (ps[i].x - 1000) end
    end
end
return {P = P, f = f}
"""


def outcome(module, array, stop):
    try:
        module.f(array, stop)
    except NuppRuntimeError as err:
        return str(err)
    return None


def test_a_break_out_of_the_span_loop_keeps_what_the_scalar_loop_wrote(runner_kind, tmp_path):
    """Iterations after the lowest break leave their elements alone; an error
    after the break never happened, one before it is the call's."""
    path = tmp_path / "breaks.nupp"
    path.write_text(BREAKS)
    device, scalar = load(path, mode="spirv", spirv_runner=runner_kind), load(path, mode="scalar")
    for stop in (-1, 0, 1, 5, 63, 64, 65, 130):
        for xs in (list(range(200)), [0, 1000, 5, 7], [1000, 5], [5, 1000], []):
            a = np.zeros(len(xs), dtype=device.dtype("P"))
            a["x"], a["r"] = xs, -7
            b = a.copy()
            assert (outcome(device, a, stop), a.tolist()) == (outcome(scalar, b, stop), b.tolist()), (stop, xs)


def test_nupp_executions_names_the_device(runner_kind, tmp_path):
    (tmp_path / "breaks.nupp").write_text(BREAKS)
    (tmp_path / "main.nupp").write_text(
        'local m = require("breaks")\nlocal names = {}\n'
        'for _, e in ipairs(nupp.executions(m.f)) do names[#names + 1] = e.name end\n'
        'print(table.concat(names, " "))\n')
    run = nupp("run", "main.nupp", "--mode", "spirv", "--spirv-runner", runner_kind, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    names = run.stdout.split()
    assert names[:2] == ["interp", "spirv-lavapipe"] and "scalar" in names, names


def test_emit_spirv_disassembles_writes_and_reports(tmp_path):
    source = BENCH / "mixedwidth.nupp"
    text = nupp("emit", "--spirv", str(source))
    if text.returncode == 2 and "spirv-dis" in text.stderr:
        pytest.skip(text.stderr.strip())
    assert text.returncode == 0, text.stderr
    assert "; function mix" in text.stdout and 'OpEntryPoint GLCompute %' in text.stdout
    out = tmp_path / "mix.spv"
    written = nupp("emit", "--spirv-out", str(out), str(source))
    assert written.returncode == 0, written.stderr
    assert spirv_val_problem(out.read_bytes()) is None
    report = nupp("emit", "--report", str(source)).stdout
    assert "mix: runs on the device (--mode spirv)" in report
    assert "add: runs as lane C under --mode spirv: it returns a value" in report


def test_a_module_without_device_functions_writes_no_binary(tmp_path):
    path = tmp_path / "scalar.nupp"
    path.write_text("@aot\nlocal function add(a: int32, b: int32): int32\n    return a + b\nend\nreturn {add = add}\n")
    written = nupp("emit", "--spirv-out", str(tmp_path / "x.spv"), str(path))
    assert written.returncode == 2 and "has no function a device runs: add: it returns a value" in written.stderr
    assert not (tmp_path / "x.spv").exists()


def test_no_device_is_an_environment_error(tmp_path):
    (tmp_path / "breaks.nupp").write_text(BREAKS)
    run = subprocess.run([sys.executable, "-m", "nupp.runtime.cli", "run", "breaks.nupp", "--mode", "spirv"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "NUPP_SPIRV_DEVICE": "no such device"})
    assert run.returncode == 2, run.stderr
    assert "names no Vulkan device here" in run.stderr and "Traceback" not in run.stderr
