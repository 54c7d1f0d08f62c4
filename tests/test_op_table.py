"""The op table's facts and every backend's tables checked against them.

scalar_ir/ops.py says what each op is (identity, vector class, the library
functions that call it); each backend renders every op and refuses at import
when it misses one.  These tests hold the facts against independent
witnesses (the constant folder's arithmetic, the Lua runtime) and show that
an op added to the table alone stops the backends from importing.
"""

from __future__ import annotations

import math
import struct
import subprocess
import sys

import numpy as np
import pytest

from nupp.emit_c import lane_vectors
from nupp.emit_c.helpers import C_OPS
from nupp.emit_c.lane_helpers import LANE_FORMS
from nupp.emit_lua.aot_to_lua import NATIVE as LUA_NATIVE, runtime_ops
from nupp.frontend.checker import MATH_CALLS
from nupp.runtime.host import Host
from nupp.scalar_ir import numerics
from nupp.scalar_ir.fold import evaluate
from nupp.scalar_ir.ops import CAST, OPERATOR, OPS, REDUCTIONS, RULE, OpTableMismatch, check_rendered
from nupp.scalar_ir.widths import Width

from . import oracles as o
from .test_interp_vs_fold import edges


def _same(a, b) -> bool:
    """Equal values, a float's sign of zero included."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (a != a and b != b)
    return a == b


# ---- facts ------------------------------------------------------------------------------

def test_exact_reductions_have_an_identity_the_folder_agrees_with():
    with_identity = [op for op, info in OPS.items() if info.identity is not None]
    assert with_identity == [op for op, info in OPS.items()
                             if info.exact and info.base in REDUCTIONS and len(info.operands) == 2]
    assert {"add.i32", "band.u64", "min.f64", "max.f32", "bxor.i64"} <= set(with_identity)
    for op in with_identity:
        info = OPS[op]
        for y in edges(info.result):
            if isinstance(y, float) and y != y and info.base in ("min", "max"):
                continue  # a NaN partial result stays NaN either way
            assert _same(evaluate(op, (y, info.identity)), y), (op, y)
            if info.base != "sub":
                assert _same(evaluate(op, (info.identity, y)), y), (op, y)


def test_inexact_reductions_have_no_identity():
    assert all(OPS[op].identity is None for op in ("add.f64", "mul.f64", "add.f32", "sub.f64"))


def test_vector_classes():
    assert {info.vector for info in OPS.values()} == {OPERATOR, CAST, RULE}
    casts = {op for op, info in OPS.items() if info.vector == CAST}
    assert casts == {op for op in OPS if op.split(".")[0] in ("promote", "round", "narrow", "reinterpret",
                                                              "widen", "trunc")}
    assert all(len(OPS[op].operands) == 1 for op in casts)


def test_library_calls_are_unique_and_the_checkers_surface():
    names = [name for info in OPS.values() for name in info.calls]
    assert len(names) == len(set(names))
    assert set(MATH_CALLS) == {tuple(name.split(".")) for name in names}
    assert MATH_CALLS[("nupp", "math", "u32", "toI32")] == ("reinterpret.u32.i32", (Width.U32,))


# ---- numerics -----------------------------------------------------------------------------

def test_exp_constants_are_the_specs():
    # LANGUAGE.md section 5: clamp to [-104, 88], t = x * 0.0078125, 1/k! rounded, 7 squarings
    assert (numerics.EXP_LOW, numerics.EXP_HIGH, numerics.EXP_SCALE) == (-104.0, 88.0, 0.0078125)
    assert numerics.EXP_SQUARINGS == 7 and numerics.EXP_DEGREE == 12
    assert [o.bits_of_f32(np.float32(c)) for c in numerics.EXP_COEFFICIENTS] == o.EXP_COEFFICIENT_BITS


@pytest.mark.parametrize("x", [0.1, -0.1, 1e-46, 3.4028235677973366e38, 3.4028235677973367e38, 1e39, -1e39,
                               1.0 + 2.0 ** -24, 1.0 + 3 * 2.0 ** -24, math.inf, -0.0, 2.0 ** -149 * 1.5])
def test_round_f32_is_the_oracles(x):
    assert o.bits_of_f32(np.float32(numerics.round_f32(x))) == o.round_double_to_f32_bits(x)


# ---- the Lua runtime ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def host():
    return Host()


def test_ops_lua_has_exactly_the_ops_the_lua_writer_calls(host):
    keys = host.lua.eval("function(t) local ks = {} for k in pairs(t) do ks[#ks + 1] = k end return ks end")
    in_ops_lua = set(keys(host.internals.ops).values())
    assert in_ops_lua == set(runtime_ops())
    assert set(runtime_ops()) == set(OPS) - set(LUA_NATIVE)


def test_every_library_call_is_a_function_of_the_lua_runtime(host):
    kind = host.lua.eval("function(path) local v = _G for part in path:gmatch('[^.]+') do v = v[part] end "
                         "return type(v) end")
    missing = [name for info in OPS.values() for name in info.calls if kind(name) != "function"]
    assert missing == []


def test_lua_exp_constants_are_numerics_bit_for_bit(host):
    lua_exp = host.internals.math.exp_constants
    assert (lua_exp.low, lua_exp.high, lua_exp.scale) == (numerics.EXP_LOW, numerics.EXP_HIGH, numerics.EXP_SCALE)
    lua_coefficients = [lua_exp.coefficients[k] for k in range(numerics.EXP_DEGREE + 1)]
    assert [struct.pack("<d", c) for c in lua_coefficients] == [struct.pack("<d", c)
                                                               for c in numerics.EXP_COEFFICIENTS]


# ---- lane C -------------------------------------------------------------------------------

def test_lane_c_runs_operators_and_casts_natively():
    operators = {op for op, info in OPS.items() if info.vector == OPERATOR}
    assert set(lane_vectors.NATIVE) | set(lane_vectors.COMPARE) == operators
    assert not set(lane_vectors.NATIVE) & set(lane_vectors.COMPARE)
    assert lane_vectors.CONVERT == {op for op, info in OPS.items() if info.vector == CAST}
    assert all(OPS[op].vector == RULE for op in LANE_FORMS)
    assert lane_vectors.NATIVE["add.i32"] == ("+", Width.U32) and lane_vectors.NATIVE["band.i32"] == ("&", None)
    assert lane_vectors.NATIVE["ne.bool"] == ("^", None) and lane_vectors.COMPARE["ne.i64"] == "!="


# ---- completeness: an op in the table alone stops the backends ----------------------------

def test_check_rendered_names_what_is_missing_and_unexpected():
    table = dict.fromkeys(OPS)
    del table["add.i32"]
    table["throwaway.f64"] = None
    with pytest.raises(OpTableMismatch, match=r"no entry for add\.i32; entries for throwaway\.f64"):
        check_rendered("T", table)
    check_rendered("T", ["add.i32"], partial=True)
    with pytest.raises(OpTableMismatch, match=r"throwaway\.f64"):
        check_rendered("T", ["throwaway.f64"], partial=True)


_THROWAWAY = "ops._op('throwaway.f64', (ops.F64,), ops.F64, False, 'throwaway', vector=ops.{vector})\n"


def _fails_naming_the_op(code: str) -> None:
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode != 0
    assert "OpTableMismatch" in run.stderr and "throwaway.f64" in run.stderr, run.stderr


def test_an_op_only_in_the_table_fails_the_c_backends_import():
    _fails_naming_the_op("from nupp.scalar_ir import ops\n" + _THROWAWAY.format(vector="RULE")
                         + "import nupp.emit_c\n")


def test_an_operator_without_a_vector_operator_fails_lane_cs_import():
    _fails_naming_the_op("import importlib\n"
                         "from nupp.scalar_ir import ops\n"
                         "from nupp.emit_c import helpers, lane_vectors\n"
                         + _THROWAWAY.format(vector="OPERATOR")
                         + "helpers.C_OPS['throwaway.f64'] = helpers._r('({0} + {0})')\n"
                         "importlib.reload(lane_vectors)\n")
