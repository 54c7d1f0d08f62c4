"""Benchmark (not a test): lane C at every tier and gang against scalar C and hand-written C.

    .venv/bin/nupp bench [--size N] [--repeats N] [--kernels K,...] [--cc gcc|clang]
    .venv/bin/python -m bench.lane_speed [same options]   (from the repository root)

For each BENCH kernel, side by side in one run on the same NumPy arrays:
nupp's scalar C, its lane C at each feature tier this CPU runs x each gang
(4, 8, 16, 32: a library pinned with tier= and gang=), the SPIR-V kernel on the
Vulkan device through each runner that opens one (mode="spirv": lavapipe
runs it on these same CPU cores), and the kernel written by
hand in C (bench/handwritten/kernels.c) at -O3 -march=native (the issue's
peer: GCC auto-vectorizes it) and at -O2.  Rounds are interleaved (every
execution once per round) and the median round counts, so a drift of the
clock touches every column alike.  Millions of elements per second, and the
ratios that are the claims: lane / scalar C and lane / hand C -O3 -march=native.
Each kernel's goals from the lane issue are printed beside the numbers.
Then the cold compile-and-load time of a tiered module (every tier and the
dispatcher, an empty cache) against a cache hit.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

import nupp
from nupp.scalar_ir.lanes import GANG_SIZES
from nupp.targets.tiers import TIER_NAMES, TIERS

from bench.native_speed import KERNELS, handwritten_library, load_times, workloads  # bench/ is not installed

BENCH_KERNELS = ("mandelbrot", "corrected", "tecsbits", "mixedwidth", "simd")
GANGS = GANG_SIZES
HAND_PEER = "hand C -O3 native"
HAND_FLAGS = {HAND_PEER: ("-O3", "-march=native"), "hand C -O2": ("-O2",)}
DEFAULT = "default"  # the execution `--aot on` picks: the best tier at its own gang


@dataclass(frozen=True)
class Goal:
    """The issue's claim: `execution` runs at least `factor` times as fast as `peer`."""

    execution: str
    peer: str
    factor: float


GOALS = {
    "mandelbrot": (Goal("lane8-v3", "scalar C", 6.0), Goal("lane16-v4", "scalar C", 10.0)),
    "corrected": (Goal(DEFAULT, "scalar C", 3.0),),
    "tecsbits": (Goal(DEFAULT, HAND_PEER, 0.9),),
    "mixedwidth": (Goal(DEFAULT, HAND_PEER, 0.9),),
    "simd": (Goal(DEFAULT, HAND_PEER, 0.9),),
}


def run_benchmark(size: int = 1_000_000, repeats: int = 5, kernels=BENCH_KERNELS, cc: str = "gcc") -> None:
    hands = {name: handwritten_library(flags) for name, flags in HAND_FLAGS.items()}
    best_tier = nupp.load(KERNELS / "mixedwidth.nupp", mode="lane", cc=cc).execution.split("-", 1)[1]
    best = TIER_NAMES.index(best_tier)
    print(f"lane C against scalar C and hand-written C: {size} elements, median of {repeats} interleaved rounds")
    print(f"CPU: {_cpu_model()}; it runs tiers {', '.join(TIER_NAMES[:best + 1])}; "
          f"nupp's C by {cc}, the hand-written C by gcc")
    workload = workloads(size, np.random.default_rng(7))
    for name in kernels:
        module, build, call, hand = workload[name]
        path = KERNELS / f"{module}.nupp"
        default = nupp.load(path, mode="lane", cc=cc).execution  # what --aot on runs for this kernel
        runs = {"scalar C": nupp.load(path, mode="scalar", cc=cc)}
        for tier in TIERS[:best + 1]:
            for gang in GANGS:
                runs[f"lane{gang}-{tier.name}"] = nupp.load(path, mode="lane", cc=cc, gang=gang, tier=tier.name)
        for kind, device_runner in _device_runners().items():
            device = nupp.load(path, mode="spirv", cc=cc, spirv_runner=kind)
            runs[f"spirv-{device_runner.device_name} ({kind})"] = device
        args = build(runs["scalar C"])
        calls = {label: partial(call, m, args) for label, m in runs.items()}
        calls.update({label: partial(hand, ffi, lib, args) for label, (ffi, lib) in hands.items()})
        rates = {label: len(args[0]) / seconds / 1e6 for label, seconds in _median_rounds(calls, repeats).items()}
        _print_kernel(name, rates, default)
    _print_load_times()


def _device_runners() -> dict:
    """The runners that open a device here, by kind; a line for each that does not."""
    from nupp.targets.device import Runner, open_runners
    opened = {}
    for kind, device_runner in open_runners().items():
        if isinstance(device_runner, Runner):
            opened[kind] = device_runner
        else:
            print(f"(no spirv through {kind}: {device_runner})")
    return opened


def _median_rounds(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Seconds per call of each execution: a warm-up call each, then `repeats` rounds of one call each."""
    for run in calls.values():
        run()
    times: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(repeats):
        for label, run in calls.items():
            t0 = time.perf_counter()
            run()
            times[label].append(time.perf_counter() - t0)
    return {label: statistics.median(ts) for label, ts in times.items()}


def _print_kernel(name: str, rates: dict[str, float], default: str) -> None:
    scalar, peer = rates["scalar C"], rates[HAND_PEER]
    print(f"\n{name} (million elements / s)")
    print(f"  {'execution':<24} {'Melem/s':>9} {'/scalar C':>10} {'/' + HAND_PEER:>19}")
    for label, rate in rates.items():
        mark = "  <- default" if label == default else ""
        print(f"  {label:<24} {rate:>9.1f} {rate / scalar:>9.2f}x {rate / peer:>18.2f}x{mark}")
    for goal in GOALS[name]:
        print("  goal: " + _judge(goal, rates, default))


def _judge(goal: Goal, rates: dict[str, float], default: str) -> str:
    execution = default if goal.execution == DEFAULT else goal.execution
    claim = f"{execution} >= {goal.factor:g}x {goal.peer}"
    if execution not in rates:
        return f"{claim}: not measured (this CPU does not run {execution.split('-', 1)[1]})"
    ratio = rates[execution] / rates[goal.peer]
    return f"{claim}: {ratio:.2f}x, {'met' if ratio >= goal.factor else 'MISSED'}"


def _print_load_times() -> None:
    lines = {"scalar": load_times("scalar"), "lane, every tier": load_times("lane")}
    print("\ncompile and load of mandelbrot.nupp (ms)")
    print(f"  {'library':<18} {'cold':>8} {'hit, new process':>17} {'hit, same process':>18}")
    for label, (_, cold, warm, hit_same) in lines.items():
        print(f"  {label:<18} {cold:>8.1f} {warm:>17.1f} {hit_same:>18.1f}")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.lane_speed ...` is `nupp bench ...`: one parser, in runtime/cli.py."""
    from nupp.runtime.cli import main as nupp_main
    return nupp_main(["bench", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
