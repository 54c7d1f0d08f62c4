"""The lane rewrite: scalar IR in, lane IR out (verified), one decision per span loop.

    rewrite_lanes(module, gang=8) -> lane IR module
    lane_decisions(module)        -> [LaneDecision] (what `nupp emit --report` prints)

Each outermost span loop (varying.span_loops) that the analysis admits
(varying.py) and that the lane emitter can run (`gang_refusal` below) becomes
a `Gang`: the same counter, bounds and body, the gang size, its varying
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

    gang 8 %i = 1:i32 to len %out varying(%i, %n, ...) {         @16:5
      let %n: i32 = 0:i32                                        @21:15
      while.masked and.bool(lt.i32(%n, %maxIter), ...) {        @22:9
      ...

What the emitter runs in gangs today (`gang_refusal`): step 1; masks for
varying ifs (elif chains and switches included), whiles and inner fors
whose counter varies, nested in each other freely; a break under a mask
leaves its loop lane by lane; reductions with an exact op (each lane
accumulates, the lanes are combined after the gangs: any order gives the
same bits for an exact op); a local declared outside the loop and given a
varying value in it only if nothing reads it after the loop (each lane has
its own copy); a break out of the span loop itself, before anything
observable in its iteration (the analysis checks): lanes from the first
breaking one on stop, and no later gang or tail runs; an op that can raise
(an integer // or % by a divisor that may be zero) or a call (once per
active lane), with a varying operand, before anything observable in its
iteration and outside inner loops: the lanes from the first failing one on
stop, the others finish, and the first lane's error is raised.  Not yet: a
return in the loop; a uniform op that can raise or call; one inside an
inner loop or after a store.  Memory: every store,
and every load of a span the loop writes, at the counter; a load at another
index reads at a uniform local; every span the loop writes disjoint from
every other span it touches.  The verifier checks a Gang against these
same rules and against a fresh inference of its varying locals and masks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from nupp.lane_rewrite.varying import (LoopPlan, analyze_function, outer_assigned, outer_read_after,
                                       reductions_of, span_loops)
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.walk import blocks, fails_itself, own_exprs, raises, statements, subexprs
from nupp.verifier import check as verify

GANG_SIZES = (4, 8, 16)


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


def rewrite_lanes(module: ir.Module, gang: int = 8) -> ir.Module:
    """The lane IR of a (verified, scalar) module: admitted span loops become Gangs of `gang`."""
    if gang not in GANG_SIZES:
        raise ValueError(f"gang must be one of {GANG_SIZES}, not {gang}")
    functions = tuple(_rewrite_function(fn, gang) for fn in module.functions)
    result = replace(module, functions=functions)
    verify(result, "lanes", lane_ir=True)
    return result


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


def _rewrite_function(fn: ir.Function, gang: int) -> ir.Function:
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
            return ir.Gang(s.var, s.start, s.stop, gang, varying, mark_masks(s.body, plan.varying), s.loc,
                           reductions)
        if isinstance(s, ir.If):
            return replace(s, then=stmts(s.then), orelse=stmts(s.orelse))
        if isinstance(s, (ir.For, ir.While)):
            return replace(s, body=stmts(s.body))
        return s

    return replace(fn, body=stmts(fn.body))


def mark_masks(body, varying) -> tuple:
    """The body with `masked` set on each If / While whose condition varies, each
    While that a lane can leave by a break under a mask, and each For whose
    counter varies (its bounds vary, or it runs under a mask: the analysis
    makes its counter varying then)."""
    out = []
    for s in body:
        if isinstance(s, ir.If):
            s = replace(s, then=mark_masks(s.then, varying), orelse=mark_masks(s.orelse, varying),
                        masked=is_varying(s.cond, varying))
        elif isinstance(s, ir.While):
            s = replace(s, body=mark_masks(s.body, varying),
                        masked=is_varying(s.cond, varying) or masked_break(s.body, varying))
        elif isinstance(s, ir.For):  # its counter varies: varying bounds, or under a mask
            s = replace(s, body=mark_masks(s.body, varying), masked=s.var in varying)
        out.append(s)
    return tuple(out)


def masked_break(body, varying, masked: bool = False) -> bool:
    """Whether a break in `body` (not in a loop nested in it) runs under a varying if."""
    for s in body:
        if isinstance(s, ir.Break) and masked:
            return True
        if isinstance(s, ir.If):
            inner = masked or is_varying(s.cond, varying)
            if masked_break(s.then, varying, inner) or masked_break(s.orelse, varying, inner):
                return True
    return False


def is_varying(e, varying) -> bool:
    """An expression varies when it loads an element or reads a varying local."""
    return any(isinstance(x, ir.Load) or (isinstance(x, ir.Var) and x.name in varying)
               for x in subexprs(e))


# ---- what the lane emitter runs in gangs ----------------------------------------------

def gang_refusal(fn: ir.Function, loop, varying, plan: Optional[LoopPlan] = None) -> Optional[str]:
    """Why a span loop (For or Gang) the analysis admits cannot run in gangs yet, or None."""
    if not fn.vectorize:
        return "marked @aot(vectorize = false)"
    if getattr(loop, "step", 1) != 1:
        return f"step {loop.step} (gangs need step 1)"
    inside = list(statements(loop.body))
    return (_statement_refusal(inside, loop, varying)
            or _outer_refusal(fn, loop, varying)
            or _access_refusal(fn, inside, loop, varying))


def _statement_refusal(inside, loop, varying) -> Optional[str]:
    for s in inside:
        if isinstance(s, ir.Assert):
            return f"an assert at {s.loc} in the loop"
        if isinstance(s, ir.Store) and s.index != loop.var:
            return f"a store at %{s.index}, not the counter, at {s.loc}"
    return _raise_refusal(loop, varying)


def _raise_refusal(loop, varying) -> Optional[str]:
    """An op that can raise runs in a gang only before anything observable in
    its iteration (a store, an assignment to an outside local), so that when
    lane j raises, the lanes after it have done nothing the scalar loop would
    not have done: they stop, the lanes before it finish their iteration,
    and the error is the first lane's.  The op (or call) must have a varying
    operand, so that its lanes are tested one by one; a uniform one would fail
    for every lane at once.  Not inside an inner loop (yet)."""
    outer = outer_assigned(loop)
    uniform = next((x for st in statements(loop.body) for e in own_exprs(st) for x in subexprs(e)
                    if fails_itself(x) and not is_varying(x, varying)), None)
    if uniform is not None:
        return f"an op that can raise with uniform operands at {uniform.loc} (not rewritten yet)"
    effect: list = []

    def visit(stmts, in_loop: bool) -> Optional[str]:
        for s in stmts:
            looping = in_loop or isinstance(s, ir.While)
            if any(raises(e) for e in own_exprs(s)):
                if looping:
                    return f"an op that can raise at {s.loc} inside an inner loop (not rewritten yet)"
                if effect:
                    return (f"an op that can raise at {s.loc} after {effect[0]} in the same iteration: "
                            "the later lanes of a gang would already have done it")
            if not effect and (isinstance(s, ir.Store) or (isinstance(s, ir.Assign) and s.name in outer)):
                effect.append(f"{'a store' if isinstance(s, ir.Store) else 'an assignment to %' + s.name} at {s.loc}")
            for block in blocks(s):
                problem = visit(block, looping or isinstance(s, ir.For))
                if problem:
                    return problem
        return None

    return visit(loop.body, False)


def _outer_refusal(fn: ir.Function, loop, varying) -> Optional[str]:
    """A local declared outside the loop may vary in it (each lane its own copy,
    a vector in the gang) only when no one reads it after the loop: its final
    value would have to come from the last lane.  A reduction is read after
    it: its lanes are combined into it after the gangs."""
    for name in sorted((outer_read_after(fn, loop) & set(varying)) - set(reductions_of(loop))):
        return f"%{name}, declared outside the loop, gets a varying value in it and is read after it"
    return None


def _access_refusal(fn: ir.Function, inside, loop, varying) -> Optional[str]:
    stored = {s.span for s in inside if isinstance(s, ir.Store)}
    loads = [(s, x) for s in inside for e in own_exprs(s) for x in subexprs(e) if isinstance(x, ir.Load)]
    for s, x in loads:
        if x.index != loop.var and (x.span in stored or x.index in varying):
            return f"a load of %{x.span} at %{x.index}, not the counter, at {s.loc}"
    touched = stored | {x.span for _, x in loads}
    facts = {frozenset((a.a, a.b)): a.fact for a in fn.aliases}
    for a in sorted(stored):
        for b in sorted(touched - {a}):
            if facts.get(frozenset((a, b))) != ir.DISJOINT:
                return f"%{a} is written and not known disjoint from %{b}"
    return None
