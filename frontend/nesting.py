"""How deeply a program may nest, checked once on the AST.

Two limits, each refused with a diagnostic where it is first exceeded:

* LuaJIT's own: what it refuses, nupp refuses at the same place (and
  `nupp check` says so too);
* nupp's: a tree deeper than MAX_TREE_DEPTH, which only a chain LuaJIT
  parses without nesting can build (`1 + 1 + ...`, `a.b.b.b...`, `f()()()...`).
  Every later stage recurses over trees; `nupp.deep_stack.with_deep_stack`
  gives them room for this depth.

LuaJIT's parser (lj_parse.c) counts *syntax levels*: one for each block it
parses (`parse_chunk`) and one for each expression operand (`expr_binop`),
and stops with "chunk has too many syntax levels" where the count reaches
LJ_MAX_XLEVEL.  On the AST that means, counting from the chunk's block at
level 1:

    a block inside a statement or function         one deeper
    an expression a statement holds                one deeper
    a binary operator's right operand               one deeper; its left one is not
    a unary operand, a parenthesized expression,
    a call argument, an index key, a table entry   one deeper

so a left-associative chain `1 + 1 + ...` stays at one level however long,
while nested blocks, parentheses and calls, and right-associative chains
(`..`, `^`), each count.  The walk keeps its own stack: a tree of any depth
is measured without recursion.
"""

from __future__ import annotations

from nupp.frontend import ast
from nupp.errors import Source, error_at

LJ_MAX_XLEVEL = 200  # lj_def.h: the first level LuaJIT refuses
MAX_TREE_DEPTH = 20_000  # nodes from the chunk down to the deepest leaf


def check_nesting(source: Source, chunk: ast.Chunk) -> None:
    """Raise a NuppError at the first construct nested deeper than LuaJIT or nupp allows."""
    found = first_too_deep(chunk)
    if found is None:
        return
    where, limit = found
    if limit == "levels":
        raise error_at(source, where.line, where.col, "chunk has too many syntax levels",
                       f"LuaJIT nests blocks, parenthesized expressions, call arguments, table entries and "
                       f"operands at most {LJ_MAX_XLEVEL - 1} deep; compute the inner part into a local "
                       "variable, or move it into a function of its own")
    raise error_at(source, where.line, where.col,
                   f"expression nested too deeply (nupp compiles trees at most {MAX_TREE_DEPTH} deep)",
                   "a chain of operators, calls or fields this long is one deep tree; compute part of "
                   "it into a local variable first")


def first_too_deep(chunk: ast.Chunk) -> tuple[ast.Span, str] | None:
    """Where the first construct (in source order) nested too deeply starts (an
    empty block: where its parent starts), and which limit it reaches:
    "levels" (LuaJIT's) or "depth" (nupp's); None if none is."""
    stack = [(chunk.body, 1, 1, chunk.span)]
    while stack:
        node, level, depth, where = stack.pop()
        if node.span != ast.NO_SPAN:
            where = node.span
        if level >= LJ_MAX_XLEVEL:
            return where, "levels"
        if depth > MAX_TREE_DEPTH:
            return where, "depth"
        children = _CHILDREN.get(type(node))
        if children is not None:
            stack.extend((child, level + deeper, depth + 1, where) for child, deeper in reversed(children(node)))
    return None


def _nested(items, deeper: int = 1) -> list:
    return [(item, deeper) for item in items if item is not None]


def _if(s: ast.If) -> list:
    parts = []
    for cond, body in s.clauses:
        parts += [(cond, 1), (body, 1)]
    return parts + _nested((s.orelse,))


def _table(t: ast.Table) -> list:
    parts = []
    for f in t.fields:
        if f.kind == "keyed":
            parts.append((f.key, 1))
        parts.append((f.value, 1))
    return parts


def _switch(s: ast.Switch) -> list:
    arms = s.arms + ((s.otherwise,) if s.otherwise is not None else ())
    return [(s.subject, 1)] + _nested(part for arm in arms for part in (arm.expr, arm.block))


def _function(s) -> list:
    args = [value for attr in getattr(s, "attributes", ()) for _, value in attr.args]
    return _nested(args) + [(s.func.body, 1)]


# Each node's children in source order, with whether each is one level deeper.
_CHILDREN = {
    ast.Block: lambda b: _nested(b.stats, 0),
    ast.Local: lambda s: _nested(s.values),
    ast.Assign: lambda s: _nested(s.targets, 0) + _nested(s.values),
    ast.CallStat: lambda s: [(s.call, 0)],
    ast.Do: lambda s: [(s.body, 1)],
    ast.While: lambda s: [(s.cond, 1), (s.body, 1)],
    ast.Repeat: lambda s: [(s.body, 1), (s.cond, 1)],
    ast.If: _if,
    ast.NumericFor: lambda s: _nested((s.start, s.stop, s.step, s.body)),
    ast.GenericFor: lambda s: _nested(s.exprs + (s.body,)),
    ast.FunctionStat: _function,
    ast.LocalFunction: _function,
    ast.Return: lambda s: _nested(s.values),
    ast.SwitchStat: lambda s: [(s.switch, 0)],
    ast.BinOp: lambda e: [(e.left, 0), (e.right, 1)],
    ast.UnOp: lambda e: [(e.operand, 1)],
    ast.Paren: lambda e: [(e.expr, 1)],
    ast.Call: lambda e: [(e.func, 0)] + _nested(e.args),
    ast.MethodCall: lambda e: [(e.obj, 0)] + _nested(e.args),
    ast.Index: lambda e: [(e.obj, 0), (e.key, 1)],
    ast.Field: lambda e: [(e.obj, 0)],
    ast.Table: _table,
    ast.Function: _function,
    ast.Switch: _switch,
}
