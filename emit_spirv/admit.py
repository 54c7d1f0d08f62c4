"""Which @aot functions run on a device, and why the others do not.

The device runs one invocation per iteration of a function's span loop, all
at once, so a function is admitted when its iterations are independent and
its bits cannot depend on their order:

    shape       statements before the loop (every invocation runs them, the
                same for all), one counted span loop at function level with
                step 1 (the verifier proves its bounds: a constant up to a
                span's length), statements after it (a finish kernel of one
                invocation runs them, with the result: they cannot touch a
                span, which only a span loop indexes)
    calls       each callee is a SPIR-V function of the module (the subset
                passes no span to a call, so callees read numbers only)
    iterations  a local declared outside the loop is assigned in it only as
                an exact reduction (scalar_ir/varying.py): each invocation
                starts it at the op's identity and leaves its partial result,
                which the finish kernel combines into the value before the
                loop.  No other value carries from one iteration to the next;
                no call.  A break out of the span loop ends the loop after
                its iteration, as an error would without the error: the host
                keeps the elements (and partial results) up to the lowest
                breaking iteration
    memory      every store goes to element i of iteration i (so an error in
                iteration k leaves elements below k as the scalar loop does:
                the host copies back only those); a written span is read only
                at the counter and is known disjoint from every other span
                (each span is its own device buffer); an element of a written
                span fills whole 32-bit words (the device writes words, and two
                invocations must never share one)

`device_refusal` says why a function is refused (`nupp emit --report`), or
None; `one_span_loop_refusal` is the shape a chunked call (runtime/chunking.py)
shares with the device, scalar_ir/varying.py's `carried_refusal` the iteration rule both share
(and lane C's threads); `split_kernel` gives an admitted function's prologue, span loop and
epilogue, `kernel_reductions` the reductions the finish kernel combines.
"""

from __future__ import annotations

from typing import Optional

from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.lanes import written_not_disjoint
from nupp.scalar_ir.varying import carried_refusal, reductions_of, span_loops
from nupp.scalar_ir.walk import fails_itself, own_exprs, statements, subexprs
from nupp.scalar_ir.widths import struct_layout

WORD = 4


def split_kernel(fn: ir.Function) -> tuple[tuple, ir.For, tuple]:
    """An admitted function's statements before its span loop, the loop, and
    the statements after it that observe anything (a bare return does not)."""
    loop = span_loops(fn)[0]
    at = next(k for k, s in enumerate(fn.body) if s is loop)
    after = tuple(s for s in fn.body[at + 1:] if not (isinstance(s, ir.Return) and s.value is None))
    return fn.body[:at], loop, after


def kernel_reductions(fn: ir.Function) -> dict[str, str]:
    """The reductions the finish kernel combines (local -> exact op): none when
    nothing runs after the loop to read them."""
    _, loop, epilogue = split_kernel(fn)
    return reductions_of(loop) if epilogue else {}


def device_refusal(fn: ir.Function, module: ir.Module) -> Optional[str]:
    """Why the device cannot run `fn` (one sentence), or None."""
    return (_signature_refusal(fn) or _shape_refusal(fn)
            or _iteration_refusal(fn) or _memory_refusal(fn, module))


def _signature_refusal(fn: ir.Function) -> Optional[str]:
    if not fn.vectorize:
        return "it is marked @aot(vectorize = false)"
    return None


def calls_in(body) -> list[ir.Call]:
    return [x for s in statements(body) for e in own_exprs(s) for x in subexprs(e) if isinstance(x, ir.Call)]


def one_span_loop_refusal(fn: ir.Function, runner: str) -> Optional[tuple[ir.Loc, str]]:
    """Where and why `fn` is not one span loop at function level (`runner`, "the
    device" or "a chunk", is what runs one), or None."""
    spans = span_loops(fn)
    if not spans:
        return fn.loc, "it has no loop over spans"
    if len(spans) > 1:
        return (spans[1].loc, f"it has {len(spans)} loops over spans, at {', '.join(str(s.loc) for s in spans)} "
                              f"({runner} runs one)")
    if not any(s is spans[0] for s in fn.body):
        return (spans[0].loc, f"the loop over spans at {spans[0].loc} is inside another statement "
                              f"({runner} runs one at function level)")
    return None


def _shape_refusal(fn: ir.Function) -> Optional[str]:
    shape = one_span_loop_refusal(fn, "the device")
    if shape is not None:
        return shape[1]
    loop = span_loops(fn)[0]
    if loop.step != 1:
        return f"the span loop at {loop.loc} has step {loop.step} (the device runs step 1)"
    params = {p.name for p in fn.params} - {s.name for s in statements(fn.body) if isinstance(s, ir.Assign)}
    for bound in (loop.start, loop.stop):
        if not host_computable(bound, params):
            return (f"the span loop's bound at {loop.loc} reads more than parameters and span lengths "
                    "(the host counts the iterations before the device runs them)")
    return None


def host_computable(e, params) -> bool:
    """Whether the host can evaluate `e` from the arguments alone: constants,
    parameters never assigned (`params`), span lengths and ops that cannot raise."""
    return all(isinstance(x, (ir.Const, ir.Len)) or (isinstance(x, ir.Var) and x.name in params)
               or (isinstance(x, ir.Op) and not fails_itself(x)) for x in subexprs(e))


def _iteration_refusal(fn: ir.Function) -> Optional[str]:
    _, loop, _ = split_kernel(fn)
    return carried_refusal(loop, "each iteration runs in its own invocation")


def _memory_refusal(fn: ir.Function, module: ir.Module) -> Optional[str]:
    _, loop, _ = split_kernel(fn)
    inside = list(statements(loop.body))
    stores = [s for s in inside if isinstance(s, ir.Store)]
    stored = {s.span for s in stores}
    for s in stores:
        if s.index != loop.var:
            return f"a store to %{s.span} at %{s.index}, not the span loop's counter, at {s.loc}"
    loads = [(s, x) for s in inside for e in own_exprs(s) for x in subexprs(e) if isinstance(x, ir.Load)]
    for s, x in loads:
        if x.span in stored and x.index != loop.var:
            return f"a load of %{x.span}, which the loop writes, at %{x.index}, not the counter, at {s.loc}"
    pair = written_not_disjoint(fn, stored, stored | {x.span for _, x in loads})
    if pair is not None:
        return (f"%{pair[0]} is written and not known disjoint from %{pair[1]} (each span is its own "
                f"device buffer: mark %{pair[0]} exclusive)")
    params = {p.name: p.type for p in fn.params}
    for name in sorted(stored):
        size = struct_layout(module.struct(params[name].struct).fields).size
        if size % WORD:
            return (f"%{name} is written and its {params[name].struct} elements are {size} bytes: "
                    "the device writes 32-bit words, which neighbouring elements would share")
    return None

