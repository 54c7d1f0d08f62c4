"""The lane analysis (scalar_ir/varying.py) on every BENCH kernel's IR, and its
fixed point on small functions; tests/golden/lanes.test covers the report text."""

from __future__ import annotations

from pathlib import Path

import pytest
from nupp.scalar_ir.varying import analyze_function, analyze_module
from nupp.scalar_ir.nodes import Loc
from nupp.scalar_ir.text import parse_module

IR_DIR = Path(__file__).with_name("golden") / "ir"


def plans_of(name: str) -> dict:
    return analyze_module(parse_module((IR_DIR / name).read_text(encoding="utf-8")))


def only_plan(text: str):
    module = parse_module(text)
    (plan,) = analyze_function(module.functions[0])
    return plan


# ---- the BENCH kernels -----------------------------------------------------------------

@pytest.mark.parametrize("file, function", [
    ("mandelbrot.ir", "mandelbrot"),
    ("corrected.ir", "correct"),
    ("tecsbits.ir", "query"),
    ("mixedwidth.ir", "mix"),
    ("simd.ir", "advance"),
    ("seed_classify.ir", "classify"),
])
def test_bench_kernel_can_run_in_gangs(file, function):
    (plan,) = plans_of(file)[function]
    assert plan.lanes and plan.reason is None
    assert plan.lanes
    assert plan.counter == "i" and "i" in plan.varying
    assert not plan.reductions and not plan.masked_breaks


def test_every_bench_ir_file_analyzes():
    for path in sorted(IR_DIR.glob("*.ir")):
        for plans in analyze_module(parse_module(path.read_text(encoding="utf-8"))).values():
            assert all(p.lanes for p in plans), path.name


def test_functions_without_a_span_loop_have_no_plans():
    plans = plans_of("mixedwidth.ir")
    assert plans["add"] == () and plans["choose"] == ()
    assert plans_of("seed_add.ir") == {"add": (), "choose": ()}


def test_mandelbrot_while_is_varying_and_masked():
    (plan,) = plans_of("mandelbrot.ir")["mandelbrot"]
    assert plan.varying_control == (Loc(22, 9),)
    assert plan.varying == {"i", "cx", "cy", "zx", "zy", "n", "nx"}
    assert plan.uniform == {"maxIter"}


def test_tecsbits_switch_and_hit_are_masked():
    (plan,) = plans_of("tecsbits.ir")["query"]
    assert plan.varying_control == (Loc(27, 13), Loc(28, 13), Loc(29, 13), Loc(33, 12))
    assert plan.uniform == {"required", "excluded"}
    assert {"class", "sel", "x", "hit"} <= plan.varying


def test_simd_uniform_parameters():
    (plan,) = plans_of("simd.ir")["advance"]
    assert plan.varying == {"i", "v"} and plan.uniform == {"dt", "damping"}
    assert plan.varying_control == ()


# ---- the fixed point ---------------------------------------------------------------------

def test_varying_through_a_chain_of_assignments():
    # %a is read before %d is known to be varying: only a second round finds %a, %b, %c.
    plan = only_plan("""
struct P { x: number }
func f(%s: span<P> write exclusive, %k: f64) -> nil {
  for %i = 1:i32 to len %s step 1 {
    let %a: f64 = %k
    let %b: f64 = %k
    let %c: f64 = %k
    let %d: f64 = %k
    let %n: i32 = 0:i32
    while lt.i32(%n, 3:i32) {
      assign %a = %b
      assign %b = %c
      assign %c = %d
      assign %d = load.f64 %s[%i].x
      assign %n = add.i32(%n, 1:i32)
    }
    store %s[%i].x = %a
  }
}""")
    assert plan.lanes
    assert plan.varying == {"i", "a", "b", "c", "d"}
    assert plan.uniform == {"k", "n"}
    assert plan.varying_control == ()


def test_varying_through_control_flow():
    # %y gets only constants, but under a varying if; %z under a uniform one stays uniform.
    plan = only_plan("""
struct P { x: number }
func f(%s: span<P> write exclusive, %flag: bool) -> nil {
  for %i = 1:i32 to len %s step 1 {
    let %y: f64 = 0.0:f64
    let %z: f64 = 0.0:f64
    if gt.f64(load.f64 %s[%i].x, 0.0:f64) {                @5:5
      assign %y = 1.0:f64
    }
    if %flag {                                            @8:5
      assign %z = 2.0:f64
    }
    store %s[%i].x = add.f64(%y, %z)
  }
}""")
    assert plan.varying == {"i", "y"}
    assert plan.uniform == {"z", "flag"}
    assert plan.varying_control == (Loc(5, 5),)


def test_varying_control_found_late_makes_a_while_masked():
    # The while's condition reads only %n, which becomes varying once the
    # if inside it is known to be varying (through %t, set from %x).
    plan = only_plan("""
struct C { v: int32 }
func f(%s: span<C> write exclusive) -> nil {
  for %i = 1:i32 to len %s step 1 {
    let %n: i32 = 0:i32
    let %t: i32 = 0:i32
    let %x: i32 = 0:i32
    while lt.i32(%n, 10:i32) {                            @6:5
      if eq.i32(%t, 1:i32) {                              @7:7
        assign %n = add.i32(%n, 2:i32)
      }
      assign %n = add.i32(%n, 1:i32)
      assign %t = %x
      assign %x = load.i32 %s[%i].v
    }
    store %s[%i].v = %n
  }
}""")
    assert plan.varying == {"i", "n", "t", "x"}
    assert plan.varying_control == (Loc(6, 5), Loc(7, 7))


def test_a_varying_break_masks_its_while():
    plan = only_plan("""
struct C { v: int32 }
func f(%s: span<C> write exclusive, %limit: i32) -> nil {
  for %i = 1:i32 to len %s step 1 {
    let %k: i32 = 0:i32
    while lt.i32(%k, %limit) {                            @4:5
      if eq.i32(load.i32 %s[%i].v, %k) {                  @5:7
        break                                             @6:9
      }
      assign %k = add.i32(%k, 1:i32)
    }
    store %s[%i].v = %k
  }
}""")
    assert plan.lanes
    assert plan.masked_breaks == (Loc(6, 9),)
    assert plan.varying_control == (Loc(4, 5), Loc(5, 7))
    assert "k" in plan.varying


def test_reductions_are_admitted_and_named():
    plan = only_plan("""
struct C { v: int32 }
func f(%s: span<C> read borrows) -> i32 {
  let %h: i32 = 0:i32
  let %m: i32 = -1:i32
  for %i = 1:i32 to len %s step 1 {
    assign %h = add.i32(%h, load.i32 %s[%i].v)
    assign %m = band.i32(load.i32 %s[%i].v, %m)
  }
  return bxor.i32(%h, %m)
}""")
    assert plan.lanes
    assert dict(zip(plan.reductions, plan.reduction_ops)) == {"h": "add.i32", "m": "band.i32"}


def test_binary64_running_sum_is_refused_with_its_op():
    plan = only_plan("""
struct P { x: number }
func f(%s: span<P> read borrows) -> f64 {
  let %sum: f64 = 0.0:f64
  for %i = 1:i32 to len %s step 1 {
    assign %sum = add.f64(%sum, load.f64 %s[%i].x)
  }
  return %sum
}""")
    assert not plan.lanes
    assert plan.reason.startswith("%sum carries add.f64 (binary64 addition) from one iteration to the next")


def test_a_loop_not_over_a_span_is_not_analyzed():
    module = parse_module("""
func f(%n: i32) -> i32 {
  let %t: i32 = 0:i32
  for %i = 1:i32 to %n step 1 {
    assign %t = add.i32(%t, %i)
  }
  return %t
}""")
    assert analyze_function(module.functions[0]) == ()
