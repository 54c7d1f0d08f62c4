"""Ordinary execution of `@aot` functions: their scalar IR written as Lua.

Inside an `@aot` function the annotations govern ordinary execution too
(LANGUAGE.md section 1): an int32 `+` wraps, a float local narrows, a mixed
comparison answers by value.  So the interpreter runs the function's checked
IR, rendered as Lua that keeps the source's shape (locals, if, for, while)
and its line numbers: every node carries its source location and the Lua
writer places it on that line.

Each opcode renders either as a plain Lua operator (`NATIVE`: binary64
arithmetic, comparisons that LuaJIT answers exactly, booleans, the `bit`
library) or as a call of the runtime's function of the same name
(`runtime/lua/ops.lua`, `__nupp_ops["mul.i32"](a, b)`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from nupp.frontend import ast
from nupp.frontend.printer import lua_string
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import OPS, check_rendered
from nupp.scalar_ir.widths import Width

OPS_TABLE = "__nupp_ops"
BIT = "__nupp_bitlib"  # LuaJIT's `bit` library itself (ordinary code's `__nupp_bit` names the checked operators)

_NUMBER_WIDTHS = ("f64", "i32", "u32")
_LUA_COMPARE = {"eq": "==", "ne": "~=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

# opcode -> ("binop", lua operator) | ("unop", lua operator) | ("bit", function) | ("same",)
NATIVE: dict[str, tuple] = {
    "add.f64": ("binop", "+"), "sub.f64": ("binop", "-"), "mul.f64": ("binop", "*"),
    "div.f64": ("binop", "/"), "neg.f64": ("unop", "-"),
    "and.bool": ("binop", "and"), "or.bool": ("binop", "or"), "not.bool": ("unop", "not"),
    "eq.bool": ("binop", "=="), "ne.bool": ("binop", "~="),
    # exact: these values are already binary64 numbers
    "promote.f32.f64": ("same",), "promote.i32.f64": ("same",), "promote.u32.f64": ("same",),
}
for _w in _NUMBER_WIDTHS + ("i64", "u64"):  # LuaJIT compares two int64 (or two uint64) exactly
    for _base, _lua in _LUA_COMPARE.items():
        NATIVE[f"{_base}.{_w}"] = ("binop", _lua)
for _w in ("i32", "i64", "u64"):
    for _base, _fn in (("band", "band"), ("bor", "bor"), ("bxor", "bxor"), ("bnot", "bnot"),
                       ("shl", "lshift"), ("shr", "rshift")):
        NATIVE[f"{_base}.{_w}"] = ("bit", _fn)
check_rendered("emit_lua/aot_to_lua.py NATIVE", NATIVE, partial=True)  # the rest: ops.lua


def runtime_ops() -> list[str]:
    """The opcodes that render as calls into runtime/lua/ops.lua."""
    return sorted(set(OPS) - set(NATIVE))


def _span(loc: ir.Loc) -> ast.Span:
    return ast.Span(loc.line, loc.col, loc.line, loc.col)


class AotToLua:
    """Renders one IR function body as a Lua AST block."""

    def __init__(self, path: str):
        self.path = path
        self.nesting = 0  # calls the expression being rendered sits in, within its Lua function

    def body(self, fn: ir.Function) -> ast.Block:
        return ast.Block(self.block(fn.body), _span(fn.loc))

    def block(self, stmts) -> tuple:
        return tuple(self.stmt(s) for s in stmts)

    # ---- statements
    def stmt(self, s):
        return getattr(self, "stmt_" + type(s).__name__)(s)

    def stmt_Let(self, s: ir.Let):
        values = (self.expr(s.value),) if s.value is not None else ()
        return ast.Local((ast.Param(s.name, span=_span(s.loc)),), values, _span(s.loc))

    def stmt_Assign(self, s: ir.Assign):
        return ast.Assign((ast.Name(s.name, _span(s.loc)),), (self.expr(s.value),), _span(s.loc))

    def stmt_Store(self, s: ir.Store):
        """The field's setter applies the storage rules (runtime/lua/mem.lua): a
        float field narrows binary64 itself, and stores every NaN as the
        canonical one, what a binary32 value needs (FieldStorage.stores_canonical_nan)
        and one valid "a NaN" for binary64's."""
        target = self.element_field(s.span, s.index, s.field, s.loc)
        return ast.Assign((target,), (self.expr(s.value),), _span(s.loc))

    def stmt_If(self, s: ir.If):
        clauses = [(self.expr(s.cond), ast.Block(self.block(s.then), _span(s.loc)))]
        orelse = s.orelse
        while len(orelse) == 1 and isinstance(orelse[0], ir.If):  # else if -> elseif
            inner = orelse[0]
            clauses.append((self.expr(inner.cond), ast.Block(self.block(inner.then), _span(inner.loc))))
            orelse = inner.orelse
        rest = ast.Block(self.block(orelse), _span(s.loc)) if orelse else None
        return ast.If(tuple(clauses), rest, _span(s.loc))

    def stmt_For(self, s: ir.For):
        step = None if s.step == 1 else self.const(ir.Const(s.step, Width.I32, s.loc))
        body = ast.Block(self.block(s.body), _span(s.loc))
        return ast.NumericFor(s.var, self.expr(s.start), self.expr(s.stop), step, body, _span(s.loc))

    def stmt_While(self, s: ir.While):
        return ast.While(self.expr(s.cond), ast.Block(self.block(s.body), _span(s.loc)), _span(s.loc))

    def stmt_Break(self, s: ir.Break):
        return ast.Break(_span(s.loc))

    def stmt_Return(self, s: ir.Return):
        return ast.Return((self.expr(s.value),) if s.value is not None else (), _span(s.loc))

    def stmt_Eval(self, s: ir.Eval):
        return ast.CallStat(self.expr(s.expr), _span(s.loc))

    def stmt_Assert(self, s: ir.Assert):
        span = _span(s.loc)
        failure = self.raise_error(s.message, s.loc)
        return ast.If(((ast.UnOp("not", ast.Paren(self.expr(s.cond), span), span),
                        ast.Block((failure,), span)),), None, span)

    def raise_error(self, message: str, loc: ir.Loc) -> ast.CallStat:
        """`error("file:line: message", 0)`: the text native code raises too."""
        span = _span(loc)
        text = ast.String(lua_string(f"{self.where(loc)}: {message}"), span)
        return ast.CallStat(ast.Call(ast.Name("error", span), (text, ast.Number("0", span)), span), span)

    def where(self, loc: ir.Loc) -> str:
        return f"{self.path}:{loc.line}"

    # ---- expressions
    def expr(self, e):
        if self.nesting >= SPINE_CHUNK and _nests_first(e):
            return self.own_function(lambda: (), lambda: self.expr(e), e.loc)
        return getattr(self, "expr_" + type(e).__name__)(e)

    def arguments(self, args) -> tuple:
        self.nesting += 1
        try:
            return tuple(self.expr(a) for a in args)
        finally:
            self.nesting -= 1

    def expr_Const(self, e: ir.Const):
        return self.const(e)

    def const(self, e: ir.Const):
        span = _span(e.loc)
        v = e.value
        if e.width == Width.BOOL:
            return ast.Bool(bool(v), span)
        if e.width in (Width.I64, Width.U64):
            suffix = "LL" if e.width == Width.I64 else "ULL"
            return _signed(abs(v), suffix, v < 0, span)
        if e.width.is_int:
            return _signed(abs(v), "", v < 0, span)
        if math.isnan(v):
            return ast.Paren(ast.BinOp("/", ast.Number("0", span), ast.Number("0", span), span), span)
        if math.isinf(v):
            return _signed_expr(ast.Paren(ast.BinOp("/", ast.Number("1", span), ast.Number("0", span), span),
                                          span), v < 0, span)
        return _signed(repr(abs(v)), "", math.copysign(1.0, v) < 0, span)

    def expr_Var(self, e: ir.Var):
        return ast.Name(e.name, _span(e.loc))

    def expr_Load(self, e: ir.Load):
        return self.element_field(e.span, e.index, e.field, e.loc)

    def element_field(self, span_name: str, index: str, field: str, loc: ir.Loc):
        span = _span(loc)
        return ast.Field(ast.Index(ast.Name(span_name, span), ast.Name(index, span), span), field, span)

    def expr_Len(self, e: ir.Len):
        return ast.UnOp("#", ast.Name(e.span, _span(e.loc)), _span(e.loc))

    def expr_Call(self, e: ir.Call):
        if _spine_length(e) > SPINE_CHUNK:
            return self.spine_function(e)
        return ast.Call(ast.Name(e.func, _span(e.loc)), self.arguments(e.args), _span(e.loc))

    def expr_Op(self, e: ir.Op):
        if _spine_length(e) > SPINE_CHUNK:
            return self.spine_function(e)
        span = _span(e.loc)
        args = self.arguments(e.args)
        form = NATIVE.get(e.op)
        if form is None:
            if OPS[e.op].raises:
                args += (ast.String(lua_string(self.where(e.loc)), span),)
            table = ast.Index(ast.Name(OPS_TABLE, span), ast.String(lua_string(e.op), span), span)
            return ast.Call(table, args, span)
        kind = form[0]
        if kind == "binop":  # the writer adds the parentheses precedence needs
            return ast.BinOp(form[1], args[0], args[1], span)
        if kind == "unop":
            return ast.UnOp(form[1], args[0], span)
        if kind == "bit":
            return ast.Call(ast.Field(ast.Name(BIT, span), form[1], span), args, span)
        return args[0]  # "same": the value is unchanged

    def spine_function(self, e):
        """A long chain of calls nested in their first argument (`a + a + ...`
        of int32 terms is one: each `+` a runtime call) as a function called on
        the spot: the innermost operand goes into a local, then each
        SPINE_CHUNK calls of the chain update it, in the order the nested
        calls would run."""
        spine = []
        node = e
        while _nests_first(node):
            spine.append(node)
            node = node.args[0]
        span = _span(e.loc)
        temp = ir.Var(SPINE_LOCAL, node.width, node.loc)

        def statements():
            stmts = [ast.Local((ast.Param(SPINE_LOCAL, span=span),), (self.expr(node),), span)]
            for end in range(len(spine), 0, -SPINE_CHUNK):
                part = temp
                for call in reversed(spine[max(0, end - SPINE_CHUNK):end]):
                    part = replace(call, args=(part,) + call.args[1:])
                stmts.append(ast.Assign((ast.Name(SPINE_LOCAL, span),), (self.expr(part),), span))
            return stmts

        return self.own_function(statements, lambda: ast.Name(SPINE_LOCAL, span), e.loc)

    def own_function(self, statements, result, loc: ir.Loc):
        """`(function() STATEMENTS; return RESULT end)()`, rendered afresh: a
        function of its own starts with no calls pending (LuaJIT's registers
        and nesting are per function), and runs where it stands."""
        saved, self.nesting = self.nesting, 0
        try:
            stmts = list(statements())
            stmts.append(ast.Return((result(),), _span(loc)))
        finally:
            self.nesting = saved
        span = _span(loc)
        func = ast.FuncBody((), False, None, ast.Block(tuple(stmts), span), span)
        return ast.Call(ast.Paren(ast.Function(func, span), span), (), span)


# LuaJIT refuses calls nested about a hundred deep ("function or expression too
# complex"), and any nesting past 200 syntax levels: a spine of calls longer
# than SPINE_CHUNK is cut into statements (`spine_function`), and a call nested
# SPINE_CHUNK deep in others gets a function of its own (`own_function`).
SPINE_CHUNK = 32
SPINE_LOCAL = "__nupp_chain"


def _nests_first(e) -> bool:
    return isinstance(e, (ir.Op, ir.Call)) and bool(e.args)


def _spine_length(e) -> int:
    """How many calls are nested one in the first argument of the next, from `e` down."""
    n = 0
    while _nests_first(e):
        n, e = n + 1, e.args[0]
    return n


def _signed(magnitude, suffix: str, negative: bool, span: ast.Span):
    return _signed_expr(ast.Number(f"{magnitude}{suffix}", span), negative, span)


def _signed_expr(expr, negative: bool, span: ast.Span):
    return ast.Paren(ast.UnOp("-", expr, span), span) if negative else expr


