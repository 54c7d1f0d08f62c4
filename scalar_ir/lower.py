"""Lowering: Nupp source to verified scalar IR.

The pipeline's front half, in order: parse, validate ordinary Nupp and check
the `@aot` functions (one pass reporting every diagnostic of the file; the
checker builds their IR, frontend/checker.py), verify.
"""

from __future__ import annotations

from nupp.frontend.checker import check_module
from nupp.frontend.diagnostics import Source
from nupp.frontend.parser import parse
from nupp.scalar_ir import nodes as ir


def lower(source: Source) -> ir.Module:
    """The scalar IR of a module's @aot functions; NuppError if the source is refused."""
    chunk = parse(source)
    module = check_module(source, chunk)  # validates too
    _verify(module, "lower")
    return module


def lower_source(text: str, path: str = "<string>") -> ir.Module:
    return lower(Source(path, text))


def _verify(module: ir.Module, stage: str) -> None:
    from nupp.verifier import check  # the verifier runs after every pass
    check(module, stage)
