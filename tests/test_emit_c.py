"""The scalar C emitter (emit_c/): every opcode has a rendering, the C of every
committed kernel compiles warning-free under GCC and Clang, and the C of every
opcode agrees with the constant folder (`fold.evaluate`) bit for bit on edge
inputs, built plainly and under UndefinedBehaviorSanitizer.

The differential writes one IR function per opcode (`func op_add_i32(%p0:
i32, %p1: i32) -> i32 { return add.i32(%p0, %p1) }`), emits them all as ONE
C module, compiles it once per configuration, loads it with cffi and calls
each exported function on the edge inputs of tests/test_interp_vs_fold.py
plus hard cases (fma near binary32 midpoints, exp across its range, narrow at
ties and overflow, wraps beyond 2^64).  A NaN compares as a NaN for f64
results; f32 results compare by their bits, canonical NaN included; a
division by zero must return the status whose error text is the
interpreter's.  The UBSan build runs in a child process, so that a report
(which aborts: -fno-sanitize-recover=all) fails the test instead of pytest.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import struct
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from nupp.emit_c.helpers import C_OPS, HELPERS
from nupp.emit_c.scalar import CModule, comment_text, emit_module
from nupp.errors import Source
from nupp.pipeline import compile_module
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.fold import FoldError, evaluate
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.text import parse_module
from nupp.scalar_ir.widths import Width

from . import oracles as o
from .conftest import UNDER_CI, require_tool
from .test_interp_vs_fold import edges

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ("-std=c11", "-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared")
UBSAN = ("-fsanitize=undefined", "-fno-sanitize-recover=all")
PATH = "op.nupp"
MAX_CASES = 600

KERNELS = sorted(p for p in (ROOT / "bench" / "kernel-subset-spike").glob("*.nupp")
                 if not p.name.endswith("_main.nupp")) + sorted((ROOT / "tests" / "corpus" / "nupp").glob("*.nupp"))


def compile_c(cc: str, source: str, out: Path, extra: tuple[str, ...] = ()) -> Path:
    c_file = out.with_suffix(".c")
    c_file.write_text(source)
    proc = subprocess.run([cc, *FLAGS, *extra, "-o", str(out), str(c_file), "-lm"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{cc} failed on {c_file}:\n{proc.stderr[:6000]}"
    return out


def compilers() -> list[str]:
    return ["gcc", "clang"]


# ---- the opcode table ----------------------------------------------------------------

@pytest.mark.parametrize("op", sorted(OPS))
def test_every_opcode_has_a_c_rendering(op):
    rendering = C_OPS[op]
    arity = len(OPS[op].operands)
    text = rendering.scalar.format(*(f"a{k}" for k in range(arity)))
    for k in range(arity):
        assert f"a{k}" in text, (op, text)
    for name in rendering.helpers:
        assert name in HELPERS


def test_comment_text_cannot_close_a_comment():
    assert comment_text("a */ b ??/ c\\ d\n é") == "a \\x2a/ b \\x3f\\x3f/ c\\x5c d\\x0a \\xe9"


def test_exp_helper_states_the_oracles_coefficients():
    code = HELPERS["nu_exp_f32"].code
    for bits in o.EXP_COEFFICIENT_BITS[1:]:
        mantissa, exponent = float(o.f32_of_bits(bits)).hex().split("p")
        assert f"{mantissa.rstrip('0').rstrip('.')}p{exponent}f" in code


# ---- every kernel compiles warning-free --------------------------------------------------

def kernel_c(path: Path) -> CModule:
    source = Source(str(path.relative_to(ROOT)), path.read_text())
    return emit_module(compile_module(source), source.path)


@pytest.mark.parametrize("cc", compilers())
def test_every_kernel_compiles_warning_free(cc, tmp_path):
    require_tool(cc)
    assert KERNELS
    for path in KERNELS:
        compile_c(cc, kernel_c(path).source, tmp_path / f"{path.stem}.so")


def test_emit_c_from_the_command_line():
    path = ROOT / "bench" / "kernel-subset-spike" / "mandelbrot.nupp"
    proc = subprocess.run([sys.executable, "-m", "nupp", "emit", "--c", str(path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "int32_t nupp_mandelbrot(" in proc.stdout


def test_mandelbrot_abi():
    c = kernel_c(ROOT / "bench" / "kernel-subset-spike" / "mandelbrot.nupp")
    (fn,) = c.functions
    assert (fn.name, fn.symbol, fn.result) == ("mandelbrot", "nupp_mandelbrot", None)
    assert fn.params == (("out", "void *"), ("#out", "int32_t"), ("pixels", "void *"), ("#pixels", "int32_t"),
                         ("maxIter", "int32_t"))
    assert c.cdef == ("int32_t nupp_mandelbrot(void *p_out, int32_t n_out, void *p_pixels, int32_t n_pixels, "
                      "int32_t p_maxIter);\n")
    assert c.errors == ("bench/kernel-subset-spike/mandelbrot.nupp:15: length mismatch",)
    assert "nupps_Escape *restrict p_out" in c.source
    assert "const nupps_Pixel *restrict p_pixels" in c.source


# ---- one function per opcode ------------------------------------------------------------

def op_function_name(op: str) -> str:
    return "op_" + op.replace(".", "_")


@lru_cache(maxsize=None)
def op_module() -> ir.Module:
    functions = []
    for line, op in enumerate(sorted(OPS), 1):
        info = OPS[op]
        loc = ir.Loc(line, 1)
        params = tuple(ir.Param(f"p{k}", w) for k, w in enumerate(info.operands))
        value = ir.Op(op, tuple(ir.Var(p.name, p.type) for p in params), loc)
        functions.append(ir.Function(op_function_name(op), params, info.result, (ir.Return(value, loc),),
                                     loc=loc))
        if info.result is Width.F32:  # its NaN seen through bits, inside the function
            bits = ir.Op("bits.f32.u32", (value,), loc)
            functions.append(ir.Function(op_function_name(op) + "_bits", params, Width.U32,
                                         (ir.Return(bits, loc),), loc=loc))
    return ir.Module((), tuple(functions))


@lru_cache(maxsize=None)
def op_c() -> CModule:
    return emit_module(op_module(), PATH)


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_bits(x: float) -> int:
    return 0x7FC00000 if x != x else struct.unpack("<I", struct.pack("<f", x))[0]


def from_bits(u: int) -> float:
    return struct.unpack("<f", struct.pack("<I", u))[0]


def hard_cases(op: str) -> list[tuple]:
    """Inputs beyond the edge products: where a careless rendering would differ."""
    rng = random.Random(op)
    if op == "fma.f32":
        one_plus = 1 + 2.0 ** -12
        cases = [(one_plus, one_plus, 2.0 ** -70), (one_plus, one_plus, -(2.0 ** -70)),
                 (-one_plus, one_plus, 2.0 ** -70), (one_plus, -one_plus, -(2.0 ** -70)),
                 (1 + 2.0 ** -23, 1 - 2.0 ** -24, -1.0), (2.0 ** -100, 2.0 ** -49, 2.0 ** -149),
                 (3.4028234663852886e+38, 2.0, -3.4028234663852886e+38), (-0.0, 0.0, -0.0), (0.0, -0.0, 0.0),
                 (1.0, -1.0, 1.0), (math.inf, 0.0, 1.0), (1e-45, 1e-45, -0.0)]
        for _ in range(400):  # products of random 24-bit significands against a nearby addend
            a = f32(rng.uniform(0.5, 2.0) * 2.0 ** rng.randint(-30, 30))
            b = f32(rng.uniform(0.5, 2.0) * 2.0 ** rng.randint(-30, 30))
            c = f32(-a * b * (1 + rng.choice([0, 2.0 ** -24, -(2.0 ** -24), 2.0 ** -30])) * rng.choice([1, -1]))
            cases.append((a, b, c))
        return cases
    if op == "exp.f32":
        return [(f32(x / 4.0),) for x in range(-460, 380)] + [(f32(rng.uniform(-1, 1)),) for _ in range(200)] \
            + [(-104.0,), (88.0,), (f32(88.00001),), (f32(-1e30),), (f32(1e30),), (from_bits(0xFFC00001),)]
    if op in ("narrow.f64.f32",):
        flt_max = 3.4028234663852886e+38
        return [(flt_max * (1 + 2.0 ** -25),), (flt_max * (1 + 2.0 ** -24),), (-flt_max * (1 + 2.0 ** -24),),
                (2.0 ** -150,), (2.0 ** -150 * (1 + 2.0 ** -52),), (-(2.0 ** -150),), (1 + 2.0 ** -24,),
                (1 + 3 * 2.0 ** -24,), (1 + 2.0 ** -24 + 2.0 ** -52,), (0.1,), (1e-40,), (-1e-46,)]
    if op.startswith("wrap.f64."):
        big = [2.0 ** 63, -(2.0 ** 63), 2.0 ** 64, -(2.0 ** 64), 2.0 ** 64 + 2.0 ** 12, -(2.0 ** 64 + 2.0 ** 12),
               -(2.0 ** 63) - 2048.0, 2.0 ** 63 - 1024.0, 1e20, -1e20, 1.7976931348623157e+308,
               -1.7976931348623157e+308, 2.0 ** 53 + 2, -(2.0 ** 53) - 2, 4294967296.5, -4294967296.5, -0.5,
               -1.5, 0.9999999999999999, 2147483648.0, -2147483649.0, 2.0 ** 65 - 2.0 ** 13, -(2.0 ** 65) + 2.0 ** 13]
        return [(x,) for x in big] + [(rng.uniform(-1e19, 1e19),) for _ in range(100)]
    if op in ("frombits.u32.f32",):
        return [(u,) for u in (0x7F800001, 0xFF800001, 0xFFC00000, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F800000, 0x80000001,
                                0x00000001, 0x80000000)]
    if op in ("round.i64.f64", "round.u64.f64"):
        return [(v,) for v in (2 ** 53 + 1, 2 ** 53 + 3, 2 ** 62 + 1, 2 ** 63 - 1, 2 ** 54 + 2 ** 53 // 2 ** 52)
                if Width(op.split(".")[1]).int_range[1] >= v]
    return []


def cases_for(op: str) -> list[tuple]:
    info = OPS[op]
    cases = list(itertools.product(*(edges(w) for w in info.operands)))
    if len(cases) > MAX_CASES:
        cases = cases[::len(cases) // MAX_CASES + 1]
    hard = [tuple(f32(a) if w is Width.F32 else a for a, w in zip(args, info.operands)) for args in hard_cases(op)]
    return cases + hard


def check_library(library: str) -> list[str]:
    """Call every op function of `library` (built from op_c()) on its cases;
    the disagreements with fold.evaluate, as text."""
    import cffi

    c = op_c()
    ffi = cffi.FFI()
    ffi.cdef(c.cdef)
    lib = ffi.dlopen(library)
    problems: list[str] = []
    for line, op in enumerate(sorted(OPS), 1):
        info = OPS[op]
        fn = getattr(lib, "nupp_" + op_function_name(op))
        bits_fn = getattr(lib, "nupp_" + op_function_name(op) + "_bits", None)
        ctype = {Width.BOOL: "_Bool"}.get(info.result, None) or {
            Width.F64: "double", Width.F32: "float", Width.I32: "int32_t", Width.U32: "uint32_t",
            Width.I64: "int64_t", Width.U64: "uint64_t"}[info.result]
        out = ffi.new(f"{ctype} *")
        for args in cases_for(op):
            status = fn(*args, out)
            try:
                want = evaluate(op, args)
            except FoldError as err:
                text = c.errors[status - 1] if 0 < status <= len(c.errors) else None
                if text != f"{PATH}:{line}: {err}":
                    problems.append(f"{op}{args}: status {status} ({text!r}), expected the error {err}")
                continue
            if status != 0:
                problems.append(f"{op}{args}: status {status}, expected {want!r}")
                continue
            if info.result is Width.F32:
                got_bits = ffi.cast("uint32_t *", out)[0]
                if got_bits != f32_bits(want):
                    problems.append(f"{op}{args}: bits {got_bits:#010x}, expected {f32_bits(want):#010x} ({want!r})")
                via_bits = ffi.new("uint32_t *")
                bits_fn(*args, via_bits)
                if via_bits[0] != f32_bits(want):
                    problems.append(f"bits.f32.u32({op}{args}): {via_bits[0]:#010x}, expected {f32_bits(want):#010x}")
            elif info.result is Width.F64:
                got = out[0]
                same = (math.isnan(got) and math.isnan(want)) or struct.pack("<d", got) == struct.pack("<d", want)
                if not same:
                    problems.append(f"{op}{args}: {got!r}, expected {want!r}")
            elif out[0] != want or type(out[0]) is not type(want):
                problems.append(f"{op}{args}: {out[0]!r}, expected {want!r}")
    return problems


def test_op_module_errors_are_the_interpreters_texts():
    c = op_c()
    raising = [op for op in sorted(OPS) if OPS[op].raises]
    assert len(c.errors) == len(raising)
    for op in raising:
        line = sorted(OPS).index(op) + 1
        assert f"{PATH}:{line}: integer division by zero" in c.errors


@pytest.mark.parametrize("cc", compilers())
def test_every_opcode_agrees_with_the_folder(cc, tmp_path):
    require_tool(cc)
    library = compile_c(cc, op_c().source, tmp_path / "ops.so")
    problems = check_library(str(library))
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:40])


def _sanitizer_flags(cc: str) -> tuple[str, ...]:
    # Clang links the UBSan runtime into executables only, unless told to share it
    return UBSAN + (("-shared-libsan",) if cc == "clang" else ())


@pytest.mark.parametrize("cc", compilers())
def test_every_opcode_under_ubsan(cc, tmp_path):
    require_tool(cc)
    library = compile_c(cc, op_c().source, tmp_path / "ops_ubsan.so", _sanitizer_flags(cc))
    env = dict(os.environ, UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    if cc == "clang":  # the shared runtime must be loaded before Python's own libraries
        runtime = subprocess.run([cc, "-print-file-name=libclang_rt.ubsan_standalone-x86_64.so"],
                                 capture_output=True, text=True).stdout.strip()
        if not os.path.isabs(runtime):
            if UNDER_CI:
                pytest.fail("clang's shared UBSan runtime is required under CI but was not found")
            pytest.skip("clang's shared UBSan runtime was not found")
        env["LD_PRELOAD"] = runtime
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from tests.test_emit_c import check_library; "
         "problems = check_library(sys.argv[1]); print('\\n'.join(problems[:40])); sys.exit(1 if problems else 0)",
         str(library)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
    assert "runtime error" not in proc.stderr, proc.stderr[-4000:]


# ---- warnings on any program: literals, self-comparisons, unused names -------------------

def _literals(width: Width) -> list:
    if width is Width.BOOL:
        return [True, False]
    if width.is_float:
        return [0.0, -0.0, math.nan, math.inf, -math.inf, 1.5]
    lo, hi = width.int_range
    return sorted({lo, 0, hi, -1 if width.is_signed else 1})


@lru_cache(maxsize=None)
def literal_module() -> ir.Module:
    """For every op: operands replaced by each literal in turn, the same operand
    twice, all literals; results bound to locals nobody reads."""
    functions = []
    for op in sorted(OPS):
        info = OPS[op]
        params = tuple(ir.Param(f"p{k}", w) for k, w in enumerate(info.operands))
        variables = [ir.Var(p.name, p.type) for p in params]
        variants = [tuple(variables)]
        for k, w in enumerate(info.operands):
            variants += [tuple(variables[:k]) + (ir.Const(v, w),) + tuple(variables[k + 1:]) for v in _literals(w)]
        if len(variables) >= 2 and info.operands[0] == info.operands[1]:
            variants.append((variables[0], variables[0]) + tuple(variables[2:]))
        variants.append(tuple(ir.Const(_literals(w)[-1], w) for w in info.operands))
        body = tuple(ir.Let(f"r{k}", info.result, ir.Op(op, args)) for k, args in enumerate(variants))
        functions.append(ir.Function(op_function_name(op), params, None, body))
    return ir.Module((), tuple(functions))


@pytest.mark.parametrize("cc", compilers())
def test_literal_operands_compile_warning_free(cc, tmp_path):
    require_tool(cc)
    compile_c(cc, emit_module(literal_module(), PATH).source, tmp_path / "literals.so")


STATEMENTS = """
struct All { a: int8, b: uint8, c: int16, d: uint16, e: int32, f: uint32, g: int64, h: uint64, x: float, y: number, z: double }
struct Nothing { }

func callee(%a: i32, %b: i32) -> i32 {
  return idiv.i32(%a, %b)
}

func effect(%a: i32) -> nil {
  assert ne.i32(%a, 7:i32), "seven */ is not ok ??/"
}

func shapes(%w: span<All> write exclusive, %r: span<All> read borrows, %q: span<All> read borrows, %n: span<Nothing> read borrows, %k: i32, %unused: f64, %flag: bool) -> i32
  alias %w %r disjoint
  alias %w %q disjoint
  alias %w %n disjoint
  alias %r %q shared-read
  alias %r %n shared-read
  alias %q %n shared-read
{
  assert eq.i32(len %w, len %r), "length"
  assert eq.i32(len %w, len %q), "length"
  let %never: i32
  let %x: i32 = %k
  assign %x = %x
  let %acc: i64 = 0:i64
  for %i = 1:i32 to len %w step 1 {
    let %v: i32 = load.i32 %r[%i].a
    store %w[%i].a = %v
    store %w[%i].b = load.i32 %q[%i].d
    store %w[%i].c = load.i64 %r[%i].g
    store %w[%i].d = load.u64 %r[%i].h
    store %w[%i].e = load.u32 %r[%i].f
    store %w[%i].f = load.i32 %r[%i].e
    store %w[%i].g = load.u32 %r[%i].f
    store %w[%i].h = load.i64 %r[%i].g
    store %w[%i].x = narrow.f64.f32(load.f64 %r[%i].x)
    store %w[%i].y = load.f64 %r[%i].y
    store %w[%i].z = add.f64(load.f64 %q[%i].z, 1.0:f64)
    assign %acc = add.i64(%acc, widen.i32.i64(call @callee(%v, %k) -> i32))
  }
  for %j = 2147483646:i32 to 2147483647:i32 step 1 {
    eval call @effect(%j) -> nil
  }
  for %j = -2147483647:i32 to -2147483648:i32 step -1 {
  }
  let %m: i32 = 0:i32
  while or.bool(%flag, eq.i32(mod.i32(%m, %k), 3:i32)) {
    assign %m = add.i32(%m, 1:i32)
    if ge.i32(%m, 10:i32) {
      break
    }
  }
  let %sel: i32 = %k
  let %out: i32
  if eq.i32(%sel, 1:i32) {
    let %inner: i32 = idiv.i32(%k, %m)
    assign %out = %inner
  } elif eq.i32(%sel, 2:i32) {
    assign %out = 2:i32
  } else {
    assign %out = 3:i32
  } switch %sel: i32 [1] [2] default
  return add.i32(%out, %x)
}
"""


@pytest.mark.parametrize("cc", compilers())
def test_statement_shapes_compile_warning_free(cc, tmp_path):
    require_tool(cc)
    c = emit_module(parse_module(STATEMENTS), "we/ird */ path??/.nupp")
    compile_c(cc, c.source, tmp_path / "shapes.so")
    assert "*/ is" not in c.source and "??/" not in c.source and "ird */" not in c.source
    # the alias matrix justifies restrict on every span: disjoint from the writer, shared-read otherwise
    head = c.source.split("static int32_t nuppi_shapes(")[1].split(")")[0]
    assert head.count("*restrict") == 4 and "const nupps_All *restrict p_r" in head


def _run_shapes(cc: str, tmp_path: Path, extra=()):
    import cffi
    import numpy as np

    c = emit_module(parse_module(STATEMENTS), "shapes.nupp")
    library = compile_c(cc, c.source, tmp_path / "shapes_run.so", extra)
    ffi = cffi.FFI()
    ffi.cdef(c.cdef)
    lib = ffi.dlopen(str(library))
    dtype = np.dtype([("a", np.int8), ("b", np.uint8), ("c", np.int16), ("d", np.uint16), ("e", np.int32),
                      ("f", np.uint32), ("g", np.int64), ("h", np.uint64), ("x", np.float32),
                      ("y", np.float64), ("z", np.float64)], align=True)
    return c, lib, ffi, dtype


@pytest.mark.parametrize("cc", compilers())
def test_statement_shapes_run(cc, tmp_path):
    require_tool(cc)
    import numpy as np

    c, lib, ffi, dtype = _run_shapes(cc, tmp_path)
    w = np.zeros(2, dtype=dtype)
    r = np.zeros(2, dtype=dtype)
    r["a"] = [-1, 5]
    r["g"] = [-(2 ** 40) - 3, 70000]
    r["h"] = [2 ** 64 - 1, 65537]
    r["f"] = [2 ** 32 - 1, 7]
    r["e"] = [-5, 9]
    r["x"] = [np.float32(1.5), np.nan]
    r["y"] = [2.5, -0.0]
    r["z"] = [1.0, 2.0]
    r["d"] = [65535, 300]
    out = ffi.new("int32_t *")
    ptr = lambda a: ffi.cast("void *", a.ctypes.data)  # noqa: E731
    nothing = np.zeros(2, dtype=np.uint8)
    status = lib.nupp_shapes(ptr(w), 2, ptr(r), 2, ptr(r), 2, ptr(nothing), 0, 1, 0.0, False, out)
    # callee(-1, 1) and callee(5, 1) fine; the loop at INT32_MAX ends; effect(7) never runs
    # while: m % 1 == 0 never 3 and flag false: no iteration; sel 1: 1 // 0 raises
    assert status != 0 and c.errors[status - 1] == "shapes.nupp:0: integer division by zero"
    assert list(w["a"]) == [-1, 5] and list(w["b"]) == [255, 44] and list(w["c"]) == [-3, 4464]
    assert list(w["d"]) == [65535, 1] and list(w["e"]) == [-1, 7] and list(w["f"]) == [2 ** 32 - 5, 9]
    assert list(w["g"]) == [2 ** 32 - 1, 7] and list(w["h"]) == [2 ** 64 - 2 ** 40 - 3, 70000]
    assert w["x"].view(np.uint32)[1] == 0x7FC00000 and w["x"][0] == 1.5
    assert list(w["z"]) == [2.0, 3.0]
    status = lib.nupp_shapes(ptr(w), 2, ptr(r), 2, ptr(r), 2, ptr(nothing), 0, 2, 0.0, False, out)
    assert (status, out[0]) == (0, 4)
    status = lib.nupp_shapes(ptr(w), 2, ptr(r), 1, ptr(r), 2, ptr(nothing), 0, 2, 0.0, False, out)
    assert c.errors[status - 1] == "shapes.nupp:0: length"


# ---- generated programs: the interpreter and native C agree -------------------------------

GENERATED_ARGS = ("-1, 4294967295, 0.1, 0.5, -9LL, 7ULL",
                  "2147483647, 0, -0.0, 0/0, 9223372036854775807LL, 0ULL",
                  "-2147483648, 123456789, 1e300, -3.5, -9223372036854775807LL - 1, 18446744073709551615ULL",
                  "0, 1, 0/0, 1/0, 0LL, 1ULL")
SHOW_RESULTS = """
local function show(v)
    if type(v) == "number" then return v ~= v and "nan" or string.format("%.17g", v) end
    return (tostring(v):gsub("U?LL$", ""))
end
""" + "\n".join(f"do local ok, r = pcall(k, {a}) print(ok and show(r) or tostring(r)) end" for a in GENERATED_ARGS)


def _generated_programs():
    from hypothesis import strategies as st

    from .test_checker_properties import NUMERIC, comparisons, typed
    return st.sampled_from(NUMERIC).flatmap(lambda w: st.tuples(st.just(w), typed(w, 3))), comparisons(2)


@pytest.mark.slow
def test_generated_programs_agree_with_the_interpreter(tmp_path, monkeypatch):
    """tests/test_checker_properties.py's well-typed programs, run by the interpreter
    and as scalar C through the host (gcc), on edge arguments: the same output."""
    from hypothesis import HealthCheck, given, settings

    from nupp.runtime.host import Host

    from .test_checker_properties import module_text

    require_tool("gcc")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))

    def run(text: str, mode: str) -> str:
        host = Host(mode=mode)
        out = host.capture_output()
        host.run_source(Source("gen.nupp", text.replace("return k\n", SHOW_RESULTS + "\n")))
        return out()

    @given(*_generated_programs())
    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    def agree(width_expr, cond):
        width, expr = width_expr
        text = module_text(width, expr, cond)
        assert run(text, "interp") == run(text, "scalar"), text

    agree()
