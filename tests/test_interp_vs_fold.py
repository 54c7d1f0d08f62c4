"""Two witnesses, one opcode table: the interpreter and the constant folder agree.

For every op of scalar_ir/ops.py, a one-op IR function is written as Lua by
the interpreter's own renderer (emit_lua/aot_to_lua.py), run in LuaJIT on edge
inputs of its operand widths, and compared with `fold.evaluate` — bit for bit
(a NaN compares as a NaN; the f32 surface's canonical NaN is checked through
`bits`, whose result is an integer).
"""

from __future__ import annotations

import itertools
import math
import struct

import pytest

from nupp.emit_lua.aot_to_lua import BIT, OPS_TABLE, AotToLua
from nupp.frontend.printer import LuaWriter
from nupp.frontend import ast
from .lua_internals import lua_with_internals
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.fold import FoldError, evaluate
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.widths import Width

F32_EDGES = [0.0, -0.0, 1.401298464324817e-45, -1.1754942106924411e-38, 1.1754943508222875e-38, 1.0, -1.0,
             0.99999994039535522, 1.0000001192092896, 3.4028234663852886e+38, -math.inf, math.inf, math.nan, 0.1 * 0 + 0.5,
             16777216.0, -2.5]
F64_EDGES = [0.0, -0.0, 5e-324, 1.0, -1.0, 0.5, -2.5, 2.0**53, 2.0**53 + 2, 1e300, -1e300, math.inf, -math.inf,
             math.nan, 4294967295.9, -2147483648.5, 2.0**63, 2.0**64]


def int_edges(width: Width) -> list[int]:
    lo, hi = width.int_range
    values = {0, 1, 2, 5, 31, 32, 63, 64, lo, lo + 1, hi, hi - 1, hi // 2 + 1}
    if width.is_signed:
        values |= {-1, -2, -7}
    return sorted(v for v in values if lo <= v <= hi)


def edges(width: Width) -> list:
    if width == Width.BOOL:
        return [False, True]
    if width == Width.F32:
        return F32_EDGES
    if width == Width.F64:
        return F64_EDGES
    return int_edges(width)


def lua_function_for(op: str):
    """The interpreter's Lua for `func f(p0, ...) return op(p0, ...)`."""
    info = OPS[op]
    params = tuple(ir.Param(f"p{i}", w) for i, w in enumerate(info.operands))
    body = (ir.Return(ir.Op(op, tuple(ir.Var(p.name, p.type) for p in params))),)
    fn = ir.Function("f", params, info.result, body)
    lua_body = AotToLua("op.nupp").body(fn)
    func = ast.Function(ast.FuncBody(tuple(ast.Param(p.name) for p in params), False, None, lua_body))
    chunk = ast.Chunk(ast.Block((ast.Return((func,)),)))
    return f"local {OPS_TABLE}, {BIT} = __nupp.ops, require('bit')\n" + LuaWriter().chunk(chunk)


def to_lua_value(lua, value, width: Width):
    if width in (Width.I64, Width.U64):
        return lua.eval(f"require('ffi').new('{'int64_t' if width == Width.I64 else 'uint64_t'}', {value}LL)"
                        if value >= -2**63 and value < 2**63 else f"{value}ULL")
    return value


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return struct.pack("<d", a) == struct.pack("<d", b)
    return a == b and type(a) is type(b)


@pytest.fixture(scope="module")
def lua():
    return lua_with_internals()


def run_op(lua, op: str, cases):
    """Results of the interpreter for each argument tuple: ("ok", value) or ("error", text)."""
    info = OPS[op]
    fn = lua.execute(lua_function_for(op))
    show = lua.eval("""function(fn, ...)
        local ok, r = pcall(fn, ...)
        if not ok then return "error", tostring(r) end
        if type(r) == "cdata" then return "int", (tostring(r):gsub("U?LL$", "")) end
        if type(r) == "number" then return "num", string.format("%.17g", r) end
        return "ok", r  -- booleans
    end""")
    out = []
    for args in cases:
        lua_args = [to_lua_value(lua, a, w) for a, w in zip(args, info.operands)]
        kind, value = show(fn, *lua_args)[:2]
        # numbers travel as text: lupa would turn an integral -0.0 into the int 0
        out.append((kind, int(value) if kind == "int" else float(value) if kind == "num" else value))
    return out


@pytest.mark.parametrize("op", sorted(OPS))
def test_interpreter_agrees_with_the_folder(lua, op):
    info = OPS[op]
    cases = list(itertools.product(*(edges(w) for w in info.operands)))
    if len(cases) > 600:
        cases = cases[::len(cases) // 600 + 1]
    results = run_op(lua, op, cases)
    for args, (kind, got) in zip(cases, results):
        try:
            want = evaluate(op, args)
        except FoldError as err:
            assert kind == "error" and str(err) in got, (op, args, got)
            continue
        assert kind in ("ok", "int", "num"), (op, args, got)
        if info.result == Width.BOOL:
            assert got is want, (op, args, got, want)
        elif info.result.is_int:
            assert int(got) == want, (op, args, got, want)
        else:
            assert same(float(got), float(want)), (op, args, got, want)
