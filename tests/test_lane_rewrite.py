"""The lane rewrite as an IR-to-IR pass (lane_rewrite/rewrite.py).

  * every BENCH kernel's span loop becomes a Gang, the lane IR verifies, and
    it prints and parses back to the same module (text in, text out);
  * a Gang's scalar_loop() is the loop it came from, masks dropped, and the
    rewrite changes nothing else in the module;
  * the verifier catches a Gang whose varying list or masks were edited
    wrong, and refuses lane IR where scalar IR is expected (the scalar
    emitter never sees a Gang);
  * the gang size is part of the decision text, not of the decision.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nupp.emit_c.scalar import emit_module
from nupp.errors import InternalError, Source
from nupp.lane_rewrite.rewrite import lane_decisions
from nupp.pipeline import lanes_at
from nupp.pipeline import compile_module
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.text import parse_module, print_module
from nupp.scalar_ir.walk import statements
from nupp.verifier import verify_module

from .test_lane_c import RAISING_KERNEL
from .test_native_differential import KERNELS


def bench(name: str) -> ir.Module:
    return compile_module(Source.from_file(str(KERNELS[name].path)))


def gangs(module: ir.Module) -> list[ir.Gang]:
    return [s for fn in module.functions for s in statements(fn.body) if isinstance(s, ir.Gang)]


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("size", (4, 8, 16))
def test_bench_lane_ir_verifies_and_round_trips(name, size):
    lanes = lanes_at(bench(name), size)
    assert [g.size for g in gangs(lanes)] == [size] * len(gangs(lanes)) and gangs(lanes)
    assert verify_module(lanes, lane_ir=True) == []
    assert parse_module(print_module(lanes)) == lanes


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_gang_is_its_loop_and_nothing_else_changes(name):
    module = bench(name)
    lanes = lanes_at(module, 8)

    def unganged(stmts):
        out = []
        for s in stmts:
            if isinstance(s, ir.Gang):
                s = s.scalar_loop()
            elif isinstance(s, ir.If):
                s = replace(s, then=unganged(s.then), orelse=unganged(s.orelse))
            elif isinstance(s, (ir.For, ir.While)):
                s = replace(s, body=unganged(s.body))
            out.append(s)
        return tuple(out)

    back = replace(lanes, functions=tuple(replace(f, body=unganged(f.body)) for f in lanes.functions))
    assert back == module


def test_mandelbrot_while_is_masked_and_its_locals_vary():
    (gang,) = gangs(lanes_at(bench("mandelbrot"), 8))
    assert set(gang.varying) == {"cx", "cy", "i", "n", "nx", "zx", "zy"}
    (loop,) = [s for s in statements(gang.body) if isinstance(s, ir.While)]
    assert loop.masked


def _edited(module: ir.Module, edit) -> ir.Module:
    fn = next(f for f in module.functions if any(isinstance(s, ir.Gang) for s in f.body))
    body = tuple(edit(s) if isinstance(s, ir.Gang) else s for s in fn.body)
    return replace(module, functions=tuple(replace(f, body=body) if f is fn else f for f in module.functions))


def test_verifier_catches_a_dropped_varying_local():
    lanes = lanes_at(bench("mandelbrot"), 8)
    broken = _edited(lanes, lambda g: replace(g, varying=tuple(v for v in g.varying if v != "zx")))
    assert [e.rule for e in verify_module(broken, lane_ir=True)] == ["gang-varying"]


def test_verifier_catches_an_unmasked_varying_while():
    lanes = lanes_at(bench("mandelbrot"), 8)
    unmask = lambda g: replace(g, body=tuple(replace(s, masked=False) if isinstance(s, ir.While) else s
                                             for s in g.body))
    assert [e.rule for e in verify_module(_edited(lanes, unmask), lane_ir=True)] == ["gang-mask"]


def test_lane_ir_is_not_scalar_ir():
    lanes = lanes_at(bench("simd"), 8)
    assert "node-kind" in [e.rule for e in verify_module(lanes)]
    with pytest.raises(InternalError):
        emit_module(lanes, "simd.nupp")


def test_decisions_do_not_depend_on_the_gang_size():
    module = bench("tecsbits")
    assert lanes_at(module, 4) != lanes_at(module, 8)
    assert all(d.rewritten for d in lane_decisions(module))
    assert [g.varying for g in gangs(lanes_at(module, 4))] == [g.varying for g in gangs(lanes_at(module, 16))]


def test_vectorize_false_stays_scalar():
    module = bench("simd")
    module = replace(module, functions=tuple(replace(f, vectorize=False) for f in module.functions))
    assert lanes_at(module, 8) == module
    assert {d.reason for d in lane_decisions(module)} == {"marked @aot(vectorize = false)"}


@pytest.mark.parametrize("divisor, checked", [("d", True), ("(d | 1)", False), ("3", False),
                                               ("(d | 0)", True), ("(2 | d)", False)])
def test_a_division_needs_a_zero_check_only_where_its_divisor_may_be_zero(divisor, checked):
    """Provably non-zero divisors (provably_nonzero) cannot raise; a division
    that can runs in gangs too (before any store in its iteration)."""
    module = compile_module(Source("divide.nupp", RAISING_KERNEL.replace("// d\n", f"// {divisor}\n")))
    (decision,) = lane_decisions(module)
    assert decision.rewritten, decision.reason
    scalar_c = emit_module(module, "divide.nupp").source
    assert ("integer division by zero" in scalar_c) == checked
