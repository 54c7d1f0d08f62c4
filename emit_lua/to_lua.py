"""Ordinary Nupp to Lua 5.1: what LuaJIT runs as the interpreter.

`write_lua(front, module)` rewrites the Nupp-only constructs of a module's
tree (the front end's, frontend/lower.py) into plain Lua, and prints the
result with every node on its source line:

    annotations, qualifiers    erased
    local struct P ... end     local P = __nupp.struct("P", {{"x", "float"}, ...}); __nupp.structs.P = P
    a & b, a | b, a ~ b, ~a    __nupp_bit.band(a, b), bor, bxor, bnot
    a << b, a >> b             __nupp_bit.lshift(a, b), rshift (logical)
    a // b                     __nupp_floor(a / b)
    switch                     an `if` chain testing the subject, evaluated once
                               (`case is P` for a struct P: __nupp.is_struct(__nupp.structs.P, v))
    @aot function f            its body is its checked scalar IR written as Lua
                               (emit_lua/aot_to_lua.py), then
                               f = __nupp.aot(f, "f", {parameter types}, "result type", {options})

`__nupp` is the runtime's internals as the chunk sees them (runtime/lua/chunks.lua):
fields of its own hold the chunk's struct types by name, `structs`, where a
type position finds the struct even where a local of its name hides the
struct's own local, and with native code its library, `compiled`, loaded on
line 1: neither costs the chunk a local of its 200.

The rewrite is a tree-to-tree pass; `printer.LuaWriter` refuses any Nupp-only
node that slips through, so nothing is emitted half-translated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, is_dataclass, replace
from functools import lru_cache

from nupp.compiled import NativeModule
from nupp.frontend import ast
from nupp.emit_lua.aot_to_lua import BIT, OPS_TABLE, AotToLua
from nupp.errors import Source, error_at, first_non_blank_column, source_bytes
from nupp.frontend.lower import FrontEnd
from nupp.frontend.printer import LuaWriter, lua_string
from nupp.frontend.types import CTYPE_PATTERNS, SPAN_KINDS, lua_type_pattern_names
from nupp.scalar_ir import nodes as ir

COMPILED = "compiled"  # the chunk's field (of `__nupp`) holding its native library
STRUCTS = "structs"  # the chunk's field holding its struct types by name
BIT_FUNCTIONS = {"&": "band", "|": "bor", "~": "bxor", "<<": "lshift", ">>": "rshift"}



def write_lua(front: FrontEnd, module: ir.Module, native: NativeModule | None = None) -> str:
    """Lua source for a module, line for line, from its tree and its @aot
    functions' verified IR (`module`).  With `native`, the @aot functions call
    the compiled library; without, they run their IR as Lua."""
    lowered = ToLua(front.source, module, native).chunk(front.chunk)
    writer = LuaWriter()
    return _with_header(writer.chunk(lowered), writer.names_read)


# ---- what only LuaJIT's loader finds -------------------------------------------

def check_loads(source: Source, lua: str) -> None:
    """NuppError where LuaJIT refuses to load the module's translation, at the
    source line it names (the translation keeps every line): what only its
    loader finds, such as a goto with no visible label or into a local's
    scope, a function past 200 locals or 60 upvalues, or nesting that the
    translation's calls add to the source's.  `nupp check` so reports what
    `nupp run` would refuse before running anything."""
    refusal = _luajit_load()(source_bytes(lua))
    if refusal is None:
        return
    line, message = _LOAD_ERROR.fullmatch(refusal.decode("utf-8", "surrogateescape")).groups()
    line_text = source.line_text(int(line))
    near = re.search(r" near '(.*)'$", message)
    col = line_text.find(near[1]) + 1 if near and near[1] in line_text else first_non_blank_column(line_text)
    hint = _NESTS_TOO_DEEP if "syntax levels" in message or "too complex" in message else None
    raise error_at(source, int(line), col, message, hint)


_LOAD_ERROR = re.compile(r"nupp:(\d+): (.*)", re.DOTALL)
_NESTS_TOO_DEEP = ("LuaJIT limits how deeply expressions and blocks nest (and in the Lua it runs, & | ~ << >> // "
                   "and a switch are calls, which nest deeper than operators): compute the inner part into a "
                   "local variable, or move it into a function of its own")


@lru_cache(maxsize=1)
def _luajit_load():
    """`loadstring` of a LuaJIT state of its own: the error of loading a chunk, or None."""
    from lupa import luajit21
    return luajit21.LuaRuntime(encoding=None).eval(
        "function(text) local _, err = loadstring(text, '=nupp'); return err end")


# ---- small AST builders (spans say where the node is printed) ---------------

def _name(id_: str, span: ast.Span) -> ast.Name:
    return ast.Name(id_, span)


def _str(value: str, span: ast.Span) -> ast.String:
    return ast.String(lua_string(value), span)


def _call(func: str, args, span: ast.Span) -> ast.Call:
    obj, _, member = func.partition(".")
    target = _name(obj, span) if not member else ast.Field(_name(obj, span), member, span)
    return ast.Call(target, tuple(args), span)


def _internal(path: str, span: ast.Span):
    """`__nupp.a.b` for "a.b": a field of the chunk's internals."""
    target = _name("__nupp", span)
    for part in path.split("."):
        target = ast.Field(target, part, span)
    return target


def _table(items, span: ast.Span) -> ast.Table:
    """A table from (key or None, value) pairs."""
    return ast.Table(tuple(ast.TableField("named" if k else "positional", v, k, span)
                           for k, v in items), span)


# ---- the header on line 1 (runtime owner) ------------------------------------
# The runtime's internals a translation names, each bound once on line 1 to a
# local, so user code that shadows `bit`, `math` or `type` cannot change what
# the translation means: local -> field of the internals (None: the internals
# themselves).  Only those a chunk uses are bound, so a plain Lua program keeps
# all of LuaJIT's 200 locals.  runtime/lua/chunks.lua loads a translation into
# an environment holding only `__nupp`, `setfenv` and `_G`; the header's
# `setfenv(1, _G)` moves the chunk to the globals, where nothing of nupp is.
RUNTIME_LOCALS = {"__nupp": None, "__nupp_bit": "bit_operators", "__nupp_floor": "floor_quotient",
                  "__nupp_type": "type", OPS_TABLE: "ops", BIT: "bit"}


def _with_header(lua: str, names_read: set[str]) -> str:
    """`local __nupp, ... = __nupp, __nupp.bit_operators, ...; setfenv(1, _G); ` + the
    translation, binding those of RUNTIME_LOCALS that the translation reads
    (a program's own names never start with `__nupp`: validate.py)."""
    names = [n for n in RUNTIME_LOCALS if n in names_read]
    values = ["__nupp" if RUNTIME_LOCALS[n] is None else f"__nupp.{RUNTIME_LOCALS[n]}" for n in names]
    bind = f"local {', '.join(names)} = {', '.join(values)}; " if names else ""
    return f"{bind}setfenv(1, _G); {lua}"
# ---- end of the header


def _end_span(node) -> ast.Span:
    s = node.span
    return ast.Span(s.end_line, s.end_col, s.end_line, s.end_col)


class ToLua:
    """The rewrite; one method per Nupp-only construct, everything else rebuilt as is."""

    def __init__(self, source: Source, module, native: NativeModule | None = None):
        self.source = source
        self.module = module  # the checked IR of the @aot functions
        self.native = native
        self.counter = 0
        self.vararg_stack = [True]  # the main chunk is a vararg function

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"__nupp_{stem}{self.counter}"

    # ---- generic traversal
    def chunk(self, chunk: ast.Chunk) -> ast.Chunk:
        body = self.block(chunk.body)
        prelude = (self.native_prelude(),) if self.native else ()
        return ast.Chunk(ast.Block(prelude + body.stats, body.span), chunk.span)

    def native_prelude(self) -> ast.Assign:
        """`__nupp.compiled = __nupp.native.load(library, cdef, errors)` on line 1."""
        top = ast.Span(1, 1, 1, 1)
        errors = _table([(None, _str(e, top)) for e in self.native.errors], top)
        devices = _table([(self.native.functions[name][0], _str(c_symbol, top))
                          for name, (_, c_symbol) in self.native.devices.items()], top)
        load = ast.Call(_internal("native.load", top),
                        (_str(self.native.library, top), _str(self.native.cdef, top), errors, devices), top)
        return ast.Assign((_internal(COMPILED, top),), (load,), top)

    def block(self, block: ast.Block) -> ast.Block:
        stats: list = []
        for stat in block.stats:
            stats.extend(self.stat(stat))
        return _same_or(block, stats, lambda: ast.Block(tuple(stats), block.span), "stats")

    def stat(self, stat) -> list:
        method = getattr(self, "stat_" + type(stat).__name__, None)
        if method is not None:
            return method(stat)
        return [self.rebuild(stat)]

    def expr(self, e):
        if type(e) in ast.LEAVES:
            return e
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is not None:
            return method(e)
        return self.rebuild(e)

    def rebuild(self, node):
        """The node with every child translated (the node itself when none changed)."""
        changes = {}
        for name in ast.field_names(type(node)):
            value = getattr(node, name)
            new = self.child(value)
            if new is not value:
                changes[name] = new
        return replace(node, **changes) if changes else node

    def child(self, value):
        if isinstance(value, ast.Block):
            return self.block(value)
        if isinstance(value, tuple):
            items = [self.child(v) for v in value]
            return _same_or(value, items, lambda: tuple(items))
        if isinstance(value, ast.FuncBody):
            return self.funcbody(value)
        if is_dataclass(value) and not isinstance(value, (ast.TypeRef, ast.Param, ast.Attribute)):
            return self.expr(value)
        return value

    def funcbody(self, f: ast.FuncBody) -> ast.FuncBody:
        self.vararg_stack.append(f.is_vararg)
        try:
            return replace(f, body=self.block(f.body))
        finally:
            self.vararg_stack.pop()

    # ---- operators
    def expr_BinOp(self, e: ast.BinOp):
        left, right = self.expr(e.left), self.expr(e.right)
        if e.op in BIT_FUNCTIONS:
            return ast.Call(ast.Field(_name("__nupp_bit", e.span), BIT_FUNCTIONS[e.op], e.span),
                            (left, right), e.span)
        if e.op == "//":
            return ast.Call(_name("__nupp_floor", e.span), (ast.BinOp("/", left, right, e.span),), e.span)
        return e if left is e.left and right is e.right else replace(e, left=left, right=right)

    def expr_UnOp(self, e: ast.UnOp):
        operand = self.expr(e.operand)
        if e.op == "~":
            return ast.Call(ast.Field(_name("__nupp_bit", e.span), "bnot", e.span), (operand,), e.span)
        return e if operand is e.operand else replace(e, operand=operand)

    def stat_Return(self, s: ast.Return) -> list:
        """`return a & b` stays no tail call once `&` is a call: `return (f(a, b))`.
        A tail call drops the returning frame, and with it the line an
        operator's error names (the runtime raises it at level 2)."""
        out = self.rebuild(s)
        if len(s.values) == 1 and not _is_call(s.values[0]) and _is_call(out.values[0]):
            out = replace(out, values=(ast.Paren(out.values[0], out.values[0].span),))
        return [out]

    # ---- structs
    def stat_StructDecl(self, s: ast.StructDecl) -> list:
        spec = _table([(None, _table([(None, _str(f.name, f.span)), (None, _str(f.type.name, f.span))],
                                     f.span)) for f in s.fields], s.span)
        value = ast.Call(_internal("struct", s.span), (_str(s.name, s.span), spec), s.span)
        end = _end_span(s)
        return [ast.Local((ast.Param(s.name, span=s.span),), (value,), s.span),
                ast.Assign((_struct_type(s.name, end),), (_name(s.name, end),), end)]

    # ---- @aot functions
    def aot_body(self, s, name: str) -> ast.FuncBody:
        """An @aot function runs its checked IR; any other function its own body."""
        if not _is_aot(s.attributes):
            return self.funcbody(s.func)
        fn = self.module.function(name)
        return replace(s.func, body=AotToLua(self.source.path).body(fn))

    def stat_LocalFunction(self, s: ast.LocalFunction) -> list:
        out = replace(s, func=self.aot_body(s, s.name))
        if not _is_aot(s.attributes):
            return [out]
        return [out, self.aot_registration(_name(s.name, _end_span(s)), s.name, s)]

    def stat_FunctionStat(self, s: ast.FunctionStat) -> list:
        out = replace(s, func=self.aot_body(s, ".".join(s.path)))
        if not _is_aot(s.attributes):
            return [out]
        span = _end_span(s)
        target = _name(s.path[0], span)
        for part in s.path[1:]:
            target = ast.Field(target, part, span)
        return [out, self.aot_registration(target, ".".join(s.path), s)]

    def aot_registration(self, target, name: str, s) -> ast.Assign:
        """After the definition: `f = __nupp.aot(f, "f", {params}, "result", {options})`,
        or with native code `f = __nupp.native.bind(lib, "symbol", "f", ..., "ctype")`."""
        span = _end_span(s)
        params = _table([(None, self.param_descriptor(p, span)) for p in s.func.params], span)
        result = _str(s.func.returns.name, span)
        options = _table([(key, value) for attr in s.attributes for key, value in attr.args], span)
        interpreted = ast.Call(ast.Field(_name("__nupp", span), "aot", span),
                               (target, _str(name, span), params, result, options), span)
        if self.native is None:
            return ast.Assign((target,), (interpreted,), span)
        symbol, ctype = self.native.functions[name]
        bind = _internal("native.bind", span)
        args = (_internal(COMPILED, span), _str(symbol, span), _str(name, span), params, result, options,
                _str(ctype, span) if ctype else ast.Nil(span), interpreted,
                _str(self.native.devices[name][0] if name in self.native.devices else self.native.mode, span))
        return ast.Assign((target,), (ast.Call(bind, args, span),), span)

    def param_descriptor(self, p: ast.Param, span: ast.Span) -> ast.Table:
        kind = p.type.path[-1]
        if kind in SPAN_KINDS:
            type_ = _table([("span", _struct_type(p.type.args[0].name, span)),
                            ("writable", ast.Bool(kind == "WriteSpan", span)),
                            ("qualifier", _str(p.qualifier, span))], span)
        else:
            type_ = _str(p.type.name, span)
        return _table([("name", _str(p.name, span)), ("type", type_)], span)

    # ---- switch
    def stat_SwitchStat(self, s: ast.SwitchStat) -> list:
        sw = s.switch
        subject = self.fresh("s")
        chain = self.switch_chain(sw, subject, self.arm_as_statement, failure=None)
        decl = ast.Local((ast.Param(subject, span=sw.span),), (self.expr(sw.subject),), sw.span)
        return [ast.Do(ast.Block((decl, chain), sw.span), sw.span)]

    def arm_as_statement(self, arm: ast.SwitchArm) -> ast.Block:
        if arm.block is not None:
            return self.block(arm.block)
        value = self.expr(arm.expr)
        if isinstance(value, (ast.Call, ast.MethodCall)):
            return ast.Block((ast.CallStat(value, value.span),), arm.span)
        return ast.Block((ast.Local((ast.Param("_", span=arm.span),), (value,), arm.span),), arm.span)

    def stat_Local(self, s: ast.Local) -> list:
        # `local x = switch ...`: an if chain assigning a temporary, no closure,
        # so the loop around it stays compiled.  The subject and arms are
        # evaluated before `x` comes into scope, as Lua's own `local` does.
        if not (len(s.names) == 1 and len(s.values) == 1 and isinstance(s.values[0], ast.Switch)):
            return [self.rebuild(s)]
        sw = s.values[0]
        result, subject = self.fresh("v"), self.fresh("s")

        def assign(arm):
            return ast.Block((ast.Assign((_name(result, arm.span),), (self.expr(arm.expr),), arm.span),),
                             arm.span)

        chain = self.switch_chain(sw, subject, assign, failure=self.switch_failure(sw, subject))
        decl = ast.Local((ast.Param(subject, span=sw.span),), (self.expr(sw.subject),), sw.span)
        end = _end_span(sw)
        return [ast.Local((ast.Param(result, span=s.span),), (), s.span),
                ast.Do(ast.Block((decl, chain), sw.span), sw.span),
                ast.Local(s.names, (_name(result, end),), end)]

    def expr_Switch(self, sw: ast.Switch):
        # Anywhere else: a function of the subject, called at once.
        subject = self.fresh("s")
        vararg = self.vararg_stack[-1]

        def give(arm):
            value = ast.Paren(self.expr(arm.expr), arm.span)  # one value, as an expression has
            return ast.Block((ast.Return((value,), arm.span),), arm.span)

        failure = ast.Return((self.switch_failure(sw, subject),), _end_span(sw))
        chain = self.switch_chain(sw, subject, give, failure=failure)
        params = (ast.Param(subject, span=sw.span),)
        func = ast.Function(ast.FuncBody(params, vararg, None, ast.Block((chain,), sw.span), sw.span), sw.span)
        args = (self.expr(sw.subject), func) + ((ast.Vararg(sw.span),) if vararg else ())
        return ast.Call(ast.Field(_name("__nupp", sw.span), "switch_call", sw.span), args, sw.span)

    def switch_failure(self, sw: ast.Switch, subject: str):
        where = f"{self.source.path}:{sw.span.line}"
        span = _end_span(sw)
        return ast.Call(ast.Field(_name("__nupp", span), "switch_failed", span),
                        (_name(subject, span), _str(where, span)), span)

    def switch_chain(self, sw: ast.Switch, subject: str, arm_body, failure) -> ast.If:
        clauses = tuple((self.arm_condition(arm, subject), arm_body(arm)) for arm in sw.arms)
        if sw.otherwise is not None:
            orelse = arm_body(sw.otherwise)
        elif failure is not None:
            stat = failure if isinstance(failure, ast.Return) else ast.CallStat(failure, failure.span)
            orelse = ast.Block((stat,), failure.span)
        else:
            orelse = None
        if not clauses:  # only an else arm (or nothing): `if true then ... end`
            clauses = ((ast.Bool(True, sw.span), orelse or ast.Block((), sw.span)),)
            orelse = None
        return ast.If(clauses, orelse, sw.span)

    def arm_condition(self, arm: ast.SwitchArm, subject: str):
        tests = [self.pattern_test(p, _name(subject, p.span)) for p in arm.patterns]
        cond = tests[0]
        for test in tests[1:]:
            cond = ast.BinOp("or", cond, test, arm.span)
        return cond

    def pattern_test(self, p: ast.Pattern, value: ast.Name):
        span = p.span
        if p.kind == "number":
            return ast.BinOp("==", value, ast.Number(p.raw, span), span)
        if p.kind == "string":
            return ast.BinOp("==", value, ast.String(p.raw, span), span)
        if p.kind in ("true", "false"):
            return ast.BinOp("==", value, ast.Bool(p.kind == "true", span), span)
        if p.kind == "nil":
            return ast.BinOp("==", value, ast.Nil(span), span)
        return self.type_test(p.type, value, span)

    def type_test(self, t: ast.TypeRef, value: ast.Name, span: ast.Span):
        name = "number" if t.name == "double" else t.name
        if name in CTYPE_PATTERNS:
            return _call("__nupp.is_ctype", (_str(CTYPE_PATTERNS[name], span), value), span)
        if name in lua_type_pattern_names():
            return ast.BinOp("==", _call("__nupp_type", (value,), span), _str(name, span), span)
        return _call("__nupp.is_struct", (_struct_type(name, span), value), span)


def _struct_type(name: str, span: ast.Span) -> ast.Field:
    """The module's struct `name` where a type names it (`case is P`, `span.Span<P>`):
    `__nupp.structs.P`, which no local named P hides (validate.py makes every
    such name a struct declared before, at the top level)."""
    return _internal(f"{STRUCTS}.{name}", span)


def _same_or(old, new_items: list, build, attribute: str | None = None):
    """`old` when translating changed none of its items (no copy of an
    unchanged subtree), else `build()`."""
    items = getattr(old, attribute) if attribute else old
    if len(items) == len(new_items) and all(a is b for a, b in zip(items, new_items)):
        return old
    return build()


def _is_aot(attributes) -> bool:
    return any(a.name == "aot" for a in attributes)


def _is_call(e) -> bool:
    return isinstance(e, (ast.Call, ast.MethodCall))
