"""Lane legality: the rules a Gang of lane IR obeys, shared by the lane rewrite
(which applies them) and the verifier (which checks a Gang against them).

    GANG_SIZES                       the gang sizes an emitter runs
    VECTOR_BITS                      the vector widths a gang's values may be capped at
    is_varying(e, varying)           does an expression differ between lanes
    mark_masks(body, varying)        which If / While / For run under a mask
    gang_refusal(fn, loop, varying)  why a span loop cannot run in gangs, or None

What runs in gangs today: step 1; masks for varying ifs (elif chains and
switches included), whiles and inner fors whose counter varies, nested in
each other freely; a break under a mask leaves its loop lane by lane;
reductions with an exact op (each lane accumulates, the lanes are combined
after the gangs: any order gives the same bits for an exact op); a local
declared outside the loop and given a varying value in it only if nothing
reads it after the loop (each lane has its own copy); a break out of the
span loop itself, before anything observable in its iteration (the analysis
checks): lanes from the first breaking one on stop, and no later gang or
tail runs; an op that can raise (an integer // or % by a divisor that may
be zero) or a call (once per active lane), with a varying operand, before
anything observable in its iteration and outside inner loops: the lanes
from the first failing one on stop, the others finish, and the first lane's
error is raised.  Not yet: a return in the loop; a uniform op that can raise
or call; one inside an inner loop or after a store.  Memory: every store,
and every load of a span the loop writes, at the counter; a load at another
index reads at a uniform local; every span the loop writes disjoint from
every other span it touches.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.varying import LoopPlan, outer_assigned, outer_read_after, reductions_of
from nupp.scalar_ir.walk import blocks, fails_itself, own_exprs, raises, statements, subexprs

GANG_SIZES = (4, 8, 16, 32)
VECTOR_BITS = (128, 256, 512)  # SSE / AVX / AVX-512 registers (Gang.vector_bits)


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
    pair = written_not_disjoint(fn, stored, stored | {x.span for _, x in loads})
    return None if pair is None else f"%{pair[0]} is written and not known disjoint from %{pair[1]}"


def written_not_disjoint(fn: ir.Function, stored: set, touched: set) -> Optional[tuple[str, str]]:
    """A span `fn` writes (one of `stored`) and another it reads or writes
    (of `touched`) that the alias matrix does not know disjoint, or None."""
    facts = {frozenset((a.a, a.b)): a.fact for a in fn.aliases}
    for a in sorted(stored):
        for b in sorted(touched - {a}):
            if facts.get(frozenset((a, b))) != ir.DISJOINT:
                return a, b
    return None
