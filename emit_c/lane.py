"""Lane C: the scalar C with its simple span loops run in gangs of G iterations.

    emit_lane_module(module, "kernels.nupp", "nupp_", gang=8) -> CModule

Same `CModule` / `CFunction` and ABI as `emit_c.scalar` (emit_c/__init__.py),
so the host binds either the same way.  Everything is emitted by the scalar
emitter (`scalar._ModuleEmitter` / `_FunctionEmitter`, subclassed here)
except the outermost span loops that qualify; each of those becomes

    {
        int64_t c1 = <start>;
        for (; c1 + (G - 1) <= <stop>; c1 += G) {      the gangs: G iterations each
            const int32_t b2 = (int32_t)c1;            the gang's first index
            const nu_i32x8 v_i = {(int32_t)c1 + 0, ..., (int32_t)c1 + 7};
            nu_f64x8 t3 = {0};                          a load gathers one field of G elements
            for (int l = 0; l < 8; l++) t3[l] = p_in[b2 + l - 1].f_value;
            const nu_f64x8 v_w = (t3 + t3);            native where bit-identical per lane
            ...
            for (int l = 0; l < 8; l++) p_out[b2 + l - 1].f_value = <scalar rule of lane l>;
        }
        for (; c1 <= <stop>; ++c1) {                   the tail: the unchanged scalar body
            ...
        }
    }

Varying values (lane_rewrite/varying.py) are GCC/Clang vectors
(`typedef double nu_f64x8 __attribute__((vector_size(64)))`; a boolean lane
is a `uint8_t` 0/1); uniform values stay the scalar C, broadcast where they
meet a varying operand.  Each op computes exactly its scalar rule per lane:
by default `for (int l = 0; l < G; l++) r[l] = <the C_OPS scalar template
over a[l], b[l]>;`, and as a native vector operator only where that is the
same IEEE / modular operation per lane (`NATIVE` below: binary64 and
binary32 + - * / and negation, built with -ffp-contract=off; integer + - *
in the unsigned vector type; bitwise and/or/xor).

An if whose condition varies runs under masks, ISPC style: the gang body
starts with every lane active (no mask); `if c then A else B end` computes
the 0/1 vectors m_then = mask & c and m_else = mask & !c and runs A under
m_then and B under m_else, each skipped when no lane of its mask is set (an
elseif chain is nested ifs; a switch on a varying selector is emitted as its
chain, its labels ignored).  Under a mask an assignment to a varying local is
a per-lane select (`x[l] = m[l] ? v[l] : x[l]`) and a store a per-lane
conditional store (`if (m[l]) p[...] = ...`); a local assigned under a
varying condition is varying (the analysis), and a local declared in a masked
arm lives only there, so its inactive lanes are never observed.  Every value
is still computed in every lane: loads are in bounds for the whole loop (the
verifier) and the loop has no op that can raise, so evaluating a pure op in an
inactive lane only computes a result that is discarded.

A loop qualifies when its LoopPlan has `lanes` with no masked breaks and no
reductions, its only varying control is ifs (no while or inner for with a
varying condition or bounds, and no loop at all inside a varying if), and
(checked here, `refusal`) its step is
1; it has no assert, no break, no op that can raise; it assigns no local
declared outside it a varying value; every store, and every load of a span
the loop writes, is at the counter; a load at another index reads it at a
uniform local; and every span it writes is `disjoint` from every other span
it touches.  Any other loop is the scalar C, unchanged.
"""

from __future__ import annotations

from typing import Optional

from nupp.emit_c.helpers import C_OPS, FIELD_C_TYPES, c_type
from nupp.emit_c.scalar import CModule, _bare, _constant, _FunctionEmitter, _ModuleEmitter, raises
from nupp.lane_rewrite.varying import analyze_function, span_loops
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.walk import own_exprs, statements, subexprs
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.widths import FIELD_STORAGE, Width
from nupp.verifier import check as verify

GANGS = (4, 8)

# The element type and short name of each width's vector (a boolean lane is a 0/1 byte).
_ELEMENTS: dict[Width, tuple[str, str]] = {
    Width.F64: ("double", "f64"), Width.F32: ("float", "f32"), Width.I32: ("int32_t", "i32"),
    Width.U32: ("uint32_t", "u32"), Width.I64: ("int64_t", "i64"), Width.U64: ("uint64_t", "u64"),
    Width.BOOL: ("uint8_t", "bool"),
}
_SIZES = {"double": 8, "float": 4, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8, "uint8_t": 1}

# Ops whose native vector operator is, per lane, exactly the scalar rule:
# op -> (C operator, the unsigned width to compute in for a signed integer, or None).
NATIVE: dict[str, tuple[str, Optional[Width]]] = {}
for _w in (Width.F64, Width.F32):
    for _base, _sym in (("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/")):
        NATIVE[f"{_base}.{_w}"] = (_sym, None)
    NATIVE[f"neg.{_w}"] = ("-", None)
for _w, _u in ((Width.I32, Width.U32), (Width.U32, None), (Width.I64, Width.U64), (Width.U64, None)):
    for _base, _sym in (("add", "+"), ("sub", "-"), ("mul", "*")):
        NATIVE[f"{_base}.{_w}"] = (_sym, _u)
for _w in (Width.I32, Width.I64, Width.U64):
    for _base, _sym in (("band", "&"), ("bor", "|"), ("bxor", "^")):
        NATIVE[f"{_base}.{_w}"] = (_sym, None)


def emit_lane_module(module: ir.Module, path: str, symbol_prefix: str = "nupp_", gang: int = 8) -> CModule:
    """The lane C of a module: `emit_module`'s C with each qualifying span loop
    run in gangs of `gang` (4 or 8) iterations and its n mod G tail scalar."""
    if gang not in GANGS:
        raise ValueError(f"gang must be one of {GANGS}, not {gang}")
    verify(module, "emit_c")
    return _LaneModuleEmitter(module, path, symbol_prefix, gang).emit()


def lane_loops(fn: ir.Function) -> list[tuple[ir.For, object, Optional[str]]]:
    """(loop, plan, why it stays scalar or None) for each outermost span loop."""
    return [(loop, plan, refusal(fn, loop, plan)) for loop, plan in zip(span_loops(fn), analyze_function(fn))]


def refusal(fn: ir.Function, loop: ir.For, plan) -> Optional[str]:
    """Why this emitter keeps a span loop scalar, or None when it runs in gangs.
    Varying ifs are admitted (run under masks); a while or inner for with
    varying control, or inside a varying if, is refused as "varying control
    flow: the while/for at LOC"."""
    if not plan.lanes:
        return plan.reason
    problem = _unmasked_control(loop.body, plan.varying, False)
    if problem:
        return problem
    if plan.masked_breaks:
        return "a masked break"
    if plan.reductions:
        return "a reduction (not emitted yet)"
    if loop.step != 1:
        return f"step {loop.step} (gangs need step 1)"
    inside = list(statements(loop.body))
    declared = {s.name for s in inside if isinstance(s, ir.Let)} | {s.var for s in inside if isinstance(s, ir.For)}
    stored, touched = set(), set()
    for s in inside:
        if isinstance(s, ir.Assert):
            return "an assert in the loop"
        if isinstance(s, ir.Break):
            return "a break in the loop"
        if isinstance(s, ir.Assign) and s.name not in declared and s.name in plan.varying:
            return f"%{s.name}, declared outside the loop, gets a varying value in it"
        if isinstance(s, ir.Store):
            stored.add(s.span)
            touched.add(s.span)
            if s.index != loop.var:
                return f"a store at %{s.index}, not the counter"
        for e in own_exprs(s):
            if raises(e):
                return "an op that can raise"
            for x in subexprs(e):
                if isinstance(x, ir.Load):
                    touched.add(x.span)
    for s in inside:
        for e in own_exprs(s):
            for x in subexprs(e):
                if isinstance(x, ir.Load) and x.index != loop.var and (
                        x.span in stored or x.index in plan.varying):
                    return f"a load of %{x.span} at %{x.index}, not the counter"
    facts = {frozenset((a.a, a.b)): a.fact for a in fn.aliases}
    for a in stored:
        for b in touched - {a}:
            if facts.get(frozenset((a, b))) != ir.DISJOINT:
                return f"%{a} is written and not known disjoint from %{b}"
    return None


def _unmasked_control(stmts, varying, masked: bool) -> Optional[str]:
    """Varying control flow that is not an If: a while or inner for with a varying
    condition or bounds, or any loop inside an if with a varying condition (masks
    are emitted for ifs only)."""
    def is_varying(e) -> bool:
        return any(isinstance(x, ir.Load) or (isinstance(x, ir.Var) and x.name in varying)
                   for x in subexprs(e))

    for s in stmts:
        if isinstance(s, ir.If):
            own = masked or is_varying(s.cond)
            problem = _unmasked_control(s.then, varying, own) or _unmasked_control(s.orelse, varying, own)
            if problem:
                return problem
        elif isinstance(s, ir.While):
            if masked or is_varying(s.cond):
                return f"varying control flow: the while at {s.loc} (masks are emitted for ifs only)"
            problem = _unmasked_control(s.body, varying, False)
            if problem:
                return problem
        elif isinstance(s, ir.For):
            if masked or is_varying(s.start) or is_varying(s.stop) or s.var in varying:
                return f"varying control flow: the for at {s.loc} (masks are emitted for ifs only)"
            problem = _unmasked_control(s.body, varying, False)
            if problem:
                return problem
    return None


class _LaneModuleEmitter(_ModuleEmitter):
    def __init__(self, module: ir.Module, path: str, symbol_prefix: str, gang: int):
        super().__init__(module, path, symbol_prefix)
        self.gang = gang
        self.vector_types: set[str] = set()   # element C types whose vector is used

    def vector(self, element: str) -> str:
        self.vector_types.add(element)
        return f"nu_{_short(element)}x{self.gang}"

    def emit(self) -> CModule:
        result = super().emit()
        typedefs = "".join(
            f"typedef {e} nu_{_short(e)}x{self.gang} __attribute__((vector_size({_SIZES[e] * self.gang})));\n"
            for e in _SIZES if e in self.vector_types)
        source = result.source
        if typedefs:
            lines = source.split("\n")
            last = max(k for k, line in enumerate(lines) if line.startswith("#include"))
            lines.insert(last + 1, "\n" + typedefs.rstrip("\n"))
            source = "\n".join(lines)
        return CModule(source, result.functions, result.cdef, result.errors)

    def banner(self) -> str:
        return super().banner().replace(
            "the scalar C of its @aot functions.",
            f"the lane C (gangs of {self.gang}) of its @aot functions.", 1)

    def function_emitter(self, fn: ir.Function):
        return _LaneFunctionEmitter(self, fn)


def _short(element: str) -> str:
    return next(short for e, short in _ELEMENTS.values() if e == element)


class _LaneFunctionEmitter(_FunctionEmitter):
    def __init__(self, mod: _LaneModuleEmitter, fn: ir.Function):
        super().__init__(mod, fn)
        self.gang = mod.gang
        self.qualifying = {id(loop): plan for loop, plan, why in lane_loops(fn) if why is None}
        self.plan = None      # the plan of the gang body being emitted, else None
        self.base = ""        # its C name of the gang's first index
        self.mask = None      # the C name of the active lanes' 0/1 vector, None: all lanes

    # ---- the gang loop
    def stmt_For(self, s: ir.For) -> None:
        plan = self.qualifying.get(id(s))
        if plan is None or self.plan is not None:
            return super().stmt_For(s)
        g = self.gang
        start = self.expr(s.start)
        stop = self.expr(s.stop)
        self.line("{")
        self.depth += 1
        if not isinstance(s.stop, (ir.Const, ir.Len)):
            bound = self.temp()
            self.line(f"const int32_t {bound} = {stop};")
            stop = bound
        counter = self.temp("c")
        self.line(f"int64_t {counter} = {start};")
        self.line(f"for (; {counter} + {g - 1} <= {stop}; {counter} += {g}) {{")
        self.depth += 1
        self.scopes.append({})
        self.plan, self.base, self.mask = plan, self.temp("b"), None
        self.declare_line(f"const int32_t {self.base} = (int32_t){counter};", self.base, drop=True)
        var = self.bind(s.var)
        lanes = ", ".join(f"(int32_t){counter} + {k}" for k in range(g))
        self.declare_line(f"const {self.vec(Width.I32)} {var} = {{{lanes}}};", var, drop=True)
        for stmt in s.body:
            self.stmt(stmt)
        self.plan = None
        self.scopes.pop()
        self.depth -= 1
        self.line("}")
        self.line(f"for (; {counter} <= {stop}; ++{counter}) {{")  # the tail: n mod G iterations
        self.counted_body(s, counter)
        self.depth -= 1
        self.line("}")

    # ---- statements of a gang body (uniform ones are the scalar emitter's)
    def vec(self, width: Width) -> str:
        return self.mod.vector(_ELEMENTS[width][0])

    def varying(self, e) -> bool:
        return self.plan is not None and any(
            isinstance(x, ir.Load) or (isinstance(x, ir.Var) and x.name in self.plan.varying)
            for x in subexprs(e))

    def stmt_Let(self, s: ir.Let) -> None:
        # Under a mask too: the local lives in the masked block, so what its
        # inactive lanes hold (pure ops of their own inputs) is never observed.
        if self.plan is None or s.name not in self.plan.varying:
            assert self.mask is None, s  # a local set under a mask is varying
            return super().stmt_Let(s)
        value = self.vector_expr(s.value) if s.value is not None else "{0}"
        c_name = self.bind(s.name)
        self.declare_line(f"{self.vec(s.width)} {c_name} = {value};", c_name)

    def stmt_Assign(self, s: ir.Assign) -> None:
        if self.plan is None or s.name not in self.plan.varying:
            assert self.mask is None, s  # a local assigned under a mask is varying
            return super().stmt_Assign(s)
        value = self.vector_expr(s.value)
        c_name = self.lookup(s.name)
        if value == c_name:
            return
        if self.mask is None:
            self.line(f"{c_name} = {value};")
        else:  # a per-lane select: the inactive lanes keep their value
            mask = self.read(self.mask)
            self.line(f"for (int l = 0; l < {self.gang}; l++) "
                      f"{c_name}[l] = {mask}[l] ? {value}[l] : {self.read(c_name)}[l];")

    def stmt_If(self, s: ir.If) -> None:
        if self.plan is None:
            return super().stmt_If(s)
        if self.varying(s.cond):
            return self.masked_if(s)
        if s.labels is not None or not self.chain_varies(s.orelse):
            return super().stmt_If(s)  # all uniform: the scalar if / else if / switch
        # a uniform condition whose elif chain varies further down: no `else if` chaining
        self.line(f"if ({_bare(self.expr(s.cond))}) {{")
        self.block(s.then)
        self.line("} else {")
        self.block(s.orelse)
        self.line("}")

    def chain_varies(self, rest) -> bool:
        while len(rest) == 1 and isinstance(rest[0], ir.If):
            if self.varying(rest[0].cond):
                return True
            rest = rest[0].orelse
        return False

    def masked_if(self, s: ir.If) -> None:
        """An if on a varying condition (its switch labels ignored: the chain of
        ifs is the same program): `then` under mask & c, `orelse` under mask & !c,
        each skipped when no lane is active in it."""
        g = self.gang
        cond = self.vector_expr(s.cond)
        outer = self.mask
        sides = []
        for body, negate in ((s.then, False), (s.orelse, True)):
            if not body:
                continue
            m = self.temp("m")
            test = f"!{cond}[l]" if negate else f"{cond}[l]"
            if outer is not None:
                test = f"{self.read(outer)}[l] & {test}" if not negate else f"{self.read(outer)}[l] & ({test})"
            self.line(f"{self.vec(Width.BOOL)} {m} = {{0}};")
            self.line(f"for (int l = 0; l < {g}; l++) {m}[l] = (uint8_t)({test});")
            self.reads.add(m)
            sides.append((body, m))
        for body, m in sides:
            any_lane = self.temp("a")
            self.line(f"uint8_t {any_lane} = 0;")
            self.line(f"for (int l = 0; l < {g}; l++) {any_lane} |= {m}[l];")
            self.line(f"if ({any_lane}) {{")
            self.mask = m
            self.block(body)
            self.mask = outer
            self.line("}")

    def stmt_Store(self, s: ir.Store) -> None:
        if self.plan is None:
            return super().stmt_Store(s)
        value = self.lane(s.value)
        pointer, _, span_type = self.spans[s.span]
        self.reads.add(pointer)
        fields = self.mod.structs[span_type.struct][1]
        storage = FIELD_STORAGE[dict(self.mod.module.struct(span_type.struct).fields)[s.field]]
        value = self.store_value(s.value, value, storage)
        guard = "" if self.mask is None else f"if ({self.read(self.mask)}[l]) "
        self.line(f"for (int l = 0; l < {self.gang}; l++) "
                  f"{guard}{pointer}[{self.read(self.base)} + l - 1].{fields[s.field]} = {value};")

    # ---- varying expressions
    def lane(self, e) -> str:
        """C for lane `l` of e: `v[l]` of its vector, or the scalar C of a uniform e."""
        if not self.varying(e):
            return self.expr(e)
        return f"{self.vector_expr(e)}[l]"

    def vector_expr(self, e) -> str:
        """A vector of e's lanes: the name of a vector local or temporary, or a
        broadcast of a uniform value."""
        if not self.varying(e):
            return self.broadcast(self.expr(e), e.width)
        if isinstance(e, ir.Var):
            return self.read(self.lookup(e.name))
        if isinstance(e, ir.Load):
            return self.gather(e)
        assert isinstance(e, ir.Op), e  # calls keep a loop scalar
        return self.op(e)

    def broadcast(self, scalar: str, width: Width) -> str:
        t = self.temp()
        self.line(f"const {self.vec(width)} {t} = {{{', '.join([scalar] * self.gang)}}};")
        self.reads.add(t)
        return t

    def gather(self, e: ir.Load) -> str:
        pointer, _, span_type = self.spans[e.span]
        self.reads.add(pointer)
        fields = self.mod.structs[span_type.struct][1]
        storage = FIELD_STORAGE[dict(self.mod.module.struct(span_type.struct).fields)[e.field]]
        if e.index == self.plan.counter:
            index = f"{self.read(self.base)} + l - 1"
        else:  # a uniform index: every lane reads the same element
            index = f"{self.index(e.index)} - 1"
        access = f"{pointer}[{index}].{fields[e.field]}"
        if FIELD_C_TYPES[storage.name] != c_type(e.width):
            access = f"(({c_type(e.width)}){access})"
        t = self.temp()
        self.line(f"{self.vec(e.width)} {t} = {{0}};")
        self.line(f"for (int l = 0; l < {self.gang}; l++) {t}[l] = {access};")
        self.reads.add(t)
        return t

    def op(self, e: ir.Op) -> str:
        t = self.temp()
        self.reads.add(t)
        native = NATIVE.get(e.op)
        if native is not None:
            sym, unsigned = native
            args = [self.vector_expr(a) for a in e.args]
            if unsigned is not None:
                u = self.vec(unsigned)
                args = [f"({u}){a}" for a in args]
            text = f"({sym}{args[0]})" if len(args) == 1 else f"({args[0]} {sym} {args[1]})"
            if unsigned is not None:
                text = f"({self.vec(e.width)}){text}"
            self.line(f"const {self.vec(e.width)} {t} = {text};")
            return t
        info = OPS[e.op]
        args = [self.lane(a) for a in e.args]
        rendering = C_OPS[e.op]
        if rendering.literal_safe is not None and (
                any(_constant(a) for a in e.args) or e.args[0] == e.args[1]):
            rendering = rendering.literal_safe
        self.mod.use(rendering)
        assert not info.raises or isinstance(e.args[1], ir.Const)
        self.line(f"{self.vec(e.width)} {t} = {{0}};")
        self.line(f"for (int l = 0; l < {self.gang}; l++) {t}[l] = {_bare(rendering.scalar.format(*args))};")
        return t
