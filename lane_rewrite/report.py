"""The text of `nupp emit --report`: one line per loop over spans, saying whether the
lane rewrite turned it into gangs (with which values varying, which control
masked) or why it stays scalar.  The decisions are rewrite.py's, the very ones
lane C is built from; they do not depend on the gang, which the feature tier
picks at load time unless pinned (`--gang G` names it here).

    mandelbrot.nupp:16:5: loop over %i: lane-rewritten (varying: %cx, %cy, %i, %n, %nx, %zx, %zy; uniform: %maxIter; masked: while at 22:9)
    sum.nupp:3:5: loop over %i: stays scalar: %s carries add.f64 (binary64 addition) from one iteration to the next: reordering it would change the bits

and after each loop's line, whether lane C splits its gangs between threads
(`--threads N`, lane_rewrite/threads.py), or why it runs on one thread:

    mandelbrot.nupp:16:5: loop over %i: runs on threads under --threads N

and then, for a rewritten loop, the gang and vectors it runs in at each
feature tier and why (the caller's `shapes`):

    mandelbrot.nupp:16:5: loop over %i: at v4: gang 32 as 2 x 512-bit vectors: ...
"""

from __future__ import annotations

from nupp.lane_rewrite.rewrite import LaneDecision, lane_decisions
from nupp.lane_rewrite.threads import thread_refusal
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.varying import span_loops


def render_report(module: ir.Module, path: str, gang: int | None = None,
                  shapes: dict[tuple[str, ir.Loc], list[str]] | None = None) -> str:
    """One line per span loop; `gang`: the gang to name (a pinned one); `shapes`
    (the caller's: targets/gang_choice.py's cost model), by (function, loop
    location), a line per feature tier of how a rewritten loop runs there."""
    kinds = {}
    for fn in module.functions:
        kinds.update(_control_kinds(fn.body))
    loops = {(fn.name, loop.loc): loop for fn in module.functions for loop in span_loops(fn)}
    return "".join(f"{path}:{d.loc}: loop over %{d.counter}: {_verdict(d, kinds, gang)}\n"
                   f"{path}:{d.loc}: loop over %{d.counter}: {_threads(d, loops[d.function, d.loc])}\n"
                   + "".join(f"{path}:{d.loc}: loop over %{d.counter}: at {line}\n"
                             for line in (shapes or {}).get((d.function, d.loc), ()))
                   for d in lane_decisions(module))


def _threads(decision: LaneDecision, loop: ir.For) -> str:
    """Whether lane C splits the loop's gangs between threads, and if not, why."""
    refusal = thread_refusal(loop) if decision.rewritten else None
    if decision.rewritten and refusal is None:
        return "runs on threads under --threads N"
    return f"runs on one thread under --threads N: {refusal.reason if refusal else 'it stays scalar'}"


def _verdict(decision: LaneDecision, kinds: dict[ir.Loc, str], gang: int | None) -> str:
    if not decision.rewritten:
        return f"stays scalar: {decision.reason}"
    plan = decision.plan
    masked = [(loc, f"{kinds.get(loc, 'control')} at {loc}") for loc in plan.varying_control]
    masked += [(loc, f"break at {loc}") for loc in plan.masked_breaks]
    parts = [f"varying: {_names(plan.varying)}"]
    if plan.uniform:
        parts.append(f"uniform: {_names(plan.uniform)}")
    if masked:
        parts.append("masked: " + ", ".join(text for _, text in sorted(masked, key=lambda m: (m[0].line, m[0].col))))
    if plan.reductions:
        parts.append("reductions: " + ", ".join(f"%{name} ({op})" for name, op in zip(plan.reductions, plan.reduction_ops)))
    width = f" in gangs of {gang}" if gang else ""
    return f"lane-rewritten{width} ({'; '.join(parts)})"


def _names(names) -> str:
    return ", ".join(f"%{n}" for n in sorted(names))


def _control_kinds(stmts, elif_: bool = False) -> dict[ir.Loc, str]:
    """if / elif / while / for by location (an elif is an If alone in an else)."""
    kinds: dict[ir.Loc, str] = {}
    for s in stmts:
        if isinstance(s, ir.If):
            kinds.setdefault(s.loc, "elif" if elif_ else "if")
            kinds.update({k: v for k, v in _control_kinds(s.then).items() if k not in kinds})
            chain = len(s.orelse) == 1 and isinstance(s.orelse[0], ir.If)
            kinds.update({k: v for k, v in _control_kinds(s.orelse, chain).items() if k not in kinds})
        elif isinstance(s, (ir.While, ir.For)):
            kinds.setdefault(s.loc, "while" if isinstance(s, ir.While) else "for")
            kinds.update({k: v for k, v in _control_kinds(s.body).items() if k not in kinds})
    return kinds
