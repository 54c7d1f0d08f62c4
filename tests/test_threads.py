"""Threads over span loops (emit_c/lane_threads.py, lane_rewrite/threads.py, runtime/threads.py).

  * the bits: every BENCH kernel that qualifies and a kernel per exact
    reduction op, with threads 1, 2 and 3 (odd splits), at every span length
    0..2G+1 (G the widest gang) and at 10_000 and 100_003, against scalar C;
    with NUPP_THREADS_MIN=0 (every loop on threads, however short) and with
    the default minimum; under GCC and, with its OpenMP runtime, Clang
  * the threads are real: a count above 1 starts OpenMP threads in the
    process, the default and a short span start none; one library serves
    two loads with different counts in one process, and neither the count
    nor NUPP_THREADS enters a cache key
  * loops that do not qualify (a break, an op that can raise, a value carried
    that is not an exact reduction, a loop that stays scalar) run with
    threads=3 as on one, and `nupp emit --report` says why they run on one
  * a process forked after threads ran runs its loops on one thread instead
    of waiting for threads the fork did not copy
  * the options: --threads, threads=, NUPP_THREADS, NUPP_THREADS_MIN, and their
    errors (exit status 2, no traceback; TypeError and ValueError from Python)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from nupp.errors import Source
from nupp.lane_rewrite.report import render_report
from nupp.lane_rewrite.threads import thread_refusal
from nupp.paths import NuppEnvironmentError
from nupp.pipeline import compile_module, lane_ir
from nupp.runtime.api import load
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.lanes import GANG_SIZES
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.walk import statements

from .conftest import UNDER_CI, require_module, require_tool
from .kernelgen import edge_array
from .test_lane_c import QUALIFYING, assert_same
from .test_native_differential import KERNELS, ROOT, Kernel, call
from .test_spirv_results import HEADER, REDUCTION_OPS, TYPES, function_name, update

COUNTS = (1, 2, 3)
LONG = (10_000, 100_003)
SHORT = range(2 * max(GANG_SIZES) + 2)  # every length 0..2G+1 of the widest gang


# ---- the kernels ---------------------------------------------------------------------------------

def reduction_source() -> str:
    """A function per exact reduction op: acc starts at `init`, each row updates it."""
    functions = []
    for op in REDUCTION_OPS:
        type_name, value, _ = TYPES[OPS[op].result]
        functions.append(f"""
@aot
local function {function_name(op)}(borrows inp: span.Span<In>, init: {type_name}): {type_name}
    local acc: {type_name} = init
    for i = 1, #inp do
        acc = {update(op, "acc", value)}
    end
    return acc
end
""")
    table = ", ".join(f"{name} = {name}" for name in ["In"] + [function_name(op) for op in REDUCTION_OPS])
    return HEADER + "".join(functions) + f"return {{{table}}}\n"


INITS = {"int32": (0, -7), "uint32": (0, 2**32 - 1), "int64": (0, -1), "uint64": (0, 2**64 - 1),
         "number": (0.0, -0.0), "float": (0.0, float("-inf"))}


@pytest.fixture(scope="module")
def reductions(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("threads") / "reductions.nupp"
    path.write_text(reduction_source())
    return path


def reduction_kernels(path: Path) -> dict[str, Kernel]:
    return {op: Kernel(path, function_name(op), ("In",), tuple((v,) for v in INITS[TYPES[OPS[op].result][0]]))
            for op in REDUCTION_OPS}


def all_kernels(reductions: Path) -> dict[str, Kernel]:
    return {**{name: KERNELS[name] for name in QUALIFYING}, **reduction_kernels(reductions)}


def inputs(module, kernel: Kernel, n: int) -> list[np.ndarray]:
    """Edge rows, and beyond the first thousand random bits (every span of the call `n` long)."""
    edges = min(n, 1000)
    return [edge_array(module.dtype(s), edges, offset=7 * n + 5 * k, random_rows=n - edges, seed=k + 1)
            for k, s in enumerate(kernel.spans)]


def assert_threads_agree_with_scalar(kernel: Kernel, lengths, cc: str = "gcc") -> None:
    scalar = load(kernel.path, mode="scalar", cc=cc)
    threaded = {count: load(kernel.path, cc=cc, threads=count) for count in COUNTS}
    for n in lengths:
        spans = inputs(scalar, kernel, n)
        for scalars in kernel.scalars[:2]:
            args = (*spans, *scalars)
            expected = call(scalar, kernel.function, args)
            for count, module in threaded.items():
                assert_same(expected, call(module, kernel.function, args),
                            f"{kernel.function} at length {n} {scalars}, {count} threads ({module.execution})")


# ---- the bits --------------------------------------------------------------------------------------

def test_every_qualifying_bench_loop_runs_on_threads_and_the_reductions_do(reductions):
    for name, kernel in all_kernels(reductions).items():
        module = compile_module(Source.from_file(str(kernel.path)))
        gangs = [s for fn in lane_ir(module).functions if fn.name == kernel.function
                 for s in statements(fn.body) if isinstance(s, ir.Gang)]
        assert gangs and all(thread_refusal(g) is None for g in gangs), name


@pytest.fixture
def every_loop_on_threads(monkeypatch):
    """NUPP_THREADS_MIN=0: a loop of any length runs on the threads asked for."""
    monkeypatch.setenv("NUPP_THREADS_MIN", "0")


@pytest.mark.parametrize("name", sorted(QUALIFYING) + REDUCTION_OPS)
def test_threads_give_the_bits_of_scalar_c(name, reductions, every_loop_on_threads):
    assert_threads_agree_with_scalar(all_kernels(reductions)[name], (*SHORT, *LONG))


@pytest.mark.parametrize("name", ["mandelbrot", "simd", "add.i32", "min.f64"])
def test_threads_at_the_default_minimum_give_the_bits_of_scalar_c(name, reductions):
    assert_threads_agree_with_scalar(all_kernels(reductions)[name], (0, 9, 100_003))


def require_clang_openmp() -> None:
    """Clang and its OpenMP runtime (Debian's libomp-dev); skips locally without them, never under CI."""
    require_tool("clang")
    if not list(Path("/usr/lib").glob("llvm-*/lib/libomp.so")):
        if UNDER_CI:
            pytest.fail("libomp-dev (Clang's OpenMP runtime) is required under CI but is not installed")
        pytest.skip("libomp-dev (Clang's OpenMP runtime) is not installed")


@pytest.mark.parametrize("name", ["mandelbrot", "tecsbits", "mul.i64", "max.f32", "bxor.u64", "sub.u32"])
def test_threads_under_clang_give_the_bits_of_scalar_c(name, reductions, every_loop_on_threads):
    require_clang_openmp()
    assert_threads_agree_with_scalar(all_kernels(reductions)[name], (0, 1, 33, 65, 10_000), cc="clang")


# ---- the threads are real, the count a setting of the calls ------------------------------------------

# A child process: the OS threads it has after a call of mandelbrot with each thread count given
# (a new load each), the results' agreement, the libraries the loads bound, and the module cache's entries.
COUNT_THREADS = """
import json, os, sys, time
import numpy as np
import nupp
path, n, counts = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
def tasks():
    # the count once it holds for 50 ms: a thread a load ran its work on (nupp/deep_stack.py,
    # runtime/deep_stack.py) has handed back its result but may not have left the list yet, and
    # libgomp lets a shrunk team's surplus threads go after the region has returned
    last = None
    for _ in range(100):
        now = len(os.listdir("/proc/self/task"))
        if now == last:
            break
        last = now
        time.sleep(0.05)
    return now
report = {"before": tasks(), "after": [], "same": True}
first = None
for count in counts:
    m = nupp.load(path, threads=count)
    pixels = np.zeros(n, dtype=m.dtype("Pixel"))
    pixels["cx"] = np.linspace(-2, 1, n)
    pixels["cy"] = np.linspace(-1, 1, n)[::-1]
    out = np.zeros(n, dtype=m.dtype("Escape"))
    m.mandelbrot(out, pixels, 64)
    first = out if first is None else first
    report["same"] &= bool((out == first).all())
    report["after"].append(tasks())
cache = os.environ["NUPP_CACHE_DIR"]
report["libraries"] = sorted(f for f in os.listdir(cache) if f.endswith(".so"))
report["modules"] = len(os.listdir(os.path.join(cache, "modules")))
print(json.dumps(report))
"""


def environment(env_extra) -> dict:
    """This process's environment without the thread settings, plus `env_extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUPP_THREADS", "NUPP_THREADS_MIN")}
    return {**env, **(env_extra or {})}


def run_python(script: str, *args, env_extra=None, timeout=120) -> subprocess.CompletedProcess:
    env = environment(env_extra)
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def thread_report(tmp_path, counts, n=200_000, env_extra=None) -> dict:
    env = {"NUPP_CACHE_DIR": str(tmp_path / "cache"), **(env_extra or {})}
    done = run_python(COUNT_THREADS, KERNELS["mandelbrot"].path, n, json.dumps(counts), env_extra=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_count_above_one_starts_threads_and_one_library_serves_every_count(tmp_path):
    report = thread_report(tmp_path, [1, 3, 1, 2])
    before, (one, three, one_again, two) = report["before"], report["after"]
    assert one == before, "one thread (the default count) started threads"
    assert three >= before + 2, f"threads=3 ran on fewer than 3 threads: {report}"
    assert one_again == three and two >= before + 1, "one thread leaves the pool be; two threads keep two"
    assert report["same"]
    # mandelbrot's library, the dispatcher's and the fast calls' (extension, trampolines): one each
    assert len(report["libraries"]) == 4, report["libraries"]
    assert report["modules"] == 1, "the thread count entered the module cache's key"


def test_nupp_threads_sets_the_count_and_enters_no_cache_key(tmp_path):
    first = thread_report(tmp_path, [None], env_extra={"NUPP_THREADS": "2"})
    assert first["after"][0] >= first["before"] + 1
    again = thread_report(tmp_path, [None], env_extra={"NUPP_THREADS": "3"})
    assert again["modules"] == 1 and again["libraries"] == first["libraries"]


def test_a_short_span_stays_on_the_calling_thread(tmp_path):
    report = thread_report(tmp_path, [3], n=1000)
    assert report["after"] == [report["before"]]


FORK = """
import os, sys
import numpy as np
import nupp
m = nupp.load(sys.argv[1], threads=2)
rows = np.zeros(100_003, dtype=m.dtype("In"))
rows["i"] = np.arange(len(rows))
expected = m.r_add_i32(rows, 0)
pid = os.fork()
if pid == 0:
    os._exit(0 if m.r_add_i32(rows, 0) == expected else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


def test_a_process_forked_after_threads_ran_runs_its_loops_on_one_thread(tmp_path, reductions):
    done = run_python(FORK, reductions, env_extra={"NUPP_CACHE_DIR": str(tmp_path / "cache")}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


# ---- loops that do not qualify ---------------------------------------------------------------------

REFUSED = """local span = nupp.mem.span
local struct Row
    a: int32
    b: int32
    x: number
end

@aot
local function stops(exclusive out: span.WriteSpan<Row>, borrows inp: span.Span<Row>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        if inp[i].a == 7 then break end
        out[i].a = inp[i].a + 1
    end
end

@aot
local function divides(exclusive out: span.WriteSpan<Row>, borrows inp: span.Span<Row>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        out[i].b = inp[i].a // inp[i].b
    end
end

@aot
local function last(exclusive out: span.WriteSpan<Row>, borrows inp: span.Span<Row>, k: int32): int32
    assert(#out == #inp, "length mismatch")
    local seen: int32 = 0
    for i = 1, #out do
        seen = k
        out[i].a = inp[i].a + seen
    end
    return seen
end

@aot
local function total(borrows inp: span.Span<Row>): number
    local s = 0.0
    for i = 1, #inp do
        s = s + inp[i].x
    end
    return s
end

return {Row = Row, stops = stops, divides = divides, last = last, total = total}
"""
REFUSED_KERNELS = {"stops": ("Row", "Row"), "divides": ("Row", "Row"), "last": ("Row", "Row"), "total": ("Row",)}


@pytest.fixture(scope="module")
def refused(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("threads-refused") / "refused.nupp"
    path.write_text(REFUSED)
    return path


def thread_lines(path: Path) -> list[str]:
    source = Source.from_file(str(path))
    return [line.split(": ", 2)[2] for line in render_report(compile_module(source), source.path).splitlines()
            if "under --threads N" in line]


def test_the_report_says_why_a_loop_runs_on_one_thread(refused):
    stops, divides, last, total = thread_lines(refused)
    assert stops.startswith("runs on one thread under --threads N: a break at 12:31 leaves the span loop")
    assert divides.startswith("runs on one thread under --threads N: idiv.i32 at 21:20 can raise") and "can raise" in divides
    assert last.startswith("runs on one thread under --threads N: %seen, declared outside the span loop at "
                           "29:5, is assigned in it and is not an exact reduction (each thread runs a chunk")
    assert total == "runs on one thread under --threads N: it stays scalar"


def test_the_report_says_a_qualifying_loop_runs_on_threads(reductions):
    assert set(thread_lines(KERNELS["mandelbrot"].path) + thread_lines(reductions)) == {
        "runs on threads under --threads N"}


@pytest.mark.parametrize("name", sorted(REFUSED_KERNELS))
def test_a_loop_that_does_not_qualify_runs_as_on_one_thread(name, refused, every_loop_on_threads):
    scalars = ((3,), (-1,)) if name == "last" else ((),)
    assert_threads_agree_with_scalar(Kernel(refused, name, REFUSED_KERNELS[name], scalars), (0, 7, 33, 10_000))


# ---- the options -----------------------------------------------------------------------------------

@pytest.mark.parametrize("threads, error", [(0, ValueError), (-1, ValueError), (1025, ValueError),
                                            (2.5, TypeError), ("2", TypeError), (True, TypeError)])
def test_load_refuses_a_bad_thread_count(threads, error, reductions):
    with pytest.raises(error, match="nupp.load: threads must be"):
        load(reductions, threads=threads)


@pytest.mark.parametrize("variable, value", [("NUPP_THREADS", "abc"), ("NUPP_THREADS", "0"),
                                             ("NUPP_THREADS_MIN", "-1"), ("NUPP_THREADS_MIN", "many")])
def test_load_refuses_a_bad_variable(variable, value, reductions, monkeypatch):
    monkeypatch.setenv(variable, value)
    with pytest.raises(NuppEnvironmentError, match=f"the environment variable {variable} must be a whole number"):
        load(reductions)


SCRIPT = """local m = require("reductions")
local span = nupp.mem.span
local rows = span.new(m.In, 50001)
for i = 1, #rows do rows[i].i = i * 7919 end
print(m.r_add_i32(rows, 0))
"""


def nupp_run(folder: Path, *args, env_extra=None) -> subprocess.CompletedProcess:
    env = environment({"NUPP_CACHE_DIR": str(folder / "cache"), "NUPP_THREADS_MIN": "0", **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", "nupp", "run", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def script(reductions) -> Path:
    path = reductions.parent / "main.nupp"
    path.write_text(SCRIPT)
    return path


def test_nupp_run_takes_threads_before_and_after_the_script(script):
    total = sum(i * 7919 for i in range(1, 50002)) % 2**32
    expected = str(total - 2**32 if total >= 2**31 else total)  # int32 addition wraps
    # --threads wins over NUPP_THREADS, even one that is not a count
    for args, env in [(("--threads", "3", script), None), ((script, "--threads=2"), None),
                      ((script,), {"NUPP_THREADS": "3"}), ((script, "--threads", "1"), {"NUPP_THREADS": "abc"})]:
        done = nupp_run(script.parent, *args, env_extra=env)
        assert (done.returncode, done.stdout.strip()) == (0, expected), (args, env, done.stderr)


@pytest.mark.parametrize("args, env, message", [
    (("--threads", "0"), None, "argument --threads: a thread count must be a whole number from 1 to 1024, not '0'"),
    (("--threads", "many"), None, "a thread count must be a whole number from 1 to 1024, not 'many'"),
    (("AFTER", "--threads", "-2"), None, "--threads: a thread count must be a whole number from 1 to 1024, not '-2'"),
    (("AFTER", "--threads"), None, "--threads needs a value"),
    ((), {"NUPP_THREADS": "abc"}, "the environment variable NUPP_THREADS must be a whole number from 1 to 1024, "
                                  "not 'abc'"),
])
def test_nupp_run_refuses_a_bad_thread_count_with_exit_status_2(script, args, env, message):
    if args and args[0] == "AFTER":
        args = (script, *args[1:])
    else:
        args = (*args, script)
    done = nupp_run(script.parent, *args, env_extra=env)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_nupp_dask_loads_with_threads_and_gives_one_calls_bits(reductions, every_loop_on_threads):
    """threads= is one of nupp.load's options, which nupp.dask.map hands every worker's load."""
    dask = require_module("dask")
    import dask.array as da
    import nupp.dask
    one = load(reductions)
    rows = inputs(one, reduction_kernels(reductions)["min.f64"], 100_003)[0]
    expected = one.r_min_f64(rows, 2.5)  # min takes any start value chunk by chunk (runtime/chunking.py)
    call = nupp.dask.map(reductions, "r_min_f64", da.from_array(rows, chunks=30_011), 2.5, threads=3)
    (result,) = dask.compute(call.result, scheduler="threads")
    assert np.float64(result).tobytes() == np.float64(expected).tobytes()
