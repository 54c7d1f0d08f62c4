"""Which span loops run on threads, and why the others do not.

Lane C (emit_c/lane.py) can split the whole gangs of a `Gang` into
contiguous chunks, one per thread (`nupp run --threads N`, `nupp.load(...,
threads=N)`); the tail still runs after them on the calling thread.  The
bits must not depend on the split, so a loop runs on threads only when its
iterations are independent and nothing it does depends on their order:

    lanes     it is lane-rewritten (a Gang): the lane rewrite's memory rules
              already hold (every store, and every load of a written span,
              at the counter; written spans disjoint from the others), so
              two chunks never touch one element
    exits     no break leaves it and nothing in it can raise (an integer //
              or % by what may be zero, a call): the scalar loop stops at the
              first such iteration, which a chunk running ahead of it would
              already have passed
    carried   no value carries from one iteration to the next but exact
              reductions (scalar_ir/varying.py `carried_refusal`, the rule a
              device and nupp.dask's chunks share): each chunk accumulates
              its own partial result from the op's identity, and the partial
              results combine in chunk order after the threads (exact ops:
              any order gives the same bits)

`thread_refusal(loop)` answers for a Gang of lane IR (what lane C emits) or
for the scalar `For` the rewrite turned into it (what `nupp emit --report`
reads): the statements are the same.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.varying import carried_refusal
from nupp.scalar_ir.walk import breaks_leaving, fails_itself, own_exprs, statements, subexprs


class Refusal(NamedTuple):
    loc: ir.Loc  # the construct refused
    reason: str


def thread_refusal(loop) -> Optional[Refusal]:
    """Why a lane-rewritten span loop (Gang, or the For it came from) cannot run
    split between threads, or None."""
    leaving = breaks_leaving(loop.body)
    if leaving:
        return Refusal(leaving[0].loc, f"a break at {leaving[0].loc} leaves the span loop: the loop stops at "
                       "its first breaking iteration, which a thread running a later chunk cannot know")
    raising = _first_raising(loop.body)
    if raising is not None:
        what = f"a call of @{raising.func}" if isinstance(raising, ir.Call) else raising.op
        return Refusal(raising.loc, f"{what} at {raising.loc} can raise: the loop stops at its first failing "
                       "iteration, which a thread running a later chunk cannot know")
    carried = carried_refusal(loop, "each thread runs a chunk of the iterations")
    return None if carried is None else Refusal(loop.loc, carried)


def _first_raising(body):
    """The first node in `body` that can fail itself, or None."""
    return next((x for s in statements(body) for e in own_exprs(s) for x in subexprs(e) if fails_itself(x)),
                None)
