"""The compiler's pipeline, every stage in order, in one place.

    source --lower--> scalar IR --fold--> scalar IR
            (parse, validate, check; verified)   (verified)

Each stage is a function from IR to IR and the verifier runs after each
(a verifier failure is a compiler bug and says which rule broke where).
Later stages (lane rewrite, C and SPIR-V emission) join this list.
`nupp emit --ir --after STAGE` shows the IR after any of them.
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
STAGES = ("lower",) + tuple(name for name, _ in PASSES)


def compile_module(source: Source, after: str | None = None) -> ir.Module:
    """Run the pipeline on a module, stopping after stage `after` (default: all)."""
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
    return module
