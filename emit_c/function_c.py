"""The C of one IR function: the statement and expression machinery of both C backends.

    FunctionEmitter(mod, fn).emit() -> (C text, CFunction, cdef line)

`mod` is the unit's shared state (emit_c/unit.py `ModuleContext`).  This
is the scalar C of every statement and expression (emit_c/scalar.py's
docstring describes it); lane C (emit_c/lane.py) subclasses it and
overrides the hooks below for what a Gang's lanes do differently, calling
the base rule for what stays scalar.

Hooks (what a subclass may override; each base rule is complete scalar C):

    stmt_<Node>(s)          the C of one statement kind (dispatched by `stmt`)
    expr_<Node>(e)          the side-effect-free C of one expression kind (by `expr`)
    counted_body(s, c)      a counted loop's body after its `for (...) {`
    one_line_each(stmts)    whether a switch arm needs no braces
    store_value(e, c, st)   a value converted as its field stores it

and the output and scope primitives they use: `line`, `declare_line`,
`temp`, `bind`, `lookup`, `read`, `block`, `index`; `depth` is the
indentation, `spans` the span parameters, `reads` the C names read (so
`finish_body` can silence the unread).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from nupp.emit_c.helpers import C_OPS, FIELD_C_TYPES, Rendering, c_const, c_type, const_headers
from nupp.emit_c.unit import INDENT, CFunction, ModuleContext, Names
from nupp.errors import InternalError
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import OPS, SHORT_CIRCUIT
from nupp.scalar_ir.widths import FIELD_STORAGE, Width
from nupp.scalar_ir.walk import breaks_leaving, fails_itself, raises

STATUS_T = "int32_t"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# ==== analysis ====================================================================

def _constant(e) -> bool:
    """Whether e's value is known to the C front end (a literal, or an op of literals)."""
    return isinstance(e, ir.Const) or (isinstance(e, ir.Op) and all(_constant(a) for a in e.args))


def rendering_of(e: ir.Op) -> Rendering:
    """The C_OPS rendering of an op: its literal-safe form where an operand is
    a constant or both are the same (no always-true/false warning)."""
    rendering = C_OPS[e.op]
    if rendering.literal_safe is not None and (any(_constant(a) for a in e.args) or e.args[0] == e.args[1]):
        return rendering.literal_safe
    return rendering


def _switch_arms(s: ir.If) -> Optional[list[tuple[tuple[int, ...], tuple]]]:
    """The arms of a labelled If as (labels, body), the default's labels (), or
    None when it cannot be a C switch (a Break in an arm would leave the switch)."""
    labels = s.labels
    if labels is None or labels.width not in (Width.I32, Width.U32):
        return None
    arms, node = [], s
    for k, case in enumerate(labels.cases):
        arms.append((case, node.then))
        if k + 1 < len(labels.cases):
            node = node.orelse[0]
    if labels.default:
        arms.append(((), node.orelse))
    if any(breaks_leaving(body) for _, body in arms):
        return None
    return arms


# Clang refuses an expression nested more than 256 brackets deep, and each IR
# level renders within two: a subexpression HOLD_HEIGHT levels high is held in
# a temporary (`FunctionEmitter.expr`), so no C expression nests deeper than
# about 2 * HOLD_HEIGHT brackets plus its statement's few.
HOLD_HEIGHT = 24


def _reaches(e, levels: int) -> bool:
    """Whether e is at least `levels` IR levels high (a leaf is 0; looks no deeper)."""
    if levels <= 0:
        return True
    return isinstance(e, (ir.Op, ir.Call)) and any(_reaches(a, levels - 1) for a in e.args)


def writes_lines(e) -> bool:
    """Whether rendering e writes lines before its statement: what can fail is
    hoisted, and so is every subexpression HOLD_HEIGHT levels high (one exists
    exactly when e is at least that high)."""
    return raises(e) or _reaches(e, HOLD_HEIGHT)


# ==== one function ===================================================================

@dataclass
class _Decl:
    index: int        # of its line in the function's lines
    name: str
    indent: str
    drop: bool        # unread: drop the line (else add `(void)name;`)


class FunctionEmitter:
    def __init__(self, mod: ModuleContext, fn: ir.Function):
        self.mod, self.fn = mod, fn
        self.names = Names()
        self.lines: list[Optional[str]] = []
        self.depth = 1
        self.scopes: list[dict[str, str]] = [{}]
        self.reads: set[str] = set()
        self.decls: list[_Decl] = []
        self.count = 0
        self.spans: dict[str, tuple[str, str, ir.SpanType]] = {}  # IR name -> (pointer, length, type)
        self.heights: dict[int, tuple[object, int]] = {}  # id(expression) -> (it, held_height)

    # ---- output
    def line(self, text: str) -> None:
        self.lines.append(INDENT * self.depth + text)

    def declare_line(self, text: str, name: str, drop: bool = False) -> None:
        self.decls.append(_Decl(len(self.lines), name, INDENT * self.depth, drop))
        self.line(text)

    def temp(self, stem: str = "t") -> str:
        self.count += 1
        return f"{stem}{self.count}"

    # ---- scopes
    def bind(self, name: str, prefix: str = "v_") -> str:
        c_name = self.names.fresh(prefix, name)
        self.scopes[-1][name] = c_name
        return c_name

    def lookup(self, name: str) -> str:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise KeyError(name)  # the verifier has checked every name

    def block(self, stmts) -> None:
        """A nested block: one level deeper, its own scope."""
        self.depth += 1
        self.scopes.append({})
        for s in stmts:
            self.stmt(s)
        self.scopes.pop()
        self.depth -= 1

    # ---- the function
    def emit(self) -> tuple[str, CFunction, str]:
        """(the C of the implementation and the export, the CFunction, its cdef line)."""
        fn = self.fn
        params, cdef_params, abi = self.parameters()
        for s in fn.body:
            self.stmt(s)
        if not (fn.body and isinstance(fn.body[-1], ir.Return)):
            self.line("return 0;")
        body = self.finish_body()
        impl, symbol = self.mod.impls[fn.name], self.mod.symbols[fn.name]
        param_list = ", ".join(params) or "void"
        arg_names = [_param_name(p) for p in params]
        text = f"static {STATUS_T} {impl}({param_list})\n{{\n{body}}}\n\n"
        text += f"{STATUS_T} {symbol}({param_list})\n{{\n" + self.export_body(impl, arg_names) + "}\n"
        cdef = f"{STATUS_T} {symbol}({', '.join(cdef_params) or 'void'});\n"
        result = c_type(fn.result) if fn.result is not None else None
        return text, CFunction(fn.name, symbol, tuple(abi), result), cdef

    def parameters(self) -> tuple[list[str], list[str], list[tuple[str, str]]]:
        """The parameters bound in the function's scope, as (C declarations, cdef
        declarations, ABI entries): a span is its pointer and length, a result
        its out-pointer last."""
        params, cdef_params, abi = [], [], []
        for p in self.fn.params:
            if isinstance(p.type, ir.SpanType):
                pointer, length = self.names.fresh("p_", p.name), self.names.fresh("n_", p.name)
                self.scopes[0][p.name] = pointer
                self.spans[p.name] = (pointer, length, p.type)
                struct_c = self.mod.structs[p.type.struct][0]
                const = "" if p.type.writable else "const "
                restrict = "restrict " if self.restrict(p) else ""
                params += [f"{const}{struct_c} *{restrict}{pointer}", f"int32_t {length}"]
                cdef_params += [f"void *{pointer}", f"int32_t {length}"]
                abi += [(p.name, "void *"), (f"#{p.name}", "int32_t")]
            else:
                declaration = f"{c_type(p.type)} {self.bind(p.name, 'p_')}"
                params.append(declaration)
                cdef_params.append(declaration)
                abi.append((p.name, c_type(p.type)))
        if self.fn.result is not None:
            params.append(f"{c_type(self.fn.result)} *result")
            cdef_params.append(f"{c_type(self.fn.result)} *result")
        return params, cdef_params, abi

    def export_body(self, impl: str, args: list[str]) -> str:
        call = f"{impl}({', '.join(args)})"
        result = self.fn.result
        if result not in (Width.F64, Width.F32):
            return f"{INDENT}return {call};\n"
        # a float result leaves with a NaN the host reads safely (canonical for f32)
        fix = "nu_result_f64" if result is Width.F64 else "nu_f32_canon"
        self.mod.helpers.add(fix)
        return (f"{INDENT}const {STATUS_T} status = {call};\n"
                f"{INDENT}if (status == 0) *result = {fix}(*result);\n"
                f"{INDENT}return status;\n")

    def restrict(self, p: ir.Param) -> bool:
        """`restrict` exactly where the alias matrix justifies it: C's restrict
        promises that memory modified during the call is reached through that
        pointer alone.  A span qualifies when its fact with every other span is
        `disjoint`, except that two read-only spans may share memory
        (`shared-read`): memory no pointer writes needs no promise.  So an
        exclusive span (disjoint from all) and a borrows span (disjoint from
        every writable one) are both restrict; a missing or contrary fact is not."""
        facts = {frozenset((a.a, a.b)): a.fact for a in self.fn.aliases}
        for q in self.fn.span_params():
            if q.name == p.name:
                continue
            fact = facts.get(frozenset((p.name, q.name)))
            if fact == ir.DISJOINT:
                continue
            if fact == ir.SHARED_READ and not p.type.writable and not q.type.writable:
                continue
            return False
        return True

    def finish_body(self) -> str:
        """Unread locals get `(void)x;` (unread counters vanish), unread parameters
        `(void)p;` at the top: -Wall -Wextra stay quiet on any program."""
        lines = self.lines
        for decl in sorted(self.decls, key=lambda d: -d.index):
            if decl.name in self.reads:
                continue
            if decl.drop:
                lines[decl.index] = None
            else:
                lines.insert(decl.index + 1, f"{decl.indent}(void){decl.name};")
        unused = []
        for p in self.fn.params:
            if isinstance(p.type, ir.SpanType):
                pointer, length, _ = self.spans[p.name]
                unused += [n for n in (pointer, length) if n not in self.reads]
            elif self.scopes[0][p.name] not in self.reads:
                unused.append(self.scopes[0][p.name])
        head = [f"{INDENT}(void){name};" for name in unused]
        return "".join(line + "\n" for line in head + [x for x in lines if x is not None])

    # ---- statements
    def stmt(self, s) -> None:
        rule = getattr(self, "stmt_" + type(s).__name__, None)
        if rule is None:  # e.g. a Gang handed to the scalar emitter: the pipeline's bug
            raise InternalError("emit_c", f"{type(self).__name__} has no rule for a {type(s).__name__} "
                                          f"statement (at {s.loc})")
        rule(s)

    def stmt_Let(self, s: ir.Let) -> None:
        value = self.expr(s.value) if s.value is not None else "0"  # set before any read
        c_name = self.bind(s.name)
        self.declare_line(f"{c_type(s.width)} {c_name} = {value};", c_name)

    def stmt_Assign(self, s: ir.Assign) -> None:
        value = self.expr(s.value)
        c_name = self.lookup(s.name)
        if value != c_name:  # `x = x` is nothing (and a warning under Clang)
            self.line(f"{c_name} = {value};")

    def stmt_Store(self, s: ir.Store) -> None:
        value = self.expr(s.value)
        pointer, _, span_type = self.spans[s.span]
        self.reads.add(pointer)
        fields = self.mod.structs[span_type.struct][1]
        storage = FIELD_STORAGE[dict(self.mod.module.struct(span_type.struct).fields)[s.field]]
        value = self.store_value(s.value, value, storage)
        self.line(f"{pointer}[{self.index(s.index)} - 1].{fields[s.field]} = {value};")

    def store_value(self, e, value: str, storage) -> str:
        """A value as its field stores it: a float field takes binary32, a
        binary32 value's NaN canonical (FieldStorage.stores_canonical_nan), an
        integer field reduces modulo 2^bits (to unsigned first: defined for
        every value; then to a signed type, modular on GCC and Clang)."""
        width = e.width
        target = FIELD_C_TYPES[storage.name]
        if storage.is_float:
            if storage.bits == 32:
                if isinstance(e, ir.Const):
                    return value  # a literal NaN is NAN, the canonical one
                if not storage.stores_canonical_nan(width):
                    return f"(float){value}"
                self.mod.helpers.add("nu_f32_canon")
                return f"nu_f32_canon({bare(value)})"
            return value if width is Width.F64 else f"(double){value}"
        if width.bits == storage.bits and width.is_signed == storage.signed:
            return value
        unsigned = f"uint{storage.bits}_t"
        if storage.signed:
            return f"({target})({unsigned}){value}"
        return f"({target}){value}"

    def stmt_If(self, s: ir.If) -> None:
        arms = _switch_arms(s)
        if arms is not None:
            return self.switch(s, arms)
        self.line(f"if ({bare(self.expr(s.cond))}) {{")
        self.block(s.then)
        rest = s.orelse
        while (len(rest) == 1 and isinstance(rest[0], ir.If) and _switch_arms(rest[0]) is None
               and not writes_lines(rest[0].cond)):
            inner = rest[0]
            self.line(f"}} else if ({bare(self.expr(inner.cond))}) {{")
            self.block(inner.then)
            rest = inner.orelse
        if rest:
            self.line("} else {")
            self.block(rest)
        self.line("}")

    def switch(self, s: ir.If, arms) -> None:
        """A labelled If (an int32/uint32 switch initializer) as a native C switch."""
        width = s.labels.width
        self.line(f"switch ({self.read(self.lookup(s.labels.selector))}) {{")
        for labels, body in arms:
            for label in labels:
                self.line(f"case {c_const(label, width)}:")
            if not labels:
                self.line("default:")
            if self.one_line_each(body):
                self.block(tuple(body) + (_LEAVE_SWITCH,))
            else:
                self.depth += 1
                self.line("{")
                self.block(tuple(body) + (_LEAVE_SWITCH,))
                self.line("}")
                self.depth -= 1
        self.line("}")

    def stmt__LeaveSwitch(self, s: "_LeaveSwitch") -> None:
        self.line("break;")

    def one_line_each(self, stmts) -> bool:
        """Whether statements are written one line each, declaring nothing: a
        switch arm without braces (C11 takes no declaration after a label)."""
        return all(isinstance(s, (ir.Assign, ir.Store)) and not writes_lines(s.value) for s in stmts)

    def stmt_For(self, s: ir.For) -> None:
        """Lua's numeric for never overflows its counter, so the C counter is
        int64_t: start, stop and the step are int32, so `c += step` stays far
        inside int64 and the loop ends exactly where Lua's does, even at
        INT32_MAX.  The bound is evaluated once, before the loop."""
        start = self.expr(s.start)
        stop = self.expr(s.stop)
        if not isinstance(s.stop, (ir.Const, ir.Len)):
            bound = self.temp()
            self.line(f"const int32_t {bound} = {stop};")
            stop = bound
        counter = self.temp("c")
        test = f"{counter} <= {stop}" if s.step > 0 else f"{counter} >= {stop}"
        step = {1: f"++{counter}", -1: f"--{counter}"}.get(
            s.step, f"{counter} += {s.step}" if s.step > 0 else f"{counter} -= {-s.step}")
        self.line(f"for (int64_t {counter} = {start}; {test}; {step}) {{")
        self.counted_body(s, counter)

    def counted_body(self, s: ir.For, counter: str) -> None:
        """A counted loop's body after its `for (...) {`: the int32 counter
        derived from the int64 one, the statements, and the closing brace."""
        self.depth += 1
        self.scopes.append({})
        var = self.bind(s.var)
        self.declare_line(f"const int32_t {var} = (int32_t){counter};", var, drop=True)
        for stmt in s.body:
            self.stmt(stmt)
        self.scopes.pop()
        self.depth -= 1
        self.line("}")

    def stmt_While(self, s: ir.While) -> None:
        if not writes_lines(s.cond):
            self.line(f"while ({bare(self.expr(s.cond))}) {{")
            self.block(s.body)
            self.line("}")
            return
        self.line("for (;;) {")
        self.depth += 1
        cond = self.expr(s.cond)
        self.line(f"if (!{cond}) break;")
        self.depth -= 1
        self.block(s.body)
        self.line("}")

    def stmt_Break(self, s: ir.Break) -> None:
        self.line("break;")

    def stmt_Return(self, s: ir.Return) -> None:
        if s.value is not None:
            self.line(f"*result = {self.expr(s.value)};")
        self.line("return 0;")

    def stmt_Assert(self, s: ir.Assert) -> None:
        status = self.mod.error(f"{self.mod.path}:{s.loc.line}: {s.message}")
        self.line(f"if (!{self.expr(s.cond)}) return {status};")

    def stmt_Eval(self, s: ir.Eval) -> None:
        self.call(s.expr)

    # ---- expressions (each returns side-effect-free C; what can fail is hoisted)
    def expr(self, e) -> str:
        c = getattr(self, "expr_" + type(e).__name__)(e)
        if self.held_height(e) < HOLD_HEIGHT or _IDENT.fullmatch(c):
            return c
        t = self.temp()  # evaluated where it stands: after its operands' hoisted lines
        self.line(f"const {c_type(e.width)} {t} = {bare(c)};")
        self.reads.add(t)
        return t

    def held_height(self, e) -> int:
        """e's height in IR levels, a subexpression held in a temporary counting as a leaf."""
        if not isinstance(e, (ir.Op, ir.Call)) or not e.args:
            return 0
        known = self.heights.get(id(e))
        if known is None or known[0] is not e:
            below = (self.held_height(a) for a in e.args)
            known = self.heights[id(e)] = (e, 1 + max(h if h < HOLD_HEIGHT else 0 for h in below))
        return known[1]

    def read(self, c_name: str) -> str:
        self.reads.add(c_name)
        return c_name

    def index(self, counter: str) -> str:
        return self.read(self.lookup(counter))

    def expr_Const(self, e: ir.Const) -> str:
        self.mod.headers.update(const_headers(e.value, e.width))
        return c_const(e.value, e.width)

    def expr_Var(self, e: ir.Var) -> str:
        return self.read(self.lookup(e.name))

    def expr_Len(self, e: ir.Len) -> str:
        return self.read(self.spans[e.span][1])

    def expr_Load(self, e: ir.Load) -> str:
        pointer, _, span_type = self.spans[e.span]
        self.reads.add(pointer)
        fields = self.mod.structs[span_type.struct][1]
        storage = FIELD_STORAGE[dict(self.mod.module.struct(span_type.struct).fields)[e.field]]
        access = f"{pointer}[{self.index(e.index)} - 1].{fields[e.field]}"
        if FIELD_C_TYPES[storage.name] == c_type(e.width):
            return access
        return f"(({c_type(e.width)}){access})"  # float widens, int8..uint16 to int32, exactly

    def expr_Call(self, e: ir.Call) -> str:
        result = self.call(e)
        assert result is not None, "a call without a result used as a value"
        return result

    def call(self, e: ir.Call) -> Optional[str]:
        """Hoisted: the arguments left to right, the call, its status checked."""
        args = [self.expr(a) for a in e.args]
        result = None
        if e.width is not None:
            result = self.temp()
            self.line(f"{c_type(e.width)} {result} = 0;")
            args.append(f"&{result}")
        status = self.temp()
        self.line(f"const {STATUS_T} {status} = {self.mod.impls[e.func]}({', '.join(args)});")
        self.line(f"if ({status} != 0) return {status};")
        return result

    def expr_Op(self, e: ir.Op) -> str:
        info = OPS[e.op]
        if info.lane == SHORT_CIRCUIT and writes_lines(e.args[1]):
            return self.short_circuit(e)
        args = [self.expr(a) for a in e.args]
        if fails_itself(e):
            divisor = self.temp()
            status = self.mod.error(f"{self.mod.path}:{e.loc.line}: {info.raises}")
            # not `const`: GCC would fold a literal 0 into a division-by-zero warning below
            self.line(f"{c_type(info.operands[1])} {divisor} = {args[1]};")
            self.line(f"if ({divisor} == 0) return {status};")
            args[1] = divisor
        rendering = rendering_of(e)
        self.mod.use(rendering)
        return rendering.scalar.format(*args)

    def short_circuit(self, e: ir.Op) -> str:
        """`a and b` / `a or b` whose b can fail: b runs only when a leaves it to."""
        left = self.expr(e.args[0])
        t = self.temp()
        self.line(f"_Bool {t} = {left};")
        self.line(f"if ({t if OPS[e.op].base == 'and' else '!' + t}) {{")
        self.depth += 1
        self.line(f"{t} = {self.expr(e.args[1])};")
        self.depth -= 1
        self.line("}")
        return t


class _LeaveSwitch:
    """The C `break` that ends a switch arm: it leaves the C switch, never a
    loop, so it is no IR Break (lane C turns those into lanes leaving loops)."""


_LEAVE_SWITCH = _LeaveSwitch()


def bare(c: str) -> str:
    """`(a < b)` -> `a < b`: an expression without the parentheses that wrap it whole."""
    if not (c.startswith("(") and c.endswith(")")):
        return c
    depth = 0
    for k, ch in enumerate(c):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and k < len(c) - 1:
            return c  # `(a) + (b)`: the first parenthesis closes early
    return c[1:-1]


def _param_name(declaration: str) -> str:
    """`const nupps_T *restrict p_x` -> `p_x`."""
    return re.split(r"[\s*]+", declaration.strip())[-1]

