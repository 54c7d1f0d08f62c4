"""Runtime: the LuaJIT host (lupa), the runtime library, spans, the host boundary and the CLI."""
