-- An uncaught error at level 2 of the main chunk: its caller is C, no position.
error("blame the caller", 2)
