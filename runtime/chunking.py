"""Which @aot functions can run chunk by chunk (nupp.dask), and why the others cannot.

nupp.dask calls a function once per chunk, each call given the chunk's
elements as its spans, and the answer must be the bits of one call on the
whole arrays.  That holds when no iteration of the span loop can tell where
its chunk starts or how long it is, and when what each chunk's call returns
combines exactly.  The shape starts from the device's (emit_spirv/admit.py:
independent iterations, exact reductions), and chunks ask more:

    shape     statements before the loop (every chunk runs them: they read
              parameters and constants, the same in every chunk), one span
              loop `for i = 1, #s` at function level, and after it nothing
              but `return acc` of an exact reduction (or nothing at all)
    lengths   a span's length is read only as that loop's bound and in
              asserts comparing two span lengths (every span argument has
              the same chunking, so such a comparison has one answer in
              every chunk and in the whole call); a local set from a
              length, never assigned, counts as the length
    counter   the loop's counter indexes spans and is never a value: in a
              chunk it counts from 1 again; every load and store is at it
    exits     no break or return leaves the span loop: it would stop the
              one call there, while the other chunks run regardless
    carried   no value carries from one iteration to the next but exact
              reductions (scalar_ir/varying.py), as on the device
    result    `return acc` of a reduction by op: each chunk returns the
              value before the loop combined with its partial result, so
              that value must be op's identity, or anything for an op with
              op(x, x) == x (band, bor, min, max), which absorbs the copies;
              the chunks' results combine with `combining_op(op)`

`chunk_refusal(fn)` says why a function is refused (a `Refusal`: the place
and one sentence), or None, and `render_chunk_report` says it in `nupp emit
--report`; `result_op(fn)` is
the op that combines an admitted function's chunk results (None: it returns
nothing).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from nupp.emit_spirv.admit import one_span_loop_refusal, split_kernel
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import COMPARISONS, OPS, combining_op
from nupp.scalar_ir.varying import carried_refusal, reductions_of, span_loops
from nupp.scalar_ir.walk import breaks_leaving, own_exprs, statements, subexprs

IDEMPOTENT = ("band", "bor", "min", "max")  # op(x, x) == x: extra copies of a start value change nothing


class Refusal(NamedTuple):
    loc: ir.Loc  # the construct refused
    reason: str


def chunk_refusal(fn: ir.Function) -> Optional[Refusal]:
    """Why nupp.dask cannot run `fn` chunk by chunk, or None."""
    problem = _shape_refusal(fn)
    if problem is not None:
        return problem
    loop = span_loops(fn)[0]
    return (_bounds_refusal(fn, loop) or _length_refusal(fn, loop) or _index_refusal(fn, loop)
            or _exit_refusal(fn, loop) or _carried_refusal(loop) or _result_refusal(fn, loop))


def render_chunk_report(module: ir.Module, path: str) -> str:
    """One line per @aot function for `nupp emit --report`: whether nupp.dask.map
    splits it into chunks, and if not, why."""
    return "".join(f"{path}: {fn.name}: nupp.dask.map splits it into chunks\n" if refusal is None else
                   f"{path}: {fn.name}: nupp.dask.map cannot split it into chunks: {refusal.reason}\n"
                   for fn, refusal in ((fn, chunk_refusal(fn)) for fn in module.functions))


def result_op(fn: ir.Function) -> Optional[str]:
    """The op that combines an admitted function's chunk results, None if it returns nothing."""
    if fn.result is None:
        return None
    _, loop, (ret,) = split_kernel(fn)
    return combining_op(reductions_of(loop)[ret.value.name])


def _shape_refusal(fn: ir.Function) -> Optional[Refusal]:
    shape = one_span_loop_refusal(fn, "a chunk")
    return None if shape is None else Refusal(*shape)


def _bounds_refusal(fn: ir.Function, loop: ir.For) -> Optional[Refusal]:
    lengths = _length_locals(fn)
    if loop.step != 1 or loop.start != ir.Const(1, loop.start.width) or not _is_length(loop.stop, lengths):
        return Refusal(loop.loc, f"the span loop at {loop.loc} is not `for {loop.var} = 1, #s` (step 1 over a "
                       "whole span): a chunk runs the loop over its own elements")
    return None


def _length_refusal(fn: ir.Function, loop: ir.For) -> Optional[Refusal]:
    lengths = _length_locals(fn)
    for s in statements(fn.body):
        if s is loop or (isinstance(s, ir.Let) and s.name in lengths) or (
                isinstance(s, ir.Assert) and _compares_lengths(s.cond, lengths)):
            continue
        for e in own_exprs(s):
            read = next((x for x in subexprs(e) if _is_length(x, lengths)), None)
            if read is not None:
                what = f"%{read.span}'s length" if isinstance(read, ir.Len) else f"%{read.name}, a span's length,"
                return Refusal(s.loc, f"{what} is read at {s.loc}, not as the span loop's bound or in an assert "
                               "comparing span lengths: each chunk's call sees its own chunk's length")
    return None


def _index_refusal(fn: ir.Function, loop: ir.For) -> Optional[Refusal]:
    for s in statements(fn.body):
        if isinstance(s, ir.Store) and s.index != loop.var:
            return Refusal(s.loc, f"a store to %{s.span} at %{s.index}, not the span loop's counter, at {s.loc}")
        for e in own_exprs(s):
            for x in subexprs(e):
                if isinstance(x, ir.Load) and x.index != loop.var:
                    return Refusal(s.loc, f"a load of %{x.span} at %{x.index}, not the span loop's counter, "
                                   f"at {s.loc}")
                if isinstance(x, ir.Var) and x.name == loop.var:
                    return Refusal(s.loc, f"the span loop's counter %{loop.var} is read as a value at {s.loc}: "
                                   "in each chunk's call it counts from 1 again")
    return None


def _exit_refusal(fn: ir.Function, loop: ir.For) -> Optional[Refusal]:
    leaving = breaks_leaving(loop.body)
    if leaving:
        return Refusal(leaving[0].loc, f"a break at {leaving[0].loc} leaves the span loop: one call stops "
                       "there, while the chunks after it run regardless")
    returns = [s for s in statements(loop.body) if isinstance(s, ir.Return)]
    if returns:
        return Refusal(returns[0].loc, f"it returns at {returns[0].loc} from inside the span loop, which ends "
                       "the one call there")
    prologue, _, _ = split_kernel(fn)
    early = next((s for s in statements(prologue) if isinstance(s, ir.Return) and s.value is not None), None)
    if early is not None:
        return Refusal(early.loc, f"it returns a value at {early.loc}, before the span loop: every chunk "
                       "would return it")
    return None


def _carried_refusal(loop: ir.For) -> Optional[Refusal]:
    why = carried_refusal(loop, "each chunk's call starts it afresh")
    return None if why is None else Refusal(loop.loc, why)


def _result_refusal(fn: ir.Function, loop: ir.For) -> Optional[Refusal]:
    prologue, _, epilogue = split_kernel(fn)
    if fn.result is None:
        if epilogue:
            return Refusal(epilogue[0].loc, f"a statement follows the span loop at {epilogue[0].loc}: each "
                           "chunk's call would run it")
        return None
    reductions = reductions_of(loop)
    ret = epilogue[0] if len(epilogue) == 1 and isinstance(epilogue[0], ir.Return) else None
    if ret is None or not isinstance(ret.value, ir.Var) or ret.value.name not in reductions:
        return Refusal(epilogue[0].loc, f"what follows the span loop at {epilogue[0].loc} is not `return acc` "
                       "of an exact reduction in the loop: only such a result combines across chunks")
    acc = ret.value.name
    op = reductions[acc]
    if OPS[op].base in IDEMPOTENT:
        return None
    identity = ir.Const(OPS[op].identity, OPS[op].result)
    sets = [s for s in statements(prologue) if isinstance(s, (ir.Let, ir.Assign)) and s.name == acc]
    if len(sets) != 1 or sets[0].value != identity:
        where = sets[-1].loc if sets else loop.loc
        return Refusal(where, f"%{acc}, the result reduced by {op}, does not start at {identity.value}, the "
                       f"identity of {op}, before the span loop (at {where}): each chunk's result would count "
                       "its start value once")
    return None


def _length_locals(fn: ir.Function) -> set[str]:
    """Locals every `let` of which is a span's length and that are never assigned."""
    lets: dict[str, bool] = {}
    assigned = set()
    for s in statements(fn.body):
        if isinstance(s, ir.Let):
            lets[s.name] = lets.get(s.name, True) and isinstance(s.value, ir.Len)
        elif isinstance(s, ir.Assign):
            assigned.add(s.name)
    return {name for name, is_length in lets.items() if is_length} - assigned


def _is_length(e, lengths: set[str]) -> bool:
    return isinstance(e, ir.Len) or (isinstance(e, ir.Var) and e.name in lengths)


def _compares_lengths(e, lengths: set[str]) -> bool:
    """Whether `e` is comparisons of two span lengths, joined by and/or/not: one
    answer in every chunk when every span has the same chunking."""
    if not isinstance(e, ir.Op):
        return False
    base = OPS[e.op].base
    if base in COMPARISONS:
        return all(_is_length(a, lengths) for a in e.args)
    return base in ("and", "or", "not") and all(_compares_lengths(a, lengths) for a in e.args)
