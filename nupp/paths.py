"""Where nupp keeps files between runs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """`NUPP_CACHE_DIR`, else `$XDG_CACHE_HOME/nupp`, else `~/.cache/nupp`."""
    configured = os.environ.get("NUPP_CACHE_DIR")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "nupp"
