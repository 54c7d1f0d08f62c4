"""One call of a device kernel (emit_spirv/kernel.py), as the host makes it.

The host hands the arguments over as Python values and each span as the
writable bytes of its elements.  Here the iterations are counted (the loop's
bounds are expressions of the arguments, evaluated by the IR's own rules,
scalar_ir/fold.evaluate), the buffers packed, the kernel dispatched, and the
written spans copied back: all of them when no invocation failed; when one
did, only the elements up to the lowest failing iteration's (each store of
iteration i goes to element i, so those hold exactly what the scalar loop
leaves, the failing iteration's own stores before its error included), and
none when the statements before the loop failed.  A break out of the loop
keeps the elements up to the breaking iteration's, as an error would.

A kernel with statements after its loop then runs its finish kernel on the
partial results of the iterations that counted (all, or up to the lowest
that broke), which writes the function's result.  The answer is the status
the C ABI returns: 0, or k for the error text `kernel.errors[k - 1]`; the
result, if any, goes into `result` (the bytes of the C result's type).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from nupp.emit_spirv.kernel import ARGUMENTS, BREAK, NO_ERROR, STATUS, DeviceKernel
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.fold import evaluate
from nupp.targets.device import Binding, Runner

MAX_GROUPS_PER_ROW = 65535  # Vulkan's guaranteed maxComputeWorkGroupCount[0]


@dataclass(frozen=True)
class SpanArgument:
    """A span argument: the bytes of its elements (written back in place) and its length."""

    memory: memoryview  # format "B", writable for a span the kernel writes
    length: int


def call_kernel(kernel: DeviceKernel, runner: Runner, arguments: dict,
                result: memoryview | None = None) -> int:
    """Run `kernel` on `arguments` (parameter name -> scalar value or SpanArgument); its status."""
    values = {name: (a.length if isinstance(a, SpanArgument) else a) for name, a in arguments.items()}
    start = bound(kernel.start, values)
    count = max(0, bound(kernel.stop, values) - start + 1)
    bindings = _header(kernel, start, count, values)
    for span in kernel.spans:
        bindings.append(Binding(span.binding, _padded(arguments[span.name].memory), span.writable))
    for partial in kernel.partials:
        bindings.append(Binding(partial.binding, bytes(4 * partial.words * max(count, 1)), writable=True))
    results = runner.run(kernel.spirv, bindings, dispatch_groups(max(count, 1), kernel.workgroup_size),
                         kernel.needs)
    status, rank = _first_stop(results[STATUS])
    # rank 0: the statements before the loop failed; rank g + 1: iteration g
    # (which stores to element start + g, 1-based) failed or broke
    kept_elements = None if rank is None else 0 if rank == 0 else start + rank - 1
    for span in kernel.spans:
        if span.writable:
            _copy_back(arguments[span.name].memory, results[span.binding], span.stride, kept_elements)
    if status or kernel.finish is None:
        return status
    return _finish(kernel, runner, values, count if rank is None else rank, results, result)


def _finish(kernel: DeviceKernel, runner: Runner, values: dict, counted: int, partials: dict,
            result: memoryview | None) -> int:
    """The finish kernel over the first `counted` partial results; its status."""
    bindings = _header(kernel, 0, counted, values)
    bindings += [Binding(p.binding, partials[p.binding], writable=False) for p in kernel.partials]
    if kernel.result is not None:
        bindings.append(Binding(kernel.result_binding, bytes(8), writable=True))
    results = runner.run(kernel.finish, bindings, (1, 1, 1), kernel.needs)
    status, _ = _first_stop(results[STATUS])
    if status == 0 and result is not None:
        result[:] = results[kernel.result_binding][:len(result)]
    return status


def _header(kernel: DeviceKernel, start: int, count: int, values: dict) -> list[Binding]:
    """The arguments and status buffers of a run over `count` iterations from `start`."""
    return [Binding(ARGUMENTS, kernel.argument_words(start, count, values), writable=False),
            Binding(STATUS, struct.pack("<I", NO_ERROR) * (1 + len(kernel.errors)), writable=True)]


def bound(e, values: dict) -> int:
    """A loop bound (constants, parameters, span lengths, ops that cannot raise) for these arguments."""
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Var):
        return values[e.name]
    if isinstance(e, ir.Len):
        return values[e.span]
    return evaluate(e.op, tuple(bound(a, values) for a in e.args))


def dispatch_groups(invocations: int, workgroup_size: int) -> tuple[int, int, int]:
    """Enough workgroups for `invocations`, in rows of at most MAX_GROUPS_PER_ROW
    (the kernel numbers invocations row by row)."""
    groups = -(-invocations // workgroup_size)
    rows = -(-groups // MAX_GROUPS_PER_ROW)
    return (min(groups, MAX_GROUPS_PER_ROW), rows, 1)


def _first_stop(status_words: bytes) -> tuple[int, int | None]:
    """(status, rank) of the lowest rank that failed (status > 0) or broke out
    of the loop (status 0), or (0, None) when every invocation ran to its end."""
    ranks = struct.unpack(f"<{len(status_words) // 4}I", status_words)
    rank = min(ranks)
    return (0, None) if rank == NO_ERROR else (ranks.index(rank) - BREAK, rank)


def _padded(memory: memoryview) -> bytes:
    data = bytes(memory)
    return data + b"\0" * (-len(data) % 4 or (4 if not data else 0))


def _copy_back(memory: memoryview, result: bytes, stride: int, elements: int | None) -> None:
    """The device's elements into the span: all, or the first `elements`."""
    size = len(memory) if elements is None else min(len(memory), elements * stride)
    memory[:size] = result[:size]
