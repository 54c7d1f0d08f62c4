"""Lane rewrite: counted span loops become SIMD gangs with masks and tails (issue: lane rewrite)."""
