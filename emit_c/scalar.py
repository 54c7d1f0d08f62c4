"""Scalar C: a verified scalar IR module as one C11 translation unit.

    emit_module(module, "kernels.nupp") -> CModule(source, functions, cdef, errors)

Each `@aot` function becomes a `static` implementation `nuppi_NAME` (what
calls inside the module use) and an exported `int32_t nupp_NAME(...)` that
calls it; both return 0 or a status k > 0 meaning `errors[k - 1]`.  The ABI
is documented in `emit_c/__init__.py`.

Statements map one to one onto C statements and keep the IR's blocks, so
the C reads like the source (LANGUAGE.md's seed listing):

    let %wide: f64 = load.f64 %inputs[%i].value     double v_wide = ((double)p_inputs[v_i - 1].f_value);
    let %doubled: f64 = add.f64(%wide, %wide)        double v_doubled = (v_wide + v_wide);

Expressions are rendered by the opcode table (`helpers.C_OPS`) over their
rendered operands, which are always free of side effects.  What can fail —
an integer `//` or `%` whose divisor is not a non-zero literal, a call of
another function — is hoisted before its statement, in Lua's left-to-right
evaluation order, and checked there:

    let %q: i32 = idiv.i32(%a, %b)                   int32_t t1 = p_b;
                                                     if (t1 == 0) return 1;
                                                     int32_t v_q = nu_idiv_i32(p_a, t1);

so a raising op never lets a later effect of its statement happen.  So is,
into a `const` temporary, every subexpression HOLD_HEIGHT IR levels high:
Clang refuses C nested 256 brackets deep, and a chain of 5000 `+` is legal
Nupp.  A right operand of `and`/`or` that writes such lines (`writes_lines`)
is evaluated under an `if` on the left one, keeping the short circuit; a
`while` whose condition writes them becomes `for (;;) { ...; if (!cond)
break; ... }`, and an `elseif` whose condition does a nested `if` in the
`else`.

Names: every C identifier is derived from a fixed prefix and the IR name
with each character outside [A-Za-z0-9_] replaced by `_` (and a `_2`, `_3`
suffix should two names meet), so no source identifier can break or inject
C, collide with a C keyword, a macro of the headers, a helper or another
name.  Locals are `v_x`, parameters `p_x`, span lengths `n_x`, temporaries
`tN`, loop counters `cN`; struct types `nupps_T` with fields `f_x`;
implementations `nuppi_f`, exports `nupp_f`; helpers `nu_...`.  Text that
reaches a comment (the error table) is escaped.

The rules of statements and expressions are emit_c/function_c.py's
(`FunctionEmitter`, shared with lane C); the unit around them, its names
and its sections, emit_c/unit.py's.  This module is the scalar variant.
"""

from __future__ import annotations

from nupp.emit_c.function_c import FunctionEmitter
from nupp.emit_c.unit import CFunction, CModule, ModuleContext, TranslationUnit, comment_text, emit_unit
from nupp.scalar_ir import nodes as ir

__all__ = ["CFunction", "CModule", "comment_text", "emit_module"]


def emit_module(module: ir.Module, path: str, symbol_prefix: str = "nupp_") -> CModule:
    """The scalar C of a module; `path` is the source's display path, the
    prefix of every error text (`kernels.nupp:18: length mismatch`).  Exported
    symbols are `symbol_prefix + name`: LuaJIT's ffi.cdef has one namespace
    per state, so a host loading several modules gives each its own prefix.
    `module` is verified (the pipeline's verifier ran after its last stage)."""
    return emit_unit(module, path, symbol_prefix, _ScalarC())


class _ScalarC:
    """The scalar variant of a C unit (emit_c/unit.py `Variant`): every
    statement by the shared function emitter, no sections of its own."""

    kind = "scalar C"

    def function_emitter(self, mod: ModuleContext, fn: ir.Function) -> FunctionEmitter:
        return FunctionEmitter(mod, fn)

    def add_sections(self, unit: TranslationUnit) -> None:
        pass
