"""The identity transform every IR pass builds on.

A pass subclasses `Transform` and overrides the `expr_X` / `stmt_X` methods
for the nodes it changes; everything else is rebuilt unchanged (and shared,
when no child changed).
"""

from __future__ import annotations

from dataclasses import fields, replace

from nupp.scalar_ir import nodes as ir


class Transform:
    def function(self, fn: ir.Function) -> ir.Function:
        body = self.block(fn.body)
        return fn if _same(body, fn.body) else replace(fn, body=body)

    def module(self, module: ir.Module) -> ir.Module:
        return replace(module, functions=tuple(self.function(f) for f in module.functions))

    def block(self, stmts: tuple) -> tuple:
        out: list = []
        for stmt in stmts:
            new = self.stmt(stmt)
            out.extend(new if isinstance(new, (list, tuple)) else [new])
        return stmts if _same(out, stmts) else tuple(out)

    def stmt(self, stmt):
        """A statement, or a list of statements to splice in its place."""
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        return method(stmt) if method else self.rebuild(stmt)

    def expr(self, expr):
        method = getattr(self, "expr_" + type(expr).__name__, None)
        return method(expr) if method else self.rebuild(expr)

    def rebuild(self, node):
        changes = {}
        for f in fields(node):
            value = getattr(node, f.name)
            new = self._child(value)
            if new is not value:
                changes[f.name] = new
        return replace(node, **changes) if changes else node

    def _child(self, value):
        if isinstance(value, tuple) and value and _is_stmt(value[0]):
            return self.block(value)
        if isinstance(value, tuple) and value and _is_expr(value[0]):
            new = tuple(self.expr(v) for v in value)
            # identity, not ==: equality ignores locations, and a pass may change only those
            return value if all(a is b for a, b in zip(new, value)) else new
        if _is_expr(value):
            return self.expr(value)
        return value


def _same(new, old) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


_EXPR_TYPES = (ir.Const, ir.Var, ir.Op, ir.Load, ir.Len, ir.Call)
_STMT_TYPES = (ir.Let, ir.Assign, ir.Store, ir.If, ir.For, ir.While, ir.Break, ir.Return, ir.Assert, ir.Eval)


def _is_expr(value) -> bool:
    return isinstance(value, _EXPR_TYPES)


def _is_stmt(value) -> bool:
    return isinstance(value, _STMT_TYPES)
