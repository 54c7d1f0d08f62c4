"""Ordinary Nupp on LuaJIT: the translation runs exactly as the Lua it stands for.

Oracles: LuaJIT itself running the plain Lua corpus, and Python integers for
the Lua 5.3 operators (LANGUAGE.md section 1: LuaJIT `bit` semantics).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from nupp.errors import NuppError, Source
from nupp.pipeline import translate_text
from nupp.runtime.host import Host, LuaRunError

ROOT = Path(__file__).resolve().parent.parent
LUA_PROGRAMS = sorted((ROOT / "tests" / "corpus" / "lua").glob("*.lua"))
ARGS = ("a", "b", "c")


def run_captured(runner, *args):
    host = Host()
    output = host.capture_output()
    runner(host, *args)
    return output()


@pytest.mark.parametrize("path", LUA_PROGRAMS, ids=lambda p: p.name)
def test_plain_lua_runs_the_same_through_the_translator(path):
    text = path.read_text()
    direct = run_captured(lambda h: h.run_lua(text, "@" + path.name, ARGS))
    translated = run_captured(lambda h: h.run_source(Source(path.name, text), ARGS))
    assert translated == direct
    assert direct.strip(), "the corpus program printed nothing"


def run_nupp(text: str) -> str:
    return run_captured(lambda h: h.run_source(Source("t.nupp", text)))


def to_int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def bit_oracle(op: str, a: int, b: int) -> int:
    """LuaJIT `bit` semantics from the spec: 32-bit operands, signed result, 5-bit counts."""
    a32, b32 = a & 0xFFFFFFFF, b & 0xFFFFFFFF
    if op == "&":
        return to_int32(a32 & b32)
    if op == "|":
        return to_int32(a32 | b32)
    if op == "~":
        return to_int32(a32 ^ b32)
    if op == "<<":
        return to_int32(a32 << (b & 31))
    if op == ">>":
        return to_int32(a32 >> (b & 31))
    raise ValueError(op)


INT_EDGES = [0, 1, -1, 5, 31, 32, 33, 2**31 - 1, -2**31, 2**31, 2**32 - 1, 2**32 + 5, -2**32 - 7, 12345678]


@given(st.sampled_from(["&", "|", "~", "<<", ">>"]),
       st.one_of(st.sampled_from(INT_EDGES), st.integers(-2**40, 2**40)),
       st.one_of(st.sampled_from(INT_EDGES), st.integers(-2**40, 2**40)))
@settings(max_examples=60, deadline=None)
def test_bitwise_operators_follow_luajit_bit(op, a, b):
    out = run_nupp(f"print(string.format('%d', ({a}) {op} ({b})))")
    assert int(out) == bit_oracle(op, a, b)


@pytest.mark.parametrize("a", [0, 1, -1, 2**31 - 1, -2**31, 2**32 + 3])
def test_unary_bitwise_not(a):
    assert int(run_nupp(f"print(string.format('%d', ~({a})))")) == to_int32(~a)


@pytest.mark.parametrize("a, b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (7.5, 2), (1, 0), (-1, 0), (0, 0), (5, math.inf)])
def test_floor_division_is_floor_of_true_division(a, b):
    out = run_nupp(f"print(string.format('%.17g', ({a!r}) // ({b!r})))".replace("inf", "math.huge"))
    q = a / b if b != 0 else (math.copysign(math.inf, a) if a != 0 else math.nan)
    expected = math.floor(q) if math.isfinite(q) else q
    assert float(out) == expected or (math.isnan(expected) and out.strip() in ("nan", "-nan"))


def test_switch_expression_and_statement():
    out = run_nupp("""
local function classify(v)
    local r = switch v do
        case -2147483648 -> "min"
        case 1, 2 -> "small"
        case "x" -> "ex"
        case true -> "yes"
        case nil -> "nothing"
        case is table -> "table"
        case is int64 -> "int64"
        else -> "other"
    end
    return r
end
for _, v in ipairs({-2147483648, 1, 2, 3, "x", true, {}, 5LL}) do print(classify(v)) end
print(classify(nil))
local calls = 0
local function subject() calls = calls + 1 return 2 end
print(switch subject() do case 1 -> "one" case 2 -> "two" else -> "many" end, calls)
switch 3 do
    case 3 do print("block arm") end
    else do print("not reached") end
end
""")
    assert out.split("\n")[:-1] == ["min", "small", "small", "other", "ex", "yes", "table", "int64",
                                     "nothing", "two\t1", "block arm"]


def test_switch_expression_without_match_raises_at_the_switch_line():
    with pytest.raises(LuaRunError) as err:
        run_nupp("local x = 1\nlocal y = switch x do\n  case 2 -> 3\nend\n")
    assert "t.nupp:2: no case of this switch matches 1" in err.value.message


def test_switch_subject_is_evaluated_before_the_local_comes_into_scope():
    assert run_nupp("local x = 1\ndo local x = switch x do case 1 -> 'outer' else -> 'inner' end print(x) end") == "outer\n"


def test_struct_names_do_not_collide_across_modules(tmp_path):
    (tmp_path / "a.nupp").write_text("local struct P\n x: int32\nend\nreturn P")
    (tmp_path / "b.nupp").write_text("local struct P\n x: float\n y: float\nend\nreturn P")
    host = Host(search_path=[tmp_path])
    output = host.capture_output()
    host.run_source(Source("main.nupp", """
local A, B = require("a"), require("b")
local a, b = nupp.mem.span.new(A, 2), nupp.mem.span.new(B, 2)
a[1].x = 7
b[2].y = 0.1
print(a[1].x, b[2].y == nupp.math.f32.narrow(0.1), #a, #b)
"""))
    assert output() == "7\ttrue\t2\t2\n"


def test_runtime_errors_point_at_the_nupp_line():
    source = "local t = {}\n\n\nlocal function f(a: number,\n                b: number): number\n    return a + t.missing.field\nend\nprint(f(1, 2))\n"
    with pytest.raises(LuaRunError) as err:
        run_nupp(source)
    assert err.value.message.startswith("t.nupp:6:")


_RETURNING = "print(pcall(function()\n  return {expr}\nend))\n"


@pytest.mark.parametrize("expr", ["{} & 3", "3 | {}", "{} ~ 1", "1 << {}", "{} >> 1", "~{}", "7LL // 2",
                                  "({} & 3)"])
def test_an_operator_error_in_a_return_names_its_line(expr):
    """`return a & b` is no tail call in Lua: its error names its line, as
    LuaJIT names the line of `return {} + 3` (the oracle, run untranslated)."""
    oracle = run_captured(lambda h: h.run_lua(_RETURNING.format(expr="{} + 3"), "@t.nupp", ()))
    where = oracle.split("\t")[1].split(" ")[0]
    assert where == "t.nupp:2:"
    assert run_nupp(_RETURNING.format(expr=expr)).startswith(f"false\t{where} attempt to perform ")


def test_a_call_the_program_returns_stays_a_tail_call():
    lua = translate_text("local function f(a) return a end\nlocal function g(a) return f(a & 1) end\n")
    assert "return f(__nupp_bit.band(a, 1))" in lua
    assert run_nupp("print((function() return 6 & 3, 1 end)())\n") == "2\t1\n"


def test_every_statement_keeps_its_line():
    # each line prints its own number through debug.getinfo
    lines = [f"print({i}, debug.getinfo(1, 'l').currentline)" for i in range(1, 6)]
    text = "local struct S\n  a: int32\nend\n" + "\n".join(lines) + "\n"
    out = run_nupp(text)
    for row in out.strip().split("\n"):
        i, line = map(int, row.split("\t"))
        assert line == i + 3


def test_translation_keeps_line_count_and_erases_annotations():
    text = "@aot\nlocal function f(x: int32): int32\n    local y: int32 = x & 3\n    return y\nend\n"
    lua = translate_text(text)
    assert lua.count("\n") == text.count("\n")
    assert "int32" not in lua.replace('"int32"', "")
    assert "__nupp.aot(f, \"f\"" in lua.split("\n")[4]


def test_reserved_names_are_refused():
    with pytest.raises(NuppError) as err:
        translate_text("local __nupp_x = 1")
    assert "reserved" in str(err.value)


def test_math_min_max_follow_nupp_rules_inside_aot_functions_only():
    out = run_nupp("""
@aot
local function lo(a: number, b: number): number return math.min(a, b) end
@aot
local function hi(a: number, b: number): number return math.max(a, b) end
local function plain(a, b) return math.min(a, b) end
local nan = 0/0
print(lo(nan, 1) ~= lo(nan, 1), lo(1, nan) ~= lo(1, nan), hi(1, nan) ~= hi(1, nan))
print(1/lo(0, -0), 1/lo(-0, 0), 1/hi(-0, 0), 1/hi(0, -0), lo(2, 3), hi(2, 3))
print(1/plain(0, -0), 1/plain(-0, 0), plain(nan, 1))
""")
    builtin = run_captured(lambda h: h.run_lua("local nan = 0/0 print(1/math.min(0, -0), 1/math.min(-0, 0), math.min(nan, 1))"))
    assert out.split("\n")[:2] == ["true\ttrue\ttrue", "-inf\t-inf\tinf\tinf\t2\t3"]
    assert out.split("\n")[2] + "\n" == builtin  # ordinary code keeps LuaJIT's builtin
