"""The text of `nupp emit --report`: one line per loop over spans, saying whether it
can run in gangs (and with which values varying, which control masked) or why it
stays scalar.  The analysis is varying.py's; the rewrite itself comes later, so
the words are "can run in gangs", never "was rewritten".

    mandelbrot.nupp:16:5: loop over %i: can run in gangs of 4, 8, 16 (varying: %cx, %cy, %i, %n, %nx, %zx, %zy; uniform: %maxIter; masked: while at 22:9)
    sum.nupp:3:5: loop over %i: stays scalar: %s carries add.f64 (binary64 addition) from one iteration to the next: reordering it would change the bits
"""

from __future__ import annotations

from nupp.lane_rewrite.varying import LoopPlan
from nupp.scalar_ir import nodes as ir


def render_report(module: ir.Module, plans: dict[str, tuple[LoopPlan, ...]], path: str) -> str:
    lines = []
    for fn in module.functions:
        kinds = _control_kinds(fn.body)
        for plan in plans.get(fn.name, ()):
            lines.append(f"{path}:{plan.loc}: loop over %{plan.counter}: " + _verdict(plan, kinds))
    return "".join(line + "\n" for line in lines)


def _verdict(plan: LoopPlan, kinds: dict[ir.Loc, str]) -> str:
    if not plan.lanes:
        return f"stays scalar: {plan.reason}"
    masked = [(loc, f"{kinds.get(loc, 'control')} at {loc}") for loc in plan.varying_control]
    masked += [(loc, f"break at {loc}") for loc in plan.masked_breaks]
    parts = [f"varying: {_names(plan.varying)}"]
    if plan.uniform:
        parts.append(f"uniform: {_names(plan.uniform)}")
    if masked:
        parts.append("masked: " + ", ".join(text for _, text in sorted(masked, key=lambda m: (m[0].line, m[0].col))))
    if plan.reductions:
        parts.append("reductions: " + ", ".join(f"%{name} ({op})" for name, op in zip(plan.reductions, plan.reduction_ops)))
    return f"can run in gangs of {', '.join(map(str, plan.gangs))} ({'; '.join(parts)})"


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
