"""The backend interface: verified IR in, an artifact out.

A backend turns the @aot functions of a module into something a target
builds or runs: C text today (emit_c/), SPIR-V next.  It names the IR it
takes ("scalar": the folded scalar IR; "lanes": lane IR whose gangs are
sized) and emits from it alone: it runs no pass and compiles nothing (the
pipeline runs the passes, nupp/pipeline.py; a target compiles, targets/).
A target names its backend by `name`; the registry is targets/backends.py,
so a new backend is a new package plus one entry there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from nupp.scalar_ir import nodes as ir

TAKES = ("scalar", "lanes")


@dataclass(frozen=True)
class Backend:
    """An emitter: `emit(module, path, symbol_prefix)` -> its artifact (for C: a CModule)."""

    name: str  # how a target names it
    takes: str  # one of TAKES
    emit: Callable[[ir.Module, str, str], Any]
    describe: str = ""  # one line for listings
    # why it cannot emit a function, or None; a backend that covers every
    # verified function (the C backends) leaves it None
    refuses: Optional[Callable[[ir.Function], Optional[str]]] = None

    def refusal(self, fn: ir.Function) -> Optional[str]:
        """Why this backend cannot emit `fn` (for `nupp emit --report`), or None."""
        return self.refuses(fn) if self.refuses is not None else None

    def __post_init__(self):
        if self.takes not in TAKES:
            raise ValueError(f"backend {self.name} takes '{self.takes}', not one of {TAKES}")
