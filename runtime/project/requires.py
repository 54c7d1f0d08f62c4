"""Which modules a module requires: what a build reaches from main.

A build holds every module reached from main through `require("a.b")` or
`require "a.b"` with a literal name, found as `nupp run` finds it
(runtime/host.py): a/b.nupp, then a/b.lua, in main's folder.  A name
computed at run time is not seen; a built program's `require` of it finds
only what LuaJIT's own path holds.
"""

from __future__ import annotations

import os
from dataclasses import is_dataclass
from pathlib import Path

from nupp.frontend import ast
from nupp.frontend.literals import StringLiteralError, decode_string
from nupp.runtime.host import MODULE_EXTENSIONS, module_name


def literal_requires(chunk: ast.Chunk) -> tuple[str, ...]:
    """The names of the module's `require` calls with one literal string, sorted."""
    names, stack = set(), [chunk]
    while stack:  # no recursion: a legal program nests deeper than Python's stack
        node = stack.pop()
        if isinstance(node, tuple):  # a node's tuple field (If's clauses hold pairs)
            stack.extend(node)
        elif is_dataclass(node):
            name = _required_name(node)
            if name is not None:
                names.add(name)
            stack.extend(getattr(node, field) for field in ast.field_names(type(node)))
    return tuple(sorted(names))


def _required_name(node) -> str | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "require"
            and len(node.args) == 1 and isinstance(node.args[0], ast.String)):
        return None
    try:
        name, problem = module_name(decode_string(node.args[0].raw))
    except StringLiteralError:
        return None
    return name if problem is None else None


def module_file(folder: Path, name: str) -> Path | None:
    """The file `require(name)` loads from `folder` (None: no such file there)."""
    relative = name.replace(".", os.sep)
    for ext in MODULE_EXTENSIONS:
        candidate = folder / (relative + ext)
        if candidate.is_file():
            return candidate
    return None
