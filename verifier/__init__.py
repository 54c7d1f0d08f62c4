"""The IR verifier, run after lowering and after every rewrite (issue: checker/IR/verifier)."""
