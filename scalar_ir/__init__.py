"""Scalar IR, the bottom layer every stage shares: typed nodes with explicit widths,
the op table with every fact about each op, widths and conversions, the text
form (printer and parser), walkers, the transform base, constant folding, and
the lane facts (`varying`: which locals vary across a gang; `lanes`: which
loops may run in gangs and under which masks) that the rewrite applies and the
verifier checks."""
