"""Deep @aot expressions in C: Clang refuses C nested more than 256 brackets
deep, so the emitters hold deep subexpressions in temporaries.  Each program
here is legal Nupp (a 5000-term chain, operands nested as deep as LuaJIT
allows, deep conditions of `while`, `elseif`, `and` and switch arms, deep
varying and uniform values in span loops); its C must nest no deeper than
MAX_BRACKETS, compile under GCC and Clang, and compute what the spec says
(the expected values are computed here in Python, by int32 wraparound).
"""

from __future__ import annotations

import numpy as np
import pytest

from nupp.emit_c.lane import emit_lane_module
from nupp.emit_c.scalar import emit_module
from nupp.errors import Source
from nupp.scalar_ir.lanes import GANG_SIZES
from nupp.deep_stack import with_deep_stack
from nupp.pipeline import compile_module, lanes_at
from nupp.runtime.api import load

from .conftest import require_tool

MAX_BRACKETS = 64
CHAIN = 5000
DEEP = 40      # terms of a chain that is deep but short
NESTED = 90    # parenthesized levels: near LuaJIT's 200 syntax levels (two per level)


def _chain(term: str, n: int, op: str = "+") -> str:
    return f" {op} ".join([term] * n)


def _nested(n: int) -> str:
    """`a ~ (b + (a ~ (b + ...)))`: right operands n deep, each op two C brackets or more."""
    return "".join("a ~ (b + (" for _ in range(n // 2)) + "a" + "))" * (n // 2)


SOURCE = f"""
local span = nupp.mem.span

local struct Row
    a: int32
    v: int32
end

@aot
local function chain(a: int32, b: int32): int32
    return b + {_chain("a", CHAIN - 1)}
end

@aot
local function chain_number(a: number, b: number): number
    return b + {_chain("a", CHAIN - 1)}
end

@aot
local function nested(a: int32, b: int32): int32
    return {_nested(NESTED)}
end

@aot
local function nested_min(a: number, b: number): number
    return {"math.min(a, " * NESTED}b{")" * NESTED}
end

@aot
local function deep_while(n: int32): int32
    local i: int32 = 0
    while {_chain("i", DEEP)} < n do
        i = i + 1
    end
    return i
end

@aot
local function deep_elseif(a: int32): int32
    local r: int32 = 0
    if a == 1 then
        r = 1
    elseif {_chain("a", DEEP)} == {2 * DEEP} then
        r = 2
    elseif {_chain("a", DEEP)} == {3 * DEEP} then
        r = 3
    else
        r = 4
    end
    return r
end

@aot
local function deep_and(a: int32, b: int32): boolean
    return a > 0 and {_chain("b", DEEP)} > 10 or a < -5 and 100 // a + {_chain("b", DEEP)} > 0
end

@aot
local function deep_arms(a: int32, b: int32): int32
    local r: int32 = switch a do
        case 1 -> {_chain("b", DEEP)}
        case 2 -> {_chain("a", DEEP, "*")}
        else -> b
    end
    return r
end

@aot
local function deep_loop(exclusive out: span.WriteSpan<Row>, borrows inp: span.Span<Row>, k: int32): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local x = inp[i].a
        local w: int32 = 0
        while {_chain("w", DEEP)} < x do
            w = w + 1
        end
        if {_chain("x", DEEP)} > {DEEP * 3} then
            w = w + {_chain("k", DEEP)}
        end
        out[i].v = w + {_chain("x", DEEP)} + ({_chain("k", DEEP, "~")})
    end
end

return {{Row = Row, chain = chain, chain_number = chain_number, nested = nested, nested_min = nested_min,
        deep_while = deep_while, deep_elseif = deep_elseif, deep_and = deep_and, deep_arms = deep_arms,
        deep_loop = deep_loop}}
"""


def wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def left_sum(first: float, terms: list) -> float:
    """`first + t1 + t2 + ...` as written: left to right, each sum rounded."""
    for t in terms:
        first += t
    return first


def expected_nested(a: int, b: int) -> int:
    v = a
    for _ in range(NESTED // 2):
        v = a ^ wrap32(b + v)
    return v


def expected_while(n: int, x_step: int = DEEP) -> int:
    i = 0
    while wrap32(x_step * i) < n:
        i += 1
    return i


def expected_elseif(a: int) -> int:
    if a == 1:
        return 1
    return {2 * DEEP: 2, 3 * DEEP: 3}.get(wrap32(DEEP * a), 4)


def expected_and(a: int, b: int) -> bool:
    floor_div = 100 // a if a != 0 else None  # Python's // floors, as Nupp's does
    return (a > 0 and wrap32(DEEP * b) > 10) or (a < -5 and wrap32(floor_div + DEEP * b) > 0)


def expected_arms(a: int, b: int) -> int:
    if a == 1:
        return wrap32(DEEP * b)
    if a == 2:
        return wrap32(a ** DEEP)
    return b


def expected_loop(xs, k: int) -> list[int]:
    k_xor = 0 if DEEP % 2 == 0 else k
    out = []
    for x in xs:
        w = expected_while(x)
        if wrap32(DEEP * x) > DEEP * 3:
            w = wrap32(w + DEEP * k)
        out.append(wrap32(w + DEEP * x + k_xor))
    return out


@pytest.fixture(scope="module")
def module_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("deep") / "deep.nupp"
    path.write_text(SOURCE)
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "deep-cache"))


def bracket_depth(line: str) -> int:
    """The deepest nesting of ( [ { on one line of C."""
    depth = deepest = 0
    for ch in line:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


@pytest.mark.parametrize("gang", [None, *GANG_SIZES], ids=["scalar", *(f"gang{g}" for g in GANG_SIZES)])
def test_no_c_expression_nests_deeper_than_the_bound(module_path, gang):
    module = with_deep_stack(compile_module)(Source.from_file(str(module_path)))
    c = (with_deep_stack(emit_module)(module, "deep.nupp") if gang is None
         else with_deep_stack(emit_lane_module)(with_deep_stack(lanes_at)(module, gang), "deep.nupp", "nupp_")).source
    deepest = max(c.splitlines(), key=bracket_depth)
    assert bracket_depth(deepest) <= MAX_BRACKETS, deepest[:300]
    if gang is not None:
        assert "nu_i32x" in c  # the span loop runs in gangs


def _executions():
    yield "scalar", None
    for gang in GANG_SIZES:
        yield "lane", gang


@pytest.mark.parametrize("cc", ["gcc", "clang"])
@pytest.mark.parametrize("mode, gang", list(_executions()), ids=lambda x: str(x))
def test_deep_expressions_compute_the_spec_values(module_path, cc, mode, gang):
    require_tool(cc)
    m = load(str(module_path), mode=mode, cc=cc, gang=gang)
    for a, b in [(1, 1), (2, 3), (3, -4), (-7, 5), (0, -1), (2**31 - 1, 2**31 - 1)]:
        assert m.chain(a, b) == wrap32(b + (CHAIN - 1) * a)
        assert m.chain_number(a / 4, b) == left_sum(b, [a / 4] * (CHAIN - 1))
        assert m.nested(a, b) == expected_nested(a, b)
        assert m.nested_min(a, b) == min(a, b)
        assert m.deep_elseif(a) == expected_elseif(a)
        assert m.deep_and(a, b) == expected_and(a, b)
        assert m.deep_arms(a, b) == expected_arms(a, b)
    for n in (-3, 0, 1, DEEP, DEEP + 1, 1000):
        assert m.deep_while(n) == expected_while(n)
    xs = [0, 1, 5, 100, -3, 4, 77, 2, 9, 300, 41, 39, 80, 81, 120, 3, 7, 1000, -100]
    for k in (0, 3, -2**31):
        rows = np.zeros(len(xs), dtype=m.dtype("Row"))
        rows["a"] = xs
        out = np.zeros(len(xs), dtype=m.dtype("Row"))
        m.deep_loop(out, rows, k)
        assert list(out["v"]) == expected_loop(xs, k)
