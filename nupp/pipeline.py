"""The compiler's pipeline, every stage in order, in one place.

    source --lower--> scalar IR --fold--> scalar IR --lanes--> lane IR
            (parse, validate, check; verified)   (verified)          (verified)

Each stage is a function from IR to IR and the verifier runs after each
(a verifier failure is a compiler bug and says which rule broke where).
The scalar stages end at `fold`: scalar C and the interpreter start there.
`lanes` (lane_rewrite/rewrite.py) runs only for lane C (emit_c/lane.py runs
it itself, at the gang it emits) or when asked for by name.
`nupp emit --ir --after STAGE` shows the IR after any of them (`lanes`: at
gang 8).
"""

from __future__ import annotations

from typing import Callable

from nupp.frontend.diagnostics import Source
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.fold import fold_module
from nupp.scalar_ir.lower import lower
from nupp.verifier import check as verify

# The IR-to-IR passes after lowering, in order.
PASSES: tuple[tuple[str, Callable[[ir.Module], ir.Module]], ...] = (
    ("fold", fold_module),
)
LANES = "lanes"
STAGES = ("lower",) + tuple(name for name, _ in PASSES) + (LANES,)


def compile_module(source: Source, after: str | None = None, gang: int = 8) -> ir.Module:
    """Run the pipeline on a module, stopping after stage `after` (default: the
    last scalar stage; "lanes": the lane IR at `gang`)."""
    if after is not None and after not in STAGES:
        raise ValueError(f"unknown stage '{after}' (stages: {', '.join(STAGES)})")
    module = lower(source)  # verified inside
    if after == "lower":
        return module
    for name, run in PASSES:
        module = run(module)
        verify(module, name)
        if after == name:
            break
    if after == LANES:
        from nupp.lane_rewrite.rewrite import rewrite_lanes
        module = rewrite_lanes(module, gang)  # verified inside
    return module
