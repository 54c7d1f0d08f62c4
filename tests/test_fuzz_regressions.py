"""Failures the fuzzer found (tests/fuzz_regressions/), each run again in every execution.

Each saved case (tests/fuzz/regressions.py: a minimized module and its calls)
must load and agree with the interpreter in scalar C and lane C at every tier
this CPU runs x every gang, under GCC and Clang, with no hang, crash or
internal error.  A case whose JSON names a `known_bug` is expected to fail,
only as it was found (its signature): then it is an expected failure; once
it passes the test fails, asking for the line to go.
"""

from __future__ import annotations

import json

import pytest

from .conftest import require_tool
from .fuzz.regressions import check_saved, saved
from .fuzz.runner import Runner
from .fuzz.runs import all_executions
from .fuzz.worker import Pool

CASES = saved()


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    require_tool("gcc")
    require_tool("clang")
    folder = tmp_path_factory.mktemp("fuzz-regressions")
    pool = Pool(2, str(folder / "cache"))
    yield Runner(pool, all_executions(), folder, call_timeout=30)
    pool.close()


def test_the_saved_cases_are_whole():
    for path in CASES:
        spec = json.loads(path.read_text())
        assert path.with_suffix(".nupp").is_file(), path
        assert {"entry", "spans", "scalars", "result", "calls", "found"} <= set(spec), path


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_a_saved_failure_agrees_in_every_execution(case, runner):
    spec = json.loads(case.read_text())
    failures = check_saved(case, runner)
    known = spec.get("known_bug")
    if known:
        assert failures, f"{case.name}: fixed ({known}): drop its known_bug line"
        if all(f.signature == spec["found"]["signature"] for f in failures):
            pytest.xfail(known)
    assert not failures, "\n".join(f.describe()[:1500] for f in failures[:6])
