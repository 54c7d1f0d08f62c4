"""Benchmark (not a test): native execution against its peers, side by side in one run.

    .venv/bin/python bench/native_speed.py [--size N] [--calls N]

1. Per-call cost of a trivial @aot function called from a LuaJIT loop (through
   the host boundary) against a plain LuaJIT FFI call of the same C function.
2. Throughput of each BENCH kernel: the interpreter (LuaJIT), nupp's scalar C,
   and the same kernel written by hand in C (bench/handwritten/kernels.c) at
   -O2, all on the same NumPy arrays, median of repeated runs.
3. Cold compile-and-load time of one module (empty cache) and a cache hit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cffi
import numpy as np

import nupp
from nupp.errors import Source
from nupp.runtime.host import Host

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


def handwritten_library(flags: tuple[str, ...] = ("-O2",)):
    """The hand-written kernels compiled with `flags` (and nupp's arithmetic: no contraction), through cffi."""
    ffi = cffi.FFI()
    ffi.cdef("""
        void hw_mandelbrot(void *out, const void *px, int32_t n, int32_t max_iter);
        void hw_correct(void *out, const void *in, int32_t n);
        void hw_query(void *out, const void *e, int32_t n, int32_t required, int32_t excluded);
        void hw_mix(void *out, const void *in, int32_t n);
        void hw_advance(void *b, int32_t n, double dt, double damping);
    """)
    out = Path(tempfile.mkdtemp()) / "handwritten.so"
    subprocess.run(["gcc", "-std=c11", *flags, "-ffp-contract=off", "-fPIC", "-shared", "-o", str(out),
                    str(HERE / "handwritten" / "kernels.c"), "-lm"], check=True)
    return ffi, ffi.dlopen(str(out))


def ptr(ffi, array):
    return ffi.cast("void *", array.ctypes.data)


def workloads(size: int, rng):
    """name -> (kernel module, build inputs, nupp call, hand-written call)."""
    def mandel_inputs(m):
        side = int(size ** 0.5)
        gx, gy = np.meshgrid(np.linspace(-2, 1, side), np.linspace(-1.5, 1.5, side))
        px = np.zeros(side * side, dtype=m.dtype("Pixel"))
        px["cx"], px["cy"] = gx.ravel(), gy.ravel()
        return np.zeros(len(px), dtype=m.dtype("Escape")), px

    def triples(m):
        inp = np.zeros(size, dtype=m.dtype("Triple"))
        for f in "abc":
            inp[f] = rng.integers(0, 2**32, size, dtype=np.uint64).astype(np.uint32)
        return np.zeros(size, dtype=m.dtype("Corrected")), inp

    def entities(m):
        e = np.zeros(size, dtype=m.dtype("Entity"))
        e["mask"] = rng.integers(-2**31, 2**31, size)
        e["tag"] = rng.integers(-2, 4, size)
        e["seed"] = rng.integers(1, 2**32, size, dtype=np.uint64).astype(np.uint32)
        return np.zeros(size, dtype=m.dtype("Verdict")), e

    def samples(m):
        s = np.zeros(size, dtype=m.dtype("Sample"))
        s["value"] = rng.standard_normal(size).astype(np.float32)
        return np.zeros(size, dtype=m.dtype("Sample")), s

    def bodies(m):
        b = np.zeros(size, dtype=m.dtype("Body"))
        b["x"], b["v"], b["m"] = rng.standard_normal(size), rng.standard_normal(size), 1.0
        return (b,)

    return {
        "mandelbrot": ("mandelbrot", mandel_inputs, lambda m, a: m.mandelbrot(*a, 256),
                       lambda ffi, lib, a: lib.hw_mandelbrot(ptr(ffi, a[0]), ptr(ffi, a[1]), len(a[0]), 256)),
        "corrected": ("corrected", triples, lambda m, a: m.correct(*a),
                      lambda ffi, lib, a: lib.hw_correct(ptr(ffi, a[0]), ptr(ffi, a[1]), len(a[0]))),
        "tecsbits": ("tecsbits", entities, lambda m, a: m.query(*a, 5, 0xF0),
                     lambda ffi, lib, a: lib.hw_query(ptr(ffi, a[0]), ptr(ffi, a[1]), len(a[0]), 5, 0xF0)),
        "mixedwidth": ("mixedwidth", samples, lambda m, a: m.mix(*a),
                       lambda ffi, lib, a: lib.hw_mix(ptr(ffi, a[0]), ptr(ffi, a[1]), len(a[0]))),
        "simd": ("simd", bodies, lambda m, a: m.advance(a[0], 0.01, 0.999),
                 lambda ffi, lib, a: lib.hw_advance(ptr(ffi, a[0]), len(a[0]), 0.01, 0.999)),
    }


def median_seconds(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def throughput(size: int, repeats: int) -> None:
    ffi, lib = handwritten_library()
    rng = np.random.default_rng(7)
    print(f"\nkernel throughput, {size} elements, median of {repeats} (million elements / s)")
    print(f"{'kernel':<12} {'interp':>9} {'scalar C':>9} {'hand C -O2':>11} {'C/interp':>9} {'C/hand':>7}")
    for name, (module, build, call, hand) in workloads(size, rng).items():
        interp = nupp.load(KERNELS / f"{module}.nupp", mode="interp")
        scalar = nupp.load(KERNELS / f"{module}.nupp", mode="scalar")
        args = build(scalar)
        n = len(args[0])
        rates = [n / median_seconds(lambda: call(m, args), repeats) / 1e6 for m in (interp, scalar)]
        rates.append(n / median_seconds(lambda: hand(ffi, lib, args), repeats) / 1e6)
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


def load_times(mode: str, path: Path = KERNELS / "mandelbrot.nupp") -> tuple[float, float, float, float]:
    """ms: import nupp, a cold load (empty cache), a cache hit in a new process, one in the same process."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUPP_CACHE_DIR=cache)
        runs = []
        for _ in range(2):  # the first run compiles, the second finds the cache warm
            out = subprocess.run([sys.executable, "-c", COLD_LOAD, str(path), mode],
                                 env=env, capture_output=True, text=True, check=True).stdout
            runs.append([float(v) * 1000 for v in out.split()])
    (imp, cold, hit_same), (_, warm, _) = runs
    return imp, cold, warm, hit_same


def compile_times() -> None:
    imp, cold, warm, hit_same = load_times("scalar")
    print("\ncompile and load of mandelbrot.nupp (ms)")
    print(f"  import nupp                         {imp:8.1f}")
    print(f"  cold: check, compile, load          {cold:8.1f}   (goal < 1000)")
    print(f"  cache hit, new process              {warm:8.1f}")
    print(f"  cache hit, same process             {hit_same:8.1f}   (goal < 30)")


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
