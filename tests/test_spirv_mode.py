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
    assert "add: runs as lane C under --mode spirv: it is marked @aot(vectorize = false)" in report


def test_a_module_without_device_functions_writes_no_binary(tmp_path):
    path = tmp_path / "scalar.nupp"
    path.write_text("@aot\nlocal function add(a: int32, b: int32): int32\n    return a + b\nend\nreturn {add = add}\n")
    written = nupp("emit", "--spirv-out", str(tmp_path / "x.spv"), str(path))
    assert written.returncode == 2 and "has no function a device runs: add: it has no loop over spans" in written.stderr
    assert not (tmp_path / "x.spv").exists()


def test_no_device_is_an_environment_error(tmp_path):
    (tmp_path / "breaks.nupp").write_text(BREAKS)
    run = subprocess.run([sys.executable, "-m", "nupp.runtime.cli", "run", "breaks.nupp", "--mode", "spirv"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "NUPP_SPIRV_DEVICE": "no such device"})
    assert run.returncode == 2, run.stderr
    assert "names no Vulkan device here" in run.stderr and "Traceback" not in run.stderr


def test_a_call_beyond_the_devices_buffer_limit_runs_as_c(runner_kind):
    """A span larger than one storage buffer may be: that call runs the library's C, same bits."""
    path = BENCH / "simd.nupp"
    device, scalar = load(path, mode="spirv", spirv_runner=runner_kind), load(path, mode="scalar")
    stride = device.dtype("Body").itemsize
    n = open_runner(runner_kind).limits.max_binding_bytes // stride + 1
    a = np.zeros(n, dtype=device.dtype("Body"))
    a["x"], a["v"], a["m"] = np.arange(n) % 1000, 1.5, 2.0
    b = a.copy()
    device.advance(a, 0.01, 0.99)
    scalar.advance(b, 0.01, 0.99)
    assert a.tobytes() == b.tobytes()


WIDENED_COMPARISONS = """
local span = nupp.mem.span
local struct E
    a: int32
    u: uint32
    r: int32
end
@aot
local function k(exclusive out: span.WriteSpan<E>): nil
    for i = 1, #out do
        local a, u = out[i].a, out[i].u
        local r: int32 = 0
        if nupp.math.i64.wrap(5.0) <= a then r = r | 1 end
        if a < nupp.math.i64.wrap(-3.0) then r = r | 2 end
        if nupp.math.i64.wrap(5.0) <= u then r = r | 4 end
        if u < nupp.math.u64.wrap(7.0) then r = r | 8 end
        if nupp.math.i64.wrap(-1.0) < u then r = r | 16 end
        if a == nupp.math.i64.wrap(-2147483648.0) then r = r | 32 end
        out[i].r = r
    end
end
return {E = E, k = k}
"""


def test_comparisons_of_widened_values(runner_kind, tmp_path):
    """lavapipe (LLVM 15) once compared an OpSConvert'ed int32 wrongly: 5 <= int64(1) was true."""
    path = tmp_path / "widened.nupp"
    path.write_text(WIDENED_COMPARISONS)
    device, scalar = load(path, mode="spirv", spirv_runner=runner_kind), load(path, mode="scalar")
    values = [0, 1, 4, 5, 6, -1, -3, -4, 7, 2**31 - 1, -2**31]
    a = np.zeros(len(values) ** 2, dtype=device.dtype("E"))
    a["a"] = np.repeat(values, len(values))
    a["u"] = np.tile(np.array(values, dtype=np.int64) % 2**32, len(values))
    b = a.copy()
    device.k(a)
    scalar.k(b)
    assert a.tobytes() == b.tobytes()


def test_a_negative_zero_argument_reaches_the_device(runner_kind, tmp_path):
    """lupa hands Python an integral Lua number as an int, -0 as 0: the device must see -0."""
    path = tmp_path / "negzero.nupp"
    path.write_text("local span = nupp.mem.span\nlocal f32 = nupp.math.f32\n"
                    "local struct R\n    x: number\n    y: float\nend\n@aot\n"
                    "local function k(exclusive out: span.WriteSpan<R>, p: number, q: float): nil\n"
                    "    for i = 1, #out do\n        out[i].x = p\n        out[i].y = q\n    end\nend\n"
                    "return {R = R, k = k}\n")
    device = load(path, mode="spirv", spirv_runner=runner_kind)
    a = np.ones(2, dtype=device.dtype("R"))
    device.k(a, -0.0, -0.0)
    assert np.signbit(a["x"]).all() and np.signbit(a["y"]).all(), a


def test_a_remainder_by_minus_one_divides_as_zero(runner_kind, tmp_path):
    """x % -1 is 0; lavapipe carried the rule's known 0 into the division and folded 0.0 / 0.0 to 0."""
    path = tmp_path / "rem.nupp"
    path.write_text("local span = nupp.mem.span\nlocal struct In\n    w: int64\n    x: number\nend\n"
                    "local struct Out\n    d: number\nend\n@aot\n"
                    "local function k(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<In>): nil\n"
                    '    assert(#out == #inp, "length mismatch")\n'
                    "    for i = 1, #out do\n        out[i].d = inp[i].x / (inp[i].w % (-1LL))\n    end\nend\n"
                    "return {In = In, Out = Out, k = k}\n")
    device, scalar = load(path, mode="spirv", spirv_runner=runner_kind), load(path, mode="scalar")
    inp = np.zeros(4, dtype=device.dtype("In"))
    inp["w"], inp["x"] = [0, -2**63, 7, -7], [0.0, 0.0, 1.0, -1.0]
    a, b = np.zeros(4, dtype=device.dtype("Out")), np.zeros(4, dtype=device.dtype("Out"))
    device.k(a, inp)
    scalar.k(b, inp)
    assert np.isnan(a["d"][:2]).all() and (a["d"][2:] == b["d"][2:]).all() and (np.signbit(a["d"]) == np.signbit(b["d"]))[2:].all(), a


def test_a_function_with_a_result_emits_and_reports_its_finish_kernel(tmp_path):
    (tmp_path / "sums.nupp").write_text(
        "local span = nupp.mem.span\nlocal struct C\n    a: int32\nend\n@aot\n"
        "local function total(borrows cs: span.Span<C>): int32\n    local s: int32 = 0\n"
        "    for i = 1, #cs do\n        s = s + cs[i].a\n    end\n    return s\nend\nreturn {C = C, total = total}\n")
    report = nupp("emit", "--report", "sums.nupp", cwd=tmp_path).stdout
    assert "sums.nupp: total: runs on the device (--mode spirv), with a finish kernel for what follows its loop" \
        in report
    written = nupp("emit", "--spirv-out", "k.spv", "sums.nupp", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    for name in ("k.total.spv", "k.total.finish.spv"):
        assert spirv_val_problem((tmp_path / name).read_bytes()) is None, name


def test_the_python_api_names_each_functions_execution(runner_kind, tmp_path):
    path = tmp_path / "breaks.nupp"
    path.write_text(BREAKS)
    module = load(path, mode="spirv", spirv_runner=runner_kind)
    assert module.executions == {"f": "spirv-lavapipe"}
    assert module.execution.startswith("lane")  # the library of the functions the device does not run
