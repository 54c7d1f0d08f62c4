"""Differentials: the interpreter and scalar C agree bit for bit, through GCC and Clang.

Every call is made twice through the Python API (`nupp.load(path, mode=...)`,
the same host boundary as a call from Nupp): once with `mode="interp"` (the
@aot functions' IR rendered as Lua) and once with `mode="scalar"` (their C,
compiled by gcc or clang).  Both get identical copies of the inputs; the
written spans, the result and the error text (when one raises, both must,
with the same text, and with the same stores done before it) are compared:

  * binary64 (`number`) fields and results: bit for bit, except that any
    NaN equals any NaN (LANGUAGE.md section 3: the payload and sign of a NaN
    from ordinary arithmetic are not observable);
  * everything else, `float` fields and results included: bit for bit (the
    nupp.math.f32 surface's canonical NaN is 0x7FC00000).

What runs:
  (a) every BENCH kernel and the seed's examples (tests/corpus/nupp) on edge
      inputs (tests/kernelgen.py's boundary values per field type, every pair
      of the first two fields, plus random bits) and on every span length
      0..9; their scalar functions (add, choose) on every pair/triple of edge
      values; a kernel exercising every nupp.math and math function on the
      runtime library's edge sets;
  (b) hypothesis-generated well-typed kernels (tests/kernelgen.py), each
      checked by `nupp check`, then run both ways;
  (c) all of it with cc="gcc" and cc="clang";
  (d) slow: the BENCH kernels' C (and the library kernel's) built with
      -fsanitize=undefined -fno-sanitize-recover=all (GCC: plus
      float-cast-overflow, which its `undefined` leaves out) through
      `find_toolchain(cc, extra_flags=...)` + `build_library`, called through
      cffi on the same inputs in a child process (a UBSan report aborts it),
      the outputs compared with the interpreter's; generated kernels built
      the same way through the host, compared with the plain build; and a
      check that this harness does catch a signed overflow and a bad cast.
  Plus, deterministic: conversions LuaJIT's JIT gets wrong once a loop is
  hot (uint32 -> int64, uint64 -> binary64), in kernels and at the boundary.

UBSan runtimes (d): GCC links libubsan.so into the module as a NEEDED library,
so dlopen loads it and nothing else is needed.  Clang links its runtime only
into executables unless told `-shared-libsan`, and then the module needs
libclang_rt.ubsan_standalone-<arch>.so, which is not on the loader's path and
must be initialized before the Python interpreter's own libraries: the child
runs with LD_PRELOAD=$(clang -print-file-name=libclang_rt.ubsan_standalone-x86_64.so).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import struct
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from nupp.runtime.api import NuppRuntimeError, load

from .conftest import UNDER_CI, require_tool
from .kernelgen import (F32_EDGE_BITS, INT_EDGES, INT32_MIN, KERNEL_SCALARS, edge_array,
                        garbage_array, kernels)

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "kernel-subset-spike"
CORPUS = ROOT / "tests" / "corpus" / "nupp"
COMPILERS = ("gcc", "clang")
FULL_ROWS = 2500      # edge rows of a full run (every pair of the first two fields' edges, and more)
RANDOM_ROWS = 1000    # then this many rows of random bits
TAILS = range(10)     # every span length 0..9
UBSAN = ("-fsanitize=undefined", "-fno-sanitize-recover=all")


@dataclass(frozen=True)
class Kernel:
    path: Path
    function: str
    spans: tuple[str, ...]              # struct of each span parameter, in order (they come first)
    scalars: tuple[tuple, ...] = ((),)  # the scalar arguments after them, one tuple per call


KERNELS = {
    "mandelbrot": Kernel(BENCH / "mandelbrot.nupp", "mandelbrot", ("Escape", "Pixel"),
                         ((0,), (1,), (37,), (256,), (INT32_MIN,), (-1,))),
    "corrected": Kernel(BENCH / "corrected.nupp", "correct", ("Corrected", "Triple")),
    "mixedwidth": Kernel(BENCH / "mixedwidth.nupp", "mix", ("Sample", "Sample")),
    "simd": Kernel(BENCH / "simd.nupp", "advance", ("Body",),
                   ((0.01, 0.999), (0.0, -0.0), (math.inf, math.nan), (-1e300, 1e300), (5e-324, 1.0),
                    (0.5, -2.0), (1e-310, math.inf))),
    "tecsbits": Kernel(BENCH / "tecsbits.nupp", "query", ("Verdict", "Entity"),
                       ((0, 0), (5, 256), (INT32_MIN, 3), (0x0F0F, -268435456), (-1, 0), (2**31 - 1, -1))),
    "seed_classify": Kernel(CORPUS / "seed_classify.nupp", "classify", ("Code", "Code")),
}

# ---- the runtime library on its edge sets: every nupp.math and math function ------------------

LIBRARY = """\
local span = nupp.mem.span
local f32 = nupp.math.f32

local struct Args
    a: uint32
    b: uint32
    x: number
    y: number
    c: uint32
    i: int32
end

local struct Results
    add: uint32
    sub: uint32
    mul: uint32
    div: uint32
    sqrt: uint32
    neg: uint32
    abs: uint32
    min: uint32
    max: uint32
    fma: uint32
    exp: uint32
    narrow: uint32
    frombits: float
    i32: int32
    u32: uint32
    i64: int64
    u64: uint64
    fromI32: uint32
    fromU32: int32
    toI32: int32
    msqrt: number
    mabs: number
    floor: number
    ceil: number
    mmin: number
    mmax: number
    pow: number
    idiv: number
    mod: number
    promoted: number
end

@aot
local function library(exclusive out: span.WriteSpan<Results>, borrows inp: span.Span<Args>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = f32.fromBits(inp[i].a)
        local b = f32.fromBits(inp[i].b)
        local c = f32.fromBits(inp[i].c)
        local x = inp[i].x
        local y = inp[i].y
        local o = out[i]
        o.add = f32.bits(f32.add(a, b))
        o.sub = f32.bits(f32.sub(a, b))
        o.mul = f32.bits(f32.mul(a, b))
        o.div = f32.bits(f32.div(a, b))
        o.sqrt = f32.bits(f32.sqrt(a))
        o.neg = f32.bits(f32.neg(a))
        o.abs = f32.bits(f32.abs(a))
        o.min = f32.bits(f32.min(a, b))
        o.max = f32.bits(f32.max(a, b))
        o.fma = f32.bits(f32.fma(a, b, c))
        o.exp = f32.bits(f32.exp(a))
        o.narrow = f32.bits(f32.narrow(x))
        o.frombits = a
        o.i32 = nupp.math.i32.wrap(x)
        o.u32 = nupp.math.u32.wrap(x)
        o.i64 = nupp.math.i64.wrap(x)
        o.u64 = nupp.math.u64.wrap(x)
        o.fromI32 = nupp.math.u32.fromI32(inp[i].i)
        o.fromU32 = nupp.math.i32.fromU32(inp[i].a)
        o.toI32 = nupp.math.u32.toI32(inp[i].b)
        o.msqrt = math.sqrt(x)
        o.mabs = math.abs(x)
        o.floor = math.floor(x)
        o.ceil = math.ceil(y)
        o.mmin = math.min(x, y)
        o.mmax = math.max(x, y)
        o.pow = x ^ 3
        o.idiv = x // y
        o.mod = x % y
        o.promoted = a + inp[i].i
    end
end

return {Args = Args, Results = Results, library = library}
"""


# ---- running and comparing --------------------------------------------------------------------

@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("nupp-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(cache_dir, monkeypatch):
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache_dir))


@lru_cache(maxsize=None)
def loaded(path: str, mode: str, cc: str = "gcc"):
    """One loaded module per (path, mode, compiler): a LuaJIT state each."""
    return load(path, mode=mode, cc=cc)


@dataclass
class Outcome:
    error: str | None
    result: object
    spans: list[np.ndarray]   # every span argument after the call


def call(module, function: str, args: tuple) -> Outcome:
    """Call with private copies of the array arguments; the outcome holds them afterwards."""
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    try:
        result, error = getattr(module, function)(*args), None
    except NuppRuntimeError as err:
        result, error = None, str(err)
    return Outcome(error, result, [a for a in args if isinstance(a, np.ndarray)])


def same_values(a: np.ndarray, b: np.ndarray, exact: bool = False) -> np.ndarray:
    """Per element of two arrays of one field: whether they agree as LANGUAGE.md
    section 3 compares.  Equal bits, or, in a float or number field, both NaN:
    a NaN's payload and sign from ordinary arithmetic are not observable, and a
    store narrows binary64 as it is.  `exact`: a float field that holds
    nupp.math.f32 results, which agree to the bit (canonical NaN included)."""
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    same = a.view(width) == b.view(width)
    if a.dtype.kind == "f" and not exact:
        same |= np.isnan(a) & np.isnan(b)
    return same


def field_differences(a: np.ndarray, b: np.ndarray, exact: tuple[str, ...] = ()) -> list[str]:
    """Rows where two arrays of one struct dtype differ (same_values; the fields
    named in `exact` hold nupp.math.f32 results and compare to the bit)."""
    problems = []
    assert a.dtype == b.dtype and a.shape == b.shape
    for name in a.dtype.names:
        fa, fb = a[name], b[name]
        same = same_values(fa, fb, exact=name in exact)
        for row in np.flatnonzero(~same)[:5]:
            problems.append(f"row {row} field {name}: {fa[row]!r} ({fa[row:row + 1].tobytes().hex()}) vs "
                            f"{fb[row]!r} ({fb[row:row + 1].tobytes().hex()})")
    return problems


def same_scalar(a, b, float_result: bool = False) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if float_result:  # a binary32 result widened: exact, canonical NaN included
            return np.float32(a).view(np.uint32) == np.float32(b).view(np.uint32)
        if math.isnan(a) and math.isnan(b):
            return True
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


def assert_same(interp: Outcome, native: Outcome, what: str, inputs: tuple = ()) -> None:
    assert interp.error == native.error, f"{what}: error texts differ:\n  interp: {interp.error}\n  scalar: {native.error}"
    assert same_scalar(interp.result, native.result), f"{what}: results {interp.result!r} vs {native.result!r}"
    problems = []
    for k, (a, b) in enumerate(zip(interp.spans, native.spans)):
        problems += [f"span #{k + 1} {p}" for p in field_differences(a, b)]
    if problems:
        detail = []
        for p in problems[:12]:
            detail.append(p)
            row = int(p.split("row ")[1].split()[0])
            for k, arg in enumerate(inputs):
                if isinstance(arg, np.ndarray) and row < len(arg):
                    detail.append(f"    input span #{k + 1} row {row}: {arg[row]!r}")
        raise AssertionError(f"{what}: interp and scalar C disagree ({len(problems)} differences):\n"
                             + "\n".join(detail))


def kernel_inputs(module, kernel: Kernel, n: int, random_rows: int = 0, offset: int = 0) -> list[np.ndarray]:
    return [edge_array(module.dtype(s), n, offset=offset + 5 * k, random_rows=random_rows, seed=k + 1)
            for k, s in enumerate(kernel.spans)]


def cases(module, kernel: Kernel):
    """(label, args) of every call a kernel gets: the full edge set, then every tail length."""
    full = kernel_inputs(module, kernel, FULL_ROWS, RANDOM_ROWS)
    for scalars in kernel.scalars:
        yield f"full {scalars}", (*full, *scalars)
    for n in TAILS:
        for scalars in kernel.scalars[:2]:
            yield f"length {n} {scalars}", (*kernel_inputs(module, kernel, n, offset=7 * n), *scalars)
    if len(kernel.spans) > 1:  # lengths that differ: the assert
        spans = kernel_inputs(module, kernel, 3)
        spans[-1] = kernel_inputs(module, kernel, 4)[-1]
        yield "length mismatch", (*spans, *kernel.scalars[0])


def run_both(path: Path, function: str, args: tuple, cc: str, what: str) -> None:
    interp, native = loaded(str(path), "interp"), loaded(str(path), "scalar", cc)
    assert_same(call(interp, function, args), call(native, function, args), what, args)


# ---- (a) BENCH kernels and the seed's examples ----------------------------------------------------

@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_agrees_on_edges_and_tails(name, cc):
    require_tool(cc)
    kernel = KERNELS[name]
    module = loaded(str(kernel.path), "interp")
    for label, args in cases(module, kernel):
        run_both(kernel.path, kernel.function, args, cc, f"{name} {label} ({cc})")


def test_edge_inputs_cover_every_pair_of_the_first_two_fields():
    dtype = np.dtype([("a", np.uint32), ("b", np.uint32), ("c", np.uint32)])
    rows = edge_array(dtype, FULL_ROWS)
    interesting = set(F32_EDGE_BITS)
    pairs = {(int(a), int(b)) for a, b in zip(rows["a"], rows["b"]) if a in interesting and b in interesting}
    assert len(pairs) == len(interesting) ** 2
    n = len(INT_EDGES["uint32"])
    assert FULL_ROWS >= n * n


def test_a_length_mismatch_raises_the_asserts_text_and_writes_nothing():
    kernel = KERNELS["mandelbrot"]
    module = loaded(str(kernel.path), "interp")
    out, pixels = kernel_inputs(module, kernel, 3)
    outcome = call(module, "mandelbrot", (out, pixels[:2], 5))
    assert outcome.error.endswith("mandelbrot.nupp:15: length mismatch"), outcome.error
    assert field_differences(outcome.spans[0], out) == []


F32_ARGUMENTS = [float(v) for v in np.array(F32_EDGE_BITS, dtype=np.uint32).view(np.float32)] + \
    [0.1, 1e300, -1e300, 5e-324, 3.4028235677973366e38, 1.0000000596046448, -0.0]


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("path", [BENCH / "mixedwidth.nupp", CORPUS / "seed_add.nupp"], ids=lambda p: p.stem)
def test_scalar_functions_agree(path, cc):
    require_tool(cc)
    interp, native = loaded(str(path), "interp"), loaded(str(path), "scalar", cc)
    disagreements = []
    for a, b in itertools.product(F32_ARGUMENTS, repeat=2):
        r1, r2 = interp.add(a, b), native.add(a, b)
        if not same_scalar(r1, r2, float_result=True) or not same_scalar(r1, r2):
            disagreements.append(f"add({a!r}, {b!r}): {r1!r} vs {r2!r}")
    ints = INT_EDGES["int32"]
    for e, f, g in itertools.product(ints, repeat=3):
        r1, r2 = interp.choose(e, f, g), native.choose(e, f, g)
        if r1 != r2 or r1 != ((e & f) ^ (~e & g)):
            disagreements.append(f"choose({e}, {f}, {g}): {r1!r} vs {r2!r}")
    for bad in ((3.5, 1, 2), (2**31, 0, 0), (1, 2), (1, 2, 3, 4)):  # refused arguments: the same words
        assert_same(call(interp, "choose", bad), call(native, "choose", bad), f"choose{bad}")
    assert not disagreements, "\n".join(disagreements[:20])


@pytest.mark.parametrize("cc", COMPILERS)
def test_runtime_library_agrees_on_its_edge_sets(cc, tmp_path_factory):
    require_tool(cc)
    path = library_module(tmp_path_factory)
    module = loaded(str(path), "interp")
    args = edge_array(module.dtype("Args"), FULL_ROWS, random_rows=RANDOM_ROWS)
    run_both(path, "library", (garbage_array(module.dtype("Results"), len(args)), args), cc, f"library ({cc})")


_LIBRARY_PATH: list[Path] = []


def library_module(tmp_path_factory) -> Path:
    if not _LIBRARY_PATH:
        path = tmp_path_factory.mktemp("library") / "library.nupp"
        path.write_text(LIBRARY)
        _LIBRARY_PATH.append(path)
    return _LIBRARY_PATH[0]


# ---- conversions in hot loops -----------------------------------------------------------------
#
# LuaJIT interprets a loop's first iterations and compiles it once hot; the
# compiled code must convert exactly as the interpreter does.  Two
# conversions of LuaJIT 2.1's x64 JIT do not (the interpreter's are right):
#   * a uint32 FFI load converted to int64_t is sign-extended
#     (LuaJIT/LuaJIT#1492): `widen.u32.i64`, so an int32/uint32 comparison
#     (done in int64) and an int64 local taking a uint32 go wrong for values
#     >= 2^31 once the loop is compiled;
#   * uint64_t -> double rounds twice (as int64, then + 2^64) for values
#     >= 2^63: `round.u64.f64` is 1 ulp off for about one value in six.
# These pin the interpreter to the spec (and to the C) on exactly those values.

HOT = """\
local span = nupp.mem.span

local struct In
    b: uint32
    z: uint64
end

local struct Out
    gt: int32
    w: int64
    d: number
end

@aot
local function hot(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<In>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local r: int32 = 0
        if #out > inp[i].b then
            r = 1
        end
        out[i].gt = r
        local w: int64 = inp[i].b
        out[i].w = w
        out[i].d = inp[i].z
    end
end

return {In = In, Out = Out, hot = hot}
"""
HOT_ROWS = 400


@pytest.mark.parametrize("mode", ["interp", "scalar"])
def test_conversions_stay_exact_in_hot_loops(mode, tmp_path):
    require_tool("gcc")
    path = tmp_path / "hot.nupp"
    path.write_text(HOT)
    module = load(str(path), mode=mode)
    inp = np.zeros(HOT_ROWS, dtype=module.dtype("In"))
    inp["b"] = 3_000_000_000 + np.arange(HOT_ROWS, dtype=np.uint32)
    z = [2**63 + 1 + k * 2_654_435_761_013 for k in range(HOT_ROWS)]
    inp["z"] = np.array(z, dtype=np.uint64)
    out = np.zeros(HOT_ROWS, dtype=module.dtype("Out"))
    module.hot(out, inp)
    wrong = {"gt": [], "w": [], "d": []}
    for k in range(HOT_ROWS):
        # int32 vs uint32 by value; a uint32 widens to int64 unchanged; uint64 -> binary64 rounds once
        for field, want in (("gt", 0), ("w", int(inp["b"][k])), ("d", float(z[k]))):
            got = out[field][k].item()
            if got != want:
                wrong[field].append(f"row {k + 1}: b={inp['b'][k]} z={z[k]}: {field} = {got!r}, want {want!r}")
    summary = ", ".join(f"{field}: {len(rows)} of {HOT_ROWS} rows wrong" for field, rows in wrong.items() if rows)
    assert not summary, f"{mode}: {summary}\n" + "\n".join(rows[0] for rows in wrong.values() if rows)


HOT_CALLS = """\
local span = nupp.mem.span
local ffi = require("ffi")

local struct U
    b: uint32
end

@aot
local function widen(w: int64): int64
    return w
end

@aot
local function round(x: number): number
    return x
end

local s = span.new(U, 300)
local zs = ffi.new("uint64_t[300]")
for i = 1, 300 do
    s[i].b = 3000000000 + i
    zs[i - 1] = 9620440455986824552ULL + i * 4096
end
-- uint64 -> binary64 rounded once: the high and low words are exact, their sum rounds
local function rne(z)
    return tonumber(z / 4294967296ULL) * 4294967296 + tonumber(z % 4294967296ULL)
end
local bad_widen, bad_round = 0, 0
for i = 1, 300 do
    if widen(s[i].b) ~= 3000000000LL + i then bad_widen = bad_widen + 1 end
    if round(zs[i - 1]) ~= rne(zs[i - 1]) then bad_round = bad_round + 1 end
end
print(bad_widen, bad_round)
"""


@pytest.mark.parametrize("mode", ["interp", "scalar"])
def test_boundary_conversions_stay_exact_in_hot_loops(mode):
    """Ordinary code calling @aot functions in a hot loop (the host boundary,
    LANGUAGE.md section 7): a uint32 field value passed to an int64 parameter
    arrives unchanged, and a uint64 passed to a number parameter rounds once
    to nearest even, with --aot on and off."""
    require_tool("gcc")
    from nupp.errors import Source
    from nupp.runtime.host import Host
    host = Host(mode=mode)
    out = host.capture_output()
    host.run_source(Source("hot_calls.nupp", HOT_CALLS))
    bad_widen, bad_round = out().split()
    assert bad_widen == "0", f"{mode}: an int64 parameter given a uint32 value >= 2^31 changed it ({bad_widen} of 300)"
    assert bad_round == "0", f"{mode}: a number parameter given a uint64 >= 2^63 rounded twice ({bad_round} of 300)"


# ---- (b) generated kernels ---------------------------------------------------------------------

GENERATED_ROWS = 150
GENERATED_RANDOM_ROWS = 200


def write_generated(folder: Path, text: str) -> Path:
    path = folder / f"gen_{hashlib.sha256(text.encode()).hexdigest()[:16]}.nupp"
    if not path.exists():
        path.write_text(text)
    return path


def check_with_cli(path: Path) -> None:
    from nupp.runtime.cli import main
    assert main(["check", str(path)]) == 0, path.read_text()


def run_generated(path: Path, cc: str) -> None:
    interp, native = load(str(path), mode="interp"), load(str(path), mode="scalar", cc=cc)
    In, Out = interp.dtype("In"), interp.dtype("Out")
    # the edge rows twice: before LuaJIT compiles the loop (~60 iterations) and after
    edges = edge_array(In, GENERATED_ROWS, random_rows=GENERATED_RANDOM_ROWS)
    inp = np.concatenate([edges, edges[:GENERATED_ROWS]])
    shapes = [(inp, garbage_array(Out, len(inp)))]
    shapes += [(inp[:n], garbage_array(Out, n, seed=n)) for n in (0, 1, 3)]
    shapes += [(inp[:2], garbage_array(Out, 3))]  # the length mismatch
    failures = []
    for (rows, out), (p, q) in itertools.product(shapes, KERNEL_SCALARS):
        args = (out, rows, p, q)
        try:
            assert_same(call(interp, "k", args), call(native, "k", args), f"k(out[{len(out)}], inp[{len(rows)}], {p}, {q})",
                        args)
        except AssertionError as err:
            failures.append(str(err))
    assert not failures, f"{path}:\n{path.read_text()}\n" + "\n".join(failures[:3])


@pytest.mark.parametrize("cc", COMPILERS)
def test_generated_kernels_agree(cc, tmp_path_factory):
    require_tool(cc)
    folder = tmp_path_factory.mktemp(f"generated-{cc}")

    @given(kernels())
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    def agree(kernel):
        path = write_generated(folder, kernel.text)
        check_with_cli(path)
        run_generated(path, cc)

    agree()


def test_generated_kernels_pass_nupp_check(tmp_path_factory):
    """Every program kernelgen writes is well-typed: `nupp check` accepts it."""
    folder = tmp_path_factory.mktemp("generated-check")

    @given(kernels())
    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    def checks(kernel):
        check_with_cli(write_generated(folder, kernel.text))

    checks()


# ---- (d) UndefinedBehaviorSanitizer -------------------------------------------------------------

def _ubsan_flags(cc: str) -> tuple[str, ...]:
    # GCC leaves float-cast-overflow out of -fsanitize=undefined (Clang includes it);
    # the wrap conversions are where a cast could overflow, so ask for it.
    if cc == "clang":
        return UBSAN + ("-shared-libsan",)
    return UBSAN + ("-fsanitize=float-cast-overflow",)


def ubsan_child(cc: str, out_dir: str) -> None:
    """In a child process: build every BENCH kernel (and the library kernel) with
    UBSan, call the C directly through cffi on the differential inputs, save
    every output span as out_dir/<kernel>-<case>.npy.  A UBSan report aborts."""
    import cffi

    from nupp.emit_c.scalar import emit_module
    from nupp.errors import Source
    from nupp.pipeline import compile_module
    from nupp.runtime.host import display_path
    from nupp.targets.toolchain import build_library, find_toolchain

    toolchain = find_toolchain(cc, extra_flags=_ubsan_flags(cc))
    targets = dict(KERNELS)
    targets["library"] = Kernel(Path(out_dir) / "library.nupp", "library", ("Results", "Args"))
    for name, kernel in sorted(targets.items()):
        source = Source.from_file(display_path(kernel.path))
        cmodule = emit_module(compile_module(source), source.path)
        library = build_library(cmodule.source, toolchain, source.path)
        assert b"__ubsan_handle" in library.read_bytes() or name == "seed_classify", f"{library}: no UBSan checks"
        ffi = cffi.FFI()
        ffi.cdef(cmodule.cdef)
        lib = ffi.dlopen(str(library))
        fn = next(f for f in cmodule.functions if f.name == kernel.function)
        interp = load(str(kernel.path), mode="interp")  # for the dtypes and the inputs only
        for index, (label, args) in enumerate(cases(interp, kernel)):
            args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            c_args = []
            for a in args:
                if isinstance(a, np.ndarray):
                    c_args += [ffi.cast("void *", a.ctypes.data), len(a)]
                else:
                    c_args.append(a)
            status = getattr(lib, fn.symbol)(*c_args)
            for k, a in enumerate(args):
                if isinstance(a, np.ndarray):
                    np.save(Path(out_dir) / f"{name}-{index}-{k}.npy", a)
            (Path(out_dir) / f"{name}-{index}.status").write_text(str(status))


def ubsan_environment(cc: str) -> dict:
    env = dict(os.environ, UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    if cc == "clang":
        runtime = subprocess.run([cc, "-print-file-name=libclang_rt.ubsan_standalone-x86_64.so"],
                                 capture_output=True, text=True).stdout.strip()
        if not os.path.isabs(runtime):
            if UNDER_CI:
                pytest.fail("clang's shared UBSan runtime is required under CI but was not found")
            pytest.skip("clang's shared UBSan runtime was not found")
        env["LD_PRELOAD"] = runtime
    return env


@pytest.mark.slow
@pytest.mark.parametrize("cc", COMPILERS)
def test_kernels_run_clean_under_ubsan(cc, tmp_path, tmp_path_factory):
    require_tool(cc)
    (tmp_path / "library.nupp").write_text(LIBRARY)
    env = ubsan_environment(cc)
    env["NUPP_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from tests.test_native_differential import ubsan_child; "
         "ubsan_child(sys.argv[1], sys.argv[2])", cc, str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-6000:]}"
    assert "runtime error" not in proc.stderr, proc.stderr[-6000:]
    # and the sanitized C computed what the interpreter computes
    targets = dict(KERNELS)
    targets["library"] = Kernel(tmp_path / "library.nupp", "library", ("Results", "Args"))
    compared = 0
    for name, kernel in sorted(targets.items()):
        interp = load(str(kernel.path), mode="interp")
        for index, (label, args) in enumerate(cases(interp, kernel)):
            expected = call(interp, kernel.function, args)
            compared += saved_outputs_match(tmp_path, f"{name}-{index}", expected, f"{name} {label} (UBSan build)")
    assert compared > 0


def saved_outputs_match(folder: Path, stem: str, expected, what: str) -> int:
    """Check a UBSan child's saved status and spans (`stem.status`, `stem-K.npy`)
    against the expected call; returns how many spans were compared."""
    status = int((folder / f"{stem}.status").read_text())
    assert (status != 0) == (expected.error is not None), f"{what}: status {status}, {expected.error}"
    for k, span in enumerate(expected.spans):
        problems = field_differences(span, np.load(folder / f"{stem}-{k}.npy"))
        assert not problems, f"{what}, span #{k + 1}:\n" + "\n".join(problems[:10])
    return len(expected.spans)


def ubsan_generated_child(cc: str, folder: str, examples: int) -> None:
    """In a child process: generated kernels built with UBSan through the host
    (find_toolchain patched to add the flags) must run clean and compute what
    the plain build computes (interp vs C is the main differential's job)."""
    from nupp.targets import toolchain as native

    real = native.find_toolchain
    sanitize = [True]

    def find_toolchain(cc: str = "gcc", extra_flags: tuple[str, ...] = ()):
        return real(cc, tuple(extra_flags) + (_ubsan_flags(cc) if sanitize[0] else ()))

    native.find_toolchain = find_toolchain

    @given(kernels())
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def clean(kernel):
        path = write_generated(Path(folder), kernel.text)
        sanitize[0] = True
        checked = load(str(path), mode="scalar", cc=cc)
        sanitize[0] = False
        plain = load(str(path), mode="scalar", cc=cc)
        In, Out = plain.dtype("In"), plain.dtype("Out")
        edges = edge_array(In, GENERATED_ROWS, random_rows=GENERATED_RANDOM_ROWS)
        for (p, q) in KERNEL_SCALARS:
            args = (garbage_array(Out, len(edges)), edges, p, q)
            assert_same(call(plain, "k", args), call(checked, "k", args), f"{path} k(..., {p}, {q})", args)

    clean()


@pytest.mark.slow
@pytest.mark.parametrize("cc", COMPILERS)
def test_generated_kernels_run_clean_under_ubsan(cc, tmp_path):
    require_tool(cc)
    env = ubsan_environment(cc)
    env["NUPP_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from tests.test_native_differential import ubsan_generated_child; "
         "ubsan_generated_child(sys.argv[1], sys.argv[2], 40)", cc, str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-6000:]}"
    assert "runtime error" not in proc.stderr, proc.stderr[-6000:]
    assert len(list(tmp_path.glob("gen_*.nupp"))) >= 20


UB_C = """\
#include <stdint.h>
int32_t nupp_overflow(int32_t a, int32_t *r) { *r = a + 1; return 0; }
int32_t nupp_cast(double x, int32_t *r) { *r = (int32_t)x; return 0; }
"""
UB_CHILD = """
import sys, cffi
from tests.test_native_differential import UB_C, _ubsan_flags
from nupp.targets.toolchain import build_library, find_toolchain
cc, which, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
library = build_library(UB_C, find_toolchain(cc, extra_flags=_ubsan_flags(cc)), "ub.c")
ffi = cffi.FFI()
ffi.cdef("int32_t nupp_overflow(int32_t a, int32_t *r); int32_t nupp_cast(double x, int32_t *r);")
lib = ffi.dlopen(str(library))
r = ffi.new("int32_t *")
getattr(lib, "nupp_" + which)(int(value) if which == "overflow" else value, r)
print("returned", r[0])
"""


@pytest.mark.slow
@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("which, value", [("overflow", 2**31 - 1), ("cast", 1e300)])
def test_the_ubsan_harness_reports_undefined_behaviour(cc, which, value, tmp_path):
    """The set-up above really catches UB: a signed overflow and an out-of-range
    float-to-int cast abort the child with a report; a harmless call returns."""
    require_tool(cc)
    env = ubsan_environment(cc)
    env["NUPP_CACHE_DIR"] = str(tmp_path / "cache")

    def child(v):
        return subprocess.run([sys.executable, "-c", UB_CHILD, cc, which, repr(float(v))], capture_output=True,
                              text=True, cwd=ROOT, env=env, timeout=120)

    fine = child(1)
    assert fine.returncode == 0 and "returned" in fine.stdout, fine.stderr
    bad = child(value)
    assert bad.returncode != 0 and "runtime error" in bad.stderr, (bad.returncode, bad.stdout, bad.stderr[-2000:])
