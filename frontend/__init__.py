"""The front end: source bytes to a syntax tree (lexer, lark grammar, parser), the
checks of ordinary Nupp and of the AOT subset, and lowering of `@aot` functions
to scalar IR as the checker types them (`lower.lower`, run once per module by
the pipeline)."""
