"""The whole-vector lane forms (emit_c/lane_helpers.py) and gangs of several
register-wide vectors (emit_c/lane.py), at every tier this CPU runs and every
gang, under GCC and Clang.

  * FORMS computes every op that has a whole-vector form (shifts of each width
    by varying and by uniform counts, neg of each integer width, abs, floor,
    ceil and sqrt, binary64 // and %, the four wraps, == on booleans, and the
    conversions that change the lanes' size by one instruction) from rows
    of edge values (shift counts 0, 31, 32, 33, 63, 64, -1, ...; binary64
    zeros, infinities, NaNs, the wraps' range ends); every field must equal an
    oracle written here from LANGUAGE.md sections 3-5, in every execution
    (the interpreter, scalar C, lane C at each tier x gang), on every span
    length 0..2G+1 and on the whole edge table;
  * SHAPES: kernels whose gangs hold a masked while with locals no inactive
    lane reads (declared in the loop, dead after it) beside ones read after
    it, a masked for, selects for a cheap if, if / else-if chains run as
    selects from the last arm beside ones that must run in order, loads of
    a block after stores to it, and FORMS, with the BENCH kernels and the
    lane test kernels, agree with scalar C in `nupp crosscheck` (every
    length 0..2G+1 and 1000, edge inputs, statuses and spans after an
    error) at gangs of several vectors:
    quick, GCC at baseline, v3 and v4 for gangs 8, 16, 32; slow, both
    compilers at every tier and gang;
  * what the C is: a gang wider than the registers is several vectors,
    written per register width under the target's macros, every vector one
    register; a shift by a literal is an immediate shift; a cheap masked if
    has no branch; a switch of constants is selects from its else with no
    complemented mask; a block loaded once serves each of its fields.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from nupp.emit_c.lane import SELECT_BUDGET, emit_lane_module, select_chain, select_cost, vector_by_vector
from nupp.errors import Source
from nupp.pipeline import compile_module, lanes_at
from nupp.runtime.api import load
from nupp.scalar_ir.lanes import GANG_SIZES
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.walk import statements
from nupp.targets.cross import host_machine

from .conftest import require_tool
from .kernelgen import F32_EDGE_BITS, F64_EDGES, INT_EDGES
from .oracles import canonicalize_bits, wrap_int
from .test_crosscheck import assert_agrees, lane_kernels, run  # noqa: F401  (lane_kernels: a fixture)
from .test_native_differential import field_differences

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "kernel-subset-spike"
TIERS = host_machine().runnable_tiers()

FORMS = """\
local span = nupp.mem.span
local f32 = nupp.math.f32
local i32 = nupp.math.i32
local u32 = nupp.math.u32
local i64 = nupp.math.i64
local u64 = nupp.math.u64

local struct In
    x: number
    y: number
    f: float
    a: int32
    n: int32
    w: int64
    z: uint64
    u: uint32
end

local struct Out
    shl32: int32
    shr32: int32
    shlk: int32
    shl64: int64
    shr64: int64
    shlu: uint64
    shru: uint64
    neg32: int32
    neg64: int64
    negu: uint64
    negv: uint32
    fl: number
    ce: number
    sq: number
    ab: number
    q: number
    r: number
    sqf: float
    abf: float
    wi: int32
    wu: uint32
    wl: int64
    wz: uint64
    same: int32
    cf: number
    cu: number
    cw: int64
    cz: uint64
    ct: int32
end

@aot
local function forms(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<In>, k: int32): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local e = inp[i]
        out[i].shl32 = e.a << e.n
        out[i].shr32 = e.a >> e.n
        out[i].shlk = (e.a << 13) ~ (e.a >> k)
        out[i].shl64 = e.w << e.n
        out[i].shr64 = e.w >> e.n
        out[i].shlu = e.z << e.n
        out[i].shru = e.z >> k
        out[i].neg32 = -e.a
        out[i].neg64 = -e.w
        out[i].negu = -e.z
        out[i].negv = -e.u
        out[i].fl = math.floor(e.x)
        out[i].ce = math.ceil(e.x)
        out[i].sq = math.sqrt(e.x)
        out[i].ab = math.abs(e.y)
        out[i].q = e.x // e.y
        out[i].r = e.x % e.y
        out[i].sqf = f32.sqrt(f32.narrow(e.f))
        out[i].abf = f32.abs(f32.narrow(e.f))
        out[i].wi = i32.wrap(e.x)
        out[i].wu = u32.wrap(e.y)
        out[i].wl = i64.wrap(e.x)
        out[i].wz = u64.wrap(e.y)
        local same: int32 = 0
        if (e.a < e.n) == (e.x < e.y) then
            same = 1
        end
        out[i].same = same
        out[i].cf = e.f + e.a
        out[i].cu = e.u * 0.5
        out[i].cw = e.w + e.a
        out[i].cz = e.z + e.u
        out[i].ct = e.a << e.w
    end
end

return {In = In, Out = Out, forms = forms}
"""

# Locals of a masked while: `t` and `u` declared in its blocks, `y` dead after it
# (no select needed), `x` and `n` read after it (selects kept); a masked for over
# varying bounds; a cheap if run as selects, with a local declared in its arm.
UNREAD = """\
local span = nupp.mem.span

local struct P
    a: int32
    b: int32
end

local struct R
    n: int32
    s: int32
    t: int32
    c: int32
end

@aot
local function steps(exclusive out: span.WriteSpan<R>, borrows inp: span.Span<P>, k: int32): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = inp[i].a
        local b = inp[i].b
        local x: int32 = b
        local y: int32 = 0
        local n: int32 = 0
        while n < a and n < 40 do
            local t = x * 3 + n
            t = t ~ k
            y = y + t
            x = x + (t & 7)
            if (t & 1) == 0 then
                local u = t >> 1
                u = u + y
                x = x ~ u
            end
            n = n + 1
        end
        local z: int32 = 0
        for j = b & 7, a & 15 do
            z = z + j * x
        end
        local c: int32 = -1
        if x > k then
            local d = x - k
            d = d ~ b
            c = d
        elseif x == k then
            c = 0
        end
        out[i].n = n
        out[i].s = x
        out[i].t = z
        out[i].c = c
    end
end

return {P = P, R = R, steps = steps}
"""

# Loads of a block struct before and after stores to the same span: a load after
# a store reads what the store wrote, in the gang and in a masked arm.
RELOAD = """\
local span = nupp.mem.span

local struct Cell
    n: int32
    d: int32
    q: int32
end

@aot
local function reload(exclusive cells: span.WriteSpan<Cell>, k: int32): int32
    local total: int32 = 0
    for i = 1, #cells do
        local a = cells[i].n
        cells[i].q = a + k
        local b = cells[i].q + cells[i].d
        if b > k then
            cells[i].n = b
            cells[i].d = cells[i].n ~ cells[i].q
        end
        total = total + (cells[i].n ~ cells[i].d)
    end
    return total
end

return {Cell = Cell, reload = reload}
"""

# Masked if / else-if chains (emit_c/lane.py select_chain): the ones each of
# whose arms surely assigns what the arms after it may assign, and reads none
# of it, run their arms as selects from the last to the first, every condition
# computed first; the others (CHAIN_RUNS_LAST_FIRST says which) in order.
SELECTS = """\
local span = nupp.mem.span

local struct In
    a: int32
    b: int32
end

local struct Out
    c: int32
    p: int32
    q: int32
    x: int32
    y: int32
    w: int32
end

@aot
local function selects(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<In>, k: int32): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = inp[i].a
        local b = inp[i].b
        local c: int32 = switch a & 7 do
            case 0 -> 3
            case 1, 2 -> 5
            case 7 -> -1
            else -> 0
        end
        local p: int32 = 0
        local q: int32 = 0
        if a > k then
            p = 1
        elseif a < (k ~ 5) then
            p = 2
            q = 3
        else
            q = 4
        end
        if b > 0 then
            if a > 0 then
                p = 10
            end
        else
            p = 20
        end
        if (b & 3) == 0 then
            q = q + p
            p = 7
        elseif a > 0 then
            q = 9
            p = 8
        end
        local x: int32 = b
        local y: int32 = 0
        if x > 5 then
            y = 1
            x = 0
        elseif x > 2 then
            y = 2
            x = 1
        else
            y = 3
            x = 100
        end
        local w: int32 = 0
        local n: int32 = 0
        while n < (a & 7) do
            local t: int32 = switch (n + b) & 3 do
                case 0 -> 1
                case 1 -> 4
                else -> 2
            end
            w = w * 3 + t
            n = n + 1
        end
        out[i].c = c
        out[i].p = p
        out[i].q = q
        out[i].x = x
        out[i].y = y
        out[i].w = w
    end
end

return {In = In, Out = Out, selects = selects}
"""

# SELECTS' chains in order: the switch (constants); q assigned by a later arm
# only; p assigned by the first arm only under its own if (and that if, alone
# in its arm); an arm reading what a later one assigns; x and y assigned by
# every arm, read by the conditions; the switch in the masked while.
CHAIN_RUNS_LAST_FIRST = [True, False, False, True, False, True, True]

SHAPE_KERNELS = {"forms": FORMS, "unread": UNREAD, "reload": RELOAD, "selects": SELECTS}

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
COUNTS = (0, 1, 5, 13, 31, 32, 33, 63, 64, 65, -1, -31, -32, -33, -63, -64, -(2 ** 31), 2 ** 31 - 1)
F64_VALUES = F64_EDGES + (2147483648.0, -2147483649.0, -2147483648.5, -2147483648.0, 2147483647.9,
                          4294967296.5, -4294967297.0, 9.2e18, -9.3e18, 9223372036854774784.0, -7.0, 7.0)
VALUES = {
    "x": F64_VALUES,
    "y": F64_VALUES[::-1],
    "f": np.array(F32_EDGE_BITS, dtype=np.uint32).view(np.float32),
    "a": INT_EDGES["int32"],
    "n": COUNTS,
    "w": INT_EDGES["int64"],
    "z": INT_EDGES["uint64"],
    "u": INT_EDGES["uint32"],
}
SCALARS = (13, 0, 31, 32, 33, -1, 64)


def rows(module, n: int, offset: int = 0) -> np.ndarray:
    """n rows cycling through each field's values at its own pace, so every count
    meets every value and every x meets every y."""
    inp = np.zeros(n, dtype=module.dtype("In"))
    for k, (name, values) in enumerate(VALUES.items()):
        inp[name] = [values[((i + offset) // (k + 1) + (i + offset) * k) % len(values)] for i in range(n)]
    return inp


def lone_edges(module) -> np.ndarray:
    """Rows whose binary64 fields are moderate values but for one edge value
    among every 37, at a lane that moves: a whole-vector form's fast range
    (the wraps') meets each edge value beside lanes that are all inside it."""
    moderate = [(-1) ** j * (0.75 + 97.5 * j) for j in range(37)]
    column = [v for edge in F64_VALUES for v in moderate]
    for k, edge in enumerate(F64_VALUES):
        column[37 * k + (5 * k) % 37] = edge
    inp = rows(module, len(column))
    inp["x"], inp["y"] = column, column[37 * 3:] + column[:37 * 3]
    return inp


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _f32_bits_of(x: np.float32) -> int:
    """A binary32 result as a float field stores it: NaNs canonical."""
    return canonicalize_bits(int(np.float32(x).view(np.uint32)))


def oracle(module, inp: np.ndarray, k: int) -> np.ndarray:
    """FORMS' outputs from LANGUAGE.md: a shift count's low 5 (32-bit) or 6 bits,
    >> logical; integer negation modulo 2^N; floor, ceil, sqrt and abs IEEE;
    binary64 a // b = floor(a / b) and a % b = a - floor(a / b) * b, each step
    rounded once; a wrap truncates toward zero modulo 2^N (NaN, inf: 0); a
    stored binary32 NaN is 0x7FC00000; int32, uint32 and binary32 widen to
    binary64 exactly and to 64-bit integers by sign or zero."""
    out = np.zeros(len(inp), dtype=module.dtype("Out"))
    with np.errstate(all="ignore"):
        for i, row in enumerate(inp):
            x, y, f = np.float64(row["x"]), np.float64(row["y"]), np.float32(row["f"])
            a, n, w, z, u = (int(row[name]) for name in "anwzu")
            out[i]["shl32"] = _signed(a << (n & 31), 32)
            out[i]["shr32"] = _signed((a & M32) >> (n & 31), 32)
            out[i]["shlk"] = _signed((a << 13) ^ ((a & M32) >> (k & 31)), 32)
            out[i]["shl64"] = _signed(w << (n & 63), 64)
            out[i]["shr64"] = _signed((w & M64) >> (n & 63), 64)
            out[i]["shlu"] = (z << (n & 63)) & M64
            out[i]["shru"] = z >> (k & 63)
            out[i]["neg32"], out[i]["neg64"] = _signed(-a, 32), _signed(-w, 64)
            out[i]["negu"], out[i]["negv"] = -z & M64, -u & M32
            out[i]["fl"], out[i]["ce"], out[i]["sq"], out[i]["ab"] = np.floor(x), np.ceil(x), np.sqrt(x), np.abs(y)
            q = np.floor(x / y)
            out[i]["q"], out[i]["r"] = q, x - q * y
            out[i]["sqf"] = np.uint32(_f32_bits_of(np.sqrt(f))).view(np.float32)
            out[i]["abf"] = np.uint32(_f32_bits_of(np.abs(f))).view(np.float32)
            out[i]["wi"], out[i]["wu"] = wrap_int(float(x), 32, True), wrap_int(float(y), 32, False)
            out[i]["wl"], out[i]["wz"] = wrap_int(float(x), 64, True), wrap_int(float(y), 64, False)
            out[i]["same"] = int((a < n) == (x < y))
            out[i]["cf"], out[i]["cu"] = np.float64(f) + np.float64(a), np.float64(u) * 0.5
            out[i]["cw"], out[i]["cz"] = _signed(w + a, 64), (z + u) & M64
            out[i]["ct"] = _signed(a << (w & 31), 32)
    return out


def test_the_oracle_reads_the_rules_it_claims():
    """Spot checks of the oracle itself against values worked by hand."""
    assert _signed(1 << (33 & 31), 32) == 2 and _signed((-1 & M32) >> (-1 & 31), 32) == 1
    assert wrap_int(-2147483648.5, 32, True) == -2147483648 and wrap_int(2147483648.0, 32, True) == -2147483648
    assert wrap_int(-1.5, 32, False) == M32 and wrap_int(math.inf, 64, True) == 0
    assert np.float64(-7.0) - np.floor(np.float64(-7.0) / 2.0) * 2.0 == 1.0  # the remainder takes the divisor's sign
    assert math.copysign(1.0, np.ceil(-0.5)) < 0  # ceil keeps the sign of zero


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lane-forms-cache"))


@pytest.fixture(scope="module")
def forms_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("forms") / "forms.nupp"
    path.write_text(FORMS)
    return path


# the float fields that hold nupp.math.f32 results: exact to the bit, canonical NaN included
F32_SURFACE_FIELDS = ("sqf", "abf")


def _check(module, what: str, gang: int) -> None:
    """Every length 0..2G+1 (each with another scalar and other rows), then the whole edge table."""
    cases = [(SCALARS[n % len(SCALARS)], rows(module, n, 7 * n)) for n in range(2 * gang + 2)]
    cases += [(k, rows(module, len(VALUES["x"]) * len(VALUES["y"]) + 3)) for k in SCALARS]
    cases += [(k, lone_edges(module)) for k in SCALARS[:2]]
    for k, inp in cases:
        out = np.zeros(len(inp), dtype=module.dtype("Out"))
        module.forms(out, inp, k)
        problems = field_differences(out, oracle(module, inp, k), exact=F32_SURFACE_FIELDS)
        assert not problems, f"{what}, length {len(inp)}, k = {k}:\n" + "\n".join(problems)


def test_the_interpreter_and_scalar_c_give_the_oracles_bits(forms_path):
    for mode, cc in (("interp", "gcc"), ("scalar", "gcc"), ("scalar", "clang")):
        require_tool(cc)
        _check(load(str(forms_path), mode=mode, cc=cc), f"{mode} ({cc})", 16)


@pytest.mark.parametrize("cc", ["gcc", pytest.param("clang", marks=pytest.mark.slow)])
@pytest.mark.parametrize("tier", TIERS)
def test_every_gang_gives_the_oracles_bits(forms_path, tier, cc):
    require_tool(cc)
    for gang in GANG_SIZES:
        _check(load(str(forms_path), mode="lane", cc=cc, tier=tier, gang=gang), f"lane{gang}-{tier} ({cc})", gang)


def test_the_forms_run_in_gangs_with_every_op_as_a_whole_vector():
    module = compile_module(Source("forms.nupp", FORMS))
    text = emit_lane_module(lanes_at(module, 32), "forms.nupp").source
    body = text.split("c += 32) {", 1)[-1] if "c += 32) {" in text else text
    for form in ("shl_i32", "shr_i32", "shl_i64", "shr_i64", "shl_u64", "shr_u64", "neg_i32", "neg_i64", "neg_u64",
                 "neg_u32", "floor_f64", "ceil_f64", "sqrt_f64", "abs_f64", "idiv_f64", "mod_f64", "sqrt_f32",
                 "abs_f32", "wrap_f64_i32", "wrap_f64_u32", "wrap_f64_i64", "wrap_f64_u64", "eq_bool",
                 "cvt_f32_f64", "cvt_i32_f64", "cvt_u32_f64", "cvt_i32_i64", "cvt_u32_u64", "cvt_i64_i32"):
        assert re.search(rf"\bnu_{form}x\d+\(&", body), form
    assert not re.search(r"\{nu_(shl|shr|neg|wrap)_", body)  # no vector built of scalar helper calls


# ---- gangs of several vectors agree with scalar C ---------------------------------------------------

@pytest.fixture(scope="module")
def shape_kernels(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("shape-kernels")
    for stem, text in SHAPE_KERNELS.items():
        (folder / f"{stem}.nupp").write_text(text)
    return folder


def _crosscheck(paths, **options) -> None:
    assert_agrees(*run(paths, **options))


def test_gangs_of_several_vectors_agree_with_scalar_c(shape_kernels):
    require_tool("gcc")
    tiers = tuple(t for t in ("baseline", "v3", "v4") if t in TIERS)
    _crosscheck([shape_kernels, BENCH], compilers=("gcc",), tiers=tiers, gangs=(8, 16, 32), cases=8)


@pytest.mark.slow
def test_every_shape_agrees_at_every_tier_and_gang_under_both_compilers(shape_kernels, lane_kernels):
    for cc in ("gcc", "clang"):
        require_tool(cc)
    _crosscheck([shape_kernels, lane_kernels, BENCH], compilers=("gcc", "clang"), gangs=GANG_SIZES)


# ---- what the C is ----------------------------------------------------------------------------------

def _lane_c(text: str, gang: int) -> str:
    return emit_lane_module(lanes_at(compile_module(Source("k.nupp", text)), gang), "k.nupp").source


def _variants(c: str) -> dict[str, str]:
    """The gang loop written for each register width: its directive -> its text
    (the directives stand at the gang block's own indentation)."""
    indent = re.search(r"^( *)int64_t c1 = ", c, re.M)[1]
    found, current = {}, None
    for line in c.splitlines():
        if line.startswith(indent + "#") and not line.startswith(indent + " "):
            current = line.strip() if line.strip() != "#endif" else None
            if current:
                found[current] = ""
        elif current is not None:
            found[current] += line + "\n"
    return found


def test_a_gang_wider_than_the_registers_is_several_vectors_per_register_width():
    """mandelbrot (binary32 and int32 lanes) at gang 32: two vectors of 16 under
    AVX-512, four of 8 under AVX2, eight of 4 elsewhere; every vector type of
    each variant's gangs one register wide (its masked tail may take a narrower
    register: test_masked_tails.py); its masked while, which only computes,
    goes on vector by vector once some vector's lanes have all left."""
    c = _lane_c((BENCH / "mandelbrot.nupp").read_text(), 32)
    variants = _variants(c)
    assert list(variants) == ["#if defined(__AVX512F__)", "#elif defined(__AVX2__)", "#else"]
    for (macro, text), lanes in zip(variants.items(), (16, 8, 4)):
        assert "c1 += 32) {" in text, macro
        gangs = text.split("if (c1 <= ", 1)[0]  # the masked tail follows the gangs
        assert set(re.findall(r"nu_[a-z]\d+x(\d+)", gangs)) == {str(lanes)}, macro
        parts = 32 // lanes
        assert f"v_zx_p{parts - 1}" in text and f"v_zx_p{parts}" not in text, macro
        # the gang's rounds (lane n of vector k at bit k*W + n), until some vector has no lane left ...
        assert f"nu_lanes_x{lanes}(&w" in text and f" << {(parts - 1) * lanes})" in text, macro
        assert "== 4294967295u) {" in text, macro
        low = sum(1 << (k * lanes) for k in range(parts))
        some_vector_left = f"- {low:#x}u) & ~k"
        assert some_vector_left in text and f"& {low << (lanes - 1):#x}u) != 0) break;" in text, macro
        # ... then each vector's on its own, until its lanes have all left
        rounds = text.split(some_vector_left, 1)[1].split("for (;;) {", 1)[1].split("break;", 1)[0]
        live = re.findall(r"if \((k\d+_\d+) != 0\) \{", rounds)
        assert len(live) == parts and rounds.endswith(f"if (({' | '.join(live)}) == 0) "), macro
        assert rounds.count(f" = nu_lanes_x{lanes}(&w") == parts, macro
        assert rounds.count(f" == {(1 << lanes) - 1}u) {{") == parts, macro  # its lanes all looping: no selects


SHORT_ROUND = """\
local span = nupp.mem.span

local struct P
    a: int32
    b: int32
end

@aot
local function count(exclusive out: span.WriteSpan<P>, borrows inp: span.Span<P>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local x = inp[i].b
        local n: int32 = 0
        while n < inp[i].a do
            x = x * 3 + n
            n = n + 1
        end
        local m: int32 = 0
        while m < (x & 63) do
            m = m + 1
        end
        out[i].a = n
        out[i].b = x + m
    end
end

return {P = P, count = count}
"""


def test_a_masked_while_goes_on_by_vector_where_its_rounds_only_compute_and_cost_enough():
    """UNREAD's and SELECTS' whiles only compute and cost enough; SHORT_ROUND's first loads
    in its condition (each vector's load is the gang's), its second is too short."""
    def by_vector(text):
        module = lanes_at(compile_module(Source("k.nupp", text)), 16)
        gang = next(s for f in module.functions for s in statements(f.body) if isinstance(s, ir.Gang))
        return [vector_by_vector(s, gang.varying) for s in statements(gang.body) if isinstance(s, ir.While)]
    assert by_vector(UNREAD) == [True] and by_vector(SELECTS) == [True]
    assert by_vector(SHORT_ROUND) == [False, False]
    assert "- 0x" not in _lane_c(SHORT_ROUND, 32)  # the gang's rounds to the last lane


def test_binary64_lanes_take_half_as_many_per_vector():
    """simd's binary64 fields: gang 16 is two vectors of 8 under AVX-512, four of 4 under AVX2, eight of 2 else."""
    variants = _variants(_lane_c((BENCH / "simd.nupp").read_text(), 16))
    assert [set(re.findall(r"nu_f64x(\d+)", text)) for text in variants.values()] == [{"8"}, {"4"}, {"2"}]


def test_one_register_gang_is_written_once():
    c = _lane_c((BENCH / "tecsbits.nupp").read_text(), 4)
    assert "__AVX512F__)\n" not in c.split("int64_t c1", 1)[1]
    assert "_p0" not in c


def test_a_shift_by_a_literal_is_a_whole_vector_shift():
    c = _lane_c((BENCH / "tecsbits.nupp").read_text(), 16)
    assert re.search(r"nu_shl_i32x16\(&t\d+, &t\d+, &t\d+\);", c)
    assert "nu_shl_i32(t" not in c.split("c1 += 16", 1)[1].split("for (; c1 <= n_out", 1)[0]
    assert "*r = (nu_i32x16)((nu_u32x16)*a << ((nu_u32x16)*b & low));" in c


def test_a_cheap_masked_if_has_no_branch_and_a_block_is_loaded_once():
    c = _lane_c((BENCH / "tecsbits.nupp").read_text(), 16)
    body = c.split("int64_t c1", 1)[1].split("#if defined(__AVX512F__)", 1)[1].split("#elif", 1)[0]
    assert "nu_lanes_x16" not in body  # the switch and the if: selects only
    # Entity's block: three vector loads for its three fields, in the threaded gang loop and the other
    assert body.count("nu_load_i32x16(&v") == 6


def _chain_heads(body) -> list:
    """The masked ifs of a block that are not an else-if of another, in order."""
    heads, inner = [], set()
    for s in statements(body):
        if isinstance(s, ir.If) and s.masked and id(s) not in inner:
            heads.append(s)
            rest = s.orelse
            while len(rest) == 1 and isinstance(rest[0], ir.If) and rest[0].masked:
                inner.add(id(rest[0]))
                rest = rest[0].orelse
    return heads


def test_a_chain_runs_last_first_only_where_each_arm_overwrites_the_later_ones():
    module = lanes_at(compile_module(Source("k.nupp", SELECTS)), 8)
    gang = next(s for f in module.functions for s in statements(f.body) if isinstance(s, ir.Gang))
    heads = _chain_heads(gang.body)
    assert [select_chain(s) is not None for s in heads] == CHAIN_RUNS_LAST_FIRST
    assert all(select_cost(s.then + s.orelse, gang.varying) <= SELECT_BUDGET for s in heads)  # all selects


def test_a_switch_of_constants_is_selects_from_the_else_with_no_complemented_mask():
    """tecsbits' switch runs as the hand-written `v = else; v = c3 ? a3 : v; ...`:
    GCC moved the complements of `~c` masks through general registers."""
    c = _lane_c((BENCH / "tecsbits.nupp").read_text(), 16)
    body = c.split("int64_t c1", 1)[1].split("#if defined(__AVX512F__)", 1)[1].split("#elif", 1)[0]
    assert not re.search(r"= ~t\d+;|& ~t\d+;", body)
    arms = re.findall(r"v_class = (t\d+|\(\(\(nu_i32x16\)t\d+ & m\d+\))", body)
    assert len(arms) == 8 and all(a.startswith("t") for a in arms[::4])  # the else first, as is, per loop
    masks = [int(m) for m in re.findall(r"v_class = \(\(\(nu_i32x16\)t\d+ & m(\d+)\)", body)[:3]]
    assert masks == sorted(masks, reverse=True)  # the last case's mask first


def test_a_local_no_inactive_lane_reads_is_assigned_without_a_select():
    eight = next(iter(_variants(_lane_c(UNREAD, 8)).values()))  # AVX2 and AVX-512: one vector of 8
    masked = eight.split("} else {", 1)[1]  # the while's body while some lane has left
    assert re.search(r"\bv_y = t\d+;", masked)  # dead after the while
    assert re.search(r"\bv_t_2 = t\d+;", masked) and re.search(r"\bv_u_2 = t\d+;", masked)  # declared in it
    assert re.search(r"\bv_x = \(\(\(nu_i32x8\)t\d+ & w", masked)  # read after it: a select
    assert re.search(r"\bv_n = \(\(\(nu_i32x8\)t\d+ & w", masked)
