"""Each stage of the pipeline runs once where it should (nupp/pipeline.py).

`nupp run` (the CLI in this process) of a script that requires a module with
an `@aot` span kernel, in every mode:
  * the front end parses and checks each module exactly once;
  * the verifier is called only from nupp/pipeline.py (what imports it is
    pyproject.toml's import-linter contract "verifier", tests/test_layers.py);
  * in lane mode the lane rewrite runs once for the module, and the lane IR
    is sized once, at the gang of the tier this CPU runs (the one built); a
    tree for distribution sizes it once per distinct gang, though two tiers
    share a gang.
Calls are counted by wrapping each function wherever a nupp module holds it:
its own module and every module that imported it by name.
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest

import nupp.runtime.cli as cli
from nupp.errors import Source
from nupp.frontend import checker, parser
from nupp.lane_rewrite import gang_size, rewrite
from nupp.pipeline import MODES, Request, compile_for_tree, compile_module, lane_ir
from nupp.targets.gang_choice import gang_choices
from nupp.targets.tiers import TIERS
from nupp.verifier import verify

from .conftest import require_tool

MAIN = """\
local span = nupp.mem.span
local k = require("kernels")
local xs = span.new(k.Cell, 20)
local out = span.new(k.Cell, 20)
for i = 1, #xs do
    xs[i].n = i
end
k.shift(out, xs, 100)
local sum = 0
for i = 1, #out do
    sum = sum + out[i].n
end
print(sum)
"""

# int32 fields: a 16-byte register holds 4 lanes, so the two 16-byte tiers share gang 4
KERNELS = """\
local span = nupp.mem.span

local struct Cell
    n: int32
end

@aot
local function shift(exclusive out: span.WriteSpan<Cell>, borrows xs: span.Span<Cell>, k: int32): nil
    assert(#out == #xs, "length mismatch")
    for i = 1, #out do
        out[i].n = xs[i].n + k
    end
end

return {Cell = Cell, shift = shift}
"""
SUM = sum(range(1, 21)) + 20 * 100


class Call(NamedTuple):
    function: str
    caller: str  # the calling module's name
    args: tuple


def spy(monkeypatch, function, calls: list[Call]) -> None:
    """Wrap `function` in every nupp module that holds it, recording each call in `calls`."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        calls.append(Call(function.__name__, sys._getframe(1).f_globals.get("__name__"), args))
        return function(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name == "nupp" or name.startswith("nupp."):
            for attribute, value in list(vars(module).items()):
                if value is function:
                    monkeypatch.setattr(module, attribute, wrapper)


SPIED = (parser.parse, checker.check_module, rewrite.rewrite_lanes, gang_size.shape_gangs,
         verify.check, verify.verify_module, verify.verify_function)


@pytest.fixture
def program(tmp_path, monkeypatch) -> Path:
    """main.nupp requiring kernels.nupp; a private, empty compile cache."""
    (tmp_path / "kernels.nupp").write_text(KERNELS)
    (tmp_path / "main.nupp").write_text(MAIN)
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "main.nupp"


@pytest.fixture(params=MODES)
def run(request, program, monkeypatch, capfd) -> tuple[str, list[Call]]:
    """`nupp run --mode MODE main.nupp`: the mode and every call of SPIED."""
    mode = request.param
    if mode != "interp":
        require_tool("gcc")
    calls: list[Call] = []
    for function in SPIED:
        spy(monkeypatch, function, calls)
    assert cli.main(["run", "--mode", mode, str(program)]) == 0
    assert capfd.readouterr().out == f"{SUM}\n"
    return mode, calls


def called(calls: list[Call], function) -> list[Call]:
    return [c for c in calls if c.function == function.__name__]


def test_the_front_end_runs_once_per_module(run):
    _, calls = run
    for function in (parser.parse, checker.check_module):
        modules = Counter(Path(c.args[0].path).name for c in called(calls, function))
        assert modules == {"main.nupp": 1, "kernels.nupp": 1}, function.__name__


def test_only_the_pipeline_calls_the_verifier(run):
    _, calls = run
    entry = called(calls, verify.check)
    assert entry and {c.caller for c in entry} == {"nupp.pipeline"}
    inner = called(calls, verify.verify_module) + called(calls, verify.verify_function)
    assert {c.caller for c in inner} <= {verify.__name__}


def test_lane_ir_is_made_once_and_shaped_once_per_set_of_shapes(run, program, monkeypatch):
    """`nupp run` builds the tier this CPU runs alone: one shaping, the cost
    model's for that tier; a tree for distribution builds every tier, shaping
    once per distinct set of loop shapes (targets/gang_choice.py)."""
    mode, calls = run
    rewrites, shapings = called(calls, rewrite.rewrite_lanes), called(calls, gang_size.shape_gangs)
    if mode not in ("lane", "spirv"):  # spirv: the lane library runs what the device refuses
        assert rewrites == shapings == []
        return
    assert len(rewrites) == 1 and len(shapings) == 1  # main.nupp has no @aot functions
    source = Source.from_file(str(program.parent / "kernels.nupp"))
    lanes = lane_ir(compile_module(source))
    tree_calls: list[Call] = []
    for function in (rewrite.rewrite_lanes, gang_size.shape_gangs):
        spy(monkeypatch, function, tree_calls)
    compile_for_tree(source, Request(mode), "lib/kernels.so")
    tier_shapes = {tuple(c.shape for _, _, c in gang_choices(lanes, t.vector_bytes)) for t in TIERS}
    assert len(tier_shapes) < len(TIERS), "no two tiers share shapes: the test cannot fail"
    assert len(called(tree_calls, rewrite.rewrite_lanes)) == 1
    assert len(called(tree_calls, gang_size.shape_gangs)) == len(tier_shapes)


# ---- the backend seam: a backend is one registry entry ------------------------------------

def test_a_new_backend_is_one_registry_entry_and_gets_the_ir_it_declares(tmp_path, monkeypatch):
    """A backend registered in targets/backends.py alone is reachable through the
    pipeline, and receives verified IR of the kind it declares: folded scalar IR
    with no Gang, or lane IR whose every Gang has the asked size."""
    from nupp import pipeline
    from nupp.backend import Backend
    from nupp.scalar_ir import nodes as ir
    from nupp.scalar_ir.walk import statements
    from nupp.targets import backends

    def gang_sizes(module, path, prefix):
        return [s.size for fn in module.functions for s in statements(fn.body) if isinstance(s, ir.Gang)]

    monkeypatch.setitem(backends.BACKENDS, "toy-scalar", Backend("toy-scalar", "scalar", gang_sizes))
    monkeypatch.setitem(backends.BACKENDS, "toy-lanes", Backend("toy-lanes", "lanes", gang_sizes))
    source = Source("kernels.nupp", KERNELS)
    assert pipeline.emit(source, "toy-scalar") == []
    for gang in (4, 8, 16):
        assert pipeline.emit(source, "toy-lanes", gang) == [gang]
    with pytest.raises(ValueError, match="no backend named 'missing'"):
        pipeline.emit(source, "missing")


def test_the_registered_backends_and_executions():
    from nupp import pipeline
    from nupp.backend import TAKES
    from nupp.targets.backends import BACKENDS

    assert all(name == b.name and b.takes in TAKES for name, b in BACKENDS.items())
    assert set(BACKENDS) >= {"c", "lane-c"}
    assert pipeline.MODES == ("interp", *pipeline.LIBRARIES)
    with pytest.raises(ValueError, match="unknown mode 'gpu'"):
        pipeline.Request("gpu")
