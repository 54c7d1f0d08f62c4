"""`nupp bench` (bench/lane_speed.py) prints what it claims: every execution and
peer as a row, each goal judged against the right executions (met, MISSED, or
not measured), the memory roof, the short spans and the plot.  The numbers
themselves are a benchmark's, not a test's: only the judging is checked on
made-up rates, and one small end-to-end run checks the report's shape."""

from __future__ import annotations

import re

import numpy as np
import pytest

import nupp

from tests.conftest import require_module, require_tool
from tests.test_cli import nupp_cmd

from bench import lane_speed
from bench.lane_speed import DEFAULT, NUMBA, SAME_GANG_SIMD, SCALAR, Goal, _gangs, _judge
from bench.native_speed import WORKLOADS
from nupp.errors import Source
from nupp.pipeline import Request, compile_module, tier_builds
from nupp.runtime.api import NuppModule
from nupp.targets.cross import host_machine
from nupp.targets.tiers import TIER_NAMES, tier_named

RATES = {SCALAR: 100.0, "default lane16-v4": 600.0, "lane8-v3": 450.0, "lane16-v4": 640.0, "lane8-v4": 90.0,
         NUMBA: 500.0, "hand SIMD8 gcc": 300.0, "hand SIMD16 gcc": 700.0, "hand SIMD16 clang": 800.0}


@pytest.mark.parametrize("goal, verdict", [
    (Goal(DEFAULT, NUMBA, 1.0, "i"), "1.20x (default = default lane16-v4), met"),
    (Goal(DEFAULT, "the best hand SIMD C", 0.9, "i"),
     "0.75x (default = default lane16-v4, the best hand SIMD C = hand SIMD16 clang), MISSED"),
    (Goal("the slowest lane C", SCALAR, 0.9, "i"), "0.90x (the slowest lane C = lane8-v4), met"),
    (Goal(DEFAULT, "the best lane C", 0.9, "i"), "0.94x (default = default lane16-v4, the best lane C = lane16-v4), met"),
    (Goal("the best lane C at v3", SCALAR, 9.0, "i"), "4.50x (the best lane C at v3 = lane8-v3), MISSED"),
    (Goal(DEFAULT, SAME_GANG_SIMD, 1.0, "i"), "0.75x (default = default lane16-v4, "
                                              f"{SAME_GANG_SIMD} = hand SIMD16 clang), MISSED"),
    (Goal("lane16-v3", SCALAR, 1.0, "i"), "not measured here"),
])
def test_a_goal_is_judged_against_the_executions_it_names(goal, verdict):
    line = _judge(goal, RATES, "default lane16-v4")
    assert line == f"{goal.execution} >= {goal.factor:g}x {goal.peer} (i): {verdict}"


def test_the_gangs_an_execution_names():
    assert _gangs("lane16-v4") == [16]
    assert _gangs("default lane8+32-v4") == [8, 32]
    assert _gangs("default scalar-v2") == [] and _gangs(SCALAR) == []


def test_bytes_moved_count_every_read_and_the_outputs_write_back():
    arrays = {name: w.build(_Dtypes(name), 64, np.random.default_rng(1)) for name, w in WORKLOADS.items()}
    moved = {name: WORKLOADS[name].bytes_moved(a) for name, a in arrays.items()}
    # each element read, the output's (the first) line read and written back: Escape 4 + 4 + Pixel 8;
    # Corrected 16 + 16 + Triple 12; Verdict 8 + 8 + Entity 12; Sample 4 + 4 + 4; Body 24 + 24 (in place)
    assert moved == {"mandelbrot": 16, "corrected": 44, "tecsbits": 28, "mixedwidth": 12, "simd": 48}


class _Dtypes:
    """A module's dtypes, as nupp.load's answer gives them, without compiling the kernel."""

    def __init__(self, name: str):
        import nupp
        self._module = nupp.load(WORKLOADS[name].path, mode="interp")

    def dtype(self, struct: str):
        return self._module.dtype(struct)


def test_a_gang_wider_than_a_register_is_also_measured_in_each_narrower_vector_width():
    v3, v4 = (tier_named(t) for t in ("v3", "v4"))
    assert lane_speed.narrower_vectors(v4, 32) == [(32, 128), (32, 256)]  # gang 16: one 512-bit register
    assert lane_speed.narrower_vectors(v4, 64) == [(16, 128), (16, 256), (32, 128), (32, 256)]
    assert lane_speed.narrower_vectors(v3, 32) == [(16, 128), (32, 128)]
    assert lane_speed.narrower_vectors(tier_named("v2"), 64) == []  # 128 bits: no narrower vector


def test_a_capped_library_runs_its_gang_in_vectors_of_the_cap_with_the_same_bits(tmp_path, monkeypatch):
    """mandelbrot at gang 32, tier v4's C: 2 x 512 bits in full registers, 4 x 256 capped
    (no 64-byte vector in its C); loaded capped (the module cache keeps the two apart), it
    answers as scalar C."""
    require_tool("gcc")
    path = WORKLOADS["mandelbrot"].path
    module = compile_module(Source.from_file(str(path)))
    full, capped = (tier_builds(module, "m.nupp", "p_", 32, "v4", bits)[0].c_module.source for bits in (None, 256))
    assert "vector_size(64)" in full and "vector_size(64)" not in capped and "vector_size(32)" in capped
    with pytest.raises(ValueError, match="vector_bits must be one of 128, 256, 512, not 64"):
        Request("lane", vector_bits=64)
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path))
    tier = "v3" if "v3" in host_machine().runnable_tiers() else "baseline"
    scalar = nupp.load(path, mode="scalar")
    lanes = [NuppModule(path, mode="lane", gang=32, tier=tier, vector_bits=bits) for bits in (None, 128)]
    assert len({next(iter(m._host._lane_modules)) for m in lanes}) == 2
    arrays = WORKLOADS["mandelbrot"].build(scalar, 1000, np.random.default_rng(3))
    answers = []
    for m in (scalar, *lanes):
        copies = tuple(a.copy() for a in arrays)
        WORKLOADS["mandelbrot"].nupp_call(m, copies)()
        answers.append(copies[0].tobytes())
    assert answers[1] == answers[0] and answers[2] == answers[0]


def test_bench_refuses_a_size_below_one():
    proc = nupp_cmd("bench", "--size", "1000,0")
    assert proc.returncode == 2 and "--size: must be at least 1, not 0" in proc.stderr


def test_one_small_run_prints_every_row_goal_and_section(tmp_path, monkeypatch, capsys):
    """tecsbits at 2,000 elements, lane C at gang 16 only (every tier), no device and no compile times;
    the memory roof's threshold lowered to this size so that its lines print."""
    require_module("numba")
    require_module("matplotlib")
    for cc in ("gcc", "clang"):
        require_tool(cc)
    monkeypatch.setattr(lane_speed, "LANE_GANGS", (16,))
    monkeypatch.setattr(lane_speed, "ROOF_SIZE", 1000)
    monkeypatch.setattr(lane_speed, "PLOT_SIZES", (100, 1000))
    monkeypatch.setattr(lane_speed, "_device_runners", dict)
    monkeypatch.setattr(lane_speed, "_print_load_times", lambda: None)
    plot = tmp_path / "speed.png"
    lane_speed.run_benchmark(sizes=(2000,), repeats=1, kernels=("tecsbits",), plot=str(plot))
    out = capsys.readouterr().out
    rows = re.findall(r"^  (\S.*?)\s{2,}\d+\.\d\s", out, re.M)
    assert rows[0] == SCALAR and rows[1].startswith("default lane")
    assert {"lane16-baseline", NUMBA, "hand C -O3 native", "hand C -O2"} <= set(rows)
    assert {f"hand SIMD{gang} {cc}" for gang in (8, 16, 32) for cc in ("gcc", "clang")} <= set(rows)
    # tecsbits' 32-bit lanes: gang 16 is wider than one register from v3 on, and runs in narrower vectors too
    narrower = {"v3": ["lane16(4x128)-v3"], "v4": []}
    assert [row for row in rows if "(" in row] == [r for t in TIER_NAMES[2:] if f"lane16-{t}" in rows for r in narrower[t]]
    goals = re.findall(r"^  goal: (.*): .*, (met|MISSED)$", out, re.M)
    claims = [claim for claim, _ in goals]
    for goal in lane_speed.EVERY_KERNEL + lane_speed.GOALS["tecsbits"]:
        assert f"{goal.execution} >= {goal.factor:g}x {goal.peer} ({goal.source})" in claims
    assert re.search(r"memory roof: [\d.]+ GB/s \(the fastest stream copy .* / 28 bytes per element = \d+ M elements/s",
                     out)
    assert re.search(r"goal: default lane\S+ >= 80% of the memory roof \(issue 15 item 7\): \d+%, (met|MISSED)", out)
    gang = lane_speed._gangs(rows[1])[0]
    for first in range(1, 3 * gang, gang):  # lengths 1..3G, a ratio each
        assert re.search(rf"^\s+{first}-{first + gang - 1}\s+(\d+\.\d\d ){{{gang - 1}}}\d+\.\d\d$", out, re.M)
    assert plot.read_bytes().startswith(b"\x89PNG")
