"""The runtime's internals for white-box tests of the Lua runtime.

A program never sees them (runtime/host.py keeps them in the Lua registry and
hands them to translated chunks only); tests of mem.lua, boundary.lua and
ops.lua reach them as the global `__nupp` of a state of their own."""

from __future__ import annotations

from nupp.runtime.host import new_lua_runtime, runtime_internals


def lua_with_internals():
    """A fresh runtime state whose global `__nupp` is the runtime's internals."""
    lua = new_lua_runtime()
    lua.globals()["__nupp"] = runtime_internals(lua)
    return lua
