"""Benchmark (not a test): check + lower + verify time per BENCH program.

    .venv/bin/python bench/pipeline_speed.py [--runs N]

For each kernel module: parse, then check (which lowers to IR), verify and
fold, each timed separately as the median of N runs in one process (the
lark grammar is built once, before timing).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from nupp.frontend.checker import check_module
from nupp.errors import Source
from nupp.frontend.parser import parse
from nupp.scalar_ir.fold import fold_module
from nupp.verifier import verify_module

KERNELS = Path(__file__).resolve().parent / "kernel-subset-spike"


def median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(path: Path, runs: int) -> tuple[float, float, float, float]:
    source = Source(path.name, path.read_text())
    chunk = parse(source)
    module = check_module(source, chunk)
    parse_ms = median_ms(lambda: parse(source), runs)
    check_ms = median_ms(lambda: check_module(source, chunk), runs)  # validates too
    verify_ms = median_ms(lambda: verify_module(module), runs)
    fold_ms = median_ms(lambda: fold_module(module), runs)
    return parse_ms, check_ms, verify_ms, fold_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    parse(Source("warm.nupp", "local x = 1"))  # build the grammar outside the timings
    print(f"{'program':<12} {'lines':>5} {'parse ms':>9} {'check+lower ms':>15} {'verify ms':>10} "
          f"{'fold ms':>8} {'total ms':>9}")
    total = 0.0
    for path in sorted(p for p in KERNELS.glob("*.nupp") if not p.name.endswith("_main.nupp")):
        p, c, v, f = measure(path, args.runs)
        total += p + c + v + f
        lines = path.read_text().count("\n")
        print(f"{path.stem:<12} {lines:>5} {p:>9.2f} {c:>15.2f} {v:>10.2f} {f:>8.2f} {p + c + v + f:>9.2f}")
    print(f"{'all five':<12} {'':>5} {'':>9} {'':>15} {'':>10} {'':>8} {total:>9.2f}")


if __name__ == "__main__":
    main()
