"""nupp.executions(f): every way a program can run an @aot function here.

  * lane mode: the interpreter, the bound lane C, then the module's scalar C
    and its lane C at every gang (4, 8, 16) at the bound tier, each giving
    the bits an independent oracle (Python's int32 arithmetic) gives;
  * scalar mode: the interpreter and the scalar C (that mode asks for no lane C);
  * --aot off: the interpreter alone;
  * the extra executions are built only when a program asks, once per module,
    and a failed build is an error message, not a Python traceback.
"""

from __future__ import annotations

import re

import pytest

import nupp.pipeline as pipeline
import nupp.runtime.cli as cli
from nupp.paths import NuppEnvironmentError
from nupp.scalar_ir.lanes import GANG_SIZES

from .conftest import require_tool
from .test_pipeline import Call, spy

# int32 `*` and `+` wrap (LANGUAGE.md): the inputs below overflow on purpose
KERNELS = """\
local span = nupp.mem.span

local struct Cell
    n: int32
end

@aot
local function scale(exclusive out: span.WriteSpan<Cell>, borrows xs: span.Span<Cell>, k: int32): nil
    assert(#out == #xs, "length mismatch")
    for i = 1, #out do
        out[i].n = xs[i].n * 3 + k
    end
end

@aot
local function total(borrows xs: span.Span<Cell>): int32
    local sum: int32 = 0
    for i = 1, #xs do sum = sum + xs[i].n end
    return sum
end

return {Cell = Cell, scale = scale, total = total}
"""

INPUTS = [0, 1, -1, 7, 2147483647, -2147483648, 1000000000, -715827883, 715827882, 123456789] * 4 + [5]  # 41: not a whole gang
K = 2147483600

# Runs every execution of `scale` on INPUTS and prints its name and outputs;
# with the argument "plain", runs the bound function only and never asks.
MAIN = f"""\
local span = nupp.mem.span
local k = require("kernels")
local inputs = {{{", ".join(map(str, INPUTS))}}}
local xs = span.new(k.Cell, #inputs)
for i = 1, #inputs do xs[i].n = inputs[i] end
local function run(f)
    local out = span.new(k.Cell, #xs)
    f(out, xs, {K})
    local ns = {{}}
    for i = 1, #out do ns[i] = tostring(out[i].n) end
    return table.concat(ns, ",")
end
if ... == "plain" then
    print("bound", run(k.scale))
else
    for _, execution in ipairs(nupp.executions(k.scale)) do
        print(execution.name, run(execution.run))
    end
    assert(nupp.executions(k.scale) == nupp.executions(k.scale), "one list per function")
    assert(#nupp.executions(k.total) == #nupp.executions(k.scale), "the module's other function runs as many ways")
end
"""


def int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


EXPECTED = ",".join(str(int32(n * 3 + K)) for n in INPUTS)


@pytest.fixture
def program(tmp_path, monkeypatch):
    """main.nupp requiring kernels.nupp; a private, empty compile cache; the
    calls of pipeline.execution_library."""
    (tmp_path / "kernels.nupp").write_text(KERNELS)
    (tmp_path / "main.nupp").write_text(MAIN)
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))
    builds: list[Call] = []
    spy(monkeypatch, pipeline.execution_library, builds)
    return tmp_path / "main.nupp", builds


def run_executions(program, capfd, *options: str, plain: bool = False) -> list[tuple[str, str]]:
    """(name, outputs) of each execution `nupp run OPTIONS main.nupp` lists."""
    path, _ = program
    assert cli.main(["run", *options, str(path), *(["plain"] if plain else [])]) == 0
    return [tuple(line.split("\t")) for line in capfd.readouterr().out.splitlines()]


def check_lane_executions(runs: list[tuple[str, str]], bound: str, tier: str) -> None:
    names = [name for name, _ in runs]
    others = [n for n in ["scalar", *(f"lane{g}-{tier}" for g in GANG_SIZES)] if n != bound]
    assert names == ["interp", bound, *others]
    for name, outputs in runs:
        assert outputs == EXPECTED, name


def test_lane_mode_runs_scalar_and_every_gang_at_a_pinned_tier(program, capfd):
    require_tool("gcc")
    runs = run_executions(program, capfd, "--mode", "lane", "--tier", "baseline", "--gang", "8")
    check_lane_executions(runs, "lane8-baseline", "baseline")
    assert len(program[1]) == 1  # one library for every extra execution, built once per module


def test_lane_mode_runs_every_gang_at_the_tier_this_cpu_runs(program, capfd):
    require_tool("gcc")
    runs = run_executions(program, capfd)  # --aot on: lane mode, the best tier, its own gang
    bound = runs[1][0]
    tier = re.fullmatch(r"(?:lane\d+|scalar)-(\w+)", bound).group(1)
    check_lane_executions(runs, bound, tier)


def test_scalar_mode_runs_the_interpreter_and_the_scalar_c(program, capfd):
    require_tool("gcc")
    assert run_executions(program, capfd, "--mode", "scalar") == [("interp", EXPECTED), ("scalar", EXPECTED)]
    assert program[1] == []


def test_aot_off_runs_the_interpreter_alone(program, capfd):
    assert run_executions(program, capfd, "--aot", "off") == [("interp", EXPECTED)]
    assert program[1] == []


def test_a_run_that_never_asks_builds_no_extra_library(program, capfd):
    require_tool("gcc")
    assert run_executions(program, capfd, "--mode", "lane", plain=True) == [("bound", EXPECTED)]
    assert program[1] == []


def test_a_failed_build_is_a_message_not_a_traceback(program, capfd, monkeypatch):
    require_tool("gcc")
    path, _ = program

    def refuse(*args):
        raise NuppEnvironmentError("the C compiler failed (planted)")

    monkeypatch.setattr(pipeline, "execution_library", refuse)
    assert cli.main(["run", "--mode", "lane", "--tier", "baseline", str(path)]) == 2  # as when the bound library cannot be built
    err = capfd.readouterr().err
    assert "nupp run: error: the C compiler failed (planted)" in err
    assert "Traceback" not in err
