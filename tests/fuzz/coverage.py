"""Which constructs a program uses, measured from the program itself.

`measure(text)` parses the module (frontend/parser.py: the syntax the user
wrote: statement kinds, literals, operators, calls, qualifiers, type names,
the shapes the outside fuzzer found), lowers it to scalar IR (every op,
read with scalar_ir's walkers; loads and stores by field type) and runs the
lane rewrite at gang 16 (which span loops run in gangs, masked control,
reductions, uniform locals under a mask; what lane C writes differently:
selects for a cheap masked if, a masked while going on vector by vector,
assignments without a select, loads after a store to their span) and asks the SPIR-V backend which
functions a device runs (with reductions, a finish kernel, calls, a break).
`CONSTRUCTS` lists every name it
can report; the fuzz run prints how many programs used each, and
tests/test_fuzz.py demands that a modest sample of the generator uses them
all, so a new op (ops.OPS) or a construct the generator does not write
fails the suite.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields, is_dataclass

from nupp.frontend import ast
from nupp.emit_c.lane_memory import block_place
from nupp.emit_c.lane import (SELECT_BUDGET, dead_after_loops, masked_tail, select_chain, select_cost,
                              vector_by_vector)
from nupp.emit_spirv.admit import calls_in, device_refusal, kernel_reductions, split_kernel
from nupp.errors import Source
from nupp.frontend.parser import parse
from nupp.lane_rewrite.rewrite import lane_decisions
from nupp.pipeline import lanes_at, lanes_at_tier
from nupp.pipeline import compile_module
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.walk import blocks, breaks_leaving, fails_itself, own_exprs, raises, statements, subexprs
from nupp.scalar_ir.widths import FIELD_STORAGE, TYPE_WIDTHS

MATH_CALLS = tuple(f"nupp.math.f32.{n}" for n in ("add", "sub", "mul", "div", "sqrt", "neg", "abs", "min", "max",
                                                    "fma", "exp", "narrow", "bits", "fromBits")) + (
    "nupp.math.i32.wrap", "nupp.math.u32.wrap", "nupp.math.i64.wrap", "nupp.math.u64.wrap",
    "nupp.math.u32.fromI32", "nupp.math.i32.fromU32", "nupp.math.u32.toI32",
    "math.sqrt", "math.abs", "math.floor", "math.ceil", "math.min", "math.max")
BINARY = ("+", "-", "*", "/", "//", "%", "^", "&", "|", "~", "<<", ">>", "==", "~=", "<", "<=", ">", ">=", "and",
          "or")
UNARY = ("-", "not", "~", "#")

STATEMENTS = (
    "local typed", "local untyped", "local element reference", "assign local", "assign parameter",
    "store s[i].f", "store e.f", "if", "elseif", "else", "for step default", "for step positive literal",
    "for step negative literal", "for empty body", "for near the int32 limits", "while", "repeat", "break",
    "return a value", "return nothing", "early return", "return inside a non-span loop", "assert",
    "switch local", "switch arm with several cases", "switch untyped local", "call statement", "do block",
)
EXPRESSIONS = (
    "integer literal", "hex literal", "float literal", "LL literal", "ULL literal", "boolean literal",
    "parameter", "local", "loop counter", "load s[i].f", "load e.f", "load from a WriteSpan",
    "call @aot function", "call module alias", *(f"binary {op}" for op in BINARY),
    *(f"unary {op}" for op in UNARY), *(f"call {name}" for name in MATH_CALLS),
)
DECLARATIONS = (
    "qualifier exclusive", "qualifier borrows", "two borrows spans", "@aot(vectorize = false)",
    *(f"parameter {t}" for t in TYPE_WIDTHS), *(f"result {t}" for t in (*TYPE_WIDTHS, "nil")),
    *(f"load field {t}" for t in FIELD_STORAGE), *(f"store field {t}" for t in FIELD_STORAGE),
)
SHAPES = (
    "and/or whose right operand may raise", "and/or whose right operand calls @aot", "not (a or b)",
    "and/or as a value", "int64 // or % that may raise", "call of an @aot function that asserts",
    "duplicate @aot function names", "span loop run in gangs", "span loop kept scalar", "masked if",
    "masked while", "while ... and false", "masked for", "empty for in a span loop",
    "uniform local in a masked gang body", "reduction", "break out of a span loop", "two span loops",
    "register pressure (8+ loads in one expression)", "masked if run as selects",
    "masked if/else-if chain run as selects from its last arm", "masked while going on vector by vector",
    "span loops of different gangs in one function (the cost model's)",
    "local no inactive lane reads (no select)", "load after a store to its span in a gang",
    "masked tail", "masked tail that may break or raise",
    "masked for whose bounds load a span its body stores",
    "struct moved as blocks", "struct with a 4-byte field in an 8-byte word moved as blocks",
    "4-byte field stored into its 8-byte word", "gang's elements written whole without a load",
)
DEVICE = ("device kernel", "device kernel with a finish kernel", "device reduction", "device call",
          "device break out of the span loop")
OP_CONSTRUCTS = tuple(f"op {name}" for name in OPS)
CONSTRUCTS = STATEMENTS + EXPRESSIONS + DECLARATIONS + SHAPES + DEVICE + OP_CONSTRUCTS


def measure(text: str, path: str = "measured.nupp") -> set[str]:
    """The constructs a module uses (names from CONSTRUCTS)."""
    source = Source(path, text)
    found = set(_syntax(parse(source)))
    try:
        lowered = compile_module(source, after="lower")
    except Exception:  # noqa: BLE001 - refused (a name defined twice), or a bug the runner reports
        return found   # what its syntax shows
    found |= _ops(lowered) | _memory(lowered) | _ir_shapes(lowered)
    try:
        compiled = compile_module(source)
        found |= _device(compiled)
        found |= _lanes(compiled)
    except Exception:  # noqa: BLE001 - a compiler bug: the lane executions report it, with its program
        pass
    unknown = found - set(CONSTRUCTS)
    assert not unknown, f"measured constructs missing from CONSTRUCTS: {sorted(unknown)}"
    return found


def table(counts: Counter, programs: int) -> str:
    """Construct -> programs that used it, the uncovered ones flagged."""
    width = max(len(c) for c in CONSTRUCTS)
    lines = [f"{'construct':<{width}}  programs"]
    for c in CONSTRUCTS:
        lines.append(f"{c:<{width}}  {counts[c]:>8}" + ("   <-- never covered" if not counts[c] else ""))
    missing = [c for c in CONSTRUCTS if not counts[c]]
    lines.append(f"{programs} programs; {len(CONSTRUCTS) - len(missing)} of {len(CONSTRUCTS)} constructs covered")
    return "\n".join(lines)


# ---- the syntax tree -----------------------------------------------------------------------------

def _children(node):
    for f in fields(node):
        value = getattr(node, f.name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, tuple):
                yield from (x for x in item if is_dataclass(x))
            elif is_dataclass(item) and not isinstance(item, ast.Span):
                yield item


def _walk(node, parents=()):
    yield node, parents
    for child in _children(node):
        yield from _walk(child, parents + (node,))


def _unparen(e):
    while isinstance(e, ast.Paren):
        e = e.expr
    return e


def _syntax(chunk: ast.Chunk):
    functions = [s for s in chunk.body.stats if isinstance(s, ast.LocalFunction)
                 and any(a.name == "aot" for a in s.attributes)]
    names = [f.name for f in functions]
    if len(names) != len(set(names)):
        yield "duplicate @aot function names"
    aliases = {s.names[0].name for s in chunk.body.stats if isinstance(s, ast.Local) and s.names}
    for fn in functions:
        yield from _function_syntax(fn, aliases)


def _function_syntax(fn: ast.LocalFunction, aliases: set[str]):
    if any(a.args for a in fn.attributes):
        yield "@aot(vectorize = false)"
    spans = {}
    for p in fn.func.params:
        if p.qualifier:
            yield f"qualifier {p.qualifier}"
            spans[p.name] = p.type.path[-1] == "WriteSpan"
        else:
            yield f"parameter {p.type.name}"
    if sum(not w for w in spans.values()) >= 2:
        yield "two borrows spans"
    yield f"result {fn.func.returns.name if fn.func.returns else 'nil'}"
    params = {p.name for p in fn.func.params}
    last = fn.func.body.stats[-1] if fn.func.body.stats else None
    for node, parents in _walk(fn.func.body):
        yield from _node_syntax(node, parents, params, aliases, last)
    span_loops = [n for n, _ in _walk(fn.func.body) if isinstance(n, ast.NumericFor)
                  and isinstance(_unparen(n.stop), ast.UnOp) and _unparen(n.stop).op == "#"]
    if len(span_loops) >= 2:
        yield "two span loops"


def _node_syntax(node, parents, params: set[str], aliases: set[str], last):
    kind = type(node).__name__
    if isinstance(node, ast.Local):
        yield from _local_syntax(node)
    elif isinstance(node, ast.Assign):
        target = node.targets[0]
        if isinstance(target, ast.Name):
            yield "assign parameter" if target.id in params else "assign local"
        else:
            yield "store e.f" if isinstance(target.obj, ast.Name) else "store s[i].f"
        if isinstance(_unparen(node.values[0]), ast.BinOp) and _unparen(node.values[0]).op in ("and", "or"):
            yield "and/or as a value"
    elif isinstance(node, ast.If):
        yield "if"
        yield from ["elseif"] * (len(node.clauses) > 1) + ["else"] * (node.orelse is not None)
    elif isinstance(node, ast.NumericFor):
        yield from _for_syntax(node)
    elif kind in ("While", "Repeat", "Break", "Do"):
        yield {"While": "while", "Repeat": "repeat", "Break": "break", "Do": "do block"}[kind]
        if isinstance(node, ast.While) and _ends_and_false(node.cond):
            yield "while ... and false"
    elif isinstance(node, ast.Return):
        yield "return a value" if node.values else "return nothing"
        if node is not last:
            yield "early return"
        if any(isinstance(p, (ast.While, ast.Repeat, ast.NumericFor)) for p in parents):
            yield "return inside a non-span loop"
    elif isinstance(node, ast.CallStat):
        yield "assert" if isinstance(node.call.func, ast.Name) and node.call.func.id == "assert" \
            else "call statement"
    elif isinstance(node, ast.Field) and not (parents and isinstance(parents[-1], ast.Assign)
                                              and any(node is t for t in parents[-1].targets)):
        yield "load e.f" if isinstance(node.obj, ast.Name) else "load s[i].f"
    else:
        yield from _expression_syntax(node, params, aliases)


def _local_syntax(node: ast.Local):
    value = _unparen(node.values[0])
    if isinstance(value, ast.Index):
        yield "local element reference"
        return
    yield "local typed" if node.names[0].type is not None else "local untyped"
    if isinstance(value, ast.Switch):
        yield "switch local"
        if node.names[0].type is None:
            yield "switch untyped local"
        if any(len(arm.patterns) > 1 for arm in value.arms):
            yield "switch arm with several cases"
    elif isinstance(value, ast.BinOp) and value.op in ("and", "or"):
        yield "and/or as a value"


def _for_syntax(node: ast.NumericFor):
    step = _unparen(node.step) if node.step is not None else None
    if step is None:
        yield "for step default"
    elif isinstance(step, ast.UnOp) and step.op == "-":
        yield "for step negative literal"
    else:
        yield "for step positive literal"
    if not node.body.stats:
        yield "for empty body"
    bounds = [_unparen(node.start), _unparen(node.stop)]
    bounds = [b.operand if isinstance(b, ast.UnOp) and b.op == "-" else b for b in bounds]
    if any(isinstance(b, ast.Number) and b.raw in ("2147483647", "2147483648", "2147483646") for b in bounds):
        yield "for near the int32 limits"


def _ends_and_false(cond) -> bool:
    cond = _unparen(cond)
    return isinstance(cond, ast.BinOp) and cond.op == "and" and isinstance(_unparen(cond.right), ast.Bool) \
        and not _unparen(cond.right).value


def _expression_syntax(node, params: set[str], aliases: set[str]):
    if isinstance(node, ast.Number):
        raw = node.raw.lower()
        if raw.endswith("ull"):
            yield "ULL literal"
        elif raw.endswith("ll"):
            yield "LL literal"
        elif raw.startswith("0x") and "p" not in raw:
            yield "hex literal"
        elif raw.isdigit():
            yield "integer literal"
        else:
            yield "float literal"
    elif isinstance(node, ast.Bool):
        yield "boolean literal"
    elif isinstance(node, ast.BinOp):
        yield f"binary {node.op}"
    elif isinstance(node, ast.UnOp):
        yield f"unary {node.op}"
        operand = _unparen(node.operand)
        if node.op == "not" and isinstance(operand, ast.BinOp) and operand.op == "or":
            yield "not (a or b)"
    elif isinstance(node, ast.Call):
        yield from _call_syntax(node, aliases)


def _call_syntax(node: ast.Call, aliases: set[str]):
    path = []
    f = node.func
    while isinstance(f, ast.Field):
        path.insert(0, f.name)
        f = f.obj
    if not isinstance(f, ast.Name):
        return
    head = {"f32": ["nupp", "math", "f32"], "nmath": ["nupp", "math"], "mth": ["math"]}.get(f.id) \
        if f.id in aliases else None
    if head:
        yield "call module alias"
    name = ".".join((head or [f.id]) + path)
    if name in MATH_CALLS:
        yield f"call {name}"
    elif not path and f.id != "assert":
        yield "call @aot function"


# ---- the scalar IR --------------------------------------------------------------------------------

def _exprs(fn: ir.Function):
    for s in statements(fn.body):
        for e in own_exprs(s):
            yield from subexprs(e)


def _ops(module: ir.Module) -> set[str]:
    return {f"op {x.op}" for fn in module.functions for x in _exprs(fn) if isinstance(x, ir.Op)}


def _memory(module: ir.Module) -> set[str]:
    found = set()
    for fn in module.functions:
        spans = {p.name: p.type for p in fn.span_params()}
        field_type = lambda span, name: module.struct(spans[span].struct).field_type(name)  # noqa: E731
        for x in _exprs(fn):
            if isinstance(x, ir.Load):
                found.add(f"load field {field_type(x.span, x.field)}")
                if spans[x.span].writable:
                    found.add("load from a WriteSpan")
            elif isinstance(x, ir.Var):
                found.add("parameter" if any(p.name == x.name for p in fn.params) else "local")
        for s in statements(fn.body):
            if isinstance(s, ir.Store):
                found.add(f"store field {field_type(s.span, s.field)}")
    return found


def _ir_shapes(module: ir.Module) -> set[str]:
    found = set()
    asserting = {fn.name for fn in module.functions if any(isinstance(s, ir.Assert) for s in statements(fn.body))}
    for fn in module.functions:
        counters = {s.var for s in statements(fn.body) if isinstance(s, ir.For)}
        for x in _exprs(fn):
            if isinstance(x, ir.Var) and x.name in counters:
                found.add("loop counter")
            if isinstance(x, ir.Call):
                found.add("call @aot function")
                if x.func in asserting:
                    found.add("call of an @aot function that asserts")
            if isinstance(x, ir.Op) and x.op in ("and.bool", "or.bool") and raises(x.args[1]):
                found.add("and/or whose right operand may raise")
                if any(isinstance(y, ir.Call) for y in subexprs(x.args[1])):
                    found.add("and/or whose right operand calls @aot")
            if isinstance(x, ir.Op) and x.op.split(".")[0] in ("idiv", "mod") and x.width.bits == 64 \
                    and x.width.is_int and fails_itself(x):
                found.add("int64 // or % that may raise")
            if isinstance(x, (ir.Op, ir.Call)) and len({(y.span, y.field) for y in subexprs(x)
                                                         if isinstance(y, ir.Load)}) >= 8:
                found.add("register pressure (8+ loads in one expression)")
    return found


def _lanes(module: ir.Module) -> set[str]:
    found = set()
    for decision in lane_decisions(module):
        found.add("span loop run in gangs" if decision.rewritten else "span loop kept scalar")
    for fn in lanes_at(module, 16).functions:
        for gang in (s for s in statements(fn.body) if isinstance(s, ir.Gang)):
            found |= _gang_shapes(gang) | _block_shapes(module, fn, gang)
    for fn in lanes_at_tier(module, "v4").functions:
        if len({s.size for s in statements(fn.body) if isinstance(s, ir.Gang)}) > 1:
            found.add("span loops of different gangs in one function (the cost model's)")
    return found


def _device(module: ir.Module) -> set[str]:
    found = set()
    for fn in module.functions:
        if device_refusal(fn, module) is not None:
            continue
        _, loop, epilogue = split_kernel(fn)
        found.add("device kernel")
        found |= {"device kernel with a finish kernel"} if epilogue else set()
        found |= {"device reduction"} if kernel_reductions(fn) else set()
        found |= {"device call"} if calls_in(fn.body) else set()
        found |= {"device break out of the span loop"} if breaks_leaving(loop.body) else set()
    return found


def _gang_shapes(gang: ir.Gang) -> set[str]:
    found = set()
    if gang.reductions:
        found.add("reduction")
    if breaks_leaving(gang.body):
        found.add("break out of a span loop")
    for s in statements(gang.body):
        if getattr(s, "masked", False):
            found.add({ir.If: "masked if", ir.While: "masked while", ir.For: "masked for"}[type(s)])
        if isinstance(s, ir.For) and not s.body:
            found.add("empty for in a span loop")
    found |= _lane_c_shapes(gang)
    masked = False  # once something may raise or break, the rest of the body runs under a mask
    for s in gang.body:
        if masked and isinstance(s, (ir.Let, ir.Assign)) and (s.name not in gang.varying):
            found.add("uniform local in a masked gang body")
        nested = list(statements([s]))
        masked = masked or any(isinstance(x, ir.Break) for x in nested) \
            or any(raises(e) for x in nested for e in own_exprs(x))
    return found


def _block_shapes(module: ir.Module, fn: ir.Function, gang: ir.Gang) -> set[str]:
    """How lane C moves the gang's elements of a struct of several fields
    (emit_c/lane_memory.py): as blocks of words shuffled apart, a 4-byte field
    in an 8-byte word among them, merged into its word when stored at the top
    of the body (unmasked), or written whole, interleaved without a load, when
    the body stores every field of a span it never loads once at its top."""
    structs = {p.name: module.struct(p.type.struct) for p in fn.span_params()}
    found = set()
    accesses = [(x.span, x.field) for st in statements(gang.body) for e in own_exprs(st) for x in subexprs(e)
                if isinstance(x, ir.Load)] + [(st.span, st.field) for st in statements(gang.body)
                                              if isinstance(st, ir.Store)]
    for span, name in accesses:
        place = block_place(structs[span], name)
        if place is not None:
            found.add("struct moved as blocks")
            found |= {"struct with a 4-byte field in an 8-byte word moved as blocks"} if place.halves else set()
    top = [st for st in gang.body if isinstance(st, ir.Store)]
    for st in top:
        place = block_place(structs[st.span], st.field)
        if place is not None and place.half is not None:
            found.add("4-byte field stored into its 8-byte word")
    for span in {st.span for st in top} - _loaded(e for x in statements(gang.body) for e in own_exprs(x)):
        stored = sorted(st.field for st in statements(gang.body) if isinstance(st, ir.Store) and st.span == span)
        place = block_place(structs[span], stored[0])
        if place is not None and not place.halves and stored == sorted(n for n, _ in structs[span].fields) \
                and len(stored) == len([st for st in top if st.span == span]):
            found.add("gang's elements written whole without a load")
    return found


def _loaded(exprs) -> set[str]:
    return {x.span for e in exprs for x in subexprs(e) if isinstance(x, ir.Load)}


def _stored(body) -> set[str]:
    return {x.span for x in statements(body) if isinstance(x, ir.Store)}


def _lane_c_shapes(gang: ir.Gang) -> set[str]:
    """What lane C (emit_c/lane.py) writes differently: a masked tail, a cheap
    masked if as selects, a masked while whose vectors go on one by one once
    one vector's lanes have left (in a gang of several vectors), an
    assignment without a select (a local declared in
    its masked block, or dead after its masked loop), a load after a store to
    its span, a masked for's bounds read from a span its body stores."""
    found = set()
    if masked_tail(gang):
        found.add("masked tail")
        if breaks_leaving(gang.body) or any(raises(e) for s in statements(gang.body) for e in own_exprs(s)):
            found.add("masked tail that may break or raise")
    for s in statements(gang.body):
        cost = select_cost(s.then + s.orelse, gang.varying) if isinstance(s, ir.If) and s.masked else None
        if cost is not None and cost <= SELECT_BUDGET:
            found.add("masked if run as selects")
            chain = select_chain(s)
            if chain is not None and len(chain[0]) > 1:
                found.add("masked if/else-if chain run as selects from its last arm")
        if isinstance(s, ir.While) and s.masked and vector_by_vector(s, gang.varying):
            found.add("masked while going on vector by vector")
    if any(dead_after_loops(gang.body).values()) or _assigned_where_declared(gang.body, False):
        found.add("local no inactive lane reads (no select)")
    for s in statements(gang.body):  # bounds loaded once, before rounds that follow the body's stores
        if isinstance(s, ir.For) and s.masked and _loaded({s.start, s.stop}) & _stored(s.body):
            found.add("masked for whose bounds load a span its body stores")
    stored: set[str] = set()
    for s in statements(gang.body):
        if any(isinstance(x, ir.Load) and x.span in stored for e in own_exprs(s) for x in subexprs(e)):
            found.add("load after a store to its span in a gang")
        if isinstance(s, ir.Store):
            stored.add(s.span)
    return found


def _assigned_where_declared(body, masked: bool) -> bool:
    """Whether a masked block assigns a local it declares."""
    declared: set[str] = set()
    for s in body:
        if isinstance(s, ir.Let):
            declared.add(s.name)
        if masked and isinstance(s, ir.Assign) and s.name in declared:
            return True
        if any(_assigned_where_declared(b, getattr(s, "masked", False)) for b in blocks(s)):
            return True
    return False
