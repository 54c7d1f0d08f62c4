"""Which counted span loops could run in gangs, and which of their values vary per lane.

The first piece of the lane rewrite: an analysis, not a transform.  For each
outermost `For` whose bound reads a span length (`len %s`, directly or
through a local set from one) it decides whether the loop can be rewritten
into gangs of G consecutive iterations (G in 4, 8, 16, 32), and if not, why, in
words a user understands.  Inner loops, ifs and whiles are part of the body.

Uniform and varying (the ISPC rule, iterated to a fixed point):

  - the counter is varying; a `load` is varying; parameters, `len`, constants
    are uniform; an op or call is varying if any argument is;
  - a local is varying if any `let`/`assign` to it in the loop has a varying
    value, or happens under varying control: inside an if whose condition is
    varying, a while whose condition is varying (or which a lane can leave by
    a masked break), or an inner for whose bounds are varying; an inner
    for's counter counts as assigned by the for;
  - a local declared outside the loop that carries a value from one
    iteration to the next (read before it is assigned in an iteration) is
    varying: each lane holds a different iteration's value.

The ifs, whiles and inner fors with varying control need masks
(`varying_control`); a `break` under varying control, or any break that
leaves the span loop itself (it stops the lanes after it), is a masked
break (`masked_breaks`).

A loop stays scalar (`lanes` false, `reason` set), checked in this order:

  - the function is marked @aot(vectorize = false);
  - it returns from inside the loop (not rewritten yet);
  - a local declared outside the loop carries a value between iterations
    and is not a reduction.  A reduction is a local whose every assignment
    in the loop is `%x = op(%x, e)` (`op(e, %x)` too, but for sub) with one
    op of add, sub, mul, band, bor, bxor, min, max, `e` free of %x, and no
    other read of %x in the loop.  Its op must be exact (ops.py: no rounding,
    so reordering cannot change bits): a binary64 running sum is refused
    naming its op; an int32 wrapping add or a min.f64 is admitted and listed
    in `reductions`.  A carried dependence through an inexact op anywhere on
    its chain (through locals of the loop) is refused naming that op; any
    other carried value (a previous element, a prefix, an xorshift state) is
    refused as not a reduction;
  - a local declared outside the loop gets a varying value in it and is read
    after it (its final value would have to come from the last lane);
  - a break leaves the span loop after something in the same iteration that
    later lanes must not have done (a store, an assert, an op that can
    raise, an assignment to an outside local).

Example, the IR

    struct Px { v: int32 }
    func scale(%out: span<Px> write, %k: i32) -> nil {      @1:1
      for %i = 1:i32 to len %out step 1 {                   @2:3
        let %n: i32 = 0:i32                                  @3:5
        while lt.i32(%n, load.i32 %out[%i].v) {              @4:5
          assign %n = add.i32(%n, %k)                        @5:7
        }
        store %out[%i].v = %n                                @7:5
      }
    }

analyzes to varying %i, %n; uniform %k; masked control: the while at 4:5.
The lane rewrite (rewrite.py) decides from this plan and its own admission
rules; report.py prints the decision:

    scale.nupp:2:3: loop over %i: lane-rewritten (varying: %i, %n; uniform: %k;
        masked: while at 4:5)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.walk import blocks, fails_itself, own_exprs, subexprs, var_names
from nupp.scalar_ir.ops import OPS, REDUCTIONS


@dataclass(frozen=True)
class LoopPlan:
    loc: ir.Loc
    counter: str
    lanes: bool                            # can be lane-rewritten
    reason: str | None                  # why not, when lanes is False
    varying: frozenset[str]                # varying locals, the counter included
    uniform: frozenset[str]                # variables read in the loop that stay uniform
    varying_control: tuple[ir.Loc, ...]    # if/while/for with varying control: masks
    masked_breaks: tuple[ir.Loc, ...]      # breaks that run under a mask
    reductions: tuple[str, ...]            # outside locals accumulated with an exact op
    reduction_ops: tuple[str, ...]         # their ops, in the same order


def analyze_module(module: ir.Module) -> dict[str, tuple[LoopPlan, ...]]:
    return {fn.name: analyze_function(fn) for fn in module.functions}


def analyze_function(fn: ir.Function) -> tuple[LoopPlan, ...]:
    order = list(_preorder(fn.body, ()))
    return tuple(_analyze_loop(fn, loop, order) for loop in span_loops(fn))


def span_loops(fn: ir.Function) -> list[ir.For]:
    """The outermost `For`s whose start or stop reads a span length."""
    lengths = _length_locals(fn)

    def reads_length(e) -> bool:
        return any(isinstance(x, ir.Len) or (isinstance(x, ir.Var) and x.name in lengths)
                   for x in subexprs(e))

    found: list[ir.For] = []

    def visit(stmts) -> None:
        for s in stmts:
            if isinstance(s, ir.For) and (reads_length(s.start) or reads_length(s.stop)):
                found.append(s)
            else:
                for block in blocks(s):
                    visit(block)

    visit(fn.body)
    return found


# ---- one loop -------------------------------------------------------------------

def infer(loop) -> frozenset[str]:
    """The varying locals of a loop over spans (a For, or a Gang of lane IR): the
    fixed point of the rule above, the counter included."""
    inference = _Inference(loop, set(_carried(loop.body, outer_assigned(loop))))
    inference.run()
    return frozenset(inference.varying)


def outer_read_after(fn: ir.Function, loop) -> set[str]:
    """Locals declared outside `loop` (a For or Gang of fn) that it assigns and
    that are read after it (or in a loop around it)."""
    return outer_assigned(loop) & set(_reads_after(loop, list(_preorder(fn.body, ()))))


def reductions_of(loop) -> dict[str, str]:
    """The admissible reductions of a loop (For or Gang): outside local -> its exact op."""
    inside = [s for s, _ in _preorder(loop.body, ())]
    found = {}
    for name, first_read in sorted(_carried(loop.body, outer_assigned(loop)).items()):
        op, problem = _classify_carried(name, first_read, inside)
        if problem is None:
            found[name] = op
    return found


def outer_assigned(loop) -> set[str]:
    """Locals declared outside the loop that it assigns."""
    inside = [s for s, _ in _preorder(loop.body, ())]
    declared = {s.name for s in inside if isinstance(s, ir.Let)}
    declared |= {s.var for s in inside if isinstance(s, ir.For)}
    return {s.name for s in inside if isinstance(s, ir.Assign)} - declared - {loop.var}


def carried_refusal(loop, why: str) -> str | None:
    """A local declared outside `loop` (For or Gang) that it assigns other than
    as an exact reduction, or None: the one rule for running a span loop's
    iterations apart (a device invocation each, a chunk per nupp.dask call or
    per thread); `why` says how they run apart."""
    carried = sorted(outer_assigned(loop) - reductions_of(loop).keys())
    if carried:
        return (f"%{carried[0]}, declared outside the span loop at {loop.loc}, is assigned in it and is not "
                f"an exact reduction ({why}: no other value carries between them)")
    return None


def _analyze_loop(fn: ir.Function, loop: ir.For, order) -> LoopPlan:
    inside = [s for s, _ in _preorder(loop.body, ())]
    outer = outer_assigned(loop)
    carried = _carried(loop.body, outer)

    reductions: dict[str, str] = {}
    refusals: list[str] = []
    if not fn.vectorize:
        refusals.append("marked @aot(vectorize = false)")
    refusals += _unsupported(inside)
    for name in sorted(carried):
        op, problem = _classify_carried(name, carried[name], inside)
        if problem is None:
            reductions[name] = op
        else:
            refusals.append(problem)

    inference = _Inference(loop, set(carried))
    inference.run()
    varying = inference.varying

    after = _reads_after(loop, order)
    for name in sorted(outer & varying):
        if name in after and name not in reductions:
            refusals.append(f"%{name} gets a varying value in the loop and is read after it at "
                            f"{after[name]}: its final value would have to come from the last lane")
    problem = _break_after_effect(loop, outer)
    if problem:
        refusals.append(problem)

    read = {v for s in inside for e in own_exprs(s) for v in var_names(e)}
    lanes = not refusals
    return LoopPlan(
        loc=loop.loc, counter=loop.var, lanes=lanes, reason=None if lanes else refusals[0],
        varying=frozenset(varying), uniform=frozenset(read - varying),
        varying_control=tuple(s.loc for s in inference.control),
        masked_breaks=tuple(s.loc for s in inference.breaks),
        reductions=tuple(reductions), reduction_ops=tuple(reductions.values()))


class _Inference:
    """Uniform/varying to a fixed point; the masked control and breaks of the last round."""

    def __init__(self, loop, seeds: set[str]):
        self.loop = loop
        self.varying = {loop.var} | seeds
        self.varying_loops: set[int] = set()   # ids of loops some lane can leave early
        self.control: list = []
        self.breaks: list = []

    def run(self) -> None:
        while True:
            before = (len(self.varying), len(self.varying_loops))
            self.control, self.breaks = [], []
            self.block(self.loop.body, id(self.loop) in self.varying_loops, self.loop)
            if (len(self.varying), len(self.varying_loops)) == before:
                return

    def is_varying(self, e) -> bool:
        return any(isinstance(x, ir.Load) or (isinstance(x, ir.Var) and x.name in self.varying)
                   for x in subexprs(e))

    def block(self, stmts, masked: bool, target) -> None:
        for s in stmts:
            self.stmt(s, masked, target)

    def stmt(self, s, masked: bool, target) -> None:
        if isinstance(s, (ir.Let, ir.Assign)):
            if s.value is not None and (masked or self.is_varying(s.value)):
                self.varying.add(s.name)
        elif isinstance(s, ir.If):
            own = self.is_varying(s.cond)
            if own:
                self.control.append(s)
            self.block(s.then, masked or own, target)
            self.block(s.orelse, masked or own, target)
        elif isinstance(s, ir.While):
            own = self.is_varying(s.cond) or id(s) in self.varying_loops
            if own:
                self.control.append(s)
            self.block(s.body, masked or own, s)
        elif isinstance(s, ir.For):
            own = self.is_varying(s.start) or self.is_varying(s.stop) or id(s) in self.varying_loops
            if own:
                self.control.append(s)
            if masked or own:
                self.varying.add(s.var)
            self.block(s.body, masked or own, s)
        elif isinstance(s, ir.Break) and (masked or target is self.loop):
            self.breaks.append(s)
            self.varying_loops.add(id(target))


# ---- refusals ----------------------------------------------------------------------

def _unsupported(inside) -> list[str]:
    problems = []
    for s in inside:
        if isinstance(s, ir.Return):
            problems.append(f"returns at {s.loc} from inside the loop: a return is not lane-rewritten yet")
    return problems


def _carried(body, outer: set[str]) -> dict[str, ir.Loc]:
    """Outside locals read in an iteration before that iteration surely assigned
    them, with the first such read."""
    found: dict[str, ir.Loc] = {}

    def block(stmts, assigned: set[str]) -> set[str]:
        assigned = set(assigned)
        for s in stmts:
            for e in own_exprs(s):
                for v in var_names(e):
                    if v in outer and v not in assigned:
                        found.setdefault(v, s.loc)
            if isinstance(s, ir.Assign) and s.name in outer:
                assigned.add(s.name)
            elif isinstance(s, ir.If):
                assigned |= block(s.then, assigned) & block(s.orelse, assigned)
            elif isinstance(s, (ir.While, ir.For)):
                block(s.body, assigned)  # may run zero times
        return assigned

    block(body, set())
    return found


def _classify_carried(name: str, first_read: ir.Loc, inside) -> tuple[str | None, str | None]:
    """(the reduction's op, None) or (None, why the loop stays scalar)."""
    updates = [s for s in inside if isinstance(s, ir.Assign) and s.name == name]
    ops = {_reduction_op(name, s.value) for s in updates}
    reads = [s.loc for s in inside for e in own_exprs(s) for v in var_names(e) if v == name]
    if len(ops) == 1 and None not in ops:
        op = ops.pop()
        if not OPS[op].exact:
            return None, _inexact(name, op)
        if len(reads) == len(updates):
            return op, None
        other = next((loc for loc in reads if all(loc != u.loc for u in updates)), reads[-1])
        return None, (f"%{name} accumulates with {op} but is also read inside the loop at {other}: "
                      "a running value is not a reduction")
    op = _inexact_on_cycle(name, inside)
    if op is not None:
        return None, _inexact(name, op)
    return None, (f"%{name} carries a value from one iteration to the next (read at {first_read} "
                  f"before it is assigned) and is not a reduction %{name} = op(%{name}, ...) "
                  f"with op one of {', '.join(REDUCTIONS)}")


def _reduction_op(name: str, value) -> str | None:
    if not isinstance(value, ir.Op) or OPS[value.op].base not in REDUCTIONS or len(value.args) != 2:
        return None
    left, right = value.args
    if _is_var(left, name) and name not in var_names(right):
        return value.op
    if _is_var(right, name) and name not in var_names(left) and OPS[value.op].base != "sub":
        return value.op
    return None


def _inexact(name: str, op: str) -> str:
    return (f"%{name} carries {op} ({_describe(op)}) from one iteration to the next: "
            "reordering it would change the bits")


def _describe(op: str) -> str:
    doc = OPS[op].doc
    doc = doc.split(": ", 1)[1] if ": " in doc else doc
    return doc.split(" (", 1)[0]


def _inexact_on_cycle(name: str, inside) -> str | None:
    """An inexact op on some dependence path from %name's old value to its new one."""
    edges = []  # (read variable, assigned local, the inexact op on the way or None)
    for s in inside:
        if isinstance(s, (ir.Let, ir.Assign)) and s.value is not None:
            edges += [(v, s.name, op) for v, op in _leaf_paths(s.value, None)]
    forward = _reach(name, [(a, b) for a, b, _ in edges])
    backward = _reach(name, [(b, a) for a, b, _ in edges])
    return next((op for a, b, op in edges if op and a in forward and b in backward), None)


def _leaf_paths(e, inexact: str | None) -> Iterator[tuple[str, str | None]]:
    if isinstance(e, ir.Var):
        yield e.name, inexact
    elif isinstance(e, (ir.Op, ir.Call)):
        here = e.op if isinstance(e, ir.Op) and not OPS[e.op].exact else None
        for arg in e.args:
            yield from _leaf_paths(arg, inexact or here)


def _reach(start: str, edges) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        node = todo.pop()
        for a, b in edges:
            if a == node and b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def _reads_after(loop, order) -> dict[str, ir.Loc]:
    """Variables read after the loop (or anywhere in a loop around it), each with
    the first such read."""
    index = next(k for k, (s, _) in enumerate(order) if s is loop)
    end = index + 1
    while end < len(order) and any(a is loop for a in order[end][1]):
        end += 1
    around = [a for a in order[index][1] if isinstance(a, (ir.While, ir.For))]
    found: dict[str, ir.Loc] = {}
    for k, (s, ancestors) in enumerate(order):
        inside_loop = index <= k < end
        in_loop_around = any(s is a for a in around) or any(a is b for a in ancestors for b in around)
        if not inside_loop and (k >= end or in_loop_around):
            for e in own_exprs(s):
                for v in var_names(e):
                    found.setdefault(v, s.loc)
    return found


def _break_after_effect(loop: ir.For, outer: set[str]) -> str | None:
    """A break leaving the span loop after something later lanes must not have done."""
    effect: list = []  # (what, loc) of the first effect seen

    def visit(stmts, leaves_loop: bool) -> str | None:
        for s in stmts:
            if isinstance(s, ir.Break) and leaves_loop and effect:
                what, loc = effect[0]
                return (f"break at {s.loc} leaves the loop after {what} at {loc} in the same "
                        "iteration: the later lanes of a gang would already have done it")
            if not effect:
                what = _effect(s, outer)
                if what:
                    effect.append((what, s.loc))
            if isinstance(s, ir.If):
                problem = visit(s.then, leaves_loop) or visit(s.orelse, leaves_loop)
            elif isinstance(s, (ir.While, ir.For)):
                problem = visit(s.body, False)
            else:
                problem = None
            if problem:
                return problem
        return None

    return visit(loop.body, True)


def _effect(s, outer: set[str]) -> str | None:
    if isinstance(s, ir.Store):
        return "a store"
    if isinstance(s, ir.Assert):
        return "an assert"
    if isinstance(s, ir.Assign) and s.name in outer:
        return f"an assignment to %{s.name}"
    for e in own_exprs(s):
        for x in subexprs(e):
            if fails_itself(x):
                return f"a call of @{x.func}, which can raise" if isinstance(x, ir.Call) else f"{x.op}, which can raise"
    return None


# ---- walking the tree --------------------------------------------------------------

def _length_locals(fn: ir.Function) -> set[str]:
    """Locals set (at least once) from a span length, directly or through another."""
    lengths: set[str] = set()
    sets = [s for s, _ in _preorder(fn.body, ())
            if isinstance(s, (ir.Let, ir.Assign)) and s.value is not None]
    changed = True
    while changed:
        changed = False
        for s in sets:
            if s.name not in lengths and any(
                    isinstance(x, ir.Len) or (isinstance(x, ir.Var) and x.name in lengths)
                    for x in subexprs(s.value)):
                lengths.add(s.name)
                changed = True
    return lengths


def _preorder(stmts, ancestors) -> Iterator[tuple[object, tuple]]:
    for s in stmts:
        yield s, ancestors
        for block in blocks(s):
            yield from _preorder(block, ancestors + (s,))






def _is_var(e, name: str) -> bool:
    return isinstance(e, ir.Var) and e.name == name
