"""Frontend: the lark grammar, parser, AST with source spans, diagnostics and the Lua translator."""
