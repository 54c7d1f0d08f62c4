"""Benchmark (not a test): the cost of a call from Python and of a start, side by side in one run.

    .venv/bin/python bench/call_cost.py [--calls N] [--repeats N] [--runs N] [--modes lane,scalar,interp]

1. Calls through `nupp.load(...)`, in each mode: `axpy`, a kernel over three
   spans of 16 elements (the Python API's per-call cost, not the loop's), and
   `inc`, a scalar int32 function; the median over `--repeats` timeit runs of
   `--calls` calls each, in ns per call (min and max beside it: the machine
   may be shared).  A plain Python function of three arguments is the floor.
2. Starts, each the median of `--runs` (min and max beside it):
   - nupp.load of a module whose library is cached, again in the same process;
   - `nupp run` of a script printing "hi", and of a script calling both
     kernels of a cached module, end to end in a fresh process (wall clock,
     and the CPU time of the process: less sensitive to a loaded machine);
   - a cold compile: nupp.load of a module no cache has seen (a fresh
     constant in its source), in the same process, with the cache folder warm
     otherwise and with it empty; the same of bench's mandelbrot.nupp (a
     fresh comment at its end); and `nupp run` of the two-kernel script, cold.

The goals (issue 15) are printed beside the numbers.  Everything runs in
temporary folders with their own NUPP_CACHE_DIR; the user's cache is not touched.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from pathlib import Path

MODULE = """local span = nupp.mem.span

local struct V
    x: float
    y: number
end

@aot
local function axpy(exclusive out: span.WriteSpan<V>, borrows a: span.Span<V>, borrows b: span.Span<V>): nil
    assert(#a == #out, "length mismatch")
    assert(#b == #out, "length mismatch")
    for i = 1, #out do
        out[i].x = a[i].x + b[i].x
        out[i].y = a[i].y * b[i].y
    end
end

@aot
local function inc(x: int32): int32
    return x + CONSTANT
end

return {axpy = axpy, inc = inc, V = V}
"""

SCRIPT = """local k = require("kernels")
local span = nupp.mem.span
local a, b, out = span.new(k.V, 16), span.new(k.V, 16), span.new(k.V, 16)
k.axpy(out, a, b)
print(k.inc(41), out[1].x)
"""

HELLO = 'print("hi")\n'
MANDELBROT = Path(__file__).resolve().parent / "kernel-subset-spike" / "mandelbrot.nupp"

SPAN_LENGTH = 16
GOALS = {"call": 1_000, "hit": 10, "run": 150, "cold": 500}  # ns per call; ms


def module_text(constant: int = 1) -> str:
    return MODULE.replace("CONSTANT", str(constant))


def spread(values: list[float], scale: float, unit: str) -> str:
    """median (min-max) of `values` times `scale`, in `unit`."""
    return (f"{statistics.median(values) * scale:8.1f} {unit} "
            f"({min(values) * scale:.1f}-{max(values) * scale:.1f})")


def goal_line(label: str, values: list[float], scale: float, unit: str, goal: float) -> str:
    met = "met" if statistics.median(values) * scale <= goal else "MISSED"
    return f"  {label:44s} {spread(values, scale, unit):36s} goal <= {goal:g} {unit}: {met}"


# ---- 1. calls -------------------------------------------------------------------------------

def call_costs(folder: Path, modes: list[str], calls: int, repeats: int) -> None:
    import numpy as np

    import nupp

    print(f"calls from Python ({calls} calls per run, median of {repeats} runs; ns per call, min-max)")
    floor = (lambda a, b, c: None)
    print("  " + f"{'a Python function of three arguments':44s} "
          + spread(_per_call(lambda: floor(1, 2, 3), calls, repeats), 1e9, "ns"))
    path = folder / "kernels.nupp"
    for mode in modes:
        module = nupp.load(path, mode=mode)
        dtype = module.dtype("V")
        a, b, out = (np.zeros(SPAN_LENGTH, dtype) for _ in range(3))
        axpy, inc = module.axpy, module.inc
        axpy(out, a, b)
        label = f"{mode} ({module.execution})"
        times = _per_call(lambda: axpy(out, a, b), calls, repeats)
        goal = GOALS["call"] if mode != "interp" else float("inf")
        print(goal_line(f"{label}: axpy, three spans of {SPAN_LENGTH}", times, 1e9, "ns", goal))
        times = _per_call(lambda: inc(5), calls, repeats)
        print("  " + f"{label + ': inc(5), int32':44s} " + spread(times, 1e9, "ns"))


def _per_call(fn, calls: int, repeats: int) -> list[float]:
    return [t / calls for t in timeit.repeat(fn, number=calls, repeat=repeats)]


# ---- 2. starts ------------------------------------------------------------------------------

def in_process_hit(folder: Path, runs: int) -> list[float]:
    import nupp

    path = folder / "kernels.nupp"
    nupp.load(path)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        nupp.load(path)
        times.append(time.perf_counter() - t0)
    return times


def cold_in_process(folder: Path, runs: int, empty_cache: bool, text=None) -> list[float]:
    """nupp.load of a module no cache holds (`text()` makes a fresh one; default: the two kernels')."""
    import nupp

    times = []
    saved = os.environ.get("NUPP_CACHE_DIR")
    try:
        for k in range(runs):
            if empty_cache:
                os.environ["NUPP_CACHE_DIR"] = str(folder / f"empty-cache-{k}")
            path = folder / f"cold_{k}.nupp"
            path.write_text(text() if text else module_text(fresh_constant()))
            t0 = time.perf_counter()
            nupp.load(path)
            times.append(time.perf_counter() - t0)
    finally:
        if saved is not None:
            os.environ["NUPP_CACHE_DIR"] = saved
    return times


def fresh_constant() -> int:
    return uuid.uuid4().int % 1_000_000 + 2


def fresh_mandelbrot() -> str:
    """bench's mandelbrot.nupp with a comment no other copy has (a new module to every cache)."""
    return MANDELBROT.read_text() + f"-- {uuid.uuid4().hex}\n"


def nupp_run(script: Path, runs: int, env: dict, fresh=None) -> tuple[list[float], list[float]]:
    """Wall clock and CPU time (user + system) of `nupp run script` in a fresh process, `runs` times;
    `fresh(k)` prepares run k (a cold run's new module)."""
    walls, cpus = [], []
    for k in range(runs):
        if fresh is not None:
            fresh(k)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "nupp", "run", str(script)], env=env,
                              capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"nupp run {script} failed:\n{proc.stderr}")
    return walls, cpus


def users_environment() -> dict[str, str]:
    """This process's environment as a user's Python has it for timing a start:
    with its bytecode cache (PYTHONDONTWRITEBYTECODE, set on some CI machines,
    recompiles nupp's modules in every new process: ~0.2 s of each start)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def starts(folder: Path, runs: int) -> None:
    print(f"\nstarts (median of {runs} runs, min-max)")
    print(goal_line("nupp.load, cached, again in the same process", in_process_hit(folder, runs), 1e3, "ms",
                    GOALS["hit"]))
    env = users_environment()
    for label, script in (("hello: prints 'hi'", folder / "hello.nupp"),
                          ("two kernels of a cached module", folder / "main.nupp")):
        walls, cpus = nupp_run(script, runs, env)
        goal = GOALS["run"] if script.name == "main.nupp" else float("inf")
        print(goal_line(f"nupp run, {label}: wall", walls, 1e3, "ms", goal))
        print("  " + f"{'    CPU time':44s} " + spread(cpus, 1e3, "ms"))
    print(goal_line("cold nupp.load (the cache holds others)", cold_in_process(folder, runs, False), 1e3, "ms",
                    GOALS["cold"]))
    print(goal_line("cold nupp.load (an empty cache folder)", cold_in_process(folder, runs, True), 1e3, "ms",
                    GOALS["cold"]))
    print(goal_line("cold nupp.load of mandelbrot.nupp", cold_in_process(folder, runs, False, fresh_mandelbrot),
                    1e3, "ms", GOALS["cold"]))
    cold_folder = folder / "cold-run"
    cold_folder.mkdir()
    (cold_folder / "main.nupp").write_text(SCRIPT)

    def fresh_module(k: int) -> None:
        (cold_folder / "kernels.nupp").write_text(module_text(fresh_constant()))

    walls, cpus = nupp_run(cold_folder / "main.nupp", runs, env, fresh_module)
    print("  " + f"{'cold nupp run, two kernels: wall':44s} " + spread(walls, 1e3, "ms"))
    print("  " + f"{'    CPU time':44s} " + spread(cpus, 1e3, "ms"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--modes", default="lane,scalar,interp")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nupp-call-cost-") as tmp:
        folder = Path(tmp)
        os.environ["NUPP_CACHE_DIR"] = str(folder / "cache")
        (folder / "kernels.nupp").write_text(module_text())
        (folder / "main.nupp").write_text(SCRIPT)
        (folder / "hello.nupp").write_text(HELLO)
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
        call_costs(folder, args.modes.split(","), args.calls, args.repeats)
        starts(folder, args.runs)


if __name__ == "__main__":
    main()
