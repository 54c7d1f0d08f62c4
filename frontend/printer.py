"""Printing an AST back to source text.

One writer serves two purposes:

* `format_nupp(chunk)` pretty-prints Nupp source; parsing its output gives
  back an equal tree (spans aside).
* `LuaWriter` (used by `emit_lua.to_lua`) prints a tree that the translator
  has already reduced to plain Lua 5.1, placing every node on its source line
  so that LuaJIT's error messages point at the `.nupp` line.

Parentheses come from the tree: a `Paren` node prints its parentheses, and
the writer adds only those that precedence requires.
"""

from __future__ import annotations

from nupp.frontend import ast
from nupp.errors import line_breaks
from nupp.frontend.ast import BINARY_PRECEDENCE, RIGHT_ASSOCIATIVE, UNARY_PRECEDENCE

ATOM = 15  # literals, names, calls, parenthesized expressions


def lua_string(text: str) -> str:
    """`text` as a double-quoted Lua string literal (control characters as
    decimal escapes, which every Lua reads)."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):03d}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def precedence(expr) -> int:
    if isinstance(expr, ast.BinOp):
        return BINARY_PRECEDENCE[expr.op]
    if isinstance(expr, ast.UnOp):
        return UNARY_PRECEDENCE
    return ATOM


def is_prefix(expr) -> bool:
    """Can `expr` be called or indexed without parentheses?"""
    return isinstance(expr, (ast.Name, ast.Index, ast.Field, ast.Call, ast.MethodCall, ast.Paren))


def starts_with_paren(stat) -> bool:
    """Would `stat` begin with '(' (and so continue a preceding call)?"""
    if isinstance(stat, ast.CallStat):
        node = stat.call
    elif isinstance(stat, ast.Assign):
        node = stat.targets[0]
    else:
        return False
    while True:
        if isinstance(node, ast.Paren) or not is_prefix(node):
            return True
        if isinstance(node, (ast.Call,)):
            node = node.func
        elif isinstance(node, (ast.MethodCall, ast.Index, ast.Field)):
            node = node.obj
        else:
            return False


class Writer:
    """Prints statements and expressions; subclasses choose the dialect."""

    indent_unit = "    "

    def __init__(self):
        self.out: list[str] = []
        self.depth = 0
        self.line = 1

    # ---- low level
    def text(self) -> str:
        return "".join(self.out)

    def write(self, s: str) -> None:
        self.out.append(s)
        self.line += line_breaks(s)[0]

    def reach(self, node) -> None:
        """Called before each node; the pretty printer ignores positions."""

    def reach_line(self, line: int) -> None:
        """Called before a token that is not a node's first (`.name`, `:name`); the pretty printer ignores it."""

    def newline(self) -> None:
        self.write("\n" + self.indent_unit * self.depth)

    def separate_statement(self, stat, first: bool) -> None:
        if not first:
            if starts_with_paren(stat):
                self.write(";")
            self.newline()

    # ---- blocks
    def block(self, block: ast.Block) -> None:
        self.depth += 1
        for i, stat in enumerate(block.stats):
            if i and starts_with_paren(stat):
                self.write(";")  # ends the previous statement: `f()` then `(g)()`
            self.newline()
            self.stat(stat)
        self.depth -= 1

    def close(self, node, word: str = "end") -> None:
        self.newline()
        self.reach_end(node)
        self.write(word)

    def reach_end(self, node) -> None:
        """Called before a closing keyword or bracket; the pretty printer ignores positions."""

    def chunk(self, chunk: ast.Chunk) -> str:
        for i, stat in enumerate(chunk.body.stats):
            self.separate_statement(stat, i == 0)
            self.stat(stat)
        self.write("\n")
        return self.text()

    # ---- statements
    def stat(self, stat) -> None:
        self.reach(stat)
        getattr(self, "stat_" + type(stat).__name__)(stat)

    def stat_Local(self, s: ast.Local) -> None:
        self.write("local ")
        self.comma_list(s.names, self.local_name)
        if s.values:
            self.write(" = ")
            self.exprs(s.values)

    def local_name(self, p: ast.Param) -> None:
        self.write(p.name)

    def stat_Assign(self, s: ast.Assign) -> None:
        self.exprs(s.targets)
        self.write(" = ")
        self.exprs(s.values)

    def stat_CallStat(self, s: ast.CallStat) -> None:
        self.expr(s.call)

    def stat_Do(self, s: ast.Do) -> None:
        self.write("do")
        self.block(s.body)
        self.close(s)

    def stat_While(self, s: ast.While) -> None:
        self.write("while ")
        self.expr(s.cond)
        self.write(" do")
        self.block(s.body)
        self.close(s)

    def stat_Repeat(self, s: ast.Repeat) -> None:
        self.write("repeat")
        self.block(s.body)
        self.newline()
        self.write("until ")
        self.expr(s.cond)

    def stat_If(self, s: ast.If) -> None:
        for i, (cond, body) in enumerate(s.clauses):
            if i:
                self.newline()
                self.reach(cond)
            self.write("if " if i == 0 else "elseif ")
            self.expr(cond)
            self.write(" then")
            self.block(body)
        if s.orelse is not None:
            self.newline()
            self.write("else")
            self.block(s.orelse)
        self.close(s)

    def stat_NumericFor(self, s: ast.NumericFor) -> None:
        self.write(f"for {s.var} = ")
        self.exprs((s.start, s.stop) + ((s.step,) if s.step is not None else ()))
        self.write(" do")
        self.block(s.body)
        self.close(s)

    def stat_GenericFor(self, s: ast.GenericFor) -> None:
        self.write(f"for {', '.join(s.names)} in ")
        self.exprs(s.exprs)
        self.write(" do")
        self.block(s.body)
        self.close(s)

    def stat_FunctionStat(self, s: ast.FunctionStat) -> None:
        self.attributes(s.attributes)
        name = ".".join(s.path) + (f":{s.method}" if s.method else "")
        self.write(f"function {name}")
        self.funcbody(s.func, s)

    def stat_LocalFunction(self, s: ast.LocalFunction) -> None:
        self.attributes(s.attributes)
        self.write(f"local function {s.name}")
        self.funcbody(s.func, s)

    def attributes(self, attrs) -> None:
        for attr in attrs:
            self.write(f"@{attr.name}")
            if attr.has_parens:
                self.write("(")
                for i, (key, value) in enumerate(attr.args):
                    self.write(", " if i else "")
                    self.write(f"{key} = ")
                    self.expr(value)
                self.write(")")
            self.newline()

    def stat_Return(self, s: ast.Return) -> None:
        self.write("return")
        if s.values:
            self.write(" ")
            self.exprs(s.values)

    def stat_Break(self, s: ast.Break) -> None:
        self.write("break")

    def stat_Goto(self, s: ast.Goto) -> None:
        self.write(f"goto {s.label}")

    def stat_Label(self, s: ast.Label) -> None:
        self.write(f"::{s.name}::")

    def stat_StructDecl(self, s: ast.StructDecl) -> None:
        self.write(f"local struct {s.name}")
        self.depth += 1
        for f in s.fields:
            self.newline()
            self.write(f"{f.name}: ")
            self.type(f.type)
        self.depth -= 1
        self.close(s)

    def stat_SwitchStat(self, s: ast.SwitchStat) -> None:
        self.switch(s.switch)

    # ---- functions and types
    def funcbody(self, f: ast.FuncBody, owner) -> None:
        self.write("(")
        self.comma_list(f.params, self.param)
        if f.is_vararg:
            self.write(", ..." if f.params else "...")
        self.write(")")
        self.return_type(f.returns)
        self.block(f.body)
        self.close(owner)

    def param(self, p: ast.Param) -> None:
        if p.qualifier:
            self.write(p.qualifier + " ")
        self.write(p.name)
        if p.type is not None:
            self.write(": ")
            self.type(p.type)

    def return_type(self, t) -> None:
        if t is not None:
            self.write(": ")
            self.type(t)

    def type(self, t: ast.TypeRef) -> None:
        self.write(t.name)
        if t.args:
            self.write("<")
            self.comma_list(t.args, self.type)
            self.write(">")

    # ---- expressions
    def exprs(self, exprs) -> None:
        self.comma_list(exprs, self.expr)

    def comma_list(self, items, emit) -> None:
        for i, item in enumerate(items):
            if i:
                self.write(", ")
            emit(item)

    def expr(self, e, min_prec: int = 0) -> None:
        self.reach(e)
        if precedence(e) < min_prec:
            self.write("(")
            self.expr(e)
            self.write(")")
            return
        getattr(self, "expr_" + type(e).__name__)(e)

    def prefix(self, e) -> None:
        if is_prefix(e):
            self.expr(e)
        else:
            self.write("(")
            self.expr(e)
            self.write(")")

    def expr_Nil(self, e) -> None:
        self.write("nil")

    def expr_Bool(self, e) -> None:
        self.write("true" if e.value else "false")

    def expr_Number(self, e) -> None:
        self.write(e.raw)

    def expr_String(self, e) -> None:
        self.write(e.raw)

    def expr_Vararg(self, e) -> None:
        self.write("...")

    def expr_Function(self, e: ast.Function) -> None:
        self.write("function")
        self.funcbody(e.func, e)

    def expr_Name(self, e) -> None:
        self.write(e.id)

    def expr_Paren(self, e) -> None:
        self.write("(")
        self.expr(e.expr)
        self.reach_end(e)
        self.write(")")

    def expr_BinOp(self, e: ast.BinOp) -> None:
        p = BINARY_PRECEDENCE[e.op]
        right_assoc = e.op in RIGHT_ASSOCIATIVE
        left_min = ATOM if e.op == "^" else (p + 1 if right_assoc else p)
        right_min = UNARY_PRECEDENCE if e.op == "^" else (p if right_assoc else p + 1)
        self.expr(e.left, left_min)
        self.write(f" {e.op} ")
        self.expr(e.right, right_min)

    def expr_UnOp(self, e: ast.UnOp) -> None:
        self.write(e.op + " " if e.op == "not" else e.op)
        # `- -x` must not print as the comment `--x`
        if e.op == "-" and isinstance(e.operand, ast.UnOp) and e.operand.op == "-":
            self.write(" ")
        self.expr(e.operand, UNARY_PRECEDENCE)

    def expr_Index(self, e: ast.Index) -> None:
        self.prefix(e.obj)
        self.bracketed(e.key, e)

    def bracketed(self, key, closed=None) -> None:
        """`[key]`; its `]` where `closed` (the node it ends) ends."""
        # `t[ [[k]] ]`: without the spaces `[[[k]]` would lex as a long string
        pad = " " if isinstance(key, ast.String) and key.raw.startswith("[") else ""
        self.write("[" + pad)
        self.expr(key)
        if closed is not None:
            self.reach_end(closed)
        self.write(pad + "]")

    def expr_Field(self, e: ast.Field) -> None:
        self.prefix(e.obj)
        self.reach_line(e.name_span.line)
        self.write(f".{e.name}")

    def expr_Call(self, e: ast.Call) -> None:
        self.prefix(e.func)
        self.call_args(e)

    def expr_MethodCall(self, e: ast.MethodCall) -> None:
        self.prefix(e.obj)
        self.reach_line(e.method_span.line)
        self.write(f":{e.method}")
        self.call_args(e)

    def call_args(self, call) -> None:
        self.write("(")
        self.exprs(call.args)
        self.reach_end(call)
        self.write(")")

    def expr_Table(self, e: ast.Table) -> None:
        self.write("{")
        self.comma_list(e.fields, self.table_field)
        self.reach_end(e)
        self.write("}")

    def table_field(self, f: ast.TableField) -> None:
        self.reach(f)
        if f.kind == "keyed":
            self.bracketed(f.key)
            self.write(" = ")
        elif f.kind == "named":
            self.write(f"{f.key} = ")
        self.expr(f.value)

    def expr_Switch(self, e: ast.Switch) -> None:
        self.switch(e)

    def switch(self, s: ast.Switch) -> None:
        self.write("switch ")
        self.expr(s.subject)
        self.write(" do")
        self.depth += 1
        for arm in s.arms + ((s.otherwise,) if s.otherwise else ()):
            self.newline()
            self.switch_arm(arm)
        self.depth -= 1
        self.close(s)

    def switch_arm(self, arm: ast.SwitchArm) -> None:
        if arm.patterns:
            self.write("case ")
            self.comma_list(arm.patterns, self.pattern)
        else:
            self.write("else")
        if arm.block is not None:
            self.write(" do")
            self.block(arm.block)
            self.close(arm)
        else:
            self.write(" -> ")
            self.expr(arm.expr)

    def pattern(self, p: ast.Pattern) -> None:
        if p.kind == "type":
            self.write("is ")
            self.type(p.type)
        else:
            self.write(p.raw)


class NuppWriter(Writer):
    """Pretty-prints Nupp: annotations, qualifiers, attributes and all."""

    def local_name(self, p: ast.Param) -> None:
        self.param(p)


def format_nupp(chunk: ast.Chunk) -> str:
    return NuppWriter().chunk(chunk)


class LuaWriter(Writer):
    """Prints plain Lua, each node on its source line, without annotations.

    Statements are laid out by position, not indentation: a node whose line
    is ahead of the output gets newlines; one at or behind it stays on the
    current line (separated by ';' where Lua needs it).
    """

    indent_unit = ""

    def __init__(self):
        super().__init__()
        self.names_read: set[str] = set()  # what the translator's header binds is among them

    def expr_Name(self, e) -> None:
        self.names_read.add(e.id)
        super().expr_Name(e)

    def reach(self, node) -> None:
        self.reach_line(getattr(getattr(node, "span", None), "line", 0))

    def reach_end(self, node) -> None:
        self.reach_line(getattr(getattr(node, "span", None), "end_line", 0))

    def reach_line(self, line: int) -> None:
        if line > self.line:
            self.write("\n" * (line - self.line))

    def call_args(self, call) -> None:
        # `f {...}` and `f "..."` keep their argument without parentheses, so
        # that it may stay on a later line: LuaJIT's line for the call is the
        # line its arguments start on (a '(' may not start a line).
        if len(call.args) == 1 and isinstance(call.args[0], (ast.Table, ast.String)) \
                and call.span != ast.NO_SPAN and _ends_with(call, call.args[0]):
            self.expr(call.args[0])
        else:
            super().call_args(call)

    def newline(self) -> None:
        self.write(" ")

    def separate_statement(self, stat, first: bool) -> None:
        if not first:
            self.write(";")
        self.write(" ")

    def block(self, block: ast.Block) -> None:
        for i, stat in enumerate(block.stats):
            self.separate_statement(stat, i == 0)
            self.stat(stat)
        self.write(" ")

    def chunk(self, chunk: ast.Chunk) -> str:
        for i, stat in enumerate(chunk.body.stats):
            self.separate_statement(stat, i == 0)
            self.stat(stat)
        self.write("\n")
        return self.text()

    def param(self, p: ast.Param) -> None:
        self.write(p.name)

    def return_type(self, t) -> None:
        pass

    def attributes(self, attrs) -> None:
        pass

    def unsupported(self, node) -> None:
        from nupp.errors import InternalError
        raise InternalError("to_lua", f"{type(node).__name__} reached the Lua writer untranslated")

    stat_StructDecl = stat_SwitchStat = expr_Switch = unsupported

    def expr_BinOp(self, e: ast.BinOp) -> None:
        if e.op in ("&", "|", "~", "<<", ">>", "//"):
            self.unsupported(e)
        super().expr_BinOp(e)

    def expr_UnOp(self, e: ast.UnOp) -> None:
        if e.op == "~":
            self.unsupported(e)
        super().expr_UnOp(e)


def _ends_with(call, arg) -> bool:
    """Whether a call's source ends where its argument does: it was written without parentheses."""
    return (call.span.end_line, call.span.end_col) == (arg.span.end_line, arg.span.end_col)
