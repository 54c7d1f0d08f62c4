"""Read-only walks over the scalar IR, shared by the analyses and emitters."""

from __future__ import annotations

from typing import Iterator

from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import OPS


def blocks(s) -> tuple:
    """The statement blocks nested directly in a statement."""
    if isinstance(s, ir.If):
        return (s.then, s.orelse)
    if isinstance(s, (ir.For, ir.While, ir.Gang)):
        return (s.body,)
    return ()


def statements(stmts) -> Iterator:
    """Every statement of a block, nested ones included, in source order."""
    for s in stmts:
        yield s
        for block in blocks(s):
            yield from statements(block)


def own_exprs(s) -> tuple:
    """The expressions a statement evaluates itself (not those of its blocks)."""
    if isinstance(s, (ir.Let, ir.Assign, ir.Store, ir.Return)):
        return () if s.value is None else (s.value,)
    if isinstance(s, (ir.If, ir.While, ir.Assert)):
        return (s.cond,)
    if isinstance(s, (ir.For, ir.Gang)):
        return (s.start, s.stop)
    if isinstance(s, ir.Eval):
        return (s.expr,)
    return ()


def subexprs(e) -> Iterator:
    """An expression and every expression inside it."""
    yield e
    if isinstance(e, (ir.Op, ir.Call)):
        for arg in e.args:
            yield from subexprs(arg)


def var_names(e) -> list[str]:
    return [x.name for x in subexprs(e) if isinstance(x, ir.Var)]


def raises(e) -> bool:
    """Whether evaluating e can fail: some node of it fails_itself."""
    return any(fails_itself(x) for x in subexprs(e))


def fails_itself(x) -> bool:
    """Whether this node (not an argument of it) can fail: a call, or an integer
    // or % whose divisor may be zero (provably_nonzero)."""
    if isinstance(x, ir.Call):
        return True
    return isinstance(x, ir.Op) and bool(OPS[x.op].raises) and not provably_nonzero(x.args[1])


def provably_nonzero(e) -> bool:
    """Whether an integer expression is non-zero for every input: a non-zero
    literal, an `|` with one (`x | 1`), or a reinterpretation or widening of one."""
    if isinstance(e, ir.Const):
        return e.value != 0
    if isinstance(e, ir.Op):
        if OPS[e.op].base == "bor":
            return any(provably_nonzero(a) for a in e.args)
        if OPS[e.op].base in ("reinterpret", "widen"):
            return provably_nonzero(e.args[0])
    return False


def breaks_leaving(stmts) -> list:
    """The Breaks of `stmts` that leave the loop around them (not a loop nested in them)."""
    found = []
    for s in stmts:
        if isinstance(s, ir.Break):
            found.append(s)
        elif isinstance(s, ir.If):
            found += breaks_leaving(s.then) + breaks_leaving(s.orelse)
    return found
