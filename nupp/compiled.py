"""What the compiler hands the host for one module: its Lua and the library its @aot functions run from.

Plain data, importing nothing of the compiler, so that a start that finds its
modules compiled already (runtime/module_cache.py) loads them without
importing the compiler.  The pipeline (nupp/pipeline.py) makes them; the Lua
writer binds a NativeModule (emit_lua/to_lua.py); the host runs a Compiled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class NativeModule:
    """A module's compiled library, for `--aot on`: where it is, its prototypes,
    its error texts by status, and each @aot function's symbol and result type."""

    library: str
    cdef: str
    errors: tuple[str, ...]
    functions: dict  # Nupp name -> (C symbol, result cdef type or None)
    mode: str = "scalar"  # how the library was built: "scalar" or "lane"
    # the functions a device runs instead (spirv mode): Nupp name -> (the
    # execution's name, `spirv-lavapipe`, and the C symbol of the library's
    # function, which runs a call the device cannot take); their symbols in
    # `functions` name the host's device kernels (runtime/host.py)
    devices: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TierCheck:
    """How the tier of a lane build was chosen: the dispatcher asked (a
    library, its prototype, its symbol) and its answer, an index into
    targets/tiers.py's TIERS.  The same answer chooses the same tier."""

    library: str
    cdef: str
    symbol: str
    answer: int


@dataclass(frozen=True)
class Compiled:
    """A module compiled for the host: its Lua, the library its @aot functions
    run from, and the feature tier of the build bound from it (lane mode)."""

    lua: str
    native: Optional[NativeModule]
    tier: Optional[str] = None
    device: Optional["DeviceBinding"] = None  # spirv mode: the kernels its device symbols name (pipeline.py)
    tier_check: Optional[TierCheck] = None  # lane mode: how `tier` was chosen
