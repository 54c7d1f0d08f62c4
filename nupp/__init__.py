"""nupp: a compiler for Nupp, a typed Lua dialect hosted on LuaJIT.

The package face: the version and the public Python API.  The pipeline
stages live in sibling subpackages (``nupp.frontend``, ``nupp.scalar_ir``,
...), one per directory at the repository's top level.
"""

__version__ = "0.1.0"


def load(path, mode: str = "lane", cc: str = "gcc", gang=None, tier=None):
    """Load a .nupp module and call its @aot functions from Python with NumPy arrays
    (see nupp.runtime.api)."""
    from nupp.runtime.api import load as _load
    return _load(path, mode, cc, gang, tier)
