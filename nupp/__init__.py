"""nupp: a compiler for Nupp, a typed Lua dialect hosted on LuaJIT.

The package face: the version and the public Python API.  The pipeline
stages live in sibling subpackages (``nupp.frontend``, ``nupp.scalar_ir``,
...), one per directory at the repository's top level.

Errors a caller of the API may catch: ``nupp.NuppError`` (the program is
wrong: diagnostics), ``nupp.NuppRuntimeError`` (a call raised: a refused
argument, a failed assert), ``nupp.NuppEnvironmentError`` (no usable cache
folder or C compiler; the message names the fix).
"""

from nupp.version import __version__  # noqa: F401
from nupp.paths import NuppEnvironmentError  # noqa: E402  (light: the API's heavy imports wait for load)


def load(path, mode: str = "lane", cc: str = "gcc", gang=None, tier=None, spirv_runner: str = "vulkan",
         threads=None):
    """Load a .nupp module and call its @aot functions from Python with NumPy arrays
    (see nupp.runtime.api)."""
    from nupp.runtime.api import load as _load
    return _load(path, mode, cc, gang, tier, spirv_runner, threads)


def __getattr__(name: str):
    if name == "NuppRuntimeError":
        from nupp.runtime.api import NuppRuntimeError
        return NuppRuntimeError
    if name == "NuppError":
        from nupp.errors import NuppError
        return NuppError
    raise AttributeError(f"module 'nupp' has no attribute '{name}'")
