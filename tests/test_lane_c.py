"""Lane C (emit_c/lane.py): gangs of G iterations, bit-identical to the scalar C.

Every call is made twice through the Python API, `nupp.load(path,
mode="scalar")` and `nupp.load(path, mode="lane", gang=G)`, on identical
copies of the inputs; written spans, results and error texts must agree
(binary64 fields: any NaN equals any NaN; everything else, float fields
included, to the bit: test_native_differential's rule).

  * which loops run in gangs: every BENCH kernel's (tecsbits's varying if
    and switch on a varying selector and mandelbrot's varying while run under
    masks) and the lane test kernels below; a loop with an op that can raise
    does not;
  * every BENCH kernel, LANE_KERNEL (integers, booleans, a uniform if,
    a uniform inner loop, the counter as a value, a uniform broadcast), and
    MASKED_KERNEL (a varying if/elseif/else chain storing in some arms and
    assigning varying locals in others, nested varying and uniform ifs) and
    WHILE_KERNEL (varying whiles, one inside a masked if, a uniform while), at
    G = 4 and 8 (16 in the slow set) with gcc and clang: on every span length 0..2G+1 and the full
    edge set; the C compiles under -Wall -Wextra -Wpedantic -Werror;
  * the text of mix's lane C: the vector typedefs, the gang loop, the tail;
  * slow: the lane C of each kernel built with UBSan, run on the same inputs
    in a child process, outputs equal to the scalar C's.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from nupp.emit_c.lane import emit_lane_module
from nupp.lane_rewrite.rewrite import lane_decisions
from nupp.emit_c.scalar import emit_module
from nupp.errors import Source
from nupp.pipeline import compile_module, lanes_at
from nupp.runtime.api import load
from nupp.runtime.host import Host, display_path

from .conftest import UNDER_CI, require_tool
from .kernelgen import KERNEL_SCALARS, edge_array, garbage_array
from .kernelgen import kernels as generated_kernels
from .test_native_differential import (COMPILERS, GENERATED_RANDOM_ROWS, GENERATED_ROWS, write_generated, saved_outputs_match, FULL_ROWS, KERNELS, RANDOM_ROWS, ROOT, Kernel, _ubsan_flags,
                                       call, field_differences, kernel_inputs, same_scalar,
                                       ubsan_environment)

GANGS = (4, 8)          # gang 16 runs in the slow set (and in test_tiers at v4)

LANE_KERNEL = """\
local span = nupp.mem.span
local f32 = nupp.math.f32

local struct Row
    a: int32
    b: uint32
    x: number
    f: float
end

local struct Out
    s: int32
    u: uint32
    y: number
    g: float
    k: int32
    q: int64
end

@aot
local function blend(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<Row>, k: int32, w: number): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local r = inp[i]
        local s = r.a * k + i
        local t = (r.a & 255) ~ (r.a >> 3)
        if k > 2 then
            s = s - r.a // 7
        end
        local acc: int32 = 0
        for j = 1, 3 do
            acc = acc + j * r.a
        end
        local y = r.x * w - r.x / 3
        local big = (r.a > k) and (r.x < w)
        local same = big == (k > 0)
        out[i].k = i - k
        out[i].s = s + acc
        out[i].u = r.b * 2654435761 + r.b
        out[i].y = math.min(y, w) + math.floor(r.x % 5)
        out[i].g = f32.fma(f32.narrow(r.f), f32.narrow(w), f32.narrow(r.f))
        out[i].q = t
    end
end

return {Row = Row, Out = Out, blend = blend}
"""

# The structs of the masked kernels below.
IN_RES = """\
local span = nupp.mem.span

local struct In
    a: int32
    b: uint32
    x: number
end

local struct Res
    p: int32
    q: uint32
    y: number
    s: int32
    z: number
end
"""

# Varying ifs under masks: an elseif chain whose arms store (some fields, some
# arms only), assign varying locals, or both; a nested varying if/elseif; a
# uniform if inside a masked arm; a local declared inside a masked arm.
MASKED_KERNEL = IN_RES + """

@aot
local function route(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>, k: int32, w: number): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local r = inp[i]
        local t: int32 = r.a & 7
        local y = r.x
        if r.a < k then
            out[i].p = r.a - k
            if r.x > w then
                out[i].y = r.x * w
                t = t + 100
            elseif i % 3 == 0 then
                y = y - w
            end
        elseif r.b > 1000 then
            t = t * 3
            y = y / 3
            if k > 0 then
                t = t + k
            end
        elseif r.a == k then
            out[i].q = r.b ~ 255
        else
            local u = r.a ~ k
            if (r.a & 1) == 0 then
                t = -t
            else
                t = t ~ u
                out[i].q = r.b
            end
        end
        out[i].s = t
        out[i].z = y
    end
end

return {In = In, Res = Res, route = route}
"""

# Varying whiles under masks: a Collatz-like while whose body is a masked if;
# a while inside a masked if, storing under both masks; a uniform while inside
# the gang; a `while true` its lanes leave by breaks under masks; lanes leaving
# at different rounds, NaN and infinities included.
WHILE_KERNEL = IN_RES + """

@aot
local function steps(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>, k: int32, w: number): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local x = inp[i].a
        local y = inp[i].x
        local n: int32 = 0
        while x ~= 1 and n < 40 do
            if (x & 1) == 0 then
                x = x // 2
            else
                x = 3 * x + 1
            end
            n = n + 1
        end
        if y > w then
            local t = y
            while t > w and n < 90 do
                t = t * 0.5
                n = n + 2
                if t < 1 then
                    out[i].z = t
                end
            end
            out[i].y = t
        end
        local u: int32 = 0
        while u < k do
            u = u + 1
        end
        local z = inp[i].a
        local m: int32 = 0
        while true do
            if z == 1 or m >= 30 then
                break
            end
            if (z & 1) == 0 then
                z = z // 2
            else
                z = 3 * z + 1
            end
            m = m + 1
            if m == k then
                break
            end
        end
        out[i].p = n + u
        out[i].s = x
        out[i].q = m
    end
end

return {In = In, Res = Res, steps = steps}
"""

# Inner fors whose counter varies: varying bounds (a break under a mask, a
# negative step), uniform bounds under a mask, a count up to INT32_MAX.
FOR_KERNEL = IN_RES + """
@aot
local function counts(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>, k: int32, w: number): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = inp[i].a
        local n = a % 20
        local t: int32 = 0
        for j = 1, n do
            t = t + j * k
            if t > 1000 then
                break
            end
        end
        for j = n, n - 7, -2 do
            t = t ~ j
        end
        local y = inp[i].x
        if y > w then
            for j = 3, 1, -1 do
                y = y * 0.5 + j
            end
        end
        if a > 2147483640 then
            for j = a, 2147483647 do
                t = t + 1
            end
        end
        out[i].p = t
        out[i].y = y
    end
end

return {In = In, Res = Res, counts = counts}
"""

# Breaks out of the span loop before anything observable in their iteration:
# lanes from the first breaking one on stop, later gangs and the tail never
# run; a reduction and stores after the break count only the earlier lanes.
BREAK_KERNEL = IN_RES + """
@aot
local function upto(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>, k: int32): int32
    assert(#out == #inp, "length mismatch")
    local total: int32 = 0
    for i = 1, #out do
        if k == 77 then
            break
        end
        local a = inp[i].a
        if a > k then
            break
        else
            out[i].q = inp[i].b
        end
        total = total + a
        out[i].p = a * 2
    end
    return total
end

return {In = In, Res = Res, upto = upto}
"""

# Ops that can raise, before anything observable in their iteration: a
# division by a varying possible zero, a remainder by a uniform one under a
# mask; the first raising lane's error, the earlier lanes' stores done.
RAISE_KERNEL = IN_RES + """
@aot
local function ratios(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>, k: int32): int32
    assert(#out == #inp, "length mismatch")
    local total: int32 = 0
    for i = 1, #out do
        local a = inp[i].a
        local q = k // (a % 7)
        local r: int32 = 0
        if a > 0 then
            r = a % (k - 3)
        end
        total = total + q
        out[i].p = q + r
    end
    return total
end

return {In = In, Res = Res, ratios = ratios}
"""

# Short circuits whose right operand can raise (integer // and % by a divisor
# that may be zero, int32 / uint32 / int64, a call that asserts, `not (.. or ..)`,
# `and` as a value): it runs only in the lanes its left operand leaves
# undecided.  A uniform local (%c) set under the mask of the lanes a raise
# leaves going stays scalar; after a break locals vary.
GUARD_KERNEL = IN_RES + """
@aot
local function positive(x: int32): boolean
    assert(x ~= -1, "minus one")
    return x > 0
end

@aot
local function guards(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>, k: int32): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = inp[i].a
        local c: int32 = k
        local p: int32 = 0
        if a ~= 0 and 100 // a > c then p = 1 end
        if not (a == 0 or k % a == c) then p = p + 2 end
        local w = a > 5 and positive(a - 6)
        if w then p = p + 4 end
        local big: int64 = a
        if big ~= 0 and 9000000000 // big > c then p = p + 8 end
        local u = inp[i].b
        if (u == 0 or 7 // u == 1) and c > 0 then p = p + 16 end
        out[i].p = p
        out[i].s = c
    end
end

@aot
local function uniforms(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>, k: int32): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = inp[i].a
        if a == k then break end
        local c: int32 = k + 1
        local f = false or false
        if f then c = 0 end
        local q = 1000 // (a - k + 1)
        out[i].p = q + c
        out[i].s = c
    end
end

return {In = In, Res = Res, guards = guards, uniforms = uniforms}
"""

# Calls with varying arguments, once per active lane: a callee that can raise
# (a division, an assert), one returning a boolean, one called under a mask.
CALL_KERNEL = IN_RES + """
@aot
local function scale(x: int32, k: int32): int32
    return x * 3 // k
end

@aot
local function odd(x: int32): boolean
    return (x & 1) == 1
end

@aot
local function check(x: int32): nil
    assert(x ~= -1, "minus one")
end

@aot
local function calls(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>, k: int32): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = inp[i].a
        check(a)
        local s = scale(a, k - (a & 1))
        local t: int32 = 0
        if odd(a) then
            t = scale(t + a, 2)
        end
        out[i].p = s + t
    end
end

return {In = In, Res = Res, calls = calls}
"""

# Reductions with exact ops: int32 wrapping add (one update under a mask),
# bxor, binary64 min and max (NaN, -0 and +0 among the inputs), mul, sub.
REDUCE_KERNEL = IN_RES + """
@aot
local function isum(borrows inp: span.Span<In>, k: int32): int32
    local s: int32 = k
    for i = 1, #inp do
        local r = inp[i]
        s = s + r.a * 3
        if r.a > k then
            s = s + k
        end
    end
    return s
end

@aot
local function xorall(borrows inp: span.Span<In>, k: int32): int32
    local h: int32 = k
    for i = 1, #inp do
        h = h ~ inp[i].a
    end
    return h
end

@aot
local function fmin(borrows inp: span.Span<In>, k: int32): number
    local m = k + 0.5
    for i = 1, #inp do
        m = math.min(m, inp[i].x)
    end
    return m
end

@aot
local function fmax(borrows inp: span.Span<In>, k: int32): number
    local m = -1e300
    for i = 1, #inp do
        local x = inp[i].x
        if x > k then
            m = math.max(x, m)
        end
    end
    return m
end

@aot
local function prod(borrows inp: span.Span<In>, k: int32): int32
    local p: int32 = 1
    local d: int32 = k
    for i = 1, #inp do
        p = p * (inp[i].a | 1)
    end
    for i = 1, #inp do
        d = d - inp[i].a
    end
    return p + d
end

return {In = In, isum = isum, xorall = xorall, fmin = fmin, fmax = fmax, prod = prod}
"""
REDUCTIONS = ("isum", "xorall", "fmin", "fmax", "prod")

# A loop with an op that can raise (// by a variable) stays scalar.
RAISING_KERNEL = """\
local span = nupp.mem.span

local struct Cell
    v: int32
end

@aot
local function divide(exclusive out: span.WriteSpan<Cell>, d: int32): nil
    for i = 1, #out do
        out[i].v = out[i].v // d
    end
end

return {Cell = Cell, divide = divide}
"""

QUALIFYING = {"mixedwidth": "mix", "simd": "advance", "corrected": "correct", "tecsbits": "query",
              "mandelbrot": "mandelbrot"}


# The lane test kernels: name -> (file, source, function, spans, scalar arguments).
NAN, INF = float("nan"), float("inf")
TEST_KERNELS = {
    "lanemix": ("lanemix", LANE_KERNEL, "blend", ("Out", "Row"),
                ((3, 0.5), (-1, NAN), (-2147483648, INF), (7, -1e300))),
    "masked": ("masked", MASKED_KERNEL, "route", ("Res", "In"),
               ((3, 0.5), (-2147483648, NAN), (2147483647, -INF), (0, 1e300), (-1, -0.0))),
    "whiles": ("whiles", WHILE_KERNEL, "steps", ("Res", "In"),
               ((3, 0.5), (0, NAN), (-5, INF), (7, -1e300), (2, 1e6))),
    "fors": ("fors", FOR_KERNEL, "counts", ("Res", "In"), ((3, 0.5), (0, NAN), (-5, INF), (2147483647, -1e300))),
    "breaks": ("breaks", BREAK_KERNEL, "upto", ("Res", "In"), ((3,), (-1,), (77,), (1000000,), (2147483647,))),
    "raises": ("raises", RAISE_KERNEL, "ratios", ("Res", "In"), ((3,), (10,), (-1,), (0,), (-2147483648,))),
    "calls": ("calls", CALL_KERNEL, "calls", ("Res", "In"), ((3,), (1,), (0,), (-7,))),
    "raising": ("raising", RAISING_KERNEL, "divide", ("Cell",), ((3,), (-1,), (0,))),
    "guards": ("guards", GUARD_KERNEL, "guards", ("Res", "In"), ((3,), (0,), (-1,), (7,), (-2147483648,))),
    "uniforms": ("guards", GUARD_KERNEL, "uniforms", ("Res", "In"), ((3,), (0,), (-1,), (2147483647,))),
    **{name: ("reduce", REDUCE_KERNEL, name, ("In",), ((3,), (-1,), (0,), (2147483647,))) for name in REDUCTIONS},
}


def write_test_kernels(folder: Path) -> dict[str, Kernel]:
    """The BENCH kernels and the lane test kernels (written into `folder`)."""
    found = dict(KERNELS)
    for name, (stem, text, function, spans, scalars) in TEST_KERNELS.items():
        path = folder / f"{stem}.nupp"
        path.write_text(text)
        found[name] = Kernel(path, function, spans, scalars)
    return found


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> dict[str, Kernel]:
    return write_test_kernels(tmp_path_factory.mktemp("lane-kernels"))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("nupp-lane-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(cache_dir, monkeypatch):
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache_dir))


_LOADED: dict = {}


def loaded(path: Path, mode: str, cc: str = "gcc", gang: int = 8):
    key = (str(path), mode, cc, gang)
    if key not in _LOADED:
        _LOADED[key] = load(str(path), mode=mode, cc=cc, gang=gang)
    return _LOADED[key]


def compiled(path: Path):
    source = Source.from_file(display_path(path))
    return source, compile_module(source)


def lane_cases(module, kernel: Kernel, gang: int):
    """(label, args): every span length 0..2G+1 with each scalar tuple, then the full edge set."""
    for n in range(2 * gang + 2):
        for scalars in kernel.scalars:
            yield f"length {n} {scalars}", (*kernel_inputs(module, kernel, n, offset=7 * n), *scalars)
    full = kernel_inputs(module, kernel, FULL_ROWS, RANDOM_ROWS)
    for scalars in kernel.scalars:
        yield f"full {scalars}", (*full, *scalars)
    if len(kernel.spans) > 1:
        spans = kernel_inputs(module, kernel, 3)
        spans[-1] = kernel_inputs(module, kernel, 4)[-1]
        yield "length mismatch", (*spans, *kernel.scalars[0])


def assert_same(scalar, lane, what: str) -> None:
    assert scalar.error == lane.error, f"{what}: error texts differ: {scalar.error!r} vs {lane.error!r}"
    assert same_scalar(scalar.result, lane.result), f"{what}: results {scalar.result!r} vs {lane.result!r}"
    for k, (a, b) in enumerate(zip(scalar.spans, lane.spans)):
        problems = field_differences(a, b)
        assert not problems, f"{what}: span #{k + 1} differs:\n" + "\n".join(problems[:10])


# ---- which loops run in gangs ---------------------------------------------------------------

def reasons(module, function=None) -> list:
    """Why each span loop (of one function, or all) stays scalar; None where it runs in gangs."""
    return [d.reason for d in lane_decisions(module) if function in (None, d.function)]


@pytest.mark.parametrize("name", sorted(QUALIFYING))
def test_bench_loop_runs_in_gangs(name):
    _, module = compiled(KERNELS[name].path)
    assert reasons(module, QUALIFYING[name]) == [None]


def test_a_raise_after_a_store_stays_scalar_and_its_c_is_the_scalar_c(tmp_path):
    """A store before a division by a possible zero: the later lanes would
    already have stored when an earlier lane raises.  The loop stays scalar
    and its lane C is the scalar C."""
    path = tmp_path / "late.nupp"
    path.write_text(RAISING_KERNEL.replace("        out[i].v = out[i].v // d\n",
                                           "        out[i].v = 1\n        out[i].v = out[i].v // d\n"))
    source, module = compiled(path)
    (why,) = reasons(module)
    assert why.startswith("an op that can raise at ") and "after a store at " in why
    lane = emit_lane_module(lanes_at(module, 8), source.path, "nupp_").source
    scalar = emit_module(module, source.path, "nupp_").source
    assert lane.split("*/", 1)[1] == scalar.split("*/", 1)[1]


@pytest.mark.parametrize("name", sorted(TEST_KERNELS))
def test_the_lane_kernels_run_in_gangs(name, kernels):
    _, module = compiled(kernels[name].path)
    assert set(reasons(module)) == {None}


def test_a_varying_if_runs_under_masks(kernels):
    source, module = compiled(KERNELS["tecsbits"].path)
    text = emit_lane_module(lanes_at(module, 4), source.path, "nupp_").source
    body = text.split("c1 += 4) {", 1)[1].split("for (; c1 <= n_out; ++c1)", 1)[0]
    assert "switch" not in body  # the switch on a varying selector is its chain of masked ifs
    assert " & ~t" not in body  # arms of constants: each under its own condition, last first
    assert "(((nu_i32x4)" in body and "& ~m" in body  # per-lane selects are bitwise blends
    assert "nu_lanes_x4" not in body  # arms of a few assignments: selects, no branch
    assert "switch (v_sel_2_2) {" in text  # the scalar tail keeps the C switch
    source, module = compiled(kernels["masked"].path)  # arms that store
    text = emit_lane_module(lanes_at(module, 4), source.path, "nupp_").source
    assert "if (nu_lanes_x4(&m" in text  # a side with no active lane is skipped
    assert " & ~t" in text  # the else mask: mask & ~cond


def test_a_loop_inside_a_varying_if_runs_under_its_mask(tmp_path):
    """A uniform-bounds for under a varying if counts per lane (its counter
    varies), storing under the mask: rewritten, and equal to scalar C."""
    path = tmp_path / "inner.nupp"
    path.write_text(RAISING_KERNEL.replace("        out[i].v = out[i].v // d\n", (
        "        if out[i].v > d then\n"
        "            for j = 1, 3 do\n"
        "                out[i].v = out[i].v + j\n"
        "            end\n"
        "        end\n")))
    _, module = compiled(path)
    assert reasons(module) == [None]
    kernel = Kernel(path, "divide", ("Cell",), ((3,), (-1,), (2147483647,)))
    scalar, lane = loaded(path, "scalar"), loaded(path, "lane", gang=4)
    for label, args in lane_cases(scalar, kernel, 4):
        assert_same(call(scalar, "divide", args), call(lane, "divide", args), label)


# ---- the text -------------------------------------------------------------------------------

def test_mix_lane_c_has_vector_types_a_gang_loop_and_a_scalar_tail():
    source, module = compiled(KERNELS["mixedwidth"].path)
    text = emit_lane_module(lanes_at(module, 8), source.path, "nupp_").source
    assert "typedef double nu_f64x8 __attribute__((vector_size(64)));" in text
    assert "typedef float nu_f32x8 __attribute__((vector_size(32)));" in text
    assert "gangs of 8" in text.split("*/", 1)[0]
    assert "for (; c1 + 7 <= n_outputs; c1 += 8) {" in text
    assert "for (; c1 <= n_outputs; ++c1) {" in text  # the tail
    # a struct of one field: the gang's elements are one block, loaded and stored whole;
    # the stored binary64 is narrowed by one conversion, no blend (its NaN is "a NaN")
    assert "memcpy(&t3, &p_inputs[b2 - 1].f_value, sizeof t3);" in text
    assert "const nu_f32x8 t9 = __builtin_convertvector(t8, nu_f32x8);" in text
    assert "memcpy(&p_outputs[b2 + 0 - 1].f_value, &t9, sizeof t9);" in text
    assert "0x7FC00000" not in text.split("int32_t nuppi_mix(", 1)[1].split("\n}\n", 1)[0]
    # f32.narrow of the float field's binary64 is the loaded binary32 vector itself
    assert "const nu_f32x8 t6 = (t3 + t3);" in text
    # the functions without a span loop are the scalar C
    scalar = emit_module(module, source.path, "nupp_").source
    for name in ("nuppi_add", "nuppi_choose"):
        assert scalar.split(f"static int32_t {name}(")[1].split("\n}\n")[0] in text
    four = emit_lane_module(lanes_at(module, 4), source.path, "nupp_").source
    assert "typedef float nu_f32x4 __attribute__((vector_size(16)));" in four
    assert "for (; c1 + 3 <= n_outputs; c1 += 4) {" in four


def test_structs_of_same_size_fields_move_as_blocks_and_shuffles():
    """tecsbits: Entity {int32, int32, uint32} is read as 3 vectors of the gang's
    12 words and shuffled into fields; Verdict {int32, uint32}, written whole,
    is interleaved and written as 2 vectors; a GCC before 12 reads lane by lane."""
    source, module = compiled(KERNELS["tecsbits"].path)
    text = emit_lane_module(lanes_at(module, 4), source.path, "nupp_").source
    body = text.split("c1 += 4) {", 1)[1].split("for (; c1 <= n_out; ++c1)", 1)[0]
    assert "nu_load_i32x4(&v3, (const char *)&p_ents[b2 - 1] + 0 * sizeof v3);" in body
    assert "__builtin_shufflevector(v3, v4, 0, 3, 6, 0)" in body  # mask: elements 0, 1, 2 ...
    assert ", v5, 0, 1, 2, 5)" in body                              # ... and 3 from the third vector
    assert "#if defined(__clang__) || __GNUC__ >= 12" in body and "#else" in body
    assert body.count("memcpy((char *)&p_out[b2 - 1] + ") == 2    # Verdict: two whole vectors
    assert ", 0, 4, 1, 5)" in body and ", 2, 6, 3, 7)" in body  # selected/hash interleaved


def test_gang_must_be_4_8_or_16():
    source, module = compiled(KERNELS["mixedwidth"].path)
    with pytest.raises(ValueError):
        emit_lane_module(lanes_at(module, 12), source.path, "nupp_")


# ---- the C compiles clean -------------------------------------------------------------------

@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("gang", GANGS)
def test_lane_c_compiles_without_warnings(cc, gang, kernels, tmp_path):
    require_tool(cc)
    for name, kernel in sorted(kernels.items()):
        source, module = compiled(kernel.path)
        c_file = tmp_path / f"{name}.c"
        c_file.write_text(emit_lane_module(lanes_at(module, gang), source.path, "nupp_").source)
        proc = subprocess.run([cc, "-std=c11", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Wpedantic",
                               "-Werror", "-fPIC", "-shared", "-o", str(tmp_path / f"{name}.so"), str(c_file),
                               "-lm"], capture_output=True, text=True)
        assert proc.returncode == 0, f"{name} G={gang} ({cc}):\n{proc.stderr}"


# ---- lane C equals scalar C -----------------------------------------------------------------

@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("gang", [*GANGS, pytest.param(16, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", sorted(QUALIFYING) + sorted(TEST_KERNELS))
def test_lane_agrees_with_scalar_on_every_tail(name, gang, cc, kernels):
    require_tool(cc)
    kernel = kernels[name]
    scalar = loaded(kernel.path, "scalar", cc)
    lane = loaded(kernel.path, "lane", cc, gang)
    for label, args in lane_cases(scalar, kernel, gang):
        assert_same(call(scalar, kernel.function, args), call(lane, kernel.function, args),
                    f"{name} {label} (G={gang}, {cc})")


def test_host_accepts_mode_lane_and_cli_parses_gang():
    from nupp.runtime.cli import build_parser
    assert Host(mode="lane", gang=4).gang == 4
    args = build_parser().parse_args(["run", "--mode", "lane", "--gang", "4", "x.nupp"])
    assert (args.mode, args.gang) == ("lane", "4")


# an execution, as nupp.executions names it
_EXECUTION_NAME = re.compile(r"\b(interp|scalar(-\w+)?|lane\d+-\w+)\b")


def test_nupp_run_mode_lane(tmp_path):
    env = dict(os.environ, NUPP_CACHE_DIR=str(tmp_path))
    script = str(ROOT / "bench" / "kernel-subset-spike" / "mixedwidth_main.nupp")
    outputs = []
    for extra in (["--mode", "scalar"], ["--mode", "lane", "--gang", "4"], ["--mode", "lane"]):
        proc = subprocess.run([sys.executable, "-m", "nupp", "run", *extra, script, "1000"],
                              capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        # the native execution is named after its mode (lane: gang and tier, `lane4-v3`)
        want = "scalar" if extra[1] == "scalar" else r"lane" + (extra[3] if len(extra) > 2 else r"\d+") + r"\S*"
        found = re.search(rf"  ({want}) ", proc.stdout)
        assert found, proc.stdout
        # Every execution prints the same rows and sections but for its name and its
        # samples/s, and lane mode lists more executions (the scalar C, every gang):
        # the distinct lines, names and timings blanked, must be the same in every mode.
        rows = [_EXECUTION_NAME.sub("EXECUTION", line).split() for line in proc.stdout.splitlines()]
        outputs.append({tuple(row[:-2] + row[-1:] if row and row[-1] in ("yes", "no") else row) for row in rows})
        assert any("EXECUTION" in row and "no" not in row for row in outputs[-1])
    assert outputs[0] == outputs[1] == outputs[2]


# ---- UBSan ----------------------------------------------------------------------------------

# GCC 12.2 at -O2 with -fsanitize=undefined computes wrong answers for lane C
# whose gangs hold int64 x 8 vectors (the fors kernel's masked for: wrong
# counts in lanes 4..7, at the baseline tier and at v3), with no UBSan report.
# Every build without the sanitizer (-O1 to -O3), Clang -O2 with it, and GCC
# -O1 with it compute the scalar C's answers, so GCC's UBSan run of lane C
# builds at -O1 (the last -O wins).  Reduced case: tests/gcc_ubsan_vectors.md.
LANE_UBSAN_EXTRA = {"gcc": ("-O1",)}


def lane_ubsan_child(cc: str, out_dir: str, folder: str) -> None:
    """In a child process: the lane C of every BENCH and lane test kernel (G = 4
    and 8) built with UBSan, called through cffi on lane_cases' inputs; the
    outputs saved as .npy."""
    from nupp.targets.toolchain import find_toolchain

    toolchain = find_toolchain(cc, extra_flags=_ubsan_flags(cc) + LANE_UBSAN_EXTRA.get(cc, ()))
    save_lane_outcomes(toolchain, Path(out_dir), write_test_kernels(Path(folder)), GANGS)


def save_lane_outcomes(toolchain, out_dir: Path, targets: dict, gangs, wrapper=None) -> None:
    """Each kernel's lane C at each gang, built with `toolchain`, called through
    cffi on lane_cases' inputs: each call's status and spans saved as
    `NAME-GANG-INDEX.status` / `-K.npy` (saved_outputs_match reads them).
    `wrapper(cfunction) -> (C, its prototype, symbol)`: C appended to the unit,
    whose function `symbol` (same parameters) is called instead."""
    import cffi

    from nupp.targets.toolchain import build_library

    for gang in gangs:
        for name in sorted(targets):
            kernel = targets[name]
            source, module = compiled(kernel.path)
            cmodule = emit_lane_module(lanes_at(module, gang), source.path, "nupp_")
            fn = next(f for f in cmodule.functions if f.name == kernel.function)
            extra, prototype, symbol = wrapper(fn) if wrapper else ("", "", fn.symbol)
            library = build_library(cmodule.source + extra, toolchain, source.path)
            ffi = cffi.FFI()
            ffi.cdef(cmodule.cdef + prototype)
            entry = getattr(ffi.dlopen(str(library)), symbol)
            interp = load(str(kernel.path), mode="interp")  # the dtypes and the inputs only
            for index, (_, args) in enumerate(lane_cases(interp, kernel, gang)):
                args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                c_args = []
                for a in args:
                    c_args += [ffi.cast("void *", a.ctypes.data), len(a)] if isinstance(a, np.ndarray) else [a]
                if fn.result is not None:
                    c_args.append(ffi.new(f"{fn.result} *"))
                status = entry(*c_args)
                for k, a in enumerate(a for a in args if isinstance(a, np.ndarray)):
                    np.save(out_dir / f"{name}-{gang}-{index}-{k}.npy", a)
                (out_dir / f"{name}-{gang}-{index}.status").write_text(str(status))


@pytest.mark.slow
@pytest.mark.parametrize("cc", COMPILERS)
def test_lane_c_runs_clean_under_ubsan(cc, tmp_path, kernels):
    require_tool(cc)
    env = ubsan_environment(cc)
    env["NUPP_CACHE_DIR"] = str(tmp_path / "cache")
    folder = str(kernels["lanemix"].path.parent)
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from tests.test_lane_c import lane_ubsan_child; "
         "lane_ubsan_child(sys.argv[1], sys.argv[2], sys.argv[3])", cc, str(tmp_path), folder],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-6000:]}"
    assert "runtime error" not in proc.stderr, proc.stderr[-6000:]
    compared = 0
    for gang in GANGS:
        for name in sorted(kernels):
            kernel = kernels[name]
            scalar = loaded(kernel.path, "scalar", cc)
            for index, (label, args) in enumerate(lane_cases(scalar, kernel, gang)):
                expected = call(scalar, kernel.function, args)
                compared += saved_outputs_match(tmp_path, f"{name}-{gang}-{index}", expected,
                                                f"{name} G={gang} {label} (UBSan)")
    assert compared > 0


# ---- generated kernels ----------------------------------------------------------------------

def run_generated_lanes(path: Path, cc: str, gangs=GANGS) -> None:
    """Scalar C against lane C at each gang on every span length 0..2G+1 (edge
    rows, garbage outputs) and the full edge set, with every scalar pair."""
    scalar = loaded(path, "scalar", cc)
    In, Out = scalar.dtype("In"), scalar.dtype("Out")
    edges = edge_array(In, GENERATED_ROWS, random_rows=GENERATED_RANDOM_ROWS)
    for gang in gangs:
        lane = loaded(path, "lane", cc, gang)
        lengths = [*range(2 * gang + 2), len(edges)]
        for n, (p, q) in itertools.product(lengths, KERNEL_SCALARS):
            rows = np.roll(edges, 3 * n)[:n]
            args = (garbage_array(Out, n, seed=n), rows, p, q)
            assert_same(call(scalar, "k", args), call(lane, "k", args),
                        f"{path.name} k(out[{n}], inp[{n}], {p}, {q}) G={gang} ({cc})\n{path.read_text()}")


@pytest.mark.parametrize("cc", COMPILERS)
def test_generated_kernels_agree_in_gangs(cc, tmp_path_factory):
    """hypothesis: kernels with varying ifs and whiles (kernelgen, lane_friendly)
    are lane-rewritten, and lane C agrees with scalar C bit for bit."""
    require_tool(cc)
    folder = tmp_path_factory.mktemp(f"generated-lanes-{cc}")

    @given(generated_kernels(lane_friendly=True))
    @settings(max_examples=15 if not UNDER_CI else 30, deadline=None,
              suppress_health_check=list(HealthCheck))
    def agree(kernel):
        path = write_generated(folder, kernel.text)
        _, module = compiled(path)
        assert reasons(module, "k") == [None], kernel.text
        run_generated_lanes(path, cc)

    agree()
