"""Benchmark (not a test): nupp's lane C at every tier and gang against its peers.

    .venv/bin/nupp bench [--size N,...] [--repeats N] [--kernels K,...] [--cc gcc|clang] [--plot FILE.png]
    .venv/bin/python -m bench.lane_speed [same options]   (from the repository root)

For each BENCH kernel and each size (default 10^5 and 10^7 elements), side by
side in one run on the same NumPy arrays: nupp's scalar C, its lane C at each
feature tier this CPU runs x each gang (a library pinned with tier= and gang=,
in full registers; a gang wider than one register also in each narrower
vector width, e.g. lane32(4x256)-v4 beside lane32-v4's 2 x 512 bits: the
pipeline Request's vector_bits, which nupp.load does not offer), the default execution (what `--aot on` loads), the SPIR-V kernel through each
runner that opens a device (lavapipe runs it on these same CPU cores), and the
peers a user would pick instead: Numba `@njit` (bench/peers/numba_kernels.py),
explicit-SIMD C with vector extensions at gangs 8, 16 and 32 under GCC and
Clang (bench/handwritten/simd_kernels.c, -O3 -march=native), and the old
scalar C (kernels.c, -O3 -march=native and -O2).  Every peer computes nupp's
bits (tests/test_bench_peers.py).  Rounds are interleaved (every execution once
per round), so a drift of the clock touches every column alike, and each
execution's fastest round counts: load from elsewhere only adds time, and on a
shared host it comes in phases of seconds (mandelbrot's default at 10^5, one
process, rounds of 25 ms: 70 M elem/s for seconds, then 110-115) that moved
medians of 5-7 rounds by up to 35%.  Millions of elements per second and the ratios that are the
claims, with every goal of the lane and performance issues judged beside them.

At sizes of 10^7 and more, each streaming kernel's memory roof: the bytes its
spans move per element times the copy bandwidth of a C stream copy measured in
the same rounds.  Then the short spans (lengths 1..3G: the default against
scalar C), the compile-and-load times of a module (first use, cold, cache hits), and with --plot a
chart of throughput against span size from 10^2 to 10^7.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import nupp
from nupp.errors import Source
from nupp.paths import NuppEnvironmentError
from nupp.pipeline import compile_module, lane_ir
from nupp.runtime.api import NuppModule
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.lanes import GANG_SIZES, VECTOR_BITS
from nupp.scalar_ir.walk import statements
from nupp.targets.gang_choice import loop_features
from nupp.targets.tiers import TIER_NAMES, TIERS, Tier

# bench/ is not installed: these run from the checkout's root
from bench.native_speed import KERNELS, WORKLOADS, Workload, interleaved_fastest, load_times
from bench.peers.hand_c import NATIVE, Library, compile_library, hand_scalar, hand_simd_libraries

BENCH_KERNELS = tuple(WORKLOADS)
DEFAULT_SIZES = (100_000, 10_000_000)
LANE_GANGS = GANG_SIZES  # the lane C pinned at each of them, at each tier
ROOF_SIZE = 10_000_000  # from here on the arrays are far beyond the caches: the memory roof is printed
PLOT_SIZES = tuple(10 ** k for k in range(2, 8))
DEFAULT = "default"  # the execution `--aot on` picks: the best tier at its own gang
SCALAR = "scalar C"
NUMBA = "Numba"
HAND_PEER = "hand C -O3 native"
HAND_SCALAR = {HAND_PEER: NATIVE, "hand C -O2": ("-O2",)}
COPY = "stream copy"
COPY_MOVES = 3  # bytes per byte copied: read, the target's line read before the store fills it, written back


@dataclass(frozen=True)
class Goal:
    """A claim: `execution` runs at least `factor` times as fast as `peer`.  Each names
    an execution, DEFAULT, or a group of executions (GROUPS): its best or its slowest."""

    execution: str
    peer: str
    factor: float
    source: str  # the issue and item that set it


def _is_lane(label: str) -> bool:
    return label.startswith("lane")


GROUPS: dict[str, tuple[Callable[[str], bool], Callable]] = {
    "the best hand SIMD C": (lambda label: label.startswith("hand SIMD"), max),
    "the best lane C": (_is_lane, max),
    "the slowest lane C": (_is_lane, min),
    "the best lane C at v4": (lambda label: _is_lane(label) and label.endswith("-v4"), max),
    "the best lane C at v3": (lambda label: _is_lane(label) and label.endswith("-v3"), max),
}
SAME_GANG_SIMD = "the best hand SIMD C at the default's gang"

EVERY_KERNEL = (
    Goal(DEFAULT, NUMBA, 1.0, "issue 15 item 0"),
    Goal(DEFAULT, "the best hand SIMD C", 0.9, "issue 15 item 0"),
    Goal("the slowest lane C", SCALAR, 0.9, "issue 15 item 2"),
    Goal(DEFAULT, "the best lane C", 0.9, "issue 15 item 3"),
)
GOALS = {
    "mandelbrot": (Goal("lane8-v3", SCALAR, 6.0, "lane issue"), Goal("lane16-v4", SCALAR, 10.0, "lane issue"),
                   Goal("the best lane C at v4", SCALAR, 15.0, "issue 15 item 1"),
                   Goal("the best lane C at v3", SCALAR, 9.0, "issue 15 item 1"),
                   Goal(DEFAULT, SAME_GANG_SIMD, 1.0, "issue 15 item 1")),
    "corrected": (Goal(DEFAULT, SCALAR, 3.0, "lane issue"),),
    "tecsbits": (Goal(DEFAULT, HAND_PEER, 0.9, "lane issue"),),
    "mixedwidth": (Goal(DEFAULT, HAND_PEER, 0.9, "lane issue"),),
    "simd": (Goal(DEFAULT, HAND_PEER, 0.9, "lane issue"),),
}
ROOF_FRACTION = 0.8  # issue 15 item 7: the lane C reaches at least 80% of the memory roof


@dataclass
class Contenders:
    """Everything `nupp bench` runs, loaded and compiled once; the arrays come per size."""

    hands: dict[str, Library]  # the C peers by label
    copy: Library | None  # the stream copy of the memory roof
    numba: bool

    def executions(self, workload: Workload, modules: dict, arrays) -> dict[str, Callable[[], object]]:
        """label -> a call on `arrays`: nupp's modules, Numba, the C peers."""
        calls = {label: workload.nupp_call(module, arrays) for label, module in modules.items()}
        if self.numba:
            calls[NUMBA] = workload.numba_call(arrays)
        calls.update({label: workload.c_call(library, arrays) for label, library in self.hands.items()})
        return calls


def run_benchmark(sizes=DEFAULT_SIZES, repeats: int = 5, kernels=BENCH_KERNELS, cc: str = "gcc",
                  plot: str | None = None) -> None:
    if plot:
        _require_matplotlib()
    contenders = _contenders()
    best = _best_tier(cc)
    print(f"nupp against its peers: the fastest of {repeats} interleaved rounds, million elements / s")
    print(f"CPU: {_cpu_model()}; it runs tiers {', '.join(TIER_NAMES[:best + 1])}; nupp's C by {cc}; "
          f"hand SIMD C by {', '.join(sorted({label.split()[-1] for label in contenders.hands if 'SIMD' in label}))}")
    loaded = {name: _nupp_modules(WORKLOADS[name], cc, best) for name in kernels}
    for size in sizes:
        print(f"\n=== {size} elements ===")
        for name in kernels:
            _bench_kernel(name, size, repeats, contenders, *loaded[name])
    _print_short_spans(kernels, loaded, repeats)
    _print_load_times()
    if plot:
        _plot(plot, kernels, loaded, contenders, repeats)


def _contenders() -> Contenders:
    hands = hand_simd_libraries()
    hands.update({label: hand_scalar(flags) for label, flags in HAND_SCALAR.items()})
    numba = importlib.util.find_spec("numba") is not None
    if not numba:
        print("(no Numba here: install nupp's bench extra, pip install -e '.[bench]')")
    copy = Library(*compile_library("stream_copy.c", "gcc", (*NATIVE, "-fno-tree-loop-distribute-patterns"),
                                    "void stream_copy(void *dst, const void *src, int64_t n);"), "")
    return Contenders(hands, copy, numba)


def _best_tier(cc: str) -> int:
    tier = nupp.load(KERNELS / "mixedwidth.nupp", mode="lane", cc=cc).execution.split("-", 1)[1]
    return TIER_NAMES.index(tier)


def _nupp_modules(workload: Workload, cc: str, best: int) -> tuple[dict, str]:
    """nupp's executions of a kernel by label (scalar C, the default, lane C per tier and pinned gang,
    SPIR-V), and the default's label.  The default is a row of its own: its gangs are nupp's choice
    and need not be any one pinned gang's."""
    default = nupp.load(workload.path, mode="lane", cc=cc)
    label = f"{DEFAULT} {default.execution}"
    modules = {SCALAR: nupp.load(workload.path, mode="scalar", cc=cc), label: default}
    lane_bits = 8 * _widest_lane_bytes(workload)
    for tier in TIERS[:best + 1]:
        for gang in LANE_GANGS:
            modules[f"lane{gang}-{tier.name}"] = nupp.load(workload.path, mode="lane", cc=cc, gang=gang,
                                                           tier=tier.name)
        for gang, bits in narrower_vectors(tier, lane_bits):
            modules[f"lane{gang}({gang * lane_bits // bits}x{bits})-{tier.name}"] = NuppModule(
                workload.path, mode="lane", cc=cc, gang=gang, tier=tier.name, vector_bits=bits)
    for kind, device_runner in _device_runners().items():
        modules[f"spirv-{device_runner.device_name} ({kind})"] = nupp.load(workload.path, mode="spirv", cc=cc,
                                                                          spirv_runner=kind)
    return modules, label


def narrower_vectors(tier: Tier, lane_bits: int) -> list[tuple[int, int]]:
    """The (gang, vector bits) pairs besides full registers: each gang wider than one of the
    tier's registers (of lanes of `lane_bits`), in each narrower vector width."""
    register_bits = 8 * tier.vector_bytes
    return [(gang, bits) for gang in LANE_GANGS if gang * lane_bits > register_bits
            for bits in VECTOR_BITS if bits < register_bits]


def _widest_lane_bytes(workload: Workload) -> int:
    """The widest lane of the kernel's loops' vectors (4 or 8 bytes), as the cost model reads it."""
    lanes = lane_ir(compile_module(Source.from_file(str(workload.path))))
    return max((loop_features(lanes, fn, g).element_bytes for fn in lanes.functions
                for g in statements(fn.body) if isinstance(g, ir.Gang)), default=4)


def _gangs(label: str) -> list[int]:
    """The gangs an execution's label names: "lane16-v4" 16, "default lane8+32-v4" 8 and 32, "scalar C" none."""
    return [int(g) for g in re.findall(r"(?:lane|\+)(\d+)", label.split("-")[0])]


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


def _bench_kernel(name: str, size: int, repeats: int, contenders: Contenders, modules: dict, default: str) -> None:
    workload = WORKLOADS[name]
    arrays = workload.build(modules[SCALAR], size, np.random.default_rng(7))
    n = len(arrays[0])
    calls = contenders.executions(workload, modules, arrays)
    roof = n >= ROOF_SIZE and workload.streaming
    if roof:  # the copy's two buffers hold as many bytes as the kernel's arrays: the same level of memory
        source = np.ones(sum(array.nbytes for array in arrays) // 16)
        calls[COPY] = contenders.copy.call("stream_copy", (np.empty_like(source), source))
    seconds = interleaved_fastest(calls, repeats)
    copy_seconds = seconds.pop(COPY, 0)  # the roof: the fastest copy, as every rate
    rates = {label: n / s / 1e6 for label, s in seconds.items()}
    _print_kernel(name, n, rates, default)
    if roof:
        _print_roof(arrays, rates[default], default, COPY_MOVES * source.nbytes / copy_seconds)


def _print_kernel(name: str, n: int, rates: dict[str, float], default: str) -> None:
    best_simd = _resolve("the best hand SIMD C", rates, default)
    peers = [(SCALAR, SCALAR), (NUMBA, NUMBA), (best_simd, "best SIMD")]
    peers = [(label, heading) for label, heading in peers if label in rates]
    print(f"\n{name}, {n} elements (million elements / s)")
    print(f"  {'execution':<26} {'Melem/s':>9}" + "".join(f" {'/' + heading:>11}" for _, heading in peers))
    for label, rate in rates.items():
        print(f"  {label:<26} {rate:>9.1f}" + "".join(f" {rate / rates[peer]:>10.2f}x" for peer, _ in peers))
    for goal in EVERY_KERNEL + GOALS[name]:
        print("  goal: " + _judge(goal, rates, default))


def _resolve(name: str, rates: dict[str, float], default: str) -> str | None:
    """The execution a goal's name stands for, among those measured; None if none was."""
    if name == DEFAULT:
        return default
    if name == SAME_GANG_SIMD:
        prefix = f"hand SIMD{max(_gangs(default), default=0)} "
        member, pick = (lambda label: label.startswith(prefix)), max
    elif name in GROUPS:
        member, pick = GROUPS[name]
    else:
        return name if name in rates else None
    members = [label for label in rates if member(label)]
    return pick(members, key=rates.__getitem__) if members else None


def _judge(goal: Goal, rates: dict[str, float], default: str) -> str:
    execution, peer = (_resolve(name, rates, default) for name in (goal.execution, goal.peer))
    claim = f"{goal.execution} >= {goal.factor:g}x {goal.peer} ({goal.source})"
    if execution is None or peer is None:
        return f"{claim}: not measured here"
    ratio = rates[execution] / rates[peer]
    names = ", ".join(f"{name} = {label}" for name, label in ((goal.execution, execution), (goal.peer, peer))
                      if name != label)
    return f"{claim}: {ratio:.2f}x{f' ({names})' if names else ''}, {'met' if ratio >= goal.factor else 'MISSED'}"


def _print_roof(arrays, rate: float, default: str, bandwidth: float) -> None:
    moved = Workload.bytes_moved(arrays)
    roof = bandwidth / moved / 1e6
    fraction = rate / roof
    print(f"  memory roof: {bandwidth / 1e9:.1f} GB/s (the fastest {COPY} in these rounds of as many bytes, "
          f"{COPY_MOVES} bytes moved per byte copied) / "
          f"{moved} bytes per element = {roof:.0f} M elements/s (bytes: each span's element read, the output's "
          f"written back after its line is read)")
    print(f"  goal: {default} >= {ROOF_FRACTION:.0%} of the memory roof (issue 15 item 7): {fraction:.0%}, "
          f"{'met' if fraction >= ROOF_FRACTION else 'MISSED'}")


def _print_short_spans(kernels, loaded, repeats: int) -> None:
    """Lengths 1..3G of the default's gang G: scalar C's time per call over the default's."""
    print(f"\n=== short spans: scalar C's time per call / the default's (> 1: the default is faster), "
          f"the fastest of {repeats} interleaved samples ===")
    for name in kernels:
        modules, default = loaded[name]
        workload = WORKLOADS[name]
        gang = max(_gangs(default), default=16)  # a default that runs no gangs: the lengths of gang 16
        arrays = workload.build(modules[SCALAR], 10_000, np.random.default_rng(7))
        middle = len(arrays[0]) // 2  # mandelbrot: a row through the set, not its escaping edge
        ratios, nanoseconds = [], {}
        for length in range(1, 3 * gang + 1):
            window = tuple(array[middle:middle + length] for array in arrays)
            calls = {label: workload.nupp_call(modules[label], window) for label in (SCALAR, default)}
            seconds = interleaved_fastest(calls, repeats)
            ratios.append(seconds[SCALAR] / seconds[default])
            if length in (1, 3 * gang):
                nanoseconds[length] = {label: s * 1e9 for label, s in seconds.items()}
        print(f"{name} ({default}; ns per call at length 1: scalar C {nanoseconds[1][SCALAR]:.0f}, default "
              f"{nanoseconds[1][default]:.0f}; at {3 * gang}: {nanoseconds[3 * gang][SCALAR]:.0f}, "
              f"{nanoseconds[3 * gang][default]:.0f})")
        for first in range(0, 3 * gang, gang):
            row = " ".join(f"{r:4.2f}" for r in ratios[first:first + gang])
            print(f"  {first + 1:>3}-{first + gang:<3} {row}")


def _print_load_times() -> None:
    lines = {"scalar": load_times("scalar"), "lane, this CPU's tier": load_times("lane")}
    print("\ncompile and load of mandelbrot.nupp (ms; first use: an empty cache folder, so nupp's one-time builds "
          "too; cold: a module the cache has not seen)")
    print(f"  {'library':<22} {'first use':>9} {'cold':>8} {'hit, new process':>17} {'hit, same process':>18}")
    for label, t in lines.items():
        print(f"  {label:<22} {t.first_use:>9.1f} {t.cold:>8.1f} {t.hit_new:>17.1f} {t.hit_same:>18.1f}")


def _require_matplotlib() -> None:
    if importlib.util.find_spec("matplotlib") is None:
        raise NuppEnvironmentError("nupp bench --plot draws with matplotlib, which is not installed: "
                                   "install nupp's bench extra (pip install -e '.[bench]')")


def _plot(path: str, kernels, loaded, contenders: Contenders, repeats: int) -> None:
    """Throughput against span size, one panel per kernel: scalar C, the default, Numba, the best hand-written C."""
    import matplotlib
    matplotlib.use("Agg")  # a file, no display
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(kernels), figsize=(4.2 * len(kernels), 4), squeeze=False)
    for axis, name in zip(axes[0], kernels):
        series = _sweep(name, loaded[name], contenders, repeats)
        for label, rates in series.items():
            axis.plot(PLOT_SIZES, rates, marker="o", label=label)
        axis.set(xscale="log", yscale="log", title=name, xlabel="elements per call", ylabel="M elements / s")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize="small")
    figure.suptitle(f"nupp against its peers ({_cpu_model()})")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"\nwrote {path}: throughput against span size, {PLOT_SIZES[0]} to {PLOT_SIZES[-1]} elements")


def _sweep(name: str, nupp_modules, contenders: Contenders, repeats: int) -> dict[str, list[float]]:
    """M elements/s per size in PLOT_SIZES of scalar C, the default, Numba and the best hand-written C there."""
    modules, default = nupp_modules
    workload = WORKLOADS[name]
    hand_c = "best hand-written C"
    series: dict[str, list[float]] = {SCALAR: [], f"default ({default})": [], hand_c: []}
    if contenders.numba:
        series[NUMBA] = []
    for size in PLOT_SIZES:
        arrays = workload.build(modules[SCALAR], size, np.random.default_rng(7))
        n = len(arrays[0])
        calls = contenders.executions(workload, {SCALAR: modules[SCALAR], default: modules[default]}, arrays)
        seconds = interleaved_fastest(calls, repeats)
        rates = {label: n / s / 1e6 for label, s in seconds.items()}
        series[SCALAR].append(rates.pop(SCALAR))
        series[f"default ({default})"].append(rates.pop(default))
        if contenders.numba:
            series[NUMBA].append(rates.pop(NUMBA))
        series[hand_c].append(max(rates.values()))
    return series


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
