"""The front end of one module: parse, validate and check, lowering the `@aot`
functions to scalar IR as the checker types them (frontend/checker.py).

    front = lower(source)   # FrontEnd(source, chunk, module)

One run gives both things later stages need: the syntax tree, which the Lua
writer (emit_lua/) prints, and the IR, which the pipeline verifies, folds and
hands to the backends.  The pipeline (nupp/pipeline.py) runs it once per
module; every diagnostic of the file comes out of this one call, as one
NuppError.
"""

from __future__ import annotations

from dataclasses import dataclass

from nupp.errors import Source
from nupp.frontend import ast
from nupp.frontend.checker import check_module
from nupp.frontend.parser import parse
from nupp.scalar_ir import nodes as ir


@dataclass(frozen=True)
class FrontEnd:
    """What the front end made of a module: its tree and its @aot functions' IR (not yet verified)."""

    source: Source
    chunk: ast.Chunk
    module: ir.Module


def lower(source: Source) -> FrontEnd:
    """Parse and check a module; NuppError with every diagnostic if the source is refused."""
    chunk = parse(source)
    return FrontEnd(source, chunk, check_module(source, chunk))  # validates too
