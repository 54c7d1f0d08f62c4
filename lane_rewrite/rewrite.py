"""The lane rewrite: scalar IR in, lane IR out (verified), one decision per span loop.

    rewrite_lanes(module)         -> lane IR module (unsized Gangs)
    lane_decisions(module)        -> [LaneDecision] (what `nupp emit --report` prints)

Each outermost span loop (varying.span_loops) that the analysis admits
(scalar_ir/varying.py) and that the lane emitter can run (`gang_refusal`)
becomes a `Gang`: the same counter, bounds and body, its varying
locals by name, and every If / While / For of the body whose condition or
bounds vary marked `masked`.  Nothing else changes: per lane the statements,
ops and their order are the scalar loop's, which is why lane code agrees
with it bit for bit.  A refused loop stays the scalar `For`, and its
decision says why.

Example (text in, text out):

    for %i = 1:i32 to len %out step 1 {                         @16:5
      let %n: i32 = 0:i32                                        @21:15
      while and.bool(lt.i32(%n, %maxIter), ...) {               @22:9
        ...
      }
      store %out[%i].n = %n                                      @28:9
    }

becomes

    gang %i = 1:i32 to len %out varying(%i, %n, ...) {           @16:5
      let %n: i32 = 0:i32                                        @21:15
      while.masked and.bool(lt.i32(%n, %maxIter), ...) {        @22:9
      ...

Which loops run in gangs, and the masks, follow the lane legality rules of
scalar_ir/lanes.py (`gang_refusal`, `mark_masks`); the verifier checks a
Gang against those same rules and against a fresh inference of its varying
locals and masks.  The rewrite does not depend on the gang size: its Gangs
are unsized (`gang %i = ...`), and `size_gangs` (lane_rewrite/gang_size.py)
gives them the size a target runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.lanes import gang_refusal, mark_masks
from nupp.scalar_ir.varying import LoopPlan, analyze_function, span_loops
from nupp.scalar_ir.walk import blocks


@dataclass(frozen=True)
class LaneDecision:
    function: str
    loc: ir.Loc
    counter: str
    plan: LoopPlan
    reason: Optional[str]  # why the loop stays scalar; None: it runs in gangs

    @property
    def rewritten(self) -> bool:
        return self.reason is None


def lane_decisions(module: ir.Module) -> list[LaneDecision]:
    """For each outermost span loop of each function, whether it is rewritten, and why not."""
    return [decision for fn in module.functions for _, decision in _decide(fn)]


def rewrite_lanes(module: ir.Module) -> ir.Module:
    """The lane IR of a (verified, scalar) module: admitted span loops become unsized Gangs."""
    return replace(module, functions=tuple(_rewrite_function(fn) for fn in module.functions))


def _decide(fn: ir.Function) -> list[tuple[ir.For, LaneDecision]]:
    out = []
    enclosing = _enclosing_loops(fn)
    for loop, plan in zip(span_loops(fn), analyze_function(fn)):
        outer = enclosing.get(id(loop))
        if outer is not None:  # the emitter runs gangs only outside every loop
            reason = f"inside the loop at {outer.loc} (gangs run only outside other loops)"
        else:
            reason = plan.reason if not plan.lanes else gang_refusal(fn, loop, plan.varying, plan)
        out.append((loop, LaneDecision(fn.name, loop.loc, loop.var, plan, reason)))
    return out


def _enclosing_loops(fn: ir.Function) -> dict[int, object]:
    """id of each statement inside a For or While -> the outermost such loop."""
    found: dict[int, object] = {}

    def visit(stmts, outer) -> None:
        for s in stmts:
            if outer is not None:
                found[id(s)] = outer
            inner = outer if outer is not None or not isinstance(s, (ir.For, ir.While)) else s
            for block in blocks(s):
                visit(block, inner)

    visit(fn.body, None)
    return found


def _rewrite_function(fn: ir.Function) -> ir.Function:
    chosen = {id(loop): d.plan for loop, d in _decide(fn) if d.rewritten}
    if not chosen:
        return fn

    def stmts(block) -> tuple:
        return tuple(stmt(s) for s in block)

    def stmt(s):
        plan = chosen.get(id(s))
        if plan is not None:
            varying = tuple(sorted(plan.varying))
            reductions = tuple(sorted(zip(plan.reductions, plan.reduction_ops)))
            return ir.Gang(s.var, s.start, s.stop, None, varying, mark_masks(s.body, plan.varying), s.loc,
                           reductions)
        if isinstance(s, ir.If):
            return replace(s, then=stmts(s.then), orelse=stmts(s.orelse))
        if isinstance(s, (ir.For, ir.While)):
            return replace(s, body=stmts(s.body))
        return s

    return replace(fn, body=stmts(fn.body))


