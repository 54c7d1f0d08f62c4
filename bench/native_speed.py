"""Benchmark (not a test): native execution against its peers, side by side in one run.

    .venv/bin/python -m bench.native_speed [--size N] [--calls N] [--repeats N]   (from the checkout's root)

1. Per-call cost of a trivial @aot function called from a LuaJIT loop (through
   the host boundary) against a plain LuaJIT FFI call of the same C function.
2. Throughput of each BENCH kernel: the interpreter (LuaJIT), nupp's scalar C,
   and the same kernel written by hand in C (bench/handwritten/kernels.c) at
   -O2, all on the same NumPy arrays, median of interleaved rounds.
3. Compile-and-load time of one module: on first use (an empty cache), cold
   (a cache that holds nupp's one-time builds), and cache hits.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

import nupp
from nupp.errors import Source
from nupp.runtime.host import Host

from bench.call_cost import users_environment
from bench.peers.hand_c import hand_scalar  # bench/ is not installed: run from the checkout's root

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "kernel-subset-spike"

TRIVIAL = "@aot\nlocal function inc(x: int32): int32\n    return x + 1\nend\nreturn {inc = inc}\n"

CALL_LOOP = """
local inc, raw, out, n = ...
local clock = os.clock
local x = 0
local t0 = clock()
for _ = 1, n do x = inc(x) end
local boundary = clock() - t0
x = 0
t0 = clock()
for _ = 1, n do raw(x, out) x = out[0] end
local plain = clock() - t0
return boundary, plain, x
"""


def per_call_cost(calls: int) -> tuple[float, float]:
    """ns per call through the boundary and through a plain FFI call of the same C function."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trivial.nupp"
        path.write_text(TRIVIAL)
        host = Host(mode="scalar")
        source = Source(str(path), TRIVIAL)
        compiled = host.compile(source)
        native = compiled.native
        exports = host.load_module(source, compiled)
        symbol, _ = native.functions["inc"]
        lib = host.internals.native.load(native.library, native.cdef, host.lua.table())
        raw = lib["lib"][symbol]
        out = host.lua.eval('require("ffi").new("int32_t[1]")')
        best = [float("inf"), float("inf")]
        for _ in range(5):
            boundary, plain, _x = host.lua.execute(CALL_LOOP, exports["inc"], raw, out, calls)
            best = [min(best[0], boundary), min(best[1], plain)]
        return best[0] / calls * 1e9, best[1] / calls * 1e9


@dataclass(frozen=True)
class Workload:
    """One BENCH kernel's call: the arrays it takes (its output first) and its other arguments.
    nupp, the Numba peer and the C peers all run it on the same arrays."""

    module: str  # bench/kernel-subset-spike/MODULE.nupp
    function: str  # the @aot function; the peers' kernels have its name
    structs: tuple[str, ...]  # each array's struct
    build: Callable  # (nupp module, size, rng) -> the arrays, NumPy arrays of the module's dtypes
    extra: tuple = ()
    streaming: bool = True  # a few operations per byte: memory bounds it at large sizes

    @staticmethod
    def bytes_moved(arrays) -> int:
        """Bytes between memory and the core per element: every array's element read once, and the
        output (the first array) written back, its line read first whether the kernel reads it (an
        update in place) or not (a write-allocate: the caches fetch a line before a store fills it)."""
        return sum(array.itemsize for array in arrays) + arrays[0].itemsize

    @property
    def path(self) -> Path:
        return KERNELS / f"{self.module}.nupp"

    def nupp_call(self, module, arrays):
        """A call of the module's function on `arrays`, each viewed with the module's own dtype: nupp
        checks a span's dtype by identity first, and an equal dtype object of another module (the
        scalar one's, say) took about 220 ns more per span and call here."""
        own = (array.view(module.dtype(struct)) for array, struct in zip(arrays, self.structs))
        return partial(getattr(module, self.function), *own, *self.extra)

    def numba_call(self, arrays):
        from bench.peers import numba_kernels  # imported on use: numba is the bench extra's
        return partial(getattr(numba_kernels, self.function), *arrays, *self.extra)

    def c_call(self, library, arrays):
        return library.call(self.function, arrays, self.extra)


def _pixels(m, size, rng):
    """A side x side grid of pixel centres over [-2, 1] x [-1.5, 1.5], side = floor(sqrt(size))."""
    side = int(size ** 0.5)
    gx, gy = np.meshgrid(np.linspace(-2, 1, side), np.linspace(-1.5, 1.5, side))
    px = np.zeros(side * side, dtype=m.dtype("Pixel"))
    px["cx"], px["cy"] = gx.ravel(), gy.ravel()
    return np.zeros(len(px), dtype=m.dtype("Escape")), px


def _triples(m, size, rng):
    """Random binary32 bit patterns: every class (NaNs with payloads, subnormals, infinities) appears."""
    inp = np.zeros(size, dtype=m.dtype("Triple"))
    for f in "abc":
        inp[f] = rng.integers(0, 2**32, size, dtype=np.uint64).astype(np.uint32)
    return np.zeros(size, dtype=m.dtype("Corrected")), inp


def _entities(m, size, rng):
    e = np.zeros(size, dtype=m.dtype("Entity"))
    e["mask"] = rng.integers(-2**31, 2**31, size)
    e["tag"] = rng.integers(-2, 4, size)
    e["tag"][::7] = -2**31  # the switch's INT32_MIN arm
    e["seed"] = rng.integers(1, 2**32, size, dtype=np.uint64).astype(np.uint32)
    return np.zeros(size, dtype=m.dtype("Verdict")), e


def _samples(m, size, rng):
    s = np.zeros(size, dtype=m.dtype("Sample"))
    s["value"] = rng.standard_normal(size).astype(np.float32)
    return np.zeros(size, dtype=m.dtype("Sample")), s


def _bodies(m, size, rng):
    b = np.zeros(size, dtype=m.dtype("Body"))
    b["x"], b["v"], b["m"] = rng.standard_normal(size), rng.standard_normal(size), rng.random(size) + 0.5
    return (b,)


WORKLOADS = {
    "mandelbrot": Workload("mandelbrot", "mandelbrot", ("Escape", "Pixel"), _pixels, (256,), streaming=False),
    "corrected": Workload("corrected", "correct", ("Corrected", "Triple"), _triples),
    "tecsbits": Workload("tecsbits", "query", ("Verdict", "Entity"), _entities, (5, 0xF0)),
    "mixedwidth": Workload("mixedwidth", "mix", ("Sample", "Sample"), _samples),
    "simd": Workload("simd", "advance", ("Body",), _bodies, (0.01, 0.999)),
}


MIN_SAMPLE_SECONDS = 0.002  # a timed sample repeats a short call until it takes about this long


def interleaved_samples(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Seconds per call of each execution, side by side: a warm-up call each (which sizes its sample: a
    short call repeats until a sample takes MIN_SAMPLE_SECONDS), then `repeats` rounds in which each
    execution takes one sample, in an order shuffled per round (here the call after a slow one ran up
    to 15% slower: tecsbits' lane C after scalar C at 10^5).  A drift of the clock, or another
    process taking the cores for a while, touches every execution alike."""
    batch = {}
    for label, run in calls.items():
        t0 = time.perf_counter()
        run()
        batch[label] = max(1, int(MIN_SAMPLE_SECONDS / max(time.perf_counter() - t0, 1e-7)))
    samples: dict[str, list[float]] = {label: [] for label in calls}
    order = random.Random(1)
    for _ in range(repeats):
        for label in order.sample(list(calls), len(calls)):
            run, count = calls[label], batch[label]
            t0 = time.perf_counter()
            for _ in range(count):
                run()
            samples[label].append((time.perf_counter() - t0) / count)
    return samples


def interleaved_fastest(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """The fastest of each execution's interleaved_samples: what the machine does when nothing else
    takes it (other load only adds time)."""
    return {label: min(times) for label, times in interleaved_samples(calls, repeats).items()}


def interleaved_medians(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """The median of each execution's interleaved_samples."""
    return {label: statistics.median(times) for label, times in interleaved_samples(calls, repeats).items()}


def throughput(size: int, repeats: int) -> None:
    hand = hand_scalar()
    rng = np.random.default_rng(7)
    print(f"\nkernel throughput, {size} elements, median of {repeats} interleaved rounds (million elements / s)")
    print(f"{'kernel':<12} {'interp':>9} {'scalar C':>9} {'hand C -O2':>11} {'C/interp':>9} {'C/hand':>7}")
    for name, workload in WORKLOADS.items():
        interp = nupp.load(workload.path, mode="interp")
        scalar = nupp.load(workload.path, mode="scalar")
        arrays = workload.build(scalar, size, rng)
        n = len(arrays[0])
        calls = [workload.nupp_call(interp, arrays), workload.nupp_call(scalar, arrays), workload.c_call(hand, arrays)]
        rates = [n / s / 1e6 for s in interleaved_medians(dict(enumerate(calls)), repeats).values()]
        print(f"{name:<12} {rates[0]:>9.1f} {rates[1]:>9.1f} {rates[2]:>11.1f} "
              f"{rates[1] / rates[0]:>8.1f}x {rates[1] / rates[2]:>6.2f}x")


COLD_LOAD = """
import os, sys, time
t0 = time.perf_counter()
import nupp
t1 = time.perf_counter()
nupp.load(sys.argv[1], mode=sys.argv[2])
t2 = time.perf_counter()
nupp.load(sys.argv[1], mode=sys.argv[2])
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


@dataclass(frozen=True)
class LoadTimes:
    """ms of one module's compile and load, each in a new process but the last."""

    import_nupp: float
    first_use: float   # an empty cache folder: also nupp's one-time builds (its call extension, the grammar)
    cold: float        # a module no cache has seen, in a cache that holds nupp's one-time builds
    hit_new: float     # a cache hit in a new process
    hit_same: float    # a cache hit in the same process


def load_times(mode: str, path: Path = KERNELS / "mandelbrot.nupp") -> LoadTimes:
    """Three processes on one cache folder: the first finds it empty, the
    second hits, the third loads a copy of the module with a new comment."""
    with tempfile.TemporaryDirectory() as folder:
        env = dict(users_environment(), NUPP_CACHE_DIR=str(Path(folder) / "cache"))
        fresh = Path(folder) / path.name
        fresh.write_text(path.read_text() + f"-- {time.time_ns()}\n")
        runs = [_load_twice(module, mode, env) for module in (path, path, fresh)]
    (imp, first, hit_same), (_, hit_new, _), (_, cold, _) = runs
    return LoadTimes(imp, first, cold, hit_new, hit_same)


def _load_twice(path: Path, mode: str, env: dict) -> list[float]:
    out = subprocess.run([sys.executable, "-c", COLD_LOAD, str(path), mode],
                         env=env, capture_output=True, text=True, check=True).stdout
    return [float(v) * 1000 for v in out.split()]


def compile_times() -> None:
    times = load_times("scalar")
    print("\ncompile and load of mandelbrot.nupp (ms)")
    print(f"  import nupp                         {times.import_nupp:8.1f}")
    print(f"  first use: an empty cache folder    {times.first_use:8.1f}")
    print(f"  cold: check, compile, load          {times.cold:8.1f}   (goal < 500)")
    print(f"  cache hit, new process              {times.hit_new:8.1f}")
    print(f"  cache hit, same process             {times.hit_same:8.1f}   (goal < 10)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    boundary, plain = per_call_cost(args.calls)
    print(f"per call from a LuaJIT loop: through the boundary {boundary:.2f} ns, plain FFI {plain:.2f} ns "
          f"({boundary / plain:.2f}x; goal <= 2x)")
    throughput(args.size, args.repeats)
    compile_times()


if __name__ == "__main__":
    main()
