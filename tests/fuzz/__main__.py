"""`python -m tests.fuzz --minutes N`: fuzz nupp's executions against each other (`make fuzz`).

Prints the coverage table, programs per minute and every disagreement; a
new failure is minimized and saved under tests/fuzz_regressions/ (or
--save-dir).  Exit status 0 when every execution agreed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .generator import KNOWN_BUG_SHAPES
from .regressions import FOLDER, known_bugs
from .runner import Fuzzer, Options


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="the run's wall time: a batch starts where one as long as the last ends by then (default 3)")
    parser.add_argument("--seed", type=int, default=None, help="first program's seed (default: from the clock)")
    parser.add_argument("--batch", type=int, default=32, help="programs per module (default 32)")
    parser.add_argument("--jobs", type=int, default=1, help="executions run at once (default 1)")
    parser.add_argument("--executions", default="", help="comma-separated name parts, e.g. lane16,scalar "
                        "(default: all; the interpreter always runs, as the reference)")
    parser.add_argument("--avoid", default="", help="comma-separated known-bug shapes not to generate: "
                        + "; ".join(f"{k} ({v})" for k, v in KNOWN_BUG_SHAPES.items()))
    parser.add_argument("--call-timeout", type=float, default=20.0, help="seconds a call may take (default 20)")
    parser.add_argument("--minimize-seconds", type=float, default=600.0, help="budget per failure (default 600)")
    parser.add_argument("--save-dir", type=Path, default=FOLDER, help=f"where failures go (default {FOLDER})")
    parser.add_argument("--no-save", action="store_true", help="report failures without minimizing them")
    parser.add_argument("--fail-on-known", action="store_true",
                        help="count failures of the known bugs saved in tests/fuzz_regressions as failures too")
    args = parser.parse_args(argv)
    avoid = frozenset(a for a in args.avoid.split(",") if a)
    unknown = avoid - set(KNOWN_BUG_SHAPES)
    if unknown:
        parser.error(f"unknown shapes: {', '.join(sorted(unknown))} (known: {', '.join(KNOWN_BUG_SHAPES)})")
    if args.seed is None:
        import time
        args.seed = int(time.time()) % 1_000_000 * 1000
    options = Options(minutes=args.minutes, seed=args.seed, batch_size=args.batch, jobs=args.jobs,
                      executions=[e for e in args.executions.split(",") if e], avoid=avoid,
                      call_timeout=args.call_timeout, minimize_seconds=args.minimize_seconds,
                      save_dir=None if args.no_save else args.save_dir,
                      known={} if args.fail_on_known else known_bugs(),
                      log=lambda line: print(line, flush=True))
    report = Fuzzer(options).run()
    print(report.text())
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
