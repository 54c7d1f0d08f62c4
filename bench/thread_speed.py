"""Benchmark (not a test): lane C's span loops on threads against one thread.

    .venv/bin/nupp bench --threads 2 [--size N,...] [--repeats N] [--kernels K,...] [--cc gcc|clang]
    .venv/bin/python -m bench.thread_speed [--threads N] [--crossover] [same options]   (from the root)

For each BENCH kernel (bench/native_speed.py's workloads, on the same arrays)
and size: the default execution (`nupp.load`, the best tier at its own gang)
with one thread and with N, in interleaved rounds (each once per round, in
an order shuffled per round), the median round counting.  Millions of
elements per second, the speed-up, and for the streaming kernels the bytes
their spans move per second: what bounds them once the arrays are beyond the
caches is memory bandwidth, which two cores share, so they gain little.
Mandelbrot computes for hundreds of cycles per byte: its goal (issue 16) is
at least 1.8 times one thread on 2 threads of a 2-core machine.

`--crossover`: where a loop starts to gain on threads.  The cheapest kernel
per element (simd) and mandelbrot at span lengths 2^10 .. 2^20 with every
loop on threads (NUPP_THREADS_MIN=0) against one thread: what
runtime/threads.py's MIN_ITERATIONS is set from.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

import numpy as np

import nupp
from nupp.runtime.threads import MIN_VARIABLE

# bench/ is not installed: these run from the checkout's root
from bench.native_speed import WORKLOADS, Workload, interleaved_medians

BENCH_KERNELS = tuple(WORKLOADS)
DEFAULT_SIZES = (1_000_000, 10_000_000)
MANDELBROT_GOAL = 1.8  # issue 16: mandelbrot on 2 threads against 1, on a 2-core machine
CROSSOVER_KERNELS = ("simd", "mandelbrot")
CROSSOVER_SIZES = tuple(1 << k for k in range(10, 21))


def run_benchmark(threads: int = 2, sizes=DEFAULT_SIZES, repeats: int = 7, kernels=BENCH_KERNELS,
                  cc: str = "gcc") -> None:
    print(f"lane C on {threads} threads against 1 ({os.cpu_count()} cores here), {cc}, median of {repeats} "
          "interleaved rounds; M/s: million elements per second")
    print(f"{'kernel':<11} {'elements':>10} {'1 thread':>10} {f'{threads} threads':>10} {'speed-up':>9} "
          f"{'GB/s 1':>7} {f'GB/s {threads}':>7}  ")
    for name in kernels:
        workload = WORKLOADS[name]
        one, many = (nupp.load(workload.path, cc=cc, threads=count) for count in (1, threads))
        for size in sizes:
            arrays = workload.build(one, size, np.random.default_rng(7))
            rates = _rates({1: workload.nupp_call(one, arrays), threads: workload.nupp_call(many, arrays)},
                           len(arrays[0]), repeats)
            gain = rates[threads] / rates[1]
            moved = workload.bytes_moved(arrays) / 1e3  # GB/s per million elements/s
            verdict = ""
            if name == "mandelbrot" and threads == 2:
                verdict = f"goal >= {MANDELBROT_GOAL}x: {'met' if gain >= MANDELBROT_GOAL else 'MISSED'}"
            elif workload.streaming:
                verdict = "memory-bound: both cores share the bandwidth"
            print(f"{name:<11} {len(arrays[0]):>10} {rates[1]:>8.0f} M/s {rates[threads]:>6.0f} M/s "
                  f"{gain:>8.2f}x {rates[1] * moved:>7.1f} {rates[threads] * moved:>7.1f}  {verdict}")


def crossover(threads: int = 2, repeats: int = 9, cc: str = "gcc") -> None:
    """One thread against `threads` with every loop on them, per span length."""
    print(f"every loop on {threads} threads ({MIN_VARIABLE}=0) against 1, by span length, {cc}")
    print(f"{'kernel':<11} " + " ".join(f"{'2^' + str(n.bit_length() - 1):>6}" for n in CROSSOVER_SIZES))
    before = os.environ.get(MIN_VARIABLE)
    os.environ[MIN_VARIABLE] = "0"  # read when a module loads
    try:
        for name in CROSSOVER_KERNELS:
            workload = WORKLOADS[name]
            one, many = (nupp.load(workload.path, cc=cc, threads=count) for count in (1, threads))
            gains = []
            for size in CROSSOVER_SIZES:
                arrays = _exactly(workload, one, size)
                rates = _rates({1: workload.nupp_call(one, arrays), threads: workload.nupp_call(many, arrays)},
                               size, repeats)
                gains.append(rates[threads] / rates[1])
            print(f"{name:<11} " + " ".join(f"{g:>5.2f}x" for g in gains))
    finally:
        if before is None:
            del os.environ[MIN_VARIABLE]
        else:
            os.environ[MIN_VARIABLE] = before


def _exactly(workload: Workload, module, size: int):
    """The workload's arrays cut to `size` elements (built at twice it: mandelbrot's grid is a square)."""
    return tuple(np.ascontiguousarray(a[:size]) for a in workload.build(module, 2 * size, np.random.default_rng(7)))


def _rates(calls: dict[int, Callable[[], object]], elements: int, repeats: int) -> dict[int, float]:
    """Million elements per second of each call (by thread count), timed side by side."""
    seconds = interleaved_medians(calls, repeats)
    return {count: elements / s / 1e6 for count, s in seconds.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.thread_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=lambda t: tuple(int(s) for s in t.split(",")), default=DEFAULT_SIZES)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--kernels", type=lambda t: tuple(t.split(",")), default=BENCH_KERNELS)
    parser.add_argument("--cc", default="gcc")
    parser.add_argument("--crossover", action="store_true", help="where loops start to gain on threads")
    args = parser.parse_args(argv)
    if args.crossover:
        crossover(args.threads, args.repeats, args.cc)
    else:
        run_benchmark(args.threads, args.size, args.repeats, args.kernels, args.cc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
