"""The backend registry: every backend a target can name (nupp/backend.py).

Adding a backend is a new package exporting a `Backend` and one entry here;
the front end, the passes and the verifier do not change.
"""

from __future__ import annotations

from nupp.backend import Backend
from nupp.emit_c import LANE_C, SCALAR_C
from nupp.emit_spirv import SPIRV

BACKENDS: dict[str, Backend] = {b.name: b for b in (SCALAR_C, LANE_C, SPIRV)}


def backend_named(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"no backend named '{name}' (backends: {', '.join(BACKENDS)})") from None
