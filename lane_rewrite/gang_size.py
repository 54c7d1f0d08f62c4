"""Gang sizing: the step after the lane rewrite that gives each Gang the shape a target runs.

    size_gangs(lane_module, 8)            -> the same lane IR, every Gang of size 8
    shape_gangs(lane_module, shape_of)    -> each Gang shaped by shape_of(function, gang),
                                             a GangShape (size, vector_bits)

The rewrite decides which loops run in gangs without knowing G (the
decisions and masks are the same at every size); a target picks each loop's
shape (targets/gang_choice.py: a cost model per feature tier, or the size a
user pins) and emitters read it from each Gang.  Sizing is cheap, so lane IR
is made once per module and shaped once per target.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.lanes import GANG_SIZES, VECTOR_BITS


@dataclass(frozen=True)
class GangShape:
    """How one loop runs in gangs: `size` iterations per gang, its varying
    values in vectors of at most `vector_bits` bits (None: the target's widest
    register), several per gang where the gang needs more."""

    size: int
    vector_bits: Optional[int] = None

    def __post_init__(self):
        if self.size not in GANG_SIZES:
            raise ValueError(f"gang must be one of {', '.join(map(str, GANG_SIZES))}, not {self.size}")
        if self.vector_bits is not None and self.vector_bits not in VECTOR_BITS:
            raise ValueError(f"vector width must be one of {', '.join(map(str, VECTOR_BITS))}, "
                             f"not {self.vector_bits}")


# What a target says for one loop: its shape.
ShapeOf = Callable[[ir.Function, ir.Gang], GangShape]


def size_gangs(module: ir.Module, gang: int) -> ir.Module:
    """`module` with every Gang of size `gang` (one of GANG_SIZES), in the target's widest registers."""
    shape = GangShape(gang)
    return shape_gangs(module, lambda fn, g: shape)


def shape_gangs(module: ir.Module, shape_of: ShapeOf) -> ir.Module:
    """`module` with each Gang shaped as `shape_of` says."""
    return replace(module, functions=tuple(replace(fn, body=_shaped(fn, fn.body, shape_of))
                                           for fn in module.functions))


def _shaped(fn: ir.Function, body: tuple, shape_of: ShapeOf) -> tuple:
    out = []
    for s in body:
        if isinstance(s, ir.Gang):
            shape = shape_of(fn, s)
            s = replace(s, size=shape.size, vector_bits=shape.vector_bits)
        elif isinstance(s, ir.If):
            s = replace(s, then=_shaped(fn, s.then, shape_of), orelse=_shaped(fn, s.orelse, shape_of))
        elif isinstance(s, (ir.For, ir.While)):
            s = replace(s, body=_shaped(fn, s.body, shape_of))
        out.append(s)
    return tuple(out)
