"""The IR verifier, run by the pipeline after lowering and after every pass (nupp/pipeline.py).

`verify_module(module)` returns every broken invariant as a `VerifyError`
(function, loc, rule, message); `check(module, stage)` raises an
InternalError, a compiler bug naming the stage, with the errors printed
inline under their IR lines.  verify.py's docstring lists every rule.
"""

from nupp.verifier.verify import VerifyError, check, render_inline, verify_function, verify_module

__all__ = ["VerifyError", "check", "render_inline", "verify_function", "verify_module"]
