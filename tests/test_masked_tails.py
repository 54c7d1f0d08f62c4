"""Masked tails (emit_c/lane.py `masked_tail`, `masked_tails`): a span loop's
last n mod G iterations as one gang (the smallest that holds them) under a
mask of the lanes before the end, the fewest as the scalar loop, bit for bit
the scalar C's.

  * the rule: a loop with a masked while or for takes the masked tail, a
    streaming loop keeps the scalar one; `nupp emit --report` says which;
  * TAIL_KERNEL (a masked while, so the rule gives it the masked tail, with a
    break, two ops that raise on different lines, a reduction) at gangs 4, 8,
    16 and 32 under GCC and Clang, at every length 0..2G+1 and 3G: a raising
    lane at each position of the tail (and in the gang before it), two
    raising lanes in both orders (the first in iteration order wins), a break
    at each position, a break before and after a raise;
  * every kernel of tests/test_lane_c.py (the BENCH kernels and the lane test
    kernels: masked ifs, whiles, fors, breaks, raises, calls, guards,
    reductions) with every loop forced to the masked tail, at every length
    0..2G+1 and 3G: stores, results and error texts as scalar C's;
  * memory: every span ends at the end of a page followed by an inaccessible
    one (a read or write past the end faults), in a child process, whose
    harness is shown to fault on such a read;
  * the text: the tail gang's mask, its loads lane by lane at the clamped
    counter, its guarded stores, the scalar loop only for the fewest left (and
    a streaming loop's scalar tail kept); per register width, which path each
    remainder 1..G-1 takes (the scalar loop up to SCALAR_TAIL iterations, else
    the smallest gang that holds them: one vector of a narrower register, 1, 2,
    4 ... vectors, the whole gang), so the differentials at every length reach
    each path.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import nupp.emit_c.lane as lane
from nupp.emit_c.lane import emit_lane_module, masked_tail
from nupp.errors import Source
from nupp.pipeline import compile_module, lanes_at
from nupp.runtime.api import load
from nupp.runtime.cli import main
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.walk import statements

from .conftest import require_tool
from .test_lane_c import IN_RES, QUALIFYING, TEST_KERNELS, assert_same, write_test_kernels
from .test_native_differential import COMPILERS, call, kernel_inputs

ROOT = Path(__file__).resolve().parent.parent
GANGS = (4, 8, 16, 32)

# A masked while (the rule's masked tail), a break, two ops that raise on
# different lines (a == 0: the division, a == 1: the remainder), a reduction,
# stores after them.
TAIL_KERNEL = IN_RES + """
@aot
local function tail(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>, k: int32): int32
    assert(#out == #inp, "length mismatch")
    local total: int32 = 0
    for i = 1, #out do
        local a = inp[i].a
        if a == k then
            break
        end
        local q = 1000 // a
        local r = 999 % (a - 1)
        local x = a
        local n: int32 = 0
        while x > 1 and n < 40 do
            x = x // 2
            n = n + 1
        end
        total = total + (q + n)
        out[i].p = q + r
        out[i].s = n
        out[i].y = inp[i].x
    end
    return total
end

-- a streaming loop: the scalar tail
@aot
local function copy(exclusive out: span.WriteSpan<Res>, borrows inp: span.Span<In>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        out[i].p = inp[i].a * 3
    end
end

return {In = In, Res = Res, tail = tail, copy = copy}
"""
BREAK_AT = -7  # k: the element that breaks


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("masked-tails")
    (folder / "tail.nupp").write_text(TAIL_KERNEL)
    return folder


@pytest.fixture(autouse=True)
def _isolated_cache(folder, monkeypatch):
    monkeypatch.setenv("NUPP_CACHE_DIR", str(folder / "cache"))


@pytest.fixture
def forced(monkeypatch):
    """Every loop in gangs takes the masked tail (its own module cache entries)."""
    monkeypatch.setattr(lane, "masked_tail", lambda gang: True)
    monkeypatch.setenv("NUPP_TEST_TAILS", "masked")


def lengths(gang: int) -> list[int]:
    return [*range(2 * gang + 2), 3 * gang]


def gangs_of(text: str) -> list[ir.Gang]:
    module = lanes_at(compile_module(Source("k.nupp", text)), 8)
    return [s for fn in module.functions for s in statements(fn.body) if isinstance(s, ir.Gang)]


# ---- the rule and the report ------------------------------------------------------------------------

def test_a_loop_with_a_masked_loop_takes_the_masked_tail_and_a_streaming_loop_the_scalar_one():
    tail, copy = gangs_of(TAIL_KERNEL)
    assert masked_tail(tail) and not masked_tail(copy)
    bench = ROOT / "bench" / "kernel-subset-spike"
    chosen = {name: [masked_tail(g) for g in gangs_of((bench / f"{name}.nupp").read_text())] for name in QUALIFYING}
    assert chosen == {"mandelbrot": [True], "corrected": [False], "tecsbits": [False], "mixedwidth": [False],
                      "simd": [False]}


def test_the_report_says_which_tail_each_loop_takes(folder, capsys):
    assert main(["emit", "--report", str(folder / "tail.nupp")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if ": at v3: " in line]
    assert len(lines) == 2
    assert lines[0].endswith(f"; tail: {lane.MASKED_TAIL_WORDS}") and ":21:5: loop over %i: " in lines[0]
    assert lines[1].endswith("; tail: the scalar loop") and ":46:5: loop over %i: " in lines[1]


# ---- the text -----------------------------------------------------------------------------------------

def test_the_tail_is_one_gang_under_a_mask_with_loads_at_the_clamped_counter():
    c = emit_lane_module(lanes_at(compile_module(Source("tail.nupp", TAIL_KERNEL)), 8), "tail.nupp").source
    tail_fn = c[c.index("nuppi_tail("):c.index("nuppi_copy(")]
    copy_fn = c[c.index("nuppi_copy("):]
    assert "if (!stop" in tail_fn and "(int32_t)(n_out - c" in tail_fn  # the tail gang, its last active lane
    assert f"n_out - c1 < {lane.SCALAR_TAIL}; ++c1)" in tail_fn  # the scalar loop only for the fewest left
    assert "p_inp[v_i_2[0] - 1].f_a" in tail_fn  # lane by lane at the clamped counter
    assert "memcpy(&" not in tail_fn.split("if (!stop")[-1]  # no whole-gang load or store in the tail
    assert "++c" in copy_fn and "(int32_t)(n_out - c" not in copy_fn  # the streaming loop's scalar tail


def tail_paths(function_c: str) -> list[dict[str, tuple[int, int]]]:
    """Per register width (each `#if` branch of the gang loop, top level, widest
    first): the tail's paths, each C condition (its part after `c1 <= n_out`) ->
    (lanes per vector, vectors) of its gang, read off its mask (a vector of lanes
    <= the last lane left, per vector); the scalar loop's -> (1, 1)."""
    branches, depth, scalar = [{}], 0, None
    lines = function_c.splitlines()
    for k, line in enumerate(lines):
        code = line.strip()
        depth += code.startswith("#if") - code.startswith("#endif")
        if depth == 1 and code.startswith(("#elif", "#else")):
            branches.append({})
        tail = re.fullmatch(r"if \(!stop\d+ && c1 <= n_out(.*)\) \{", code)
        if tail:
            masks = [re.fullmatch(r"nu_i32x(\d+) (a\d+)(_\d+)? = \(t\d+ <= t\d+\);", s.strip())
                     for s in lines[k + 1:k + 100]]
            masks = [m for m in masks if m]
            masks = [m for m in masks if m[2] == masks[0][2]]  # the tail's own mask, one name per vector
            branches[-1][tail[1]] = (int(masks[0][1]), len(masks))
        loop = re.fullmatch(r"for \(; !stop\d+ && c1 <= n_out(.*); \+\+c1\) \{", code)
        if loop:
            scalar = loop[1]
    return [{**paths, scalar: (1, 1)} for paths in branches]


def picks(condition: str, last: int) -> bool:
    """Whether a tail path's C condition holds when the last lane left is `last` (n_out - c1)."""
    return eval(condition.replace("n_out - c1", str(last)).replace("&&", "and").removeprefix(" and") or "True")


def wanted_tail(left: int, gang: int, width: int, narrower: list[int]) -> tuple[int, int]:
    """The spec of the tail of `left` iterations: the scalar loop up to SCALAR_TAIL, else the
    smallest gang that holds them of one vector of a narrower register, 1, 2, 4 ... vectors of
    `width` lanes, or the whole gang."""
    if left <= lane.SCALAR_TAIL:
        return (1, 1)
    shapes = [(w, 1) for w in narrower if w < width] + [(width, 2 ** k) for k in range(6) if width * 2 ** k < gang]
    holding = [s for s in shapes if left <= s[0] * s[1] and s[0] * s[1] > lane.SCALAR_TAIL]
    return min(holding, key=lambda s: s[0] * s[1]) if holding else (width, gang // width)


@pytest.mark.parametrize("gang", GANGS)
def test_each_remainder_takes_the_scalar_loop_or_the_smallest_gang_that_holds_it(gang):
    """By the C text: each remainder 1..G-1 takes exactly one path, the one wanted_tail says."""
    c = emit_lane_module(lanes_at(compile_module(Source("tail.nupp", TAIL_KERNEL)), gang), "tail.nupp").source
    branches = tail_paths(c[c.index("nuppi_tail("):c.index("nuppi_copy(")])
    assert len(branches) >= 2  # AVX-512 or AVX2, and the rest: each its own vector width
    # each branch's lanes per vector: its whole gang's (the path of the most lanes)
    widths = [max(paths.values(), key=lambda shape: shape[0] * shape[1])[0] for paths in branches]
    seen = set()
    for k, paths in enumerate(branches):
        for left in range(1, gang):  # iterations left after the whole gangs
            taken = [shape for condition, shape in paths.items() if picks(condition, left - 1)]
            assert taken == [wanted_tail(left, gang, widths[k], widths[k + 1:])], (gang, left, k, paths)
            seen.add(taken[0][0] * taken[0][1])
    if gang >= 16:  # some tail of fewer lanes than the gang (and more than one) is written and taken
        assert any(1 < lanes < gang for lanes in seen), seen


# ---- the differentials --------------------------------------------------------------------------------

def tail_inputs(module, n: int, gang: int):
    """(label, inp): the plain span of n, then a raise or a break (or two) planted at
    each position of the tail and at the last position of the gang before it."""
    inp = np.zeros(n, dtype=module.dtype("In"))
    inp["a"] = 3 + (np.arange(n) * 37) % 1000  # while rounds 1..9
    inp["x"] = np.linspace(-1, 1, n)
    yield "plain", inp
    whole = n - n % gang
    for p in sorted({*range(whole, n), whole - 1} - {-1}):
        later = sorted({q for q in (p + 1, n - 1) if p < q < n})
        plants = [{p: 0}, {p: 1}, {p: BREAK_AT}]
        plants += [{p: 0, q: 1} for q in later] + [{p: 1, q: 0} for q in later] + [{p: BREAK_AT, q: 0} for q in later]
        plants += [{p: 0, q: BREAK_AT} for q in later]
        for plant in plants:
            planted = inp.copy()
            for q, value in plant.items():
                planted["a"][q] = value
            yield f"a = {plant}", planted


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("gang", GANGS)
def test_raises_and_breaks_at_every_position_of_the_tail(folder, gang, cc):
    require_tool(cc)
    path = folder / "tail.nupp"
    scalar, lanes = load(path, mode="scalar", cc=cc), load(path, mode="lane", cc=cc, gang=gang)
    assert lanes.execution.startswith(f"lane{gang}-")
    errors = set()
    for n in lengths(gang):
        for label, inp in tail_inputs(scalar, n, gang):
            args = (np.zeros(n, dtype=scalar.dtype("Res")), inp, BREAK_AT)
            expected = call(scalar, "tail", args)
            assert_same(expected, call(lanes, "tail", args), f"length {n}, {label} (G={gang}, {cc})")
            errors.add(expected.error and expected.error.split(":")[1])
            if label == "plain":
                out = np.zeros(n, dtype=scalar.dtype("Res"))
                assert_same(call(scalar, "copy", (out, inp)), call(lanes, "copy", (out, inp)), f"copy, length {n}")
    assert errors == {None, "26", "27"}  # both raising lines were reached (the division first)


@pytest.mark.parametrize("cc", ["gcc", pytest.param("clang", marks=pytest.mark.slow)])
@pytest.mark.parametrize("gang", GANGS)
def test_every_lane_kernel_agrees_with_scalar_c_with_masked_tails(folder, forced, gang, cc):
    require_tool(cc)
    (folder / "lane").mkdir(exist_ok=True)
    kernels = write_test_kernels(folder / "lane")
    for name in (*sorted(QUALIFYING), *sorted(TEST_KERNELS)):
        kernel = kernels[name]
        scalar = load(kernel.path, mode="scalar", cc=cc)
        lanes = load(kernel.path, mode="lane", cc=cc, gang=gang)
        for n in lengths(gang):
            for scalars in kernel.scalars:
                args = (*kernel_inputs(scalar, kernel, n, offset=7 * n), *scalars)
                assert_same(call(scalar, kernel.function, args), call(lanes, kernel.function, args),
                            f"{name} length {n} {scalars} (G={gang}, {cc}, masked tails)")


# ---- memory --------------------------------------------------------------------------------------------

# Each span of the call ends where a page ends, the next page inaccessible:
# a lane reading or writing one element past the end faults (SIGSEGV).
GUARDED_CHILD = textwrap.dedent("""\
    import ctypes, mmap, sys
    import numpy as np
    import nupp.emit_c.lane as lane
    from nupp.runtime.api import load

    path, function, gang, probe = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "probe"
    spans, scalars = sys.argv[5].split(","), eval(sys.argv[6])
    if sys.argv[7] == "forced":
        lane.masked_tail = lambda gang: True
    module, scalar = load(path, mode="lane", gang=gang), load(path, mode="scalar")
    PAGE = mmap.PAGESIZE
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    kept = []

    def at_page_end(source):
        pages = -(-max(source.nbytes, 1) // PAGE)
        block = mmap.mmap(-1, (pages + 1) * PAGE)
        start = ctypes.addressof(ctypes.c_char.from_buffer(block))
        assert libc.mprotect(start + pages * PAGE, PAGE, 0) == 0  # PROT_NONE
        kept.append(block)
        array = np.frombuffer(block, dtype=source.dtype, count=len(source), offset=pages * PAGE - source.nbytes)
        array[:] = source
        return array, start + pages * PAGE

    for n in range(1, 2 * gang + 2):
        rng = np.random.default_rng(n)
        sources = []
        for struct in spans:
            array = np.zeros(n, dtype=module.dtype(struct))
            for name in array.dtype.names:  # small values: short loops, no raise
                if array.dtype[name].kind in "iu":
                    array[name] = rng.integers(2, 52, n)
                else:
                    array[name] = np.linspace(-1.5, 0.5, n)
            sources.append(array)
        guarded = [at_page_end(source) for source in sources]
        if probe:  # the harness faults on a read one byte past the end
            ctypes.c_char.from_address(guarded[-1][1]).value
        arrays = [array for array, _ in guarded]
        copies = [source.copy() for source in sources]
        got = getattr(module, function)(*arrays, *scalars)
        want = getattr(scalar, function)(*copies, *scalars)
        fields = lambda array: [array[name].tobytes() for name in array.dtype.names]  # not the padding
        assert got == want and all(fields(a) == fields(c) for a, c in zip(arrays, copies)), n
    print("clean")
    """)


def guarded_run(folder: Path, path: Path, function: str, gang: int, spans: tuple[str, ...], scalars: tuple,
                forced: bool, probe: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUPP_CACHE_DIR": str(folder / "cache"), "NUPP_TEST_TAILS": "masked" if forced else ""}
    return subprocess.run([sys.executable, "-c", GUARDED_CHILD, str(path), function, str(gang),
                           "probe" if probe else "-", ",".join(spans), repr(scalars),
                           "forced" if forced else "rule"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)


def test_the_guard_page_harness_faults_on_a_read_past_the_end(folder):
    require_tool("gcc")
    proc = guarded_run(folder, folder / "tail.nupp", "tail", 4, ("Res", "In"), (BREAK_AT,), False, probe=True)
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stderr[-2000:])


GUARDED = {  # name -> (forced to the masked tail, spans, scalars)
    "tail": (False, ("Res", "In"), (BREAK_AT,)),
    "mandelbrot": (False, ("Escape", "Pixel"), (50,)),
    "mixedwidth": (True, ("Sample", "Sample"), ()),  # one field: whole-vector loads in the gangs
    "simd": (True, ("Body",), (0.01, 0.999)),  # read and written in place
    "tecsbits": (True, ("Verdict", "Entity"), (5, 0xF0)),
}


@pytest.mark.parametrize("gang", GANGS)
@pytest.mark.parametrize("name", sorted(GUARDED))
def test_no_lane_of_a_tail_reads_or_writes_past_the_end_of_a_span(folder, name, gang):
    require_tool("gcc")
    forced, spans, scalars = GUARDED[name]
    path = folder / "tail.nupp" if name == "tail" else ROOT / "bench" / "kernel-subset-spike" / f"{name}.nupp"
    function = "tail" if name == "tail" else QUALIFYING[name]
    proc = guarded_run(folder, path, function, gang, spans, scalars, forced)
    assert proc.returncode == 0 and proc.stdout == "clean\n", (proc.returncode, proc.stderr[-3000:])
