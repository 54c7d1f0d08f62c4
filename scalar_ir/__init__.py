"""Scalar IR: typed nodes with explicit widths, opcode table, text form, lowering, folding (issue: checker/IR)."""
