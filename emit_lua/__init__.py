"""The Lua backend: a module's syntax tree written as the Lua 5.1 that LuaJIT runs
(`to_lua`), its `@aot` functions' verified IR written as width-directed Lua
(`aot_to_lua`): the interpreter execution, and the host of native calls."""
