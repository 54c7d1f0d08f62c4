"""Gang sizing: the step after the lane rewrite that gives every Gang the size a target runs.

    size_gangs(lane_module, 8) -> the same lane IR, every Gang of size 8

The rewrite decides which loops run in gangs without knowing G (the
decisions and masks are the same at every size); a target picks G (a feature
tier's vector register, or a size the user pins) and emitters read it from
each Gang.  Sizing is cheap, so lane IR is made once per module and sized
once per gang.
"""

from __future__ import annotations

from dataclasses import replace

from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.lanes import GANG_SIZES


def size_gangs(module: ir.Module, gang: int) -> ir.Module:
    """`module` with every Gang of size `gang` (one of GANG_SIZES)."""
    if gang not in GANG_SIZES:
        raise ValueError(f"gang must be one of {', '.join(map(str, GANG_SIZES))}, not {gang}")
    return replace(module, functions=tuple(replace(fn, body=_sized(fn.body, gang)) for fn in module.functions))


def _sized(body: tuple, gang: int) -> tuple:
    out = []
    for s in body:
        if isinstance(s, ir.Gang):
            s = replace(s, size=gang)
        elif isinstance(s, ir.If):
            s = replace(s, then=_sized(s.then, gang), orelse=_sized(s.orelse, gang))
        elif isinstance(s, (ir.For, ir.While)):
            s = replace(s, body=_sized(s.body, gang))
        out.append(s)
    return tuple(out)
