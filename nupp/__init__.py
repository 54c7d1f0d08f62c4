"""nupp: a compiler for Nupp, a typed Lua dialect hosted on LuaJIT.

The package face: the version and the public Python API.  The pipeline
stages live in sibling subpackages (``nupp.frontend``, ``nupp.scalar_ir``,
...), one per directory at the repository's top level.
"""

__version__ = "0.1.0"
