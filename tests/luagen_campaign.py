"""A fidelity campaign outside pytest's budget: draw N programs from
tests/luagen.py with a seed, run each as test_lua_fidelity's generated test
does (the luajit binary against `nupp run` in this process), and keep every
difference in a folder, the program beside both outcomes:

    .venv/bin/python -m tests.luagen_campaign N SEED FOLDER

A difference that lupa's LuaJIT, running the program untranslated, shares
with nupp is the two LuaJIT builds' (`builds_*`); the others are nupp's to
explain (`nupp_*`).  Hypothesis draws neighbouring programs one after the
other, so one cause usually shows in several files: minimize by hand.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings

from .luagen import programs
from .test_lua_fidelity import luajit, lupa_luajit, nupp_in_process


def campaign(count: int, seed_value: int, folder: Path) -> Counter:
    folder.mkdir(parents=True, exist_ok=True)
    tally: Counter = Counter()
    work = Path(tempfile.mkdtemp(prefix="luagen_campaign_"))

    @seed(seed_value)
    @settings(max_examples=count, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def run(text: str) -> None:
        tally["run"] += 1
        path = work / "generated.lua"
        path.write_text(text)
        expected, got = luajit(path), nupp_in_process(path)
        if got == expected:
            return
        kind = "builds" if lupa_luajit(path) == got else "nupp"
        tally[kind] += 1
        stem = folder / f"{kind}_{seed_value}_{tally['run']}"
        stem.with_suffix(".lua").write_text(text)
        stem.with_suffix(".txt").write_text(f"luajit: {expected!r}\nnupp:   {got!r}\n")

    run()
    return tally


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    count, seed_value, folder = int(argv[0]), int(argv[1]), Path(argv[2])
    start = time.monotonic()
    tally = campaign(count, seed_value, folder)
    print(f"seed {seed_value}: {tally['run']} programs, {tally['nupp']} nupp differences, "
          f"{tally['builds']} build differences, {time.monotonic() - start:.0f} s")
    return 1 if tally["nupp"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
