"""The scalar IR verifier: every invariant the emitters rely on, checked, with
the broken ones returned as values (`VerifyError`: function, location, rule,
message).  A failure is a compiler bug: `check(module, stage)` raises an
`InternalError` naming the stage and printing the IR with each error under
the statement it belongs to, Cranelift style (`; error: RULE: message`).

Each line below is one invariant, by its rule name.

Module (`verify_module`)
  unique-name          struct names, function names, a struct's field names and a
                       function's parameter names are unique
  field-type           every struct field has a storage type of widths.FIELD_STORAGE
  call-target          a Call names a function of the module
  call-args            a Call passes as many arguments as the callee has parameters,
                       each of the parameter's width (a callee taking a span cannot
                       be called: no expression denotes a span)
  call-width           a Call's width is the callee's result width (None: returns nothing)
  recursion            no function calls itself, directly or through others

Parameters and the alias matrix (section 6 of LANGUAGE.md)
  param-type           a parameter is a Width or a SpanType of a struct of the module
  span-qualifier       a WriteSpan parameter is `exclusive`, a Span parameter `borrows`,
                       a scalar parameter has no qualifier
  alias-matrix         exactly one AliasFact per unordered pair of distinct span
                       parameters: none missing, none repeated, none naming anything else
  alias-fact           the fact is `disjoint` when either span is exclusive,
                       `shared-read` when both borrow

Widths (the opcode table, ops.OPS, is the only authority)
  node-kind            every statement and expression is a scalar IR node of its kind
                       (an Eval holds a Call; no lane-rewrite node in scalar IR)
  op-known             every Op names an opcode of ops.OPS
  op-arity             an Op has as many arguments as its opcode has operands
  op-width             each Op argument has exactly the opcode's operand width
  const-fits           a Const holds a value of its width's kind that fits it: an int
                       in range for integer widths, a float (or int) exactly
                       representable at f32 / f64, a bool for bool
  var-width            a Var's width is its declaration's width
  let-width            a Let's value has the declared width
  assign-width         an Assign's value has the local's width
  cond-bool            If, While and Assert conditions are bool
  return-width         a Return's value has the function's result width, and a
                       function returning nothing returns no value
  missing-return       a function with a result never falls off its end
  load-width           a Load's width is its field's load width (FieldStorage.load_width)
  store-width          a stored value has a width its field takes (FieldStorage.takes):
                       f32 or f64 to a float field (the store narrows f64), f64 to a
                       number/double field, any integer width (never a float or
                       bool) to an integer field (the store reduces it)
  => no implicit conversions: since every operand, initializer, assignment, return,
     argument and store must already have the width its consumer takes, a width
     changes only at a conversion op (widths.CONVERSIONS) the lowering wrote down,
     or in a store, by its field's storage.

Span access
  span-param           Load, Store and Len name a span parameter
  span-value           a span is named only by Load, Store and Len: never read by a
                       Var nor assigned
  index-counter        a Load or Store indexes the counter of an enclosing For, and
                       nothing else
  field-exists         the field of a Load or Store exists in the span's struct
  store-writable       a Store writes a WriteSpan parameter
  counter-write        a For counter is never assigned nor redeclared (shadowed by
                       a Let) inside its loop
  for-counter          For.start and For.stop are i32; For.step is a non-zero int32
  bounds               a span indexed by a For's counter is proven at least as long
                       as the loop's bound: for step > 0 the loop runs from a Const
                       >= 1 to Len(t), for step < 0 from Len(t) down to a Const >= 1,
                       and the indexed span is t itself or is equal in length to t by
                       a chain of function-level `Assert(eq.i32(Len(a), Len(b)))`
                       (conjunctions with and.bool count) before the loop

Switch labels
  switch-labels        an If with labels: the selector is a declared scalar of exactly
                       labels.width, which is i32 or u32 (never f64); each label is an
                       int that fits the width, none repeats, no case is empty; the
                       k-th If of the else-chain tests `eq.W(Var(sel), Const(label))`
                       of case k's labels in order (joined by or.bool), inner Ifs
                       carry no labels of their own, and the last else is present
                       exactly when `default`

Scopes and definite assignment (scopes are blocks; parameters form their own,
outermost scope; a For counter is scoped to its body)
  undeclared           every Var and Assign names a declaration in scope
  redeclared           no Let declares a name already declared in the same block
  definite-assignment  no path reads a local before it is set: a Let without value
                       is assigned on every path before a read (both arms of an If;
                       a loop body may run zero times; Break and Return end a path;
                       after `while true` only the paths that break continue)
  break-outside-loop   a Break is inside a For or While

Placement
  return-in-span-loop  no Return inside a For over spans (one whose bounds read a
                       Len or whose counter indexes a Load/Store), at any depth
  assert-placement     an Assert stands at function level, before the first loop

Lane IR (`lane_ir=True`, after lane_rewrite; elsewhere a Gang is a node-kind error)
  gang-placement       a Gang is not inside another loop
  gang-size            a Gang's size is 4, 8, 16 or 32 (or unset: the rewrite's output, before sizing);
                       its vector width, if set, is 128, 256 or 512 bits, and set only on a sized Gang
  gang-varying         a Gang's varying names are exactly (sorted) the varying locals its
                       body infers (scalar_ir/varying.py's rule, run afresh)
  gang-mask            an If / While / For is marked masked exactly when it is in a
                       Gang and its condition or bounds vary (a While also when a break
                       under a varying if leaves it)
  gang-reduce          a Gang's reductions are exactly (sorted) the outside locals its
                       body accumulates with one exact op (varying.reductions_of)
  gang-legal           the Gang's loop is one the lane emitter runs (the rewrite's
                       admission rules: step 1, accesses at the counter, no raising op,
                       no break, ...); a Gang also meets every scalar rule as its loop

`loc` of an error is the location of the statement it belongs to (the function's
for parameter, alias and missing-return errors; NO_LOC for errors about structs);
`node` is the offending node itself (expression, statement, Param, AliasFact, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import combinations
from typing import Optional

from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.lanes import GANG_SIZES, VECTOR_BITS, gang_refusal, mark_masks
from nupp.scalar_ir.nodes import DISJOINT, NO_LOC, SHARED_READ, Loc
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.varying import infer, reductions_of
from nupp.scalar_ir.walk import statements as ir_statements
from nupp.scalar_ir.widths import FIELD_STORAGE, Width, holds_in_binary32, integer_fits

MODULE = "<module>"  # VerifyError.function of errors about the module itself


@dataclass(frozen=True)
class VerifyError:
    function: str
    loc: Loc
    rule: str
    message: str
    node: object = field(default=None, compare=False)

    def __str__(self) -> str:
        where = self.function if self.loc == NO_LOC else f"{self.function}@{self.loc}"
        return f"{where}: {self.rule}: {self.message}"


# ---- module ---------------------------------------------------------------------

def verify_module(module: ir.Module, lane_ir: bool = False) -> list[VerifyError]:
    """Every broken invariant of the module: its own rules, then each function's
    (`lane_ir`: the module may hold Gangs and masked control, lane_rewrite's IR)."""
    errors: list[VerifyError] = []

    def err(rule: str, message: str, node: object, function: str = MODULE, loc: Loc = NO_LOC) -> None:
        errors.append(VerifyError(function, loc, rule, message, node))

    seen_structs: set[str] = set()
    for sd in module.structs:
        if sd.name in seen_structs:
            err("unique-name", f"struct {sd.name} is defined more than once", sd)
        seen_structs.add(sd.name)
        seen_fields: set[str] = set()
        for fname, ftype in sd.fields:
            if fname in seen_fields:
                err("unique-name", f"struct {sd.name} has field {fname} more than once", sd)
            seen_fields.add(fname)
            if ftype not in FIELD_STORAGE:
                err("field-type", f"field {sd.name}.{fname} has type {ftype}, which is not a storage type", sd)

    seen_functions: set[str] = set()
    for fn in module.functions:
        if fn.name in seen_functions:
            err("unique-name", f"function @{fn.name} is defined more than once", fn, fn.name, fn.loc)
        seen_functions.add(fn.name)

    for fn in module.functions:
        errors.extend(verify_function(fn, module, lane_ir))
    errors.extend(_recursion_errors(module))
    return errors


def _recursion_errors(module: ir.Module) -> list[VerifyError]:
    """One error per call edge f -> g that lies on a cycle of the call graph."""
    names = {fn.name for fn in module.functions}
    edges: dict[str, dict[str, tuple[ir.Call, object]]] = {}  # f -> g -> first (call, stmt)
    for fn in module.functions:
        out = edges.setdefault(fn.name, {})
        for call, stmt in _calls(fn.body):
            if call.func in names:
                out.setdefault(call.func, (call, stmt))

    def path(src: str, dst: str) -> Optional[list[str]]:
        """Shortest call path src -> ... -> dst, or None."""
        prev: dict[str, str] = {src: src}
        todo = [src]
        while todo:
            nxt = []
            for f in todo:
                for g in edges.get(f, {}):
                    if g not in prev:
                        prev[g] = f
                        nxt.append(g)
                    if g == dst:
                        chain = [dst, f]
                        while chain[-1] != src:
                            chain.append(prev[chain[-1]])
                        return chain[::-1]
            todo = nxt
        return None

    errors = []
    for f, out in edges.items():
        for g, (call, stmt) in out.items():
            back = [f] if g == f else path(g, f)
            if back is not None:
                chain = " -> ".join(f"@{n}" for n in [f] + back)
                errors.append(VerifyError(f, getattr(stmt, "loc", NO_LOC), "recursion",
                                          f"call of @{g} is recursive: {chain}", call))
    return errors


def _calls(stmts):
    """Every Call in a block, with the statement holding it."""
    for stmt in stmts:
        for value in vars(stmt).values() if hasattr(stmt, "__dict__") else ():
            yield from _calls_in(value, stmt)


def _calls_in(value, stmt):
    if isinstance(value, ir.Call):
        yield value, stmt
        for a in value.args:
            yield from _calls_in(a, stmt)
    elif isinstance(value, ir.Op):
        for a in value.args:
            yield from _calls_in(a, stmt)
    elif isinstance(value, tuple):
        for v in value:
            if isinstance(v, _STMT_TYPES):
                yield from _calls((v,))
            else:
                yield from _calls_in(v, stmt)


# ---- functions -------------------------------------------------------------------

def verify_function(fn: ir.Function, module: ir.Module, lane_ir: bool = False) -> list[VerifyError]:
    """Every broken invariant of one function (module rules excepted)."""
    return _FunctionVerifier(fn, module, lane_ir).run()


@dataclass(eq=False)
class _Binding:
    """What a name in scope denotes."""

    name: str
    kind: str  # "param" (scalar), "span", "local", "counter"
    width: Optional[Width]
    node: object  # the Param, Let or For declaring it


@dataclass
class _Loop:
    node: object  # For or While
    breaks: list = field(default_factory=list)  # the assigned-sets at each Break


_BAD = object()  # the width of an expression already reported as broken
_EXPR_TYPES = (ir.Const, ir.Var, ir.Op, ir.Load, ir.Len, ir.Call)
_STMT_TYPES = (ir.Let, ir.Assign, ir.Store, ir.If, ir.For, ir.While, ir.Break, ir.Return,
               ir.Assert, ir.Eval, ir.Gang)
_KIND_WORDS = {"param": "a parameter", "span": "a span parameter", "local": "a local",
               "counter": "a loop counter"}


class _FunctionVerifier:
    """One walk over a function's body in statement order.

    The walk carries the set of locals definitely assigned on the current path
    (`state`), or None where the path has ended (after Break or Return); scopes
    map names to `_Binding`s, innermost last.
    """

    def __init__(self, fn: ir.Function, module: ir.Module, lane_ir: bool = False):
        self.fn = fn
        self.lane_ir = lane_ir
        self.module = module
        self.errors: list[VerifyError] = []
        self.scopes: list[dict[str, _Binding]] = []
        self.loops: list[_Loop] = []            # enclosing For/While, innermost last
        self.span_fors: list[ir.For] = []       # enclosing For loops over spans
        self.stmt: object = None                # the statement being checked
        self.seen_loop = False                  # a loop (at any depth) has begun
        self.same_length: dict[str, str] = {}   # union-find over span names (asserted equal)
        self.bounds_checked: set = set()

    # -- reporting and scopes --

    def err(self, rule: str, message: str, node: object) -> None:
        loc = getattr(self.stmt, "loc", None) if self.stmt is not None else self.fn.loc
        self.errors.append(VerifyError(self.fn.name, loc if loc is not None else NO_LOC,
                                       rule, message, node))

    def lookup(self, name: str) -> Optional[_Binding]:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # -- entry --

    def run(self) -> list[VerifyError]:
        self.scopes.append(self.params())
        self.aliases()
        end = self.block(self.fn.body, frozenset(), top=True)
        if end is not None and self.fn.result is not None:
            self.err("missing-return", f"@{self.fn.name} returns {self.fn.result} but can "
                     "reach its end without a return", self.fn)
        return self.errors

    def params(self) -> dict[str, _Binding]:
        scope: dict[str, _Binding] = {}
        for p in self.fn.params:
            if p.name in scope:
                self.err("unique-name", f"parameter %{p.name} is declared more than once", p)
            if isinstance(p.type, ir.SpanType):
                if self.module.struct(p.type.struct) is None:
                    self.err("param-type", f"span parameter %{p.name} has element type "
                             f"{p.type.struct}, which is not a struct of the module", p)
                want = "exclusive" if p.type.writable else "borrows"
                if p.qualifier != want:
                    self.err("span-qualifier", f"{p.type} parameter %{p.name} must be {want}, "
                             f"not {p.qualifier or 'unqualified'}", p)
                scope[p.name] = _Binding(p.name, "span", None, p)
            elif isinstance(p.type, Width):
                if p.qualifier is not None:
                    self.err("span-qualifier", f"scalar parameter %{p.name} carries the span "
                             f"qualifier {p.qualifier}", p)
                scope[p.name] = _Binding(p.name, "param", p.type, p)
            else:
                self.err("param-type", f"parameter %{p.name} has type {p.type!r}, neither a "
                         "width nor a span", p)
                scope[p.name] = _Binding(p.name, "param", None, p)
        return scope

    def aliases(self) -> None:
        spans = {p.name: p for p in self.fn.span_params()}
        facts: dict[frozenset, ir.AliasFact] = {}
        for fact in self.fn.aliases:
            unknown = [n for n in (fact.a, fact.b) if n not in spans]
            if unknown:
                self.err("alias-matrix", f"alias fact ({fact.a}, {fact.b}) names %{unknown[0]}, "
                         "which is not a span parameter", fact)
                continue
            if fact.a == fact.b:
                self.err("alias-matrix", f"alias fact relates %{fact.a} to itself", fact)
                continue
            key = frozenset((fact.a, fact.b))
            if key in facts:
                self.err("alias-matrix", f"%{fact.a} and %{fact.b} have more than one alias fact", fact)
                continue
            facts[key] = fact
            qa, qb = spans[fact.a].qualifier, spans[fact.b].qualifier
            if {qa, qb} <= {"exclusive", "borrows"}:
                want = DISJOINT if "exclusive" in (qa, qb) else SHARED_READ
                if fact.fact != want:
                    why = "one is exclusive" if want == DISJOINT else "both borrow"
                    self.err("alias-fact", f"%{fact.a} and %{fact.b} are {fact.fact!r} but must "
                             f"be {want!r}: {why}", fact)
        for a, b in combinations(spans, 2):
            if frozenset((a, b)) not in facts:
                self.err("alias-matrix", f"no alias fact for span parameters %{a} and %{b}: "
                         "the matrix is incomplete", self.fn)

    # -- statements --

    def block(self, stmts, state, top: bool = False):
        self.scopes.append({})
        for s in stmts:
            state = self.statement(s, state, top)
        self.scopes.pop()
        return state

    def statement(self, s, state, top: bool):
        outer, self.stmt = self.stmt, s
        try:
            method = getattr(self, "stmt_" + type(s).__name__, None)
            if method is None or not isinstance(s, _STMT_TYPES):
                self.err("node-kind", f"{type(s).__name__} is not a scalar IR statement", s)
                return state
            return method(s, state, top)
        finally:
            self.stmt = outer

    def stmt_Let(self, s: ir.Let, state, top):
        if s.value is not None:
            w = self.expr(s.value, state)
            if _known(w) and w != s.width:
                self.err("let-width", f"let %{s.name}: {s.width} is initialized with "
                         f"{_width_words(w)}", s)
        if not isinstance(s.width, Width):
            self.err("let-width", f"let %{s.name} has width {s.width!r}, which is not a width", s)
        old = self.lookup(s.name)
        if old is not None and old.kind == "counter":
            self.err("counter-write", f"let %{s.name} redeclares the counter of an enclosing loop", s)
            return state
        if s.name in self.scopes[-1]:
            self.err("redeclared", f"%{s.name} is already declared in this block", s)
        binding = _Binding(s.name, "local", s.width, s)
        self.scopes[-1][s.name] = binding
        if s.value is not None and state is not None:
            state = state | {binding}
        return state

    def stmt_Assign(self, s: ir.Assign, state, top):
        w = self.expr(s.value, state)
        b = self.lookup(s.name)
        if b is None:
            self.err("undeclared", f"assignment to %{s.name}, which is not declared", s)
        elif b.kind == "span":
            self.err("span-value", f"assignment to span parameter %{s.name}", s)
        elif b.kind == "counter":
            self.err("counter-write", f"assignment to %{s.name}, the counter of an enclosing loop", s)
        else:
            if _known(w) and w != b.width:
                self.err("assign-width", f"assignment of {_width_words(w)} to %{s.name}, "
                         f"which is {b.width}", s)
            if b.kind == "local" and state is not None:
                state = state | {b}
        return state

    def stmt_Store(self, s: ir.Store, state, top):
        self.element_access("store to", s, state)
        w = self.expr(s.value, state)
        span = self.span_param(s.span, None, quiet=True)
        if span is not None and not span.type.writable:
            self.err("store-writable", f"store to %{s.span}, which is a read-only span", s)
        storage = self.field_storage(s.span, s.field, s)
        if storage is not None and _known(w) and not (isinstance(w, Width) and storage.takes(w)):
            takes = " or ".join(str(x) for x in Width if storage.takes(x)) if storage.is_float else "an integer width"
            self.err("store-width", f"store of {_width_words(w)} to {storage.name} field "
                     f"%{s.span}[%{s.index}].{s.field}, which takes {takes}", s)
        return state

    def stmt_If(self, s: ir.If, state, top):
        self.unmasked(s)
        self.condition(s.cond, state, "if")
        if s.labels is not None:
            self.switch_labels(s, state)
        then_state = self.block(s.then, state)
        else_state = self.block(s.orelse, state)
        return _merge(then_state, else_state)

    def stmt_For(self, s: ir.For, state, top):
        self.unmasked(s)
        for what, e in (("start", s.start), ("stop", s.stop)):
            w = self.expr(e, state)
            if _known(w) and w != Width.I32:
                self.err("for-counter", f"the {what} of the loop over %{s.var} is "
                         f"{_width_words(w)}, not i32", s)
        if not (isinstance(s.step, int) and not isinstance(s.step, bool) and s.step != 0
                and integer_fits(s.step, Width.I32)):
            self.err("for-counter", f"the step of the loop over %{s.var} is {s.step!r}, "
                     "not a non-zero int32 literal", s)
        self.seen_loop = True  # a loop at any depth comes before what follows it
        over_spans = _loop_over_spans(s)
        self.loops.append(_Loop(s))
        if over_spans:
            self.span_fors.append(s)
        self.scopes.append({s.var: _Binding(s.var, "counter", Width.I32, s)})
        self.block(s.body, state)
        self.scopes.pop()
        if over_spans:
            self.span_fors.pop()
        self.loops.pop()
        return state  # the body may run zero times

    def stmt_While(self, s: ir.While, state, top):
        self.unmasked(s)
        self.condition(s.cond, state, "while")
        self.seen_loop = True
        loop = _Loop(s)
        self.loops.append(loop)
        self.block(s.body, state)
        self.loops.pop()
        if state is None:
            return None
        if isinstance(s.cond, ir.Const) and s.cond.value is True:
            after = None  # only the paths that break go on
            for b in loop.breaks:
                after = b if after is None else after & b
            return after
        return state

    def unmasked(self, s) -> None:
        """Masked control belongs to a Gang, whose body is checked by gang_errors."""
        if s.masked:
            self.err("gang-mask", f"{type(s).__name__.lower()} marked masked outside a gang", s)

    def stmt_Gang(self, s: ir.Gang, state, top):
        """A Gang is checked as the scalar loop it runs (every rule above), then
        against the lane rewrite's own rules (gang_errors)."""
        if not self.lane_ir:
            self.err("node-kind", "Gang is lane IR, not scalar IR", s)
            return state
        if self.loops:
            self.err("gang-placement", f"the gang over %{s.var} is inside another loop", s)
        for rule, message in gang_errors(self.fn, s):
            self.err(rule, message, s)
        return self.stmt_For(s.scalar_loop(), state, top)

    def stmt_Break(self, s: ir.Break, state, top):
        if not self.loops:
            self.err("break-outside-loop", "break outside any for or while loop", s)
        elif state is not None:
            self.loops[-1].breaks.append(state)
        return None

    def stmt_Return(self, s: ir.Return, state, top):
        w = self.expr(s.value, state) if s.value is not None else None
        result = self.fn.result
        if s.value is None and result is not None:
            self.err("return-width", f"return without a value in @{self.fn.name}, which "
                     f"returns {result}", s)
        elif s.value is not None and result is None:
            self.err("return-width", f"return of a value from @{self.fn.name}, which "
                     "returns nothing", s)
        elif s.value is not None and _known(w) and w != result:
            self.err("return-width", f"return of {_width_words(w)} from @{self.fn.name}, "
                     f"which returns {result}", s)
        if self.span_fors:
            loop = self.span_fors[0]
            at = "" if loop.loc == NO_LOC else f" at {loop.loc}"
            self.err("return-in-span-loop", f"return inside the loop over spans "
                     f"(counter %{loop.var}{at})", s)
        return None

    def stmt_Assert(self, s: ir.Assert, state, top):
        self.condition(s.cond, state, "assert")
        if not isinstance(s.message, str):
            self.err("node-kind", f"assert message {s.message!r} is not a string", s)
        if not top:
            self.err("assert-placement", "assert inside a block: asserts stand at function level", s)
        elif self.seen_loop:
            self.err("assert-placement", "assert after the first loop: asserts stand before it", s)
        if top:
            for a, b in _length_equalities(s.cond):
                self.union(a, b)
        return state

    def stmt_Eval(self, s: ir.Eval, state, top):
        if not isinstance(s.expr, ir.Call):
            self.err("node-kind", f"eval of {type(s.expr).__name__}, not of a call", s)
        self.expr(s.expr, state)
        return state

    def condition(self, cond, state, what: str) -> None:
        w = self.expr(cond, state)
        if _known(w) and w != Width.BOOL:
            self.err("cond-bool", f"{what} condition is {_width_words(w)}, not bool", cond)

    # -- expressions: each returns its width (None: a call returning nothing; _BAD: broken) --

    def expr(self, e, state):
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None or not isinstance(e, _EXPR_TYPES):
            self.err("node-kind", f"{type(e).__name__} is not a scalar IR expression", e)
            return _BAD
        return method(e, state)

    def expr_Const(self, e: ir.Const, state):
        problem = _const_problem(e.value, e.width)
        if problem:
            self.err("const-fits", problem, e)
            return e.width if isinstance(e.width, Width) else _BAD
        return e.width

    def expr_Var(self, e: ir.Var, state):
        b = self.lookup(e.name)
        if b is None:
            self.err("undeclared", f"%{e.name} is read but not declared", e)
        elif b.kind == "span":
            self.err("span-value", f"span parameter %{e.name} is read as a value", e)
        else:
            if b.width is not None and e.width != b.width:
                self.err("var-width", f"%{e.name} is read as {e.width} but declared {b.width}", e)
            if b.kind == "local" and state is not None and b not in state:
                self.err("definite-assignment", f"%{e.name} is read before it is assigned "
                         "on every path", e)
        return e.width

    def expr_Op(self, e: ir.Op, state):
        widths = [self.expr(a, state) for a in e.args]
        info = OPS.get(e.op)
        if info is None:
            self.err("op-known", f"{e.op} is not an opcode", e)
            return _BAD
        if len(e.args) != len(info.operands):
            self.err("op-arity", f"{e.op} takes {len(info.operands)} operand(s), given {len(e.args)}", e)
            return info.result
        for k, (w, want) in enumerate(zip(widths, info.operands), 1):
            if _known(w) and w != want:
                self.err("op-width", f"operand {k} of {e.op} is {_width_words(w)}, not {want}", e)
        return info.result

    def expr_Load(self, e: ir.Load, state):
        self.element_access("load of", e, state)
        storage = self.field_storage(e.span, e.field, e)
        if storage is not None and e.width != storage.load_width:
            self.err("load-width", f"load of {storage.name} field %{e.span}[%{e.index}].{e.field} "
                     f"has width {e.width}, but the field loads as {storage.load_width}", e)
        return e.width

    def expr_Len(self, e: ir.Len, state):
        self.span_param(e.span, e, "length of")
        return Width.I32

    def expr_Call(self, e: ir.Call, state):
        widths = [self.expr(a, state) for a in e.args]
        callee = self.module.function(e.func)
        if callee is None:
            self.err("call-target", f"call of @{e.func}, which is not a function of the module", e)
            return e.width
        spans = [p.name for p in callee.params if isinstance(p.type, ir.SpanType)]
        if spans:
            self.err("call-args", f"call of @{e.func}, which takes span parameter %{spans[0]}: "
                     "a span cannot be passed", e)
        elif len(e.args) != len(callee.params):
            self.err("call-args", f"call of @{e.func} with {len(e.args)} argument(s); it takes "
                     f"{len(callee.params)}", e)
        else:
            for p, w in zip(callee.params, widths):
                if _known(w) and w != p.type:
                    self.err("call-args", f"argument %{p.name} of @{e.func} is {_width_words(w)}, "
                             f"not {p.type}", e)
        if e.width != callee.result:
            self.err("call-width", f"call of @{e.func} has width {e.width}, but @{e.func} "
                     f"returns {callee.result or 'nothing'}", e)
        return e.width

    # -- span access --

    def span_param(self, name: str, node, what: str = "", quiet: bool = False) -> Optional[ir.Param]:
        """The span parameter `name` denotes, or None (reported unless quiet)."""
        b = self.lookup(name)
        if b is not None and b.kind == "span":
            return b.node
        if not quiet:
            why = "nothing by that name is declared" if b is None else f"it is {_KIND_WORDS[b.kind]}"
            self.err("span-param", f"{what} %{name}: not a span parameter ({why})", node)
        return None

    def field_storage(self, span: str, fname: str, node):
        """The FieldStorage of span's field, or None (the span or struct is reported elsewhere)."""
        param = self.span_param(span, None, quiet=True)
        sd = self.module.struct(param.type.struct) if param is not None else None
        if sd is None:
            return None
        ftype = sd.field_type(fname)
        if ftype is None:
            self.err("field-exists", f"%{span} has no field {fname}: struct {sd.name} has "
                     f"{'fields ' + ', '.join(n for n, _ in sd.fields) if sd.fields else 'no fields'}", node)
            return None
        return FIELD_STORAGE.get(ftype)

    def element_access(self, what: str, node, state) -> None:
        """Load/Store: the span is a span parameter, the index an enclosing loop's counter,
        and the span proven at least as long as that loop's bound."""
        words = f"{what} %{node.span}"
        span = self.span_param(node.span, node, what)
        b = self.lookup(node.index)
        if b is None or b.kind != "counter":
            why = "nothing by that name is declared" if b is None else f"it is {_KIND_WORDS[b.kind]}"
            self.err("index-counter", f"{words} indexes %{node.index}, which is not a loop "
                     f"counter ({why})", node)
            return
        if span is not None:
            self.bounds(node.span, b.node, words, node)

    def bounds(self, span: str, loop: ir.For, words: str, node) -> None:
        key = (span, id(loop))
        if key in self.bounds_checked:
            return
        self.bounds_checked.add(key)
        where = f"the loop over %{loop.var}" + ("" if loop.loc == NO_LOC else f" at {loop.loc}")
        if not isinstance(loop.step, int) or loop.step == 0:
            return  # reported by for-counter
        if loop.step > 0:
            from_len, other = loop.stop, loop.start
            shape = "from a constant >= 1 up to the length of a span"
        else:
            from_len, other = loop.start, loop.stop
            shape = "from the length of a span down to a constant >= 1"
        if not (isinstance(from_len, ir.Len) and _const_at_least_one(other)):
            self.err("bounds", f"{words} in {where} is not proven in bounds: the loop runs "
                     f"from {_show(loop.start)} to {_show(loop.stop)} step {loop.step}, not {shape}", node)
            return
        if self.find(span) != self.find(from_len.span):
            self.err("bounds", f"{words} in {where} is not proven in bounds: the loop's bound "
                     f"is len(%{from_len.span}) and no assert before the loop relates len(%{span}) "
                     f"to it", node)

    def find(self, name: str) -> str:
        while self.same_length.get(name, name) != name:
            name = self.same_length[name]
        return name

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.same_length[ra] = rb

    # -- switch labels --

    def switch_labels(self, s: ir.If, state) -> None:
        labels = s.labels
        w = labels.width
        sel = self.lookup(labels.selector)
        if w not in (Width.I32, Width.U32):
            self.err("switch-labels", f"switch labels at width {w}: only i32 and u32 selectors "
                     "carry labels", s)
            return
        if sel is None or sel.kind == "span":
            self.err("switch-labels", f"switch selector %{labels.selector} is not a declared "
                     "scalar", s)
            return
        if sel.width != w:
            self.err("switch-labels", f"switch selector %{labels.selector} is {sel.width}, "
                     f"but the labels are {w}", s)
            return
        seen: set[int] = set()
        for case in labels.cases:
            if not case:
                self.err("switch-labels", "a switch case has no labels", s)
                return
            for label in case:
                if not isinstance(label, int) or isinstance(label, bool) or not integer_fits(label, w):
                    self.err("switch-labels", f"switch label {label!r} does not fit {w}", s)
                    return
                if label in seen:
                    self.err("switch-labels", f"switch label {label} repeats", s)
                    return
                seen.add(label)
        if not labels.cases:
            self.err("switch-labels", "a labelled switch has no cases", s)
            return
        arm = s
        for k, case in enumerate(labels.cases):
            if k > 0:
                if not (len(arm.orelse) == 1 and isinstance(arm.orelse[0], ir.If)):
                    self.err("switch-labels", f"the else of switch arm {k} is not the If of arm "
                             f"{k + 1} (labels {', '.join(map(str, case))})", arm)
                    return
                arm = arm.orelse[0]
                if arm.labels is not None:
                    self.err("switch-labels", f"the If of switch arm {k + 1} carries labels of "
                             "its own", arm)
                    return
            tested = _tested_labels(arm.cond, labels.selector, w)
            if tested != list(case):
                shown = ", ".join(map(str, case))
                self.err("switch-labels", f"the condition of switch arm {k + 1} must test "
                         f"%{labels.selector} against {shown} with eq.{w}, in label order, "
                         f"but is {_show(arm.cond)}", arm)
                return
        if labels.default and not arm.orelse:
            self.err("switch-labels", "the switch has a default arm but its last If has no else", arm)
        elif not labels.default and arm.orelse:
            self.err("switch-labels", "the switch has no default arm but its last If has an else", arm)


# ---- helpers ------------------------------------------------------------------------

def gang_errors(fn: ir.Function, gang: ir.Gang) -> list[tuple[str, str]]:
    """(rule, message) for each lane-rewrite rule a Gang breaks."""
    errors = []
    if gang.size is not None and gang.size not in GANG_SIZES:
        errors.append(("gang-size", f"gang size {gang.size!r} is not one of {GANG_SIZES}"))
    if gang.vector_bits is not None and (gang.size is None or gang.vector_bits not in VECTOR_BITS):
        errors.append(("gang-size", f"vector width {gang.vector_bits!r} on a gang of size {gang.size!r}: "
                       f"it is one of {VECTOR_BITS}, on a sized gang"))
    varying = infer(gang)
    if tuple(gang.varying) != tuple(sorted(varying)):
        errors.append(("gang-varying", f"the gang names varying({_names(gang.varying)}); "
                       f"its body makes varying({_names(sorted(varying))})"))
    for s, want in zip(ir_statements(gang.body), ir_statements(mark_masks(gang.body, varying))):
        if isinstance(s, (ir.If, ir.While, ir.For)) and s.masked != want.masked:
            what = "varies" if want.masked else "is uniform"
            errors.append(("gang-mask", f"the {type(s).__name__.lower()} at {s.loc} is "
                           f"{'' if s.masked else 'not '}marked masked but its condition {what}"))
    reductions = tuple(sorted(reductions_of(gang).items()))
    if tuple(gang.reductions) != reductions:
        errors.append(("gang-reduce", f"the gang names reduce({_reductions(gang.reductions)}); "
                       f"its body makes reduce({_reductions(reductions)})"))
    problem = gang_refusal(fn, gang, varying)
    if problem:
        errors.append(("gang-legal", f"the gang cannot run its loop: {problem}"))
    return errors


def _names(names) -> str:
    return ", ".join(f"%{n}" for n in names)


def _reductions(pairs) -> str:
    return ", ".join(f"%{name}: {op}" for name, op in pairs)


def _known(w) -> bool:
    return w is not _BAD


def _width_words(w) -> str:
    return "a call returning nothing" if w is None else f"{w}"


def _merge(a, b):
    """The assigned set after two paths join (None: a path that ended)."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _const_problem(value, width) -> Optional[str]:
    if not isinstance(width, Width):
        return f"constant {value!r} has width {width!r}, which is not a width"
    if width == Width.BOOL:
        return None if isinstance(value, bool) else f"bool constant {value!r} is not a boolean"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{width} constant {value!r} is not a number"
    if width.is_int:
        if not isinstance(value, int):
            return f"{width} constant {value!r} is not an integer"
        if not integer_fits(value, width):
            lo, hi = width.int_range
            return f"{width} constant {value} is outside {lo}..{hi}"
        return None
    if isinstance(value, int):
        try:
            as_float = float(value)
        except OverflowError:
            return f"{width} constant {value} is not representable"
        if int(as_float) != value:
            return f"{width} constant {value} is not exactly representable at {width}"
        value = as_float
    if width == Width.F32 and not holds_in_binary32(value):
        return f"f32 constant {value!r} is not exactly representable in binary32"
    return None


def _const_at_least_one(e) -> bool:
    return (isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool)
            and e.value >= 1)


def _length_equalities(cond):
    """(a, b) for each `eq.i32(Len(a), Len(b))` conjunct of an assert condition."""
    if isinstance(cond, ir.Op) and cond.op == "and.bool" and len(cond.args) == 2:
        for arg in cond.args:
            yield from _length_equalities(arg)
    elif (isinstance(cond, ir.Op) and cond.op == "eq.i32" and len(cond.args) == 2
          and all(isinstance(a, ir.Len) for a in cond.args)):
        yield cond.args[0].span, cond.args[1].span


def _tested_labels(cond, selector: str, width: Width) -> Optional[list]:
    """The labels an arm condition tests, in order, if it is `eq.W(Var(sel), Const(l))`
    joined by or.bool; None for anything else."""
    if isinstance(cond, ir.Op) and cond.op == "or.bool" and len(cond.args) == 2:
        left = _tested_labels(cond.args[0], selector, width)
        right = _tested_labels(cond.args[1], selector, width)
        return None if left is None or right is None else left + right
    if (isinstance(cond, ir.Op) and cond.op == f"eq.{width}" and len(cond.args) == 2):
        v, c = cond.args
        if (isinstance(v, ir.Var) and v.name == selector and v.width == width
                and isinstance(c, ir.Const) and c.width == width):
            return [c.value]
    return None


def _loop_over_spans(loop: ir.For) -> bool:
    """A For is over spans when its bounds read a Len or its counter indexes a Load/Store."""
    if _mentions_len(loop.start) or _mentions_len(loop.stop):
        return True
    return _indexes(loop.body, loop.var)


def _mentions_len(e) -> bool:
    if isinstance(e, ir.Len):
        return True
    if isinstance(e, (ir.Op, ir.Call)):
        return any(_mentions_len(a) for a in e.args)
    return False


def _indexes(stmts, var: str) -> bool:
    """Does a Load/Store in these statements index `var` (stopping where a For rebinds it)?"""
    for s in stmts:
        if isinstance(s, ir.Store) and s.index == var:
            return True
        if isinstance(s, ir.For) and s.var == var:
            if any(_expr_indexes(e, var) for e in (s.start, s.stop)):
                return True
            continue
        for value in vars(s).values():
            if isinstance(value, tuple) and value and isinstance(value[0], _STMT_TYPES):
                if _indexes(value, var):
                    return True
            elif _expr_indexes(value, var):
                return True
    return False


def _expr_indexes(e, var: str) -> bool:
    if isinstance(e, ir.Load):
        return e.index == var
    if isinstance(e, (ir.Op, ir.Call)):
        return any(_expr_indexes(a, var) for a in e.args)
    return False


def _show(e) -> str:
    """A short rendering of an expression for messages."""
    if isinstance(e, ir.Const):
        return repr(e.value)
    if isinstance(e, ir.Var):
        return f"%{e.name}"
    if isinstance(e, ir.Len):
        return f"len(%{e.span})"
    if isinstance(e, ir.Load):
        return f"%{e.span}[%{e.index}].{e.field}"
    if isinstance(e, ir.Op):
        return f"{e.op}({', '.join(_show(a) for a in e.args)})"
    if isinstance(e, ir.Call):
        return f"@{e.func}({', '.join(_show(a) for a in e.args)})"
    return type(e).__name__


# ---- inline rendering and the pipeline's check ---------------------------------------

_LOC_AT_END = re.compile(r"@(\d+):(\d+)\s*$")
_FUNC_HEAD = re.compile(r"func ([^\s(]+)\(")
_STRUCT_HEAD = re.compile(r"struct ([^\s{]+) \{")


def render_inline(module: ir.Module, errors: list[VerifyError]) -> str:
    """The module as `scalar_ir.text.print_module` prints it, each error on its own
    line `; error: RULE: message` (indented like its line) right after the
    statement line it belongs to: the first line of its function ending in the
    error's `@line:col`.  An error no line matches (a NO_LOC statement) follows its
    function's `func` line; an error about a struct follows the struct's line;
    any other module-level error comes first.  Being a comment, the result still
    parses as IR."""
    from nupp.scalar_ir.text import print_module

    lines = print_module(module).splitlines()
    owner: list[Optional[str]] = []      # the function each line belongs to
    heads: dict[str, int] = {}           # first line of each function / struct
    current = None
    for k, line in enumerate(lines):
        m = _FUNC_HEAD.match(line)
        if m:
            current = m.group(1)
            heads.setdefault(("func", current), k)
        m = _STRUCT_HEAD.match(line)
        if m:
            heads.setdefault(("struct", m.group(1)), k)
        owner.append(current)
    first_at: dict[tuple, int] = {}
    for k, line in enumerate(lines):
        m = _LOC_AT_END.search(line)
        if m:
            first_at.setdefault((owner[k], int(m.group(1)), int(m.group(2))), k)

    after: dict[int, list[VerifyError]] = {}
    top: list[VerifyError] = []
    for e in errors:
        k = first_at.get((e.function, e.loc.line, e.loc.col))
        if k is None and isinstance(e.node, ir.StructDef):
            k = heads.get(("struct", e.node.name))
        if k is None:
            k = heads.get(("func", e.function))
        if k is None:
            top.append(e)
        else:
            after.setdefault(k, []).append(e)
    out = [f"; error: {e.rule}: {e.message}" for e in top]
    for k, line in enumerate(lines):
        out.append(line)
        indent = line[:len(line) - len(line.lstrip())]
        out.extend(f"{indent}; error: {e.rule}: {e.message}" for e in after.get(k, ()))
    return "\n".join(out) + "\n"


def check(module: ir.Module, stage: str, lane_ir: bool = False) -> None:
    """Verify `module` after `stage`; a broken invariant raises InternalError
    naming the stage, each error with its rule and place, and the IR annotated."""
    errors = verify_module(module, lane_ir)
    if not errors:
        return
    from nupp.errors import InternalError

    listing = "\n".join(f"  {e}" for e in errors)
    try:
        shown = render_inline(module, errors)
    except Exception as exc:  # the report must survive a printer that cannot print this IR
        shown = f"(the IR could not be printed: {exc!r})"
    raise InternalError(stage, f"the IR fails verification ({len(errors)} error"
                               f"{'s' if len(errors) != 1 else ''}):\n{listing}\n\n{shown}")
