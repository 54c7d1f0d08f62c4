"""The fuzzer (tests/fuzz): what it generates, how it compares and reduces, and short fuzz runs.

  * a fixed sample of generated programs uses every construct of
    coverage.CONSTRUCTS (the AOT subset's statements and expressions, every
    op of scalar_ir/ops.OPS, every qualifier, parameter, result and field
    type, the shapes that once broke lane C), so a new op or construct the
    generator does not write fails here; the front end accepts every one of
    them (a program defining a name twice may be refused: it runs alone);
  * a seed names a program for good;
  * the comparison: any binary64 NaN equals any NaN, a binary32 NaN's bits
    count, struct padding does not; error texts and results compare exactly;
  * the harness: a call that never returns is reported as a hang (in a
    child process, killed) and the next call runs in a fresh one; a saved
    regression round-trips; the minimizer reduces a refused program to a
    small one refused the same way;
  * a short fuzz (~20 s: one batch, the interpreter against scalar C and
    lane C at the best tier and baseline, GCC and Clang) agrees; under
    CI=true a five-minute fuzz over every execution, with a clock seed, must
    agree too (its failures are minimized into the test's folder and shown).
    Both let pass the known bugs saved in tests/fuzz_regressions (their
    cases there fail until fixed), and report them.
"""

from __future__ import annotations

import math
import os
import re
import struct
import time
from collections import Counter

import numpy as np
import pytest

from .conftest import UNDER_CI, require_tool
from .fuzz.coverage import CONSTRUCTS, measure, table
from .fuzz.generator import generate
from .fuzz.minimize import minimize
from .fuzz.program import Line, module_text, statements
from .fuzz.regressions import check_saved, known_bugs, load_entry, save
from .fuzz.runner import Failure, Fuzzer, Options, Runner, entry_of, front_end
from .fuzz.runs import (FRONT_END, REFERENCE, CallSpec, Execution, Outcome, canonical_result,
                        difference, executions_matching, runnable_tiers)
from .fuzz.worker import Entry, JobResult, Pool

SAMPLE = 150  # programs: enough for every construct with margin (measured: 120 suffice)


# ---- the generator ------------------------------------------------------------------------------

def test_a_sample_of_the_generator_covers_every_construct_and_passes_the_front_end():
    counts: Counter = Counter()
    refused = []
    for seed in range(SAMPLE):
        program = generate(seed, f"p{seed}")
        counts.update(measure(module_text([program])))
        refusal = front_end(program, f"p{seed}.nupp")
        if refusal and not program.isolated:
            refused.append(f"seed {seed}: {refusal[1]}")
    assert not refused, "the front end refuses generated programs:\n" + "\n".join(refused[:5])
    missing = [c for c in CONSTRUCTS if not counts[c]]
    assert not missing, f"never generated in {SAMPLE} programs: {missing}\n" + table(counts, SAMPLE)


def test_a_seed_names_one_program():
    assert module_text([generate(77, "p")]) == module_text([generate(77, "p")])
    assert module_text([generate(77, "p")]) != module_text([generate(78, "p")])


def test_every_generated_loop_is_bounded():
    """A while's or repeat's counter is assigned only by its step (a hang must be nupp's bug)."""
    for seed in range(300):
        for f in generate(seed, "p").functions:
            loops = [s for s in statements(f.body) if s.kind in ("while", "repeat")]
            counters = {re.match(r"\((\w+) ", s.cond.form).group(1) for s in loops}
            assigned = {s.form.split(" =")[0] for s in statements(f.body) if s.kind == "assign"}
            assert all(s.cond.bounds for s in loops), (seed, f.name)
            assert not counters & assigned, (seed, f.name, counters & assigned)


def test_avoided_shapes_are_not_generated():
    avoid = frozenset({"duplicate-names", "shift-count-64"})
    for seed in range(60):
        text = module_text([generate(seed, "p", avoid)])
        found = measure(text)
        assert "duplicate @aot function names" not in found
        assert not found & {"op trunc.i64.i32", "op trunc.u64.i32"}, seed


# ---- comparing outcomes --------------------------------------------------------------------------

def _row(dtype, **values) -> np.ndarray:
    row = np.zeros(1, dtype=dtype)
    for name, value in values.items():
        row[name] = value
    return row


def test_field_nans_agree_whatever_their_bits_float_results_do_not():
    dtype = np.dtype([("d", np.float64), ("f", np.float32)])
    quiet, payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0], \
        struct.unpack("<d", struct.pack("<Q", 0xFFF4000000001234))[0]
    assert difference(Outcome(spans=[_row(dtype, d=quiet)]), Outcome(spans=[_row(dtype, d=payload)])) is None
    # a float field: binary64 narrowed by a store keeps ordinary arithmetic's NaN as it is
    f32_nans = [np.array([bits], dtype=np.uint32).view(np.float32)[0] for bits in (0x7FC00000, 0xFFC01234)]
    assert difference(Outcome(spans=[_row(dtype, f=f32_nans[0])]), Outcome(spans=[_row(dtype, f=f32_nans[1])])) is None
    assert difference(Outcome(spans=[_row(dtype, f=f32_nans[0])]), Outcome(spans=[_row(dtype, f=1.0)]))[0] == "spans"
    assert difference(Outcome(spans=[_row(dtype, f=-0.0)]), Outcome(spans=[_row(dtype, f=0.0)]))[0] == "spans"
    # a float result is the f32 surface's: exact, canonical NaN included
    assert canonical_result(float(f32_nans[0]), "float") != canonical_result(float(f32_nans[1]), "float")
    assert canonical_result(math.nan, "number") == canonical_result(-math.nan, "double")
    assert canonical_result(0.0, "number") != canonical_result(-0.0, "number")


def test_struct_padding_is_not_compared():
    dtype = np.dtype({"names": ["a", "b"], "formats": [np.int8, np.int32], "offsets": [0, 4], "itemsize": 8})
    a, b = np.zeros(2, dtype=dtype), np.zeros(2, dtype=dtype)
    a.view(np.uint8)[1:4] = 0xAB  # the padding after `a`
    assert difference(Outcome(spans=[a]), Outcome(spans=[b])) is None
    b["b"][1] = 5
    assert difference(Outcome(spans=[a]), Outcome(spans=[b]))[0] == "spans"


def test_error_texts_and_results_compare_exactly():
    assert difference(Outcome(error="x.nupp:3: refused"), Outcome(error="x.nupp:4: refused"))[0] == "error-text"
    assert difference(Outcome(result=("int", 1)), Outcome(result=("float", 1.0)))[0] == "result"
    assert difference(Outcome(), Outcome(exception="InternalError: boom"))[0] == "exception"


# ---- the harness --------------------------------------------------------------------------------

SPIN = """\
@aot
local function spin(n: int32): int32
    local c: int32 = 0
    while n > 0 do
        c = c + 1
    end
    return c
end

return {spin = spin}
"""


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    require_tool("gcc")
    folder = tmp_path_factory.mktemp("fuzz")
    pool = Pool(1, str(folder / "cache"))
    yield Runner(pool, [REFERENCE, Execution("scalar", "gcc")], folder, call_timeout=3)
    pool.close()


def test_a_call_that_never_returns_is_a_hang_and_the_next_entry_runs(runner, tmp_path):
    path = tmp_path / "spin.nupp"
    path.write_text(SPIN)
    # scalar set 1 passes n = 1 (spins), set 0 passes n = INT32_MIN (returns 0)
    spins = Entry("spin", (), ("i32",), "int32", (CallSpec(0, 1), CallSpec(0, 0)))
    returns = Entry("spin", (), ("i32",), "int32", (CallSpec(0, 0),))
    for result in runner.run(str(path), [spins, returns]):
        assert result.load[0] == "ok", result.load
        assert result.outcomes[(0, 0)].exception.startswith("hang:"), result.outcomes[(0, 0)]
        assert (0, 1) not in result.outcomes  # one timeout per entry: its other calls are not made
        assert result.outcomes[(1, 0)].result == ("int", 0), result.outcomes[(1, 0)]
    # what hangs in the reference is reported there and not run again elsewhere
    failures = runner.check_module(str(path), [spins, returns])
    assert [(f.execution, f.kind) for f in failures] == [(REFERENCE, "hang")]


class _BrokenLaneRunner(Runner):
    """Runs nothing: a module marked BROKEN fails to load in lane C, every call returns 0."""

    def __init__(self, *args):
        super().__init__(*args)
        self.runs: list = []  # (entries, executions) of every run

    def run(self, path, entries, executions=None):
        broken = "BROKEN" in open(path).read()
        self.runs.append(([e.function for e in entries], [e.name for e in executions or self.executions]))
        results = []
        for execution in executions or self.executions:
            if broken and execution.mode == "lane":
                results.append(JobResult(("exception", f"InternalError: cannot build {path}")))
            else:
                results.append(JobResult(("ok", execution.name), {(e, c): Outcome(result=("int", 0))
                                                                    for e, entry in enumerate(entries)
                                                                    for c in range(len(entry.calls))}))
        return results


def test_a_module_that_fails_to_load_is_narrowed_to_its_program(tmp_path):
    programs = [generate(seed, f"p{seed}") for seed in (20, 21, 22)]
    programs[1].entry.body.insert(0, Line("comment", "-- BROKEN"))
    lane = Execution("lane", "gcc", "baseline", 4)
    runner = _BrokenLaneRunner(None, [REFERENCE, Execution("scalar", "gcc"), lane], tmp_path, 1)
    failures = runner.check(programs)
    assert [(f.program.ident, f.execution, f.kind) for f in failures] == [("p21", lane, "load")]
    assert "cannot build" in failures[0].detail
    # the reference first, then the rest; each program alone only where the module failed; then
    # the others run there again, against the reference
    assert runner.runs[:2] == [(["p20_k", "p21_k", "p22_k"], ["interp"]),
                               (["p20_k", "p21_k", "p22_k"], ["scalar-gcc", lane.name])]
    assert runner.runs[2:] == [([f"{p.ident}_k"], [lane.name]) for p in programs] + \
        [(["p20_k", "p22_k"], ["interp"]), (["p20_k", "p22_k"], [lane.name])]


def test_a_saved_failure_runs_again(runner, tmp_path):
    healthy = generate(3, "p3")
    assert not healthy.isolated and front_end(healthy, "p3.nupp") is None
    call = CallSpec(9, 2, offset=4)
    path = save(Failure(healthy, Execution("scalar", "gcc"), "spans", "made up", call), tmp_path)
    assert load_entry_calls(path) == (call,)
    assert check_saved(path.with_suffix(".json"), runner) == []


def load_entry_calls(path):
    import json
    return load_entry(json.loads(path.with_suffix(".json").read_text())).calls


def test_the_minimizer_keeps_the_failure_and_drops_the_rest(runner):
    kernels = [p for p in (generate(seed, "p11") for seed in range(11, 60)) if p.spans]
    program = min(kernels, key=lambda p: len(module_text([p])))  # the smallest kernel: quick to minimize
    loop = next(s for s in program.entry.body if s.kind == "for")
    loop.body.insert(1, Line("local", 'local z = "text"'))  # strings are outside the AOT subset
    kind, detail = front_end(program, "p11.nupp")
    failure = Failure(program, FRONT_END, kind, detail)
    small = minimize(failure, runner, seconds=60, log=lambda line: None)
    message = lambda text: text.split("error: ")[1].splitlines()[0]  # noqa: E731
    assert message(front_end(small.program, "p11.nupp")[1]) == message(detail)
    before, after = len(module_text([program])), len(module_text([small.program]))
    assert after < before - 0.6 * (before - len(module_text([]))), (before, after)
    assert sum(1 for f in small.program.functions for _ in statements(f.body)) <= 4


# ---- fuzzing ------------------------------------------------------------------------------------

def _fuzz(options: Options) -> str:
    log: list[str] = []
    options.log = log.append
    report = Fuzzer(options).run()
    assert not report.failures, f"seed {options.seed}:\n" + "\n".join(log[-40:]) + "\n" + report.text()[-4000:]
    return report.text()


def test_a_short_fuzz_agrees(tmp_path):
    require_tool("gcc")
    require_tool("clang")
    tiers = runnable_tiers()
    lanes = [f"lane16-{tiers[-1]}", f"lane4-{tiers[-1]}-gcc", "lane8-baseline-gcc",
             f"lane-{tiers[-1]}-gcc"] if tiers else []  # lane-: each loop at the cost model's gang
    started = time.monotonic()
    _fuzz(Options(minutes=0.01, seed=424242, batch_size=16, executions=["scalar", *lanes], save_dir=None,
                  known=known_bugs()))
    assert time.monotonic() - started < 120


@pytest.mark.slow
def test_five_minutes_of_fuzzing_agree(tmp_path):
    """Every execution, a fresh seed each run (printed on failure: `python -m tests.fuzz --seed N`)."""
    require_tool("gcc")
    require_tool("clang")
    seed = int(os.environ.get("NUPP_FUZZ_SEED", time.time() % 1_000_000 * 1000))
    text = _fuzz(Options(minutes=float(os.environ.get("NUPP_FUZZ_MINUTES", 5)), seed=seed, batch_size=32,
                         jobs=min(4, os.cpu_count() or 1), save_dir=tmp_path, minimize_seconds=120,
                         known=known_bugs()))
    if UNDER_CI:
        print(text)
