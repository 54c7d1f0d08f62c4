"""The checker: every rule of LANGUAGE.md sections 2 to 6, lowering as it goes.

`check_module(source, chunk)` validates the module (validate.py), finds its
`@aot` functions and, for each, either reports precise diagnostics or builds
its scalar IR.  Typing and lowering are one recursion: checking an expression
returns the IR expression that computes it, whose `.width` is the
expression's width and in which every conversion is an explicit op.  All
diagnostics of a file are collected, validate.py's with the checker's; every
rule of the verifier that a source program could break is a diagnostic here
first (tests/test_checker_gaps.py maps each rule to its diagnostic).

Where an expression is refused, an `Invalid` placeholder stands in for it so
checking continues without a cascade of follow-on errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Iterator, Optional

from nupp.frontend import ast
from nupp.errors import Diagnostic, NuppError, Source
from nupp.frontend.literals import read_numeral, string_value
from nupp.frontend.types import SPAN_KINDS
from nupp.frontend.validate import validation_diagnostics
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import OPS, arith_op, compare_op
from nupp.scalar_ir.walk import subexprs
from nupp.scalar_ir.widths import (CONVERSIONS, FIELD_STORAGE, TYPE_WIDTHS, FieldStorage, Width, conversion_name,
                                   holds_in_binary32, integer_fits)

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)


@dataclass(frozen=True)
class Invalid:
    """Stands for a refused expression; its width is unknown."""

    loc: ir.Loc = ir.NO_LOC
    width: Optional[Width] = None


@dataclass(frozen=True)
class Literal:
    """A numeral not yet given a width: it takes its context's (LANGUAGE.md section 2)."""

    node: ast.Number
    value: float | int
    is_integer: bool
    loc: ir.Loc

    @property
    def width(self) -> Width:
        return F64  # where no context gives it one


class CheckError(Exception):
    """Unwinds the checking of one statement after a diagnostic was recorded."""


# ---- the nupp.math surface ------------------------------------------------------------

# callee path -> (opcode, parameter widths), from the op table's `calls`; an
# int32/uint32 argument to an entry conversion is promoted to binary64 first
# (written down).
MATH_CALLS: dict[tuple[str, ...], tuple[str, tuple[Width, ...]]] = {
    tuple(name.split(".")): (op, info.operands) for op, info in OPS.items() for name in info.calls
}
# Entry conversions take a binary64; a 32-bit integer argument is promoted.
ENTRY_CONVERSIONS = {"narrow.f64.f32", "wrap.f64.i32", "wrap.f64.u32", "wrap.f64.i64", "wrap.f64.u64"}
# What to suggest when a binary64 reaches a fixed-width operand.
CONVERSION_HINTS = {
    F32: "narrow it with nupp.math.f32.narrow",
    I32: "convert it with nupp.math.i32.wrap",
    U32: "convert it with nupp.math.u32.wrap",
    I64: "convert it with nupp.math.i64.wrap",
    U64: "convert it with nupp.math.u64.wrap",
}

BINARY_ARITH = {"+": "add", "-": "sub", "*": "mul"}
COMPARE_OPS = {"==": "eq", "~=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
BITWISE_OPS = {"&": "band", "|": "bor", "~": "bxor", "<<": "shl", ">>": "shr"}
MAX_POWER = 16
# The globals that @aot code gives a meaning of their own: a local of one of these names hides it.
LIBRARY_NAMES = frozenset({"math", "nupp", "assert"})


# ---- scopes ------------------------------------------------------------------------------

@dataclass
class Binding:
    """What a source name means inside an @aot function."""

    kind: str                 # "local", "param", "counter", "span", "element"
    ir_name: str = ""
    width: Optional[Width] = None
    span: Optional[ir.Param] = None     # for "span"; for "element" the indexed span
    index: str = ""                     # for "element": the counter's IR name


@dataclass
class FunctionState:
    fn_name: str
    result: Optional[Width]
    scopes: list[dict[str, Binding]] = field(default_factory=lambda: [{}])
    used_names: set[str] = field(default_factory=set)
    loops: list[Optional[ir.For]] = field(default_factory=list)   # enclosing loops; For or None (while)
    counters: list["Counter"] = field(default_factory=list)        # enclosing counted loops' counters
    seen_loop: bool = False
    source_names: frozenset = frozenset()  # every identifier of the function's source
    equal_lengths: dict[str, str] = field(default_factory=dict)   # union-find over span names

    def lookup(self, name: str) -> Optional[Binding]:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def declare(self, name: str, binding: Binding) -> Binding:
        self.scopes[-1][name] = binding
        return binding

    def fresh(self, name: str, avoid: frozenset = frozenset()) -> str:
        """A function-unique IR name for a source local (shadowing renames)."""
        candidate, n = name, 1
        while candidate in self.used_names or candidate in avoid:
            n += 1
            candidate = f"{name}_{n}"
        self.used_names.add(candidate)
        return candidate

    def temporary(self, stem: str) -> str:
        """A name for a compiler temporary: never one the source uses, so no
        source local is renamed on its account."""
        return self.fresh(stem, self.source_names)

    def length_class(self, span: str) -> str:
        while self.equal_lengths.get(span, span) != span:
            span = self.equal_lengths[span]
        return span

    def counter(self, ir_name: str) -> "Counter":
        return next(c for c in self.counters if c.ir_name == ir_name)


@dataclass(frozen=True)
class Counter:
    """A counted loop's counter and what its bounds prove (the verifier's `bounds` rule)."""

    ir_name: str
    loop: ast.NumericFor
    bound: str          # the span whose length bounds the loop, in a shape that keeps
                        # every index in bounds (from 1 up to #s, or from #s down to 1); "" if none
    over_spans: bool    # the bounds read a span's length: no `return` inside


# ---- the checker ---------------------------------------------------------------------------

class Checker:
    def __init__(self, source: Source):
        self.source = source
        self.diagnostics: list[Diagnostic] = []
        self.aliases: dict[str, tuple[str, ...]] = {}
        self.structs: dict[str, ir.StructDef] = {}
        self.functions: dict[str, ir.Function] = {}
        self.signatures: dict[str, tuple[tuple[ir.Param, ...], Optional[Width]]] = {}  # callable by name
        self.definitions: dict[str, object] = {}  # every @aot function by name: its definition
        self.unusable: set[str] = set()           # @aot functions whose signature validate.py refused
        self.hidden_by: dict[str, object] = {}    # an @aot name -> the top-level declaration hiding it
        self.callees: dict[str, ast.Call] = {}    # @aot functions called from @aot code: the first call
        self.module_names: dict[str, object] = {}  # top-level names declared so far -> their declaration
        self.alias_uses: dict[str, tuple] = {}     # aliases @aot code used -> (declaration, first use)
        self.fs: FunctionState | None = None

    # ---- diagnostics
    def error(self, node, message: str, hint: str | None = None) -> None:
        span = node if isinstance(node, ast.Span) else node.span
        self.diagnostics.append(Diagnostic(self.source, span.line, span.col, message, hint))

    def refuse(self, node, message: str, hint: str | None = None):
        self.error(node, message, hint)
        return Invalid(_loc(node))

    # ---- module
    def module(self, chunk: ast.Chunk) -> ir.Module:
        self.diagnostics.extend(validation_diagnostics(self.source, chunk))
        for stat in chunk.body.stats:
            self.module_statement(stat)
        self.refuse_reassigned_names(chunk)
        if self.diagnostics:
            raise NuppError(sorted(self.diagnostics, key=lambda d: (d.line, d.col)))
        return ir.Module(tuple(self.structs.values()), tuple(self.functions.values()))

    def module_statement(self, stat) -> None:
        if isinstance(stat, ast.Local):
            self.module_aliases(stat)  # its values are read before its names are declared
        for name in _declared_names(stat):
            self.declare_module_name(name, stat)
        if _aot_attribute(stat):
            self.aot_function(stat)
        elif isinstance(stat, ast.StructDecl):
            self.struct_declaration(stat)

    def declare_module_name(self, name: str, declaration) -> None:
        """`name` means `declaration` to the code after it (and to an @aot function's own body)."""
        self.module_names[name] = declaration
        if not isinstance(declaration, ast.Local):
            self.aliases.pop(name, None)  # module_aliases keeps a Local's own
        if not _aot_attribute(declaration):
            self.hide(name, declaration)

    def struct_declaration(self, stat: ast.StructDecl) -> None:
        # validate.py reports a repeated name or an unknown field type; such a
        # struct stays unknown here, so functions over it are skipped quietly
        if stat.name in self.structs or any(f.type.name not in FIELD_STORAGE for f in stat.fields):
            return
        self.structs[stat.name] = ir.StructDef(stat.name, tuple((f.name, f.type.name) for f in stat.fields))

    def hide(self, name: str, declaration) -> None:
        """A top-level declaration hides an @aot function of its name from the code after it."""
        if name in self.signatures or name in self.unusable:
            self.signatures.pop(name, None)
            self.unusable.discard(name)
            self.hidden_by[name] = declaration

    def refuse_reassigned_names(self, chunk: ast.Chunk) -> None:
        """@aot code is bound when it is checked: it calls its @aot callees directly and
        resolves module aliases once, where Lua goes through the names at each call;
        assigning such a name would make them disagree."""
        fixed = {name: (stat, self.callees[name]) for name, stat in self.definitions.items() if name in self.callees}
        fixed.update(self.alias_uses)
        declarations = {name: declaration for name, (declaration, _) in fixed.items()}
        for name, target in _assignments_after_definitions(chunk.body, declarations):
            declaration, use = fixed[name]
            if _aot_attribute(declaration):
                self.error(target, f"'{name}' is assigned here, but @aot code calls the @aot function "
                           f"'{name}' (the call at {_position(use)})",
                           "assign another name: calls between @aot functions are fixed when they are "
                           "compiled, so native and ordinary execution would run different functions")
            else:
                self.error(target, f"'{name}' is assigned here, but @aot code calls through the module "
                           f"alias '{name}' (at {_position(use)})",
                           f"assign another name: @aot code resolves `local {name} = ...` when it is "
                           "checked, so it would not see this value")

    def local_name(self, name: str) -> str:
        """A local the function declares or a module local, in words."""
        if self.fs.lookup(name) is not None:
            return f"a local of '{self.fs.fn_name}'"
        return self.outer_name(name)

    def outer_name(self, name: str) -> str:
        """What a name that an @aot function does not declare denotes there, in words."""
        declaration = self.module_names.get(name)
        if declaration is None:
            return f"the global '{name}'"
        if _aot_attribute(declaration):
            return f"the @aot function '{name}' (defined at {_position(declaration)})"
        what = {"LocalFunction": "the module's local function", "StructDecl": "the struct"}.get(
            type(declaration).__name__, "the module's local")
        return f"{what} '{name}' (declared at {_position(declaration)})"

    def module_aliases(self, stat: ast.Local) -> None:
        # `local span = nupp.mem.span`, `local f32 = nupp.math.f32`: resolved at compile time
        for name, value in zip(stat.names, stat.values):
            path = self.dotted_path(value)
            if path and path[0] in ("nupp", "math"):
                self.aliases[name.name] = path
            else:
                self.aliases.pop(name.name, None)

    def dotted_path(self, expr) -> tuple[str, ...]:
        """`a.b.c` as the names of its path, a module alias resolved; () for any other
        expression, and for a path through a local of the function or a module local
        that hides a global the checker gives meaning to (Lua would use the local)."""
        if isinstance(expr, ast.Name):
            if self.declared_locally(expr.id):
                return ()
            if expr.id in self.aliases and self.fs is not None:
                self.alias_uses.setdefault(expr.id, (self.module_names[expr.id], expr))
            return self.aliases.get(expr.id, (expr.id,))
        if isinstance(expr, ast.Field):
            base = self.dotted_path(expr.obj)
            return base + (expr.name,) if base else ()
        return ()

    def declared_locally(self, name: str) -> bool:
        """Whether `name` is a local of the function being checked, or a module local
        (not an alias) named like a library: math, nupp, assert."""
        if self.fs is not None and self.fs.lookup(name) is not None:
            return True
        return name in LIBRARY_NAMES and name in self.module_names and name not in self.aliases

    # ---- functions
    def aot_function(self, stat) -> None:
        name = stat.name if isinstance(stat, ast.LocalFunction) else ".".join(stat.path)
        if isinstance(stat, ast.FunctionStat) and (len(stat.path) > 1 or stat.method):
            return  # validate.py refuses it
        self.module_names.setdefault(name, stat)  # `function f`: a global the module defines
        first = self.definitions.setdefault(name, stat)
        if first is not stat:
            self.error(stat, f"@aot function '{name}' is defined a second time (the first is at {_position(first)})",
                       "rename one of them: a module's @aot functions are compiled by name, so the second "
                       "would silently replace the first")
            return
        params = tuple(self.parameter(p) for p in stat.func.params)
        if any(p is None for p in params) or not _known_result(stat.func):
            self.unusable.add(name)  # validate.py reports why
            return
        result = self.result_width(stat.func.returns)
        self.signatures[name] = (params, result)
        self.fs = FunctionState(name, result, source_names=_identifiers(stat.func))
        for p in params:
            kind = "span" if isinstance(p.type, ir.SpanType) else "param"
            self.fs.used_names.add(p.name)
            self.fs.declare(p.name, Binding(kind, p.name, None if kind == "span" else p.type, p))
        body = self.block_stmts(stat.func.body)
        vectorize = all(not (k == "vectorize" and isinstance(v, ast.Bool) and not v.value)
                        for attr in stat.attributes for k, v in attr.args)
        if result is not None and _can_complete(body):
            end = stat.span
            self.error(ast.Span(end.end_line, end.end_col - len("end"), end.end_line, end.end_col),
                       f"'{name}' can reach its end without returning {_a(result)}",
                       "return a value on every path: add a return before this `end` "
                       "(a loop's body may run zero times)")
        self.functions[name] = ir.Function(name, params, result, body, alias_matrix(params),
                                           vectorize, _loc(stat))
        self.fs = None

    def parameter(self, p: ast.Param) -> Optional[ir.Param]:
        # validate.py has already refused missing and unknown types
        if p.type is None:
            return None
        kind = p.type.path[-1]
        if kind in SPAN_KINDS:
            struct = p.type.args[0].name if p.type.args else ""
            if struct not in self.structs:
                return None
            return ir.Param(p.name, ir.SpanType(struct, kind == "WriteSpan"), p.qualifier)
        width = TYPE_WIDTHS.get(p.type.name)
        return ir.Param(p.name, width) if width is not None else None

    def result_width(self, t: Optional[ast.TypeRef]) -> Optional[Width]:
        if t is None or t.name == "nil":
            return None
        return TYPE_WIDTHS.get(t.name)

    # ---- blocks and statements
    def block_stmts(self, block: ast.Block) -> tuple:
        self.fs.scopes.append({})
        try:
            return self.statements(block.stats)
        finally:
            self.fs.scopes.pop()

    def statements(self, stats) -> tuple:
        out: list = []
        for stat in stats:
            try:
                out.extend(self.statement(stat))
            except CheckError:
                pass  # diagnosed; go on with the next statement
        return tuple(out)

    def statement(self, stat) -> list:
        method = getattr(self, "stat_" + type(stat).__name__, None)
        if method is None:
            self.error(stat, f"{_describe_statement(stat)} is outside the AOT subset",
                       "an @aot function uses local, assignment, if, numeric for, while, repeat, "
                       "break, return and assert")
            return []
        return method(stat)

    def stat_Local(self, s: ast.Local) -> list:
        if len(s.values) == 1 and isinstance(s.values[0], ast.Switch):
            try:
                return self.switch_initializer(s)
            except CheckError:
                self.declare_refused(s.names[0])
                raise
        if len(s.values) != len(s.names):
            self.error(s, "each local of an @aot function needs exactly one initial value",
                       "write `local x: int32 = 0`; multiple values and nil locals are outside the subset")
            for name in s.names:
                self.declare_refused(name)
            return []
        out, refused = [], False
        for name, value in zip(s.names, s.values):
            try:
                out.extend(self.local_declaration(name, value))
            except CheckError:
                self.declare_refused(name)
                refused = True
        if refused:
            raise CheckError
        return out

    def declare_refused(self, name: ast.Param) -> None:
        """A local whose declaration was refused is declared all the same, of no
        known width, so that its uses report nothing more (see refused_local)."""
        self.fs.declare(name.name, Binding("local", self.fs.fresh(name.name), None))

    def refused_local(self, node) -> bool:
        """Whether `node` is, or is a path starting at, a local of no known width: one
        whose declaration or initial value was refused, and reported."""
        name = _root_name(node)
        binding = self.fs.lookup(name) if name is not None else None
        return binding is not None and binding.kind == "local" and binding.width is None

    def local_declaration(self, name: ast.Param, value) -> list:
        element = self.element_reference(value)
        if element is not None:
            self.fs.declare(name.name, element)
            if name.type is not None:
                self.error(name.type, f"'{name.name}' refers to a span element, which has no type of its own",
                           f"drop the annotation: `local {name.name} = ...`, then read its fields")
            return []
        declared = self.declared_width(name)
        expr = self.expr(value)
        if declared is None:
            declared = self.settle(expr, None).width
            if declared is None:
                self.fs.declare(name.name, Binding("local", self.fs.fresh(name.name), None))
                return []
        converted = self.assignment(expr, declared, value, f"local '{name.name}'")
        ir_name = self.fs.fresh(name.name)
        self.fs.declare(name.name, Binding("local", ir_name, declared))
        return [ir.Let(ir_name, declared, converted, _loc(name))]

    def declared_width(self, name: ast.Param) -> Optional[Width]:
        if name.type is None:
            return None
        width = TYPE_WIDTHS.get(name.type.name)
        if width is None or name.type.args:
            self.error(name.type, f"a local of an @aot function cannot have type '{name.type.name}'",
                       "use a number type: " + ", ".join(TYPE_WIDTHS))
            raise CheckError
        return width

    def element_reference(self, value) -> Optional[Binding]:
        """`local e = s[i]` binds e to the element; `e.x` then loads s[i].x."""
        if not isinstance(value, ast.Index):
            return None
        span, counter = self.span_index(value)
        return Binding("element", span=span, index=counter)

    def stat_Assign(self, s: ast.Assign) -> list:
        if len(s.targets) != 1 or len(s.values) != 1:
            self.error(s, "multiple assignment is outside the AOT subset", "assign one target per statement")
            return []
        target, value = s.targets[0], s.values[0]
        if isinstance(target, ast.Name):
            return self.assign_local(target, value)
        if isinstance(target, ast.Field):
            return self.store(target, value)
        self.error(target, "only a local or a span element's field can be assigned in an @aot function")
        return []

    def assign_local(self, target: ast.Name, value) -> list:
        binding = self.fs.lookup(target.id)
        if binding is None:
            self.error(target, f"assignment to {self.outer_name(target.id)} is outside the AOT subset",
                       "an @aot function assigns only its own locals and its spans' fields: "
                       "declare it with `local` first")
            return []
        if binding.kind not in ("local", "param"):
            what = {"counter": "the loop counter", "span": "the span parameter",
                    "element": "the element reference"}[binding.kind]
            self.error(target, f"cannot assign to {what} '{target.id}'")
            return []
        expr = self.expr(value)
        if binding.width is None:
            return []
        converted = self.assignment(expr, binding.width, value, f"local '{target.id}'")
        return [ir.Assign(binding.ir_name, converted, _loc(target))]

    def store(self, target: ast.Field, value) -> list:
        span, counter = self.element_of(target.obj)
        struct = self.structs[span.type.struct]
        ftype = struct.field_type(target.name)
        if ftype is None:
            self.error(target, f"struct {struct.name} has no field '{target.name}'")
            raise CheckError
        if not span.type.writable:
            self.error(target, f"cannot store through '{span.name}': a span.Span is read-only",
                       "declare it `exclusive {0}: span.WriteSpan<{1}>` to write it".format(span.name, struct.name))
            raise CheckError
        storage = FIELD_STORAGE[ftype]
        expr = self.expr(value)
        what = f"field '{target.name}' ({ftype}) of {struct.name}"
        if not isinstance(expr, Literal) and expr.width is not None and storage.takes(expr.width):
            converted = expr  # the store narrows or reduces it (binary64 to a float field: no f32.narrow)
        elif storage.store_width is not None:
            converted = self.assignment(expr, storage.store_width, value, what)
        else:
            converted = self.integer_store(expr, storage, value, what)
        if isinstance(converted, Invalid):
            raise CheckError
        return [ir.Store(span.name, counter, target.name, converted, _loc(target))]

    def integer_store(self, value, storage: FieldStorage, node, what: str):
        """What an integer field does not take as it is (FieldStorage.takes: an
        integer of any width): an integer literal takes the width a load of the
        field gives, and a fractional one is binary64 (LANGUAGE.md section 2)."""
        if isinstance(value, Literal) and value.is_integer:
            return self.literal_const(value, storage.load_width)
        width = F64 if isinstance(value, Literal) else value.width
        if width is None:
            return value
        shown = self.literal_text(value) if isinstance(value, Literal) else _a(width)
        wrap_width = (I64 if storage.signed else U64) if storage.bits == 64 else (I32 if storage.signed else U32)
        return self.refuse(node, f"cannot store {shown} in integer {what}",
                           CONVERSION_HINTS[wrap_width] if width.is_float else None)

    def stat_CallStat(self, s: ast.CallStat) -> list:
        call = s.call
        if isinstance(call, ast.Call) and self.dotted_path(call.func) == ("assert",):
            return self.assert_statement(call)
        expr = self.call(call) if isinstance(call, ast.Call) else self.expr(call)
        if isinstance(expr, ir.Call):
            return [ir.Eval(expr, _loc(s))]
        if not isinstance(expr, Invalid):
            self.error(s, "the result of this call is unused", "assign it to a local")
        return []

    def stat_If(self, s: ast.If) -> list:
        orelse = self.block_stmts(s.orelse) if s.orelse is not None else ()
        for cond, body in reversed(s.clauses):
            test = self.condition(cond)
            stmt = ir.If(test, self.block_stmts(body), orelse, None, _loc(cond))
            orelse = (stmt,)
        return list(orelse)

    def condition(self, node) -> ir.Expr:
        expr = self.settle(self.expr(node), None)
        if expr.width is not None and expr.width != BOOL:
            self.error(node, f"a condition must be a boolean, not {_a(expr.width)}",
                       "compare it, e.g. `x ~= 0`")
        return expr

    def stat_NumericFor(self, s: ast.NumericFor) -> list:
        step = self.loop_step(s.step)
        start = self.i32_operand(s.start, "the loop's start")
        stop = self.i32_operand(s.stop, "the loop's bound")
        counter = self.fs.fresh(s.var)
        over_spans = any(isinstance(x, ir.Len) for bound in (start, stop) for x in subexprs(bound))
        self.fs.seen_loop = True
        self.fs.scopes.append({s.var: Binding("counter", counter, I32)})
        self.fs.counters.append(Counter(counter, s, _length_bound(start, stop, step), over_spans))
        loop = ir.For(counter, start, stop, step, (), _loc(s))
        self.fs.loops.append(loop)
        try:
            body = self.block_stmts(s.body)
        finally:
            self.fs.loops.pop()
            self.fs.counters.pop()
            self.fs.scopes.pop()
        return [ir.For(counter, start, stop, step, body, _loc(s))]

    def loop_step(self, node) -> int:
        if node is None:
            return 1
        value = node.operand if isinstance(node, ast.UnOp) and node.op == "-" else node
        if isinstance(value, ast.Number):
            n = read_numeral(value.raw)
            if n.is_integer and n.suffix == "":
                step = -n.as_int() if value is not node else n.as_int()
                if step != 0 and integer_fits(step, I32):
                    return step
        self.error(node, "the step of a counted loop must be a non-zero int32 literal",
                   "the loop counter is int32: write a step from -2147483648 to 2147483647, not 0")
        raise CheckError

    def i32_operand(self, node, what: str) -> ir.Expr:
        expr = self.settle(self.expr(node), I32)
        if expr.width not in (I32, None):
            self.error(node, f"{what} must be an int32, not {_a(expr.width)}",
                       "the loop counter is int32: use #span, an int32 value or an integer literal")
        return expr

    def stat_While(self, s: ast.While) -> list:
        cond = self.condition(s.cond)
        self.fs.seen_loop = True
        self.fs.loops.append(None)
        try:
            body = self.block_stmts(s.body)
        finally:
            self.fs.loops.pop()
        return [ir.While(cond, body, _loc(s))]

    def stat_Repeat(self, s: ast.Repeat) -> list:
        # repeat B until C  ==  while true do B; if C then break end end
        # C sees B's locals, so it is checked in B's scope.
        self.fs.seen_loop = True
        self.fs.loops.append(None)
        self.fs.scopes.append({})
        try:
            body = list(self.statements(s.body.stats))
            cond = self.condition(s.cond)
        finally:
            self.fs.scopes.pop()
            self.fs.loops.pop()
        exit_test = ir.If(cond, (ir.Break(_loc(s.cond)),), (), None, _loc(s.cond))
        return [ir.While(ir.Const(True, BOOL, _loc(s)), tuple(body) + (exit_test,), _loc(s))]

    def stat_Break(self, s: ast.Break) -> list:
        if not self.fs.loops:
            self.error(s, "break outside a loop")
        return [ir.Break(_loc(s))]

    def stat_Return(self, s: ast.Return) -> list:
        if any(c.over_spans for c in self.fs.counters):
            self.error(s, "return inside a loop over spans is outside the AOT subset",
                       "set a local and break, then return after the loop")
            return []
        if len(s.values) > 1:
            self.error(s.values[1], "multiple results are outside the AOT subset")
            return []
        result = self.fs.result
        if not s.values:
            if result is not None:
                self.error(s, f"'{self.fs.fn_name}' must return {_a(result)}")
            return [ir.Return(None, _loc(s))]
        if result is None:
            self.error(s.values[0], f"'{self.fs.fn_name}' is declared to return nothing (nil)")
            return []
        value = self.assignment(self.expr(s.values[0]), result, s.values[0], "the result")
        return [ir.Return(value, _loc(s))]

    def stat_FunctionStat(self, s) -> list:
        self.error(s, "nested functions (closures) are outside the AOT subset")
        return []

    stat_LocalFunction = stat_FunctionStat

    def stat_Do(self, s: ast.Do) -> list:
        return list(self.block_stmts(s.body))

    def stat_GenericFor(self, s: ast.GenericFor) -> list:
        self.error(s, "a generic for (for ... in) is outside the AOT subset",
                   "loop with a counter: `for i = 1, #s do`")
        return []

    def stat_SwitchStat(self, s: ast.SwitchStat) -> list:
        self.error(s, "a switch statement is outside the AOT subset",
                   "a switch may be the sole initializer of one local: `local r: int32 = switch x do ... end`")
        return []

    def stat_StructDecl(self, s) -> list:
        return []  # validate.py refuses structs inside functions

    # ---- assert (a call statement of the global `assert`)
    def assert_statement(self, call: ast.Call) -> list:
        if self.fs.loops or self.fs.seen_loop or len(self.fs.scopes) > 2:
            self.error(call, "assert must be at function level, before the first loop")
            raise CheckError
        if len(call.args) != 2 or not isinstance(call.args[1], ast.String):
            self.error(call, 'assert takes a condition and a literal message: assert(#a == #b, "length mismatch")')
            raise CheckError
        cond = self.condition(call.args[0])
        self.record_length_equality(cond)
        return [ir.Assert(cond, string_value(call.args[1].raw), _loc(call))]

    def record_length_equality(self, cond) -> None:
        """`#a == #b`, alone or as a conjunct of `and`, proves a and b equal in length."""
        if isinstance(cond, ir.Op) and cond.op == "and.bool":
            for conjunct in cond.args:
                self.record_length_equality(conjunct)
        elif (isinstance(cond, ir.Op) and cond.op == "eq.i32"
                and all(isinstance(a, ir.Len) for a in cond.args)):
            a, b = (self.fs.length_class(x.span) for x in cond.args)
            if a != b:
                self.fs.equal_lengths[a] = b

    # ---- switch initializer
    def switch_initializer(self, s: ast.Local) -> list:
        name, sw = s.names[0], s.values[0]
        if len(s.names) != 1:
            self.error(s, "a switch initializes exactly one local")
            raise CheckError
        selector = self.settle(self.expr(sw.subject), None)
        if selector.width not in (F64, I32, U32, None):
            self.error(sw.subject, f"a switch selector must be a number, int32 or uint32, not "
                       f"{_a(selector.width)}")
            raise CheckError
        if sw.otherwise is None:
            self.error(sw, "this switch is not exhaustive: add an `else -> value` arm")
            raise CheckError
        result = self.declared_width(name)
        arms = list(sw.arms) + [sw.otherwise]
        first_of: dict[int, ast.Pattern] = {}  # each label's first case
        cases = [self.switch_cases(arm, selector.width, first_of) for arm in sw.arms]
        values = [self.switch_arm_value(arm) for arm in arms]
        if selector.width is None:
            raise CheckError  # the selector is refused; its arms are checked
        if result is None:
            result = self.common_width(values, sw)
        sel_name = self.fs.temporary("sel")
        result_name = self.fs.fresh(name.name)
        assigns = [self.assignment(v, result, arm.expr or arm, f"local '{name.name}'") for v, arm in zip(values, arms)]
        chain: tuple = (ir.Assign(result_name, assigns[-1], _loc(sw.otherwise)),)
        for arm, labels, value in reversed(list(zip(sw.arms, cases, assigns))):
            tests = [self.selector_test(sel_name, selector.width, c, arm) for c in labels]
            cond = tests[0]
            for t in tests[1:]:
                cond = ir.Op("or.bool", (cond, t), _loc(arm))
            chain = (ir.If(cond, (ir.Assign(result_name, value, _loc(arm)),), chain, None, _loc(arm)),)
        labels = None
        if selector.width in (I32, U32):
            labels = ir.SwitchLabels(sel_name, selector.width, tuple(tuple(c) for c in cases), True)
        top = chain[0]
        if isinstance(top, ir.If):
            chain = (ir.If(top.cond, top.then, top.orelse, labels, top.loc),)
        self.fs.declare(name.name, Binding("local", result_name, result))
        return [ir.Let(sel_name, selector.width, selector, _loc(sw)),
                ir.Let(result_name, result, None, _loc(name)), *chain]

    def switch_cases(self, arm: ast.SwitchArm, width: Optional[Width], first_of: dict) -> list[int | float]:
        labels = []
        for p in arm.patterns:
            if p.kind != "number":
                what = {"type": "a type pattern", "string": "a string case"}.get(p.kind, f"a {p.kind} case")
                self.error(p, f"{what} is outside the AOT subset", "switch cases are integer constants")
                raise CheckError
            n = read_numeral(p.raw)
            if not n.is_integer or n.suffix:
                self.error(p, f"the case {p.raw} is not an integer constant")
                raise CheckError
            value = n.as_int()
            if width in (I32, U32) and not integer_fits(value, width):
                self.error(p, f"the case {p.raw} does not fit the selector's width {_width_name(width)}")
                raise CheckError
            if value in first_of:
                self.error(p, f"the case {p.raw} repeats the case at {_position(first_of[value])}",
                           "remove it: the first case that matches is the one chosen, so this one never is")
                raise CheckError
            first_of[value] = p
            labels.append(value if width != F64 else float(value))
        return labels

    def switch_arm_value(self, arm: ast.SwitchArm):
        if arm.block is not None:
            raise CheckError  # validate.py refuses a block arm in any switch expression
        if isinstance(arm.expr, ast.Switch):
            self.error(arm.expr, "a nested switch is outside the AOT subset")
            raise CheckError
        return self.expr(arm.expr)

    def common_width(self, values, sw) -> Width:
        widths = {v.width for v in values if not isinstance(v, (Literal, Invalid))}
        if len(widths) == 1:
            return widths.pop()
        if not widths:
            return F64
        self.error(sw, "the arms of this switch have different widths",
                   "declare the local's type: `local r: int32 = switch ...`")
        raise CheckError

    def selector_test(self, sel: str, width: Width, label, arm) -> ir.Op:
        return ir.Op(compare_op("eq", width, width), (ir.Var(sel, width, _loc(arm)), ir.Const(label, width, _loc(arm))),
                     _loc(arm))

    # ---- expressions -------------------------------------------------------------------------
    def expr(self, node):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            return self.refuse(node, f"{_describe_expression(node)} is outside the AOT subset")
        return method(node)

    def expr_Paren(self, e: ast.Paren):
        return self.expr(e.expr)

    def expr_Number(self, e: ast.Number):
        n = read_numeral(e.raw)
        if n.suffix == "i":
            return self.refuse(e, "imaginary numbers are outside the AOT subset")
        if n.suffix:
            width = I64 if n.suffix == "LL" else U64
            return ir.Const(n.as_int(), width, _loc(e))
        return Literal(e, n.value, n.is_integer, _loc(e))

    def expr_Bool(self, e: ast.Bool):
        return ir.Const(e.value, BOOL, _loc(e))

    def expr_Name(self, e: ast.Name):
        binding = self.fs.lookup(e.id)
        if binding is None:
            return self.refuse(e, f"{self.outer_name(e.id)} is outside the AOT subset",
                               "use a parameter or a local; module aliases like `local f32 = nupp.math.f32` "
                               "are resolved only in calls")
        if binding.kind in ("span", "element"):
            what = "a span element" if binding.kind == "element" else "a span"
            return self.refuse(e, f"'{e.id}' is {what} and cannot be used as a value",
                               "read a field (s[i].field) or take a span's length (#s)")
        if binding.width is None:
            return Invalid(_loc(e))
        return ir.Var(binding.ir_name, binding.width, _loc(e))

    def expr_String(self, e):
        return self.refuse(e, "strings are outside the AOT subset")

    def expr_Table(self, e):
        return self.refuse(e, "tables are outside the AOT subset")

    def expr_Function(self, e):
        return self.refuse(e, "closures are outside the AOT subset")

    def expr_Vararg(self, e):
        return self.refuse(e, "varargs (...) are outside the AOT subset")

    def expr_Nil(self, e):
        return self.refuse(e, "nil is outside the AOT subset")

    def expr_MethodCall(self, e):
        return self.refuse(e, f"method calls (':{e.method}') are outside the AOT subset")

    def expr_Switch(self, e):
        return self.refuse(e, "a switch is admitted only as the sole initializer of a local",
                           "write `local r: int32 = switch x do ... end`")

    def expr_Index(self, e: ast.Index):
        return self.refuse(e, "a span element is not a value", "read one of its fields: s[i].field")

    def expr_Field(self, e: ast.Field):
        path = self.dotted_path(e)
        if path and path[0] in ("nupp", "math"):
            return self.library_value(e, path)
        span, counter = self.element_of(e.obj)
        struct = self.structs[span.type.struct]
        ftype = struct.field_type(e.name)
        if ftype is None:
            return self.refuse(e, f"struct {struct.name} has no field '{e.name}'")
        return ir.Load(span.name, counter, e.name, FIELD_STORAGE[ftype].load_width, _loc(e))

    def library_value(self, e: ast.Field, path: tuple[str, ...]) -> Invalid:
        """`nupp.math.f32.sqrt` or `nupp.math.f32` as a value: @aot code calls library
        functions and resolves only module-level aliases (LANGUAGE.md section 6)."""
        written = self.source_text(e)
        if path not in MATH_CALLS:
            return self.refuse(e, f"{written} is outside the AOT subset",
                               "alias a library at module level, before the function (`local f32 = nupp.math.f32`), "
                               "and call its functions: `f32.sqrt(x)`")
        arguments = ", ".join("xyz"[:len(MATH_CALLS[path][1])])
        hint = f"call it: `{written}({arguments})`"
        if len(path) > 2:
            library = ".".join(path[:-1])
            hint += f"; for a shorter name, alias its library at module level: `local {path[-2]} = {library}`"
        return self.refuse(e, f"the library function {written} can only be called in an @aot function, "
                           "not used as a value", hint)

    def element_of(self, obj) -> tuple[ir.Param, str]:
        """The span and counter of `s[i]` or of an element reference `e`."""
        if isinstance(obj, ast.Name):
            binding = self.fs.lookup(obj.id)
            if binding is not None and binding.kind == "element":
                return binding.span, binding.index
        if isinstance(obj, ast.Index):
            return self.span_index(obj)
        if self.refused_local(obj):
            raise CheckError
        self.error(obj, "only span elements (s[i].field) have fields in an @aot function")
        raise CheckError

    def span_index(self, e: ast.Index) -> tuple[ir.Param, str]:
        span = self.fs.lookup(e.obj.id) if isinstance(e.obj, ast.Name) else None
        if span is None or span.kind != "span":
            if self.refused_local(e.obj):
                raise CheckError
            self.error(e.obj, "only a span parameter can be indexed in an @aot function")
            raise CheckError
        counter = self.fs.lookup(e.key.id) if isinstance(e.key, ast.Name) else None
        if counter is None or counter.kind != "counter":
            self.error(e.key, f"'{e.obj.id}' must be indexed by a counted loop's counter",
                       "indexing by anything else is outside the AOT subset: loop `for i = 1, #s do` and use s[i]")
            raise CheckError
        self.check_bound(e, span.span, counter.ir_name)
        return span.span, counter.ir_name

    def check_bound(self, e: ast.Index, span: ir.Param, counter: str) -> None:
        loop = self.fs.counter(counter)
        bound = loop.bound
        if not bound:
            self.error(e, f"'{span.name}' is indexed by a loop not proven to stay in its bounds: "
                       f"the loop at {_position(loop.loop)} runs {self.loop_range(loop.loop)}",
                       f"index spans in a loop from 1 up to #{span.name} "
                       f"(or from #{span.name} down to 1 with a negative step)")
            raise CheckError
        if self.fs.length_class(bound) == self.fs.length_class(span.name):
            return
        self.error(e, f"'{span.name}' is not proven at least as long as the loop's bound (#{bound})",
                   f"loop to #{span.name}, or assert(#{span.name} == #{bound}, \"length mismatch\") "
                   "before the loop")
        raise CheckError

    def loop_range(self, loop: ast.NumericFor) -> str:
        """`from 0 to #out step -1`, in the source's words."""
        words = f"from {self.source_text(loop.start)} to {self.source_text(loop.stop)}"
        return words + (f" step {self.source_text(loop.step)}" if loop.step is not None else "")

    def source_text(self, node) -> str:
        span = node.span
        if span.line != span.end_line:
            return "..."
        return self.source.line_text(span.line)[span.col - 1:span.end_col - 1]

    def literal_text(self, lit: Literal) -> str:
        """A literal as written: `2.5`, `-1`."""
        return self.source_text(lit.node)

    def expr_UnOp(self, e: ast.UnOp):
        if e.op == "#":
            return self.length(e)
        operand = self.expr(e.operand)
        if e.op == "not":
            operand = self.settle(operand, None)
            if operand.width not in (BOOL, None):
                return self.refuse(e, f"`not` takes a boolean, not {_a(operand.width)}")
            return self.op("not.bool", operand, loc=e)
        if e.op == "-":
            if isinstance(operand, Literal):
                return Literal(e, -operand.value, operand.is_integer, _loc(e))
            if operand.width in (None,):
                return Invalid(_loc(e))
            width = F64 if operand.width.is_float else operand.width
            if width == BOOL:
                return self.refuse(e, "unary minus takes a number")
            return self.op(arith_op("neg", width), self.convert(operand, width, e.operand), loc=e)
        return self.bitwise_not(e, operand)

    def length(self, e: ast.UnOp):
        binding = self.fs.lookup(e.operand.id) if isinstance(e.operand, ast.Name) else None
        if self.refused_local(e.operand):
            return Invalid(_loc(e))
        if binding is None or binding.kind != "span":
            return self.refuse(e, "`#` takes a span parameter in an @aot function")
        return ir.Len(binding.ir_name, _loc(e))

    def expr_BinOp(self, e: ast.BinOp):
        if e.op in ("and", "or"):
            return self.logical(e)
        left, right = self.expr(e.left), self.expr(e.right)
        if isinstance(left, Invalid) or isinstance(right, Invalid):
            return Invalid(_loc(e))
        if e.op in COMPARE_OPS:
            return self.comparison(e, left, right)
        if e.op in BITWISE_OPS:
            return self.bitwise(e, left, right)
        if e.op == "^":
            return self.power(e, left, right)
        if e.op == "..":
            return self.refuse(e, "string concatenation is outside the AOT subset")
        return self.arithmetic(e, left, right)

    def logical(self, e: ast.BinOp):
        operands = []
        for side in (e.left, e.right):
            v = self.settle(self.expr(side), None)
            if v.width not in (BOOL, None):
                self.error(side, f"`{e.op}` takes booleans, not {_a(v.width)}",
                           "compare it, e.g. `x ~= 0`")
                v = Invalid(_loc(side))
            operands.append(v)
        return self.op(f"{e.op}.bool", *operands, loc=e)

    def arithmetic(self, e: ast.BinOp, left, right):
        left, right = self.settle_pair(left, right)
        lw, rw = left.width, right.width
        if BOOL in (lw, rw):
            return self.refuse(e, f"`{e.op}` takes numbers, not booleans")
        if e.op == "/" or lw.is_float or rw.is_float:
            base = {"/": "div", "//": "idiv", "%": "mod"}.get(e.op) or BINARY_ARITH[e.op]
            return self.op(arith_op(base, F64), self.convert(left, F64, e.left), self.convert(right, F64, e.right), loc=e)
        width = self.integer_common(e, lw, rw)
        if width is None:
            return Invalid(_loc(e))
        base = {"//": "idiv", "%": "mod"}.get(e.op) or BINARY_ARITH[e.op]
        return self.op(arith_op(base, width), self.convert(left, width, e.left), self.convert(right, width, e.right), loc=e)

    def integer_common(self, e, lw: Width, rw: Width) -> Optional[Width]:
        if lw == rw:
            return lw
        if lw.is_signed == rw.is_signed:
            return I64 if lw.is_signed else U64
        self.error(e, f"`{e.op}` mixes {_width_name(lw)} and {_width_name(rw)}", _mix_hint(lw, rw))
        return None

    def comparison(self, e: ast.BinOp, left, right):
        left, right = self.settle_pair(left, right)
        lw, rw = left.width, right.width
        base = COMPARE_OPS[e.op]
        if BOOL in (lw, rw):
            if lw != rw or base not in ("eq", "ne"):
                return self.refuse(e, f"`{e.op}` cannot compare {_a(lw)} with {_a(rw)}")
            return self.op(f"{base}.bool", left, right, loc=e)
        cw_left, cw_right = comparison_widths(lw, rw)
        return self.op(compare_op(base, cw_left, cw_right), self.convert(left, cw_left, e.left),
                       self.convert(right, cw_right, e.right), loc=e)

    def bitwise(self, e: ast.BinOp, left, right):
        base = BITWISE_OPS[e.op]
        if base in ("shl", "shr"):
            return self.shift(e, base, left, right)
        width = self.bitwise_width(e, left, right)
        if width is None:
            return Invalid(_loc(e))
        return self.op(arith_op(base, width), self.bit_operand(left, e.left, width),
                       self.bit_operand(right, e.right, width), loc=e)

    def shift(self, e: ast.BinOp, base: str, left, right):
        value = self.bit_operand(left, e.left, None)
        count = self.bit_operand(right, e.right, None)
        if isinstance(value, Invalid) or isinstance(count, Invalid):
            return Invalid(_loc(e))
        if count.width != I32:  # any integer counts by its low 5 or 6 bits: its low 32 hold them
            count = self.op(conversion_name(count.width, I32), count, loc=e.right)
        return self.op(arith_op(base, value.width), value, count, loc=e)

    def bitwise_width(self, e: ast.BinOp, left, right) -> Optional[Width]:
        """The width of `&`, `|`, `~`: int32 for 32-bit operands; int64 or uint64 when
        an operand is, a 32-bit operand of that signedness widening to it."""
        ints = [v.width for v in (left, right)
                if not isinstance(v, Literal) and v.width is not None and v.width.is_int]
        wide = [w for w in ints if w in (I64, U64)]
        if not wide:
            return I32
        if any(w.is_signed != wide[0].is_signed for w in ints):
            lw, rw = ints
            self.error(e, f"`{e.op}` mixes {_width_name(lw)} and {_width_name(rw)}", _mix_hint(lw, rw))
            return None
        return wide[0]

    def bitwise_not(self, e: ast.UnOp, operand):
        value = self.bit_operand(operand, e.operand, None)
        if isinstance(value, Invalid):
            return value
        return self.op(arith_op("bnot", value.width), value, loc=e)

    def bit_operand(self, value, node, width: Optional[Width]):
        """A bitwise operand at `width`: int32, to which 32-bit values normalize, or
        int64 / uint64, to which a 32-bit value of its signedness widens; None: the
        operand's own (int32 for 32-bit values)."""
        if isinstance(value, Literal):
            if not value.is_integer:
                return self.refuse(node, f"the bitwise operand {self.literal_text(value)} is not an integer")
            n = int(value.value)
            if width in (I64, U64):
                return self.literal_const(value, width)
            if not -(1 << 31) <= n <= (1 << 32) - 1:
                return self.refuse(node, f"the literal {self.literal_text(value)} does not fit 32 bits")
            return ir.Const(((n + (1 << 31)) % (1 << 32)) - (1 << 31), I32, value.loc)
        if value.width is None:
            return Invalid(value.loc)
        if value.width in (I32, U32) and width in (I64, U64):
            return self.convert(value, width, node)  # bitwise_width checked the signedness
        if value.width == U32:
            return self.op("reinterpret.u32.i32", value, loc=node)
        if value.width in (I32, I64, U64):
            return value
        hint = "wrap it first: nupp.math.i32.wrap(x)" if value.width == F64 else None
        return self.refuse(node, f"a bitwise operand must be a 32- or 64-bit integer, not {_a(value.width)}", hint)

    def power(self, e: ast.BinOp, base, exponent):
        if not (isinstance(exponent, Literal) and exponent.is_integer and 0 <= exponent.value <= MAX_POWER):
            return self.refuse(e.right, f"the exponent of `^` must be an integer literal from 0 to {MAX_POWER}")
        base = self.settle(base, F64)
        if base.width not in (F64, F32):
            return self.refuse(e.left, f"`^` takes a binary64 base, not {_a(base.width)}")
        x = self.convert(base, F64, e.left)
        if exponent.value == 0:
            return ir.Const(1.0, F64, _loc(e))
        result = x
        for _ in range(int(exponent.value) - 1):  # left to right: (x * x) * x
            result = ir.Op("mul.f64", (result, x), _loc(e))
        return result

    # ---- calls
    def expr_Call(self, e: ast.Call):
        """A call as a value: it must return one."""
        value = self.call(e)
        if isinstance(value, ir.Call) and value.width is None:
            return self.refuse(e, f"'{value.func}' returns nothing, so its call is not a value",
                               "call it as a statement")
        return value

    def call(self, e: ast.Call):
        path = self.dotted_path(e.func)
        if path == ("assert",):
            self.error(e, "assert is a statement, not a value")
            raise CheckError
        if path in MATH_CALLS:
            return self.math_call(e, path)
        call = self.call_by_name(e, path[0]) if len(path) == 1 else None
        if call is not None:
            return call
        if self.refused_local(e.func):
            return Invalid(_loc(e))
        root = _root_name(e.func)
        if root is not None and self.declared_locally(root):
            return self.refuse(e.func, f"'{root}' is {self.local_name(root)}, not a function or library",
                               "rename the local: in Lua the call would go through it")
        name = ".".join(path) if path else "this function"
        if len(path) == 1 and path[0] in self.module_names:
            name = self.outer_name(path[0])
        return self.refuse(e, f"the call to {name} is outside the AOT subset",
                           "an @aot function calls nupp.math.*, math.sqrt/abs/floor/ceil/min/max "
                           "and @aot functions defined earlier in the module")

    def call_by_name(self, e: ast.Call, name: str):
        """`f(...)`: a call of an @aot function defined earlier, which `f` must still
        name here; None where `f` never named one."""
        if name == self.fs.fn_name:
            return self.refuse(e, f"'{name}' calls itself: recursion is outside the AOT subset")
        if name in self.signatures:
            self.callees.setdefault(name, e)
            return self.function_call(e, name)
        if name in self.unusable:
            return Invalid(_loc(e))  # its signature is reported
        if name in self.hidden_by:
            hider = self.hidden_by[name]
            return self.refuse(e, f"'{name}' here is {_describe_declaration(hider)} at {_position(hider)}, "
                               f"which hides the @aot function '{name}' at {_position(self.definitions[name])}",
                               "rename one of them: @aot code calls only @aot functions")
        return None

    def math_call(self, e: ast.Call, path) -> ir.Expr:
        opcode, widths = MATH_CALLS[path]
        name = ".".join(path)
        if len(e.args) != len(widths):
            return self.refuse(e, f"{name} takes {len(widths)} argument{'s' * (len(widths) != 1)}, "
                               f"got {len(e.args)}")
        args = []
        for node, want in zip(e.args, widths):
            arg = self.math_argument(self.expr(node), want, node, name, opcode)
            args.append(arg)
        if any(isinstance(a, Invalid) for a in args):
            return Invalid(_loc(e))
        return ir.Op(opcode, tuple(args), _loc(e))

    def math_argument(self, arg, want: Width, node, name: str, opcode: str):
        if isinstance(arg, Invalid):
            return arg
        if isinstance(arg, Literal):
            return self.literal_const(arg, want, node)
        if arg.width == want:
            return arg
        if want == F64 and self.promotes_to_f64(arg.width, opcode):
            return self.convert(arg, F64, node)
        hint = CONVERSION_HINTS.get(want) if arg.width == F64 else None
        return self.refuse(node, f"{name} takes {_a(want)}, not {_a(arg.width)}", hint)

    @staticmethod
    def promotes_to_f64(width: Width, opcode: str) -> bool:
        """An entry conversion promotes a 32-bit integer (written down, LANGUAGE.md
        section 4); math.sqrt and friends are ordinary binary64 operations and
        promote a binary32 as an ordinary operator does."""
        if opcode in ENTRY_CONVERSIONS:
            return width in (I32, U32)
        return width in (I32, U32, F32)

    def function_call(self, e: ast.Call, name: str):
        params, result = self.signatures[name]
        if len(e.args) != len(params):
            return self.refuse(e, f"'{name}' takes {len(params)} arguments, got {len(e.args)}")
        args = []
        for node, p in zip(e.args, params):
            if isinstance(p.type, ir.SpanType):
                return self.refuse(node, f"passing spans to '{name}' is not yet supported in @aot code")
            args.append(self.assignment(self.expr(node), p.type, node, f"parameter '{p.name}' of '{name}'",
                                        narrowing=False))
        return ir.Call(name, tuple(args), result, _loc(e))

    # ---- conversions and literals
    def settle(self, value, context: Optional[Width]):
        """Give a literal its width: the context's, or binary64 where there is none."""
        if isinstance(value, Literal):
            return self.literal_const(value, context or F64)
        return value

    def settle_pair(self, left, right):
        """Literals take the other operand's width when it has one and they fit it."""
        if isinstance(left, Literal) and not isinstance(right, Literal):
            return self.settle(left, self.literal_context(left, right.width)), right
        if isinstance(right, Literal) and not isinstance(left, Literal):
            return left, self.settle(right, self.literal_context(right, left.width))
        return self.settle(left, F64), self.settle(right, F64)

    def literal_context(self, lit: Literal, other: Optional[Width]) -> Width:
        if other is not None and other.is_int and lit.is_integer and integer_fits(int(lit.value), other):
            return other
        return F64

    def literal_const(self, lit: Literal, width: Width, node=None):
        if width.is_int:
            if not self.literal_fits(lit, width):
                return Invalid(lit.loc)
            return ir.Const(int(lit.value), width, lit.loc)
        if width == F32:
            if not holds_in_binary32(float(lit.value)):
                return self.refuse(node or lit.node, f"{self.literal_text(lit)} is not exactly a binary32 value",
                                   "narrow it: nupp.math.f32.narrow(x)")
            return ir.Const(float(lit.value), F32, lit.loc)
        if width == BOOL:
            return self.refuse(node or lit.node, "a number where a boolean is expected")
        return ir.Const(float(lit.value), F64, lit.loc)

    def literal_fits(self, lit: Literal, width: Width) -> bool:
        if not lit.is_integer:
            self.error(lit.node, f"{self.literal_text(lit)} is not an integer, but {_a(width)} is expected",
                       CONVERSION_HINTS.get(width))
            return False
        if not integer_fits(int(lit.value), width):
            lo, hi = width.int_range
            self.error(lit.node,
                       f"the literal {self.literal_text(lit)} does not fit {_width_name(width)} ({lo} to {hi})")
            return False
        return True

    def convert(self, value, width: Width, node):
        """`value` at `width`, through the written-down conversion."""
        value = self.settle(value, width)
        if isinstance(value, Invalid) or value.width == width:
            return value
        if (value.width, width) not in CONVERSIONS:
            return self.refuse(node, f"{_a(value.width)} cannot be used as {_a(width)}")
        return ir.Op(conversion_name(value.width, width), (value,), value.loc)

    def assignment(self, value, width: Width, node, what: str, narrowing: bool = True):
        """The store rules: narrows only to binary32; integers widen; binary64 never becomes an integer."""
        value = self.settle(value, width)
        if isinstance(value, Invalid) or value.width is None or value.width == width:
            return value
        src = value.width
        allowed = ((width == F64 and src in (F32, I32, U32, I64, U64))
                   or (width == F32 and src == F64 and narrowing)
                   or (width == I64 and src in (I32, U32)) or (width == U64 and src == U32))
        if not allowed:
            hint = CONVERSION_HINTS.get(width) if src == F64 else _integer_hint(src, width)
            return self.refuse(node, f"cannot assign {_a(src)} to {what} ({_width_name(width)})", hint)
        return ir.Op(conversion_name(src, width), (value,), value.loc)

    def op(self, name: str, *args, loc) -> ir.Expr:
        if any(isinstance(a, Invalid) or a.width is None for a in args):
            return Invalid(_loc(loc))
        return ir.Op(name, tuple(args), _loc(loc))


def comparison_widths(lw: Width, rw: Width) -> tuple[Width, Width]:
    """The widths two operands are compared in, by mathematical value (LANGUAGE.md section 3)."""
    if lw.is_float or rw.is_float:
        return F64, F64
    if lw == rw:
        return lw, rw
    if U64 in (lw, rw):
        other = rw if lw == U64 else lw
        if not other.is_signed:
            return U64, U64
        return (I64, U64) if lw != U64 else (U64, I64)
    return I64, I64  # int32/uint32/int64 mixes meet in int64


def alias_matrix(params) -> tuple[ir.AliasFact, ...]:
    spans = [p for p in params if isinstance(p.type, ir.SpanType)]
    facts = []
    for i, a in enumerate(spans):
        for b in spans[i + 1:]:
            exclusive = "exclusive" in (a.qualifier, b.qualifier)
            facts.append(ir.AliasFact(a.name, b.name, ir.DISJOINT if exclusive else ir.SHARED_READ))
    return tuple(facts)


def check_module(source: Source, chunk: ast.Chunk) -> ir.Module:
    """The module's @aot functions as scalar IR, or NuppError with every diagnostic
    of the file: validate.py's and the checker's."""
    return Checker(source).module(chunk)


# ---- helpers ------------------------------------------------------------------------------

def _loc(node) -> ir.Loc:
    if isinstance(node, ir.Loc):
        return node
    span = getattr(node, "span", None)
    if span is None:
        return getattr(node, "loc", ir.NO_LOC)
    return ir.Loc(span.line, span.col)


def _identifiers(node) -> frozenset:
    """Every name a function's source mentions (locals, parameters, references)."""
    found: set[str] = set()

    def visit(value):
        if isinstance(value, (ast.Name,)):
            found.add(value.id)
        elif isinstance(value, ast.Param):
            found.add(value.name)
        if isinstance(value, tuple):
            for item in value:
                visit(item)
        elif is_dataclass(value) and not isinstance(value, ast.Span):
            for f in fields(value):
                visit(getattr(value, f.name))

    visit(node)
    return frozenset(found)


def _root_name(expr) -> Optional[str]:
    """The name `a.b.c` starts with; None where it is not such a path."""
    while isinstance(expr, ast.Field):
        expr = expr.obj
    return expr.id if isinstance(expr, ast.Name) else None


def _aot_attribute(stat) -> bool:
    return any(a.name == "aot" for a in getattr(stat, "attributes", ()))


def _a(width: Optional[Width]) -> str:
    """'an int32', 'a uint32', 'a number': the width's name with its article."""
    name = _width_name(width)
    return ("an " if name.startswith("int") else "a ") + name


def _width_name(width: Optional[Width]) -> str:
    return width.source_name if width is not None else "value"


def _integer_hint(src: Width, dst: Width) -> str | None:
    if (src, dst) == (I32, U32):
        return "reinterpret the bits with nupp.math.u32.fromI32"
    if (src, dst) == (U32, I32):
        return "reinterpret the bits with nupp.math.i32.fromU32"
    return None


def _mix_hint(a: Width, b: Width) -> str:
    """How to bring integers of different signedness together (LANGUAGE.md section 4's conversions)."""
    pair = {a, b}
    if pair == {I32, U32}:
        return ("reinterpret one with nupp.math.u32.fromI32(x) or nupp.math.i32.fromU32(x) (the same 32 bits), "
                "or widen both to int64: `local w: int64 = x`")
    if pair == {I32, U64}:
        return "reinterpret the int32 with nupp.math.u32.fromI32 (the same 32 bits); it then widens to uint64"
    if pair == {U32, I64}:
        return "widen the uint32 to int64 first, exactly: `local w: int64 = x`"
    return ("nothing converts between int64 and uint64 (their wrap functions take a binary64): "
            "declare both operands with one signedness")


def _length_bound(start, stop, step: int) -> str:
    """The span whose length bounds a loop that runs from a constant >= 1 up to
    its length, or from its length down to a constant >= 1; "" for any other loop."""
    from_length, other = (stop, start) if step > 0 else (start, stop)
    if (isinstance(from_length, ir.Len) and isinstance(other, ir.Const) and other.width == I32
            and other.value >= 1):
        return from_length.span
    return ""


def _can_complete(body) -> bool:
    """Whether control can fall off the end of a function body (the verifier's
    missing-return rule: a loop's body may run zero times, and after
    `while true` only the paths that break go on)."""
    return _flow(body)[0]


def _flow(stmts) -> tuple[bool, bool]:
    """(control can fall off the end of stmts, a reachable break leaves the loop around them)."""
    breaks = False
    for s in stmts:
        if isinstance(s, ir.Return):
            return False, breaks
        if isinstance(s, ir.Break):
            return False, True
        if isinstance(s, ir.If):
            (then_ends, then_breaks), (else_ends, else_breaks) = _flow(s.then), _flow(s.orelse)
            breaks = breaks or then_breaks or else_breaks
            if not (then_ends or else_ends):
                return False, breaks
        elif isinstance(s, ir.While) and isinstance(s.cond, ir.Const) and s.cond.value is True:
            if not _flow(s.body)[1]:
                return False, breaks
    return True, breaks


def _known_result(func: ast.FuncBody) -> bool:
    """Whether an @aot function's result type is one the checker knows (validate.py reports the others)."""
    t = func.returns
    return t is not None and not t.args and (t.name == "nil" or t.name in TYPE_WIDTHS)


def _declared_names(stat) -> frozenset:
    """The locals a statement declares for the statements after it in its block."""
    if isinstance(stat, ast.Local):
        return frozenset(p.name for p in stat.names)
    if isinstance(stat, (ast.LocalFunction, ast.StructDecl)):
        return frozenset((stat.name,))
    return frozenset()


def _assignments_after_definitions(block: ast.Block, definitions: dict) -> Iterator[tuple[str, object]]:
    """(name, target) of each assignment, at any depth, to a name of `definitions`
    (name -> its top-level declaration) where the name denotes that declaration:
    after it, before a top-level declaration hides it, outside any scope that
    declares the name anew."""
    defined_by: dict[int, set[str]] = {}
    for name, stat in definitions.items():
        defined_by.setdefault(id(stat), set()).add(name)
    live: frozenset = frozenset()
    for stat in block.stats:
        if not _aot_attribute(stat):  # an @aot body assigns only its own locals (the checker says so)
            yield from _assignments_to(stat, live)
        live = (live - _declared_names(stat)) | defined_by.get(id(stat), set())


def _assignments_to(node, live: frozenset) -> Iterator[tuple[str, object]]:
    if not live:
        return
    if isinstance(node, ast.Block):
        for stat in node.stats:
            yield from _assignments_to(stat, live)
            live = live - _declared_names(stat)
        return
    if isinstance(node, ast.Assign):
        yield from ((t.id, t) for t in node.targets if isinstance(t, ast.Name) and t.id in live)
    elif isinstance(node, ast.FunctionStat) and node.path[0] in live and len(node.path) == 1 and not node.method:
        yield node.path[0], node  # `function f() end` assigns f
    body_live = live - _body_names(node)
    for f in fields(node):
        for child in _child_nodes(getattr(node, f.name)):
            yield from _assignments_to(child, body_live if isinstance(child, (ast.Block, ast.FuncBody)) else live)


def _body_names(node) -> frozenset:
    """The names a node declares for its body: a local function's own name, parameters, loop variables."""
    if isinstance(node, ast.LocalFunction):
        return frozenset((node.name,))
    if isinstance(node, ast.FuncBody):
        return frozenset(p.name for p in node.params)
    if isinstance(node, ast.NumericFor):
        return frozenset((node.var,))
    if isinstance(node, ast.GenericFor):
        return frozenset(node.names)
    return frozenset()


def _child_nodes(value) -> Iterator:
    if isinstance(value, tuple):
        for item in value:
            yield from _child_nodes(item)
    elif is_dataclass(value) and not isinstance(value, ast.Span):
        yield value


def _position(node) -> str:
    return f"{node.span.line}:{node.span.col}"


def _describe_declaration(node) -> str:
    return {"LocalFunction": "the local function", "StructDecl": "the struct"}.get(type(node).__name__, "the local")


def _describe_statement(stat) -> str:
    return {"GenericFor": "a generic for", "Do": "a do block", "Goto": "goto",
            "Label": "a label (::name::)"}.get(type(stat).__name__, type(stat).__name__)


def _describe_expression(node) -> str:
    return type(node).__name__.lower()
