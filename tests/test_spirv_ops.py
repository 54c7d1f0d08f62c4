"""SPIR-V kernels, bit for bit: every op, the error cases, lengths and layouts, contraction.

Each kernel is compiled from Nupp source (pipeline.compile_module, then
emit_spirv.emit_module) and run as the host runs it (targets/device_call.py
`call_kernel`) through the raw `vulkan` runner, which gives the driver the
module untranslated.  Its spans afterwards and its error text are compared
with scalar C of the same module (`nupp.load(..., mode="scalar")`, the same
NumPy arrays), and, for the op kernels and the contraction cases, with
independent oracles (tests/oracles.py, Python integers and NumPy float64):

  * binary64 fields: bit for bit, except that any NaN equals any NaN (the
    payload of a NaN from arithmetic is not observable, LANGUAGE.md section 3);
  * every other field, binary32 included: bit for bit (canonical NaN).

What runs:
  (a) every op of scalar_ir/ops.py OPS, one kernel each,
      `for i = 1, #out do local r: T = <op of inp[i]'s fields>; out[i].r = r end`,
      over every combination of its operands' edge values (the tests' edge
      sets, emit_c/driver.py through tests/kernelgen.py, plus every hostile
      binary32 NaN and the shift counts 0, 31, 32, 63, 64, -1, ...), the op's
      hard cases (tests/test_emit_c.py) and rows of random bits; a binary32
      operand comes from `fromBits` of a uint32 field, a boolean from
      `field ~= 0`.  And every op of two or three operands with one of them a
      literal (0.0, -0.0, 1e309, INT_MIN, 2^64 - 1, ...): a driver sees those
      constants, and must not simplify x * 0.0 or x + 0.0 as if NaN, infinities
      and the sign of zero did not exist;
  (b) integer division by zero (int32, uint32, int64, uint64) in element k of
      the span loop (k first, in the middle, across a workgroup, last; several
      failing elements): the same `FILE:LINE: message`, and the spans as
      scalar C leaves them (elements before k written, k's stores before the
      division too, later ones untouched); a failed assert before the loop
      (asserts stand only there) writes nothing;
  (c) span lengths 0..33 (and across workgroups of 64) for kernels over
      int8 / int16 / binary64 fields, read from elements of 1, 3 and 6 bytes
      and stored into {int8, int8, int16} and {int16, int16, number} elements;
  (d) contraction: binary32 `f32.add(f32.mul(a, b), c)` and binary64
      `a * b + c` on triples where the fused and the unfused result differ
      (constructed with fractions.Fraction) give the unfused rounding, and
      `f32.fma` the correctly rounded one (tests/oracles.py's exact oracle),
      on constructed, near-midpoint and random triples.

Through wgpu, naga drops NoContraction and refuses some modules, so these
tests assert on the vulkan runner only.  Locally they skip without a Vulkan
device (tests/test_device_runner.py `open_runner`); under CI nothing skips.
Slow (CI=true, --runslow): every op over the whole product of its edge sets.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from nupp.emit_spirv import DeviceModule, emit_module
from nupp.errors import Source
from nupp.pipeline import compile_module
from nupp.runtime.api import NuppRuntimeError, load
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.walk import own_exprs, statements, subexprs
from nupp.scalar_ir.widths import Width
from nupp.targets.device import RUNNERS
from nupp.targets.device_call import SpanArgument, call_kernel

from . import oracles as o
from .kernelgen import F32_EDGE_BITS, INT_EDGES, edge_array, field_edges, garbage_array
from .test_device_runner import open_runner
from .test_emit_c import hard_cases
from .test_lane_c import write_test_kernels
from .test_native_differential import FULL_ROWS, KERNELS, RANDOM_ROWS, Kernel, kernel_inputs, same_values
from .test_runtime_math import constructed_double_rounding_cases, near_tie_fma_cases

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)


# ---- compiling a module both ways, and calling it both ways ------------------------------------

@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("nupp-spirv-cache")


@pytest.fixture(scope="module", autouse=True)
def _isolated_cache(cache_dir):
    """Module-scoped, so the module-scoped builds below (set up before any
    function-scoped fixture) compile into this folder, not the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NUPP_CACHE_DIR", str(cache_dir))
        yield


@pytest.fixture(scope="module", params=RUNNERS)
def device(request):
    """Each runner: the raw Vulkan API runs the module as written, wgpu as naga rewrites it;
    the bits must be the same both ways."""
    return open_runner(request.param)


@dataclass(frozen=True)
class Built:
    """One module: its scalar C (loaded) and its device kernels."""

    path: Path
    scalar: object        # the NuppModule of mode "scalar"
    device: DeviceModule

    def kernel(self, function: str):
        assert function in self.device.kernels, (
            f"{function} is refused by the SPIR-V backend: {self.device.refused.get(function)}")
        return self.device.kernels[function]


def build(path: Path) -> Built:
    """Compile a .nupp file for scalar C and for the device (error texts name `path` in both)."""
    module = compile_module(Source.from_file(str(path)))
    return Built(path, load(str(path), mode="scalar"), emit_module(module, str(path)))


def write_module(folder: Path, name: str, text: str) -> Built:
    path = folder / f"{name}.nupp"
    path.write_text(text)
    return build(path)


@dataclass
class Outcome:
    error: str | None
    spans: list[np.ndarray]   # every span argument after the call


def device_call(device, built: Built, function: str, args: tuple) -> Outcome:
    """`function` on the device, on private copies of the arrays (arguments in parameter order)."""
    kernel = built.kernel(function)
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    arguments = {p.name: (SpanArgument(memoryview(a).cast("B"), len(a)) if isinstance(a, np.ndarray) else a)
                 for p, a in zip(kernel.params, args, strict=True)}
    status = call_kernel(kernel, device, arguments)
    return Outcome(kernel.errors[status - 1] if status else None, [a for a in args if isinstance(a, np.ndarray)])


def scalar_call(built: Built, function: str, args: tuple) -> Outcome:
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    try:
        getattr(built.scalar, function)(*args)
        error = None
    except NuppRuntimeError as err:
        error = str(err)
    return Outcome(error, [a for a in args if isinstance(a, np.ndarray)])


def differences(got: np.ndarray, want: np.ndarray, inputs=()) -> list[str]:
    """The rows where two arrays of one struct dtype differ, with the input rows."""
    problems = []
    for name in got.dtype.names:
        for row in np.flatnonzero(~same_values(got[name], want[name]))[:6]:
            shown = ", ".join(str(x[row].tolist()) for x in inputs if row < len(x))
            problems.append(f"row {row} field {name}: {got[name][row]!r} "
                            f"({got[name][row:row + 1].tobytes().hex()}) vs {want[name][row]!r} "
                            f"({want[name][row:row + 1].tobytes().hex()}); the arguments' rows {shown}")
    return problems


def assert_same(device_outcome: Outcome, scalar_outcome: Outcome, what: str, inputs=()) -> None:
    """The device's outcome is scalar C's: the same error text `FILE:LINE: message`, the same spans after."""
    assert device_outcome.error == scalar_outcome.error, (
        f"{what}: errors differ:\n  device:   {device_outcome.error}\n  scalar C: {scalar_outcome.error}")
    problems = []
    for k, (a, b) in enumerate(zip(device_outcome.spans, scalar_outcome.spans)):
        problems += [f"span #{k + 1} {p}" for p in differences(a, b, inputs)]
    assert not problems, f"{what}: the device and scalar C differ:\n" + "\n".join(problems[:12])


def run_both(device, built: Built, function: str, args: tuple, what: str) -> Outcome:
    """Run on the device and as scalar C; assert they agree; the device's outcome."""
    on_device = device_call(device, built, function, args)
    kernel = built.kernel(function)
    read = {span.name for span in kernel.spans if not span.writable}
    read_only = [a for p, a in zip(kernel.params, args) if p.name in read]
    assert_same(on_device, scalar_call(built, function, args), what, read_only)
    return on_device


# ---- (a) every op -------------------------------------------------------------------------------

# How a value of each width reaches an op, and how its result is stored: a
# struct field of this storage type (a binary32 travels as its bits, a
# boolean as an int32 that is tested against 0).
OPERAND_FIELD = {I32: "int32", U32: "uint32", I64: "int64", U64: "uint64", F64: "number", F32: "uint32",
                 BOOL: "int32"}
RESULT_FIELD = {I32: "int32", U32: "uint32", I64: "int64", U64: "uint64", F64: "number", F32: "float",
                BOOL: "int32"}

INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "idiv": "//", "mod": "%", "band": "&", "bor": "|",
         "bxor": "~", "shl": "<<", "shr": ">>", "eq": "==", "ne": "~=", "lt": "<", "le": "<=", "gt": ">",
         "ge": ">=", "and": "and", "or": "or"}
PREFIX = {"neg": "-", "bnot": "~", "not": "not "}

SHIFT_COUNTS = (0, 1, 31, 32, 33, 63, 64, 65, -1, -32)
# The edge values of each operand width (floats and binary32 as bit patterns, in their field's dtype).
OPERAND_EDGES = {
    I32: np.array(sorted(set(INT_EDGES["int32"]) | set(SHIFT_COUNTS)), "<i4"),
    U32: np.array(INT_EDGES["uint32"], "<u4"),
    I64: np.array(sorted(set(INT_EDGES["int64"]) | set(SHIFT_COUNTS) | {2 ** 32 + 33}), "<i8"),
    U64: np.array(sorted(set(INT_EDGES["uint64"]) | {c % 2 ** 64 for c in SHIFT_COUNTS}), "<u8"),
    F64: field_edges(np.dtype(np.float64)),
    F32: np.array(sorted(set(F32_EDGE_BITS) | set(o.HOSTILE_NAN_BITS)), "<u4"),
    BOOL: np.array([0, 1, -7], "<i4"),
}
QUICK_ROWS, RANDOM_ROWS = 1200, 200  # rows per op in the quick run (a sample of the edge product), then random
LITERAL_ROWS = 250  # rows per op with literal operands (each row gives one result per literal)


def operand_source(k: int, width: Width) -> str:
    field = f"inp[i].o{k}"
    if width is F32:
        return f"nupp.math.f32.fromBits({field})"
    if width is BOOL:
        return f"({field} ~= 0)"
    return field


def result_width(op: str) -> Width:
    """The width of the kernel's `r`: the op's, but a trunc's count shifts an int64."""
    return I64 if OPS[op].base == "trunc" else OPS[op].result


def op_source(op: str, literals: dict | None = None) -> str:
    """A Nupp expression that is `op` applied to inp[i]'s fields o0, o1, ..., or to
    `literals` (operand position -> (source, value)) at their positions."""
    info = OPS[op]
    literals = literals or {}
    args = [literals[k][0] if k in literals else operand_source(k, w) for k, w in enumerate(info.operands)]
    if info.calls:
        return f"{info.calls[0]}({', '.join(args)})"
    if info.base in INFIX:
        return f"({args[0]} {INFIX[info.base]} {args[1]})"
    if info.base in PREFIX:
        return f"({PREFIX[info.base]}{args[0]})"
    if info.base == "trunc":
        return f"(1LL << {args[0]})"  # a shift count is where an int64 narrows to int32
    return args[0]  # promote, round, widen: the typed local converts


# Literal operands, by width: (source, value as the op sees it).  A driver may
# simplify arithmetic with a constant (x * 0.0, x + 0.0, 0.0 - x) where the
# rules forbid it; loads alone never show that.
_F64_LITERALS = (("0.0", 0.0), ("(-0.0)", -0.0), ("1.0", 1.0), ("(-1.0)", -1.0), ("2.0", 2.0), ("0.5", 0.5),
                 ("1e309", math.inf), ("(-1e309)", -math.inf))
LITERALS = {
    F64: _F64_LITERALS,
    F32: tuple((f"nupp.math.f32.narrow({s})", o.round_double_to_f32_bits(v)) for s, v in _F64_LITERALS),
    I32: (("0", 0), ("1", 1), ("(-1)", -1), ("7", 7), ("31", 31), ("32", 32), ("2147483647", 2 ** 31 - 1),
          ("(-2147483648)", -2 ** 31)),
    U32: (("0", 0), ("1", 1), ("32", 32), ("2147483648", 2 ** 31), ("4294967295", 2 ** 32 - 1)),
    I64: (("0LL", 0), ("1LL", 1), ("(-1LL)", -1), ("4294967296LL", 2 ** 32), ("9223372036854775807LL", 2 ** 63 - 1),
          ("(-9223372036854775807LL)", 1 - 2 ** 63)),
    U64: (("0ULL", 0), ("1ULL", 1), ("4294967296ULL", 2 ** 32), ("9223372036854775808ULL", 2 ** 63),
          ("18446744073709551615ULL", 2 ** 64 - 1)),
    BOOL: (("true", True), ("false", False)),
}


@dataclass(frozen=True)
class Variant:
    """One result of an op kernel: stored to `field`, with `literals` (position -> (source, value))."""

    field: str
    literals: tuple = ()

    @property
    def fixed(self) -> dict:
        return dict(self.literals)


def variants(op: str, with_literals: bool) -> list[Variant]:
    """The op on loaded operands, or on one literal operand and loaded others (an op
    of one operand on a literal is the constant folder's, never the device's)."""
    if not with_literals:
        return [Variant("r")]
    info = OPS[op]
    cases = [(k, literal) for k, w in enumerate(info.operands) if len(info.operands) > 1 for literal in LITERALS[w]
             if not (info.raises and k == 1 and literal[1] == 0)]  # a literal zero divisor is the checker's
    return [Variant(f"r{n}", ((k, literal),)) for n, (k, literal) in enumerate(cases)]


def function_name(op: str, with_literals: bool = False) -> str:
    return ("lit_" if with_literals else "op_") + op.replace(".", "_")


def struct_name(prefix: str, widths) -> str:
    return prefix + "_" + "_".join(w.value for w in widths)


def out_struct(op: str, with_literals: bool) -> str:
    """Fields r (or r0, r1, ...: one per literal variant) of the result's width."""
    if with_literals:
        return f"{struct_name('Lit', (result_width(op),))}_{len(variants(op, True))}"
    return struct_name("Out", (result_width(op),))


def op_kernel(op: str, with_literals: bool) -> list[str]:
    width = result_width(op)
    body = []
    for v in variants(op, with_literals):
        body.append(f"        local {v.field}: {width.source_name} = {op_source(op, v.fixed)}")
        body.append(f"        if {v.field} then out[i].{v.field} = 1 else out[i].{v.field} = 0 end" if width is BOOL
                    else f"        out[i].{v.field} = {v.field}")
    return ["@aot",
            f"local function {function_name(op, with_literals)}(exclusive out: span.WriteSpan<"
            f"{out_struct(op, with_literals)}>, borrows inp: span.Span<{struct_name('In', OPS[op].operands)}>): nil",
            '    assert(#out == #inp, "length mismatch")',
            "    for i = 1, #out do", *body, "    end", "end", ""]


LITERAL_OPS = [op for op in OPS if variants(op, True)]


def ops_module(with_literals: bool = False) -> str:
    """One module: a kernel per op (`with_literals`: per op of two or three
    operands, on literal operands), their operand and result structs."""
    kernels = [(op, with_literals) for op in (LITERAL_OPS if with_literals else OPS)]
    structs = {}
    for op, with_literals in kernels:
        structs[struct_name("In", OPS[op].operands)] = [(f"o{k}", OPERAND_FIELD[w])
                                                       for k, w in enumerate(OPS[op].operands)]
        structs[out_struct(op, with_literals)] = [(v.field, RESULT_FIELD[result_width(op)])
                                                  for v in variants(op, with_literals)]
    lines = ["local span = nupp.mem.span", ""]
    for name, fields in structs.items():
        lines += [f"local struct {name}", *(f"    {f}: {t}" for f, t in fields), "end", ""]
    for op, with_literals in kernels:
        lines += op_kernel(op, with_literals)
    exports = [*structs, *(function_name(op, with_literals) for op, with_literals in kernels)]
    lines.append("return {" + ", ".join(f"{n} = {n}" for n in exports) + "}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def ops_built(tmp_path_factory) -> Built:
    return write_module(tmp_path_factory.mktemp("spirv-ops"), "ops", ops_module())


@pytest.fixture(scope="module")
def literal_ops_built(tmp_path_factory) -> Built:
    return write_module(tmp_path_factory.mktemp("spirv-ops"), "literal_ops", ops_module(with_literals=True))


def op_inputs(op: str, dtype: np.dtype, rows: int | None, random_rows: int, seed: int) -> np.ndarray:
    """Rows of the op's operand struct: the product of its operands' edge sets (every
    combination, or an even sample of `rows` of them), the op's hard cases (tests/test_emit_c.py:
    fma near midpoints, exp across its range, wraps beyond 2^63, ...), then rows of random bits.
    An op that raises on a zero divisor gets none (division by zero has its own tests)."""
    info = OPS[op]
    edges = [OPERAND_EDGES[w] for w in info.operands]
    grid = [g.ravel() for g in np.meshgrid(*(np.arange(len(e)) for e in edges), indexing="ij")]
    total = len(grid[0])
    picked = np.arange(total) if rows is None or total <= rows else np.linspace(0, total - 1, rows).astype(np.int64)
    hard = hard_cases(op)
    out = np.zeros(len(picked) + len(hard) + random_rows, dtype)
    for k, (e, w) in enumerate(zip(edges, info.operands)):
        out[f"o{k}"][:len(picked)] = e[grid[k][picked]]
        out[f"o{k}"][len(picked):len(picked) + len(hard)] = [o.bits_of_f32(case[k]) if w is F32 else case[k]
                                                            for case in hard]
    rng = np.random.default_rng(seed)
    out[len(picked) + len(hard):] = rng.integers(0, 256, random_rows * dtype.itemsize, dtype=np.uint8).view(dtype)
    if info.raises:
        out = out[out["o1"] != 0]
    return out


def _int_result(width: Width):
    def wrap(value: int) -> int:
        value %= 1 << width.bits
        return value - (1 << width.bits) if width.is_signed and value >> (width.bits - 1) else value
    return wrap


def _f64(op):
    def oracle(*args):
        with np.errstate(all="ignore"):
            return float(op(*(np.float64(a) for a in args)))
    return oracle


def _f32_binary(name):
    return lambda a, b: int(o.BINARY_ORACLES[name](np.array([a], np.uint32), np.array([b], np.uint32))[0])


def _f32_unary(name):
    return lambda a: int(o.UNARY_ORACLES[name](np.array([a], np.uint32))[0])


def _shift(left: bool):
    def oracle(width: Width):
        mask = width.bits - 1
        if left:
            return lambda a, n: a << (n & mask)
        return lambda a, n: (a % (1 << width.bits)) >> (n & mask)
    return oracle


# Integer ops by base (Python integers, reduced to the result width afterwards);
# floor division and remainder are Python's own.
INT_ORACLES = {
    "add": lambda w: lambda a, b: a + b, "sub": lambda w: lambda a, b: a - b, "mul": lambda w: lambda a, b: a * b,
    "neg": lambda w: lambda a: -a, "idiv": lambda w: lambda a, b: a // b, "mod": lambda w: lambda a, b: a % b,
    "band": lambda w: lambda a, b: a & b, "bor": lambda w: lambda a, b: a | b, "bxor": lambda w: lambda a, b: a ^ b,
    "bnot": lambda w: lambda a: ~a, "shl": _shift(True), "shr": _shift(False),
}
COMPARE_ORACLES = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
                   "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}
F64_ORACLES = {
    "add.f64": _f64(np.add), "sub.f64": _f64(np.subtract), "mul.f64": _f64(np.multiply),
    "div.f64": _f64(np.divide), "neg.f64": _f64(np.negative), "idiv.f64": _f64(lambda a, b: np.floor(a / b)),
    "mod.f64": _f64(lambda a, b: a - np.floor(a / b) * b), "sqrt.f64": _f64(np.sqrt), "abs.f64": _f64(np.abs),
    "floor.f64": _f64(np.floor), "ceil.f64": _f64(np.ceil),
    "min.f64": lambda a, b: o.f64_min_max(a, b, True), "max.f64": lambda a, b: o.f64_min_max(a, b, False),
}
F32_ORACLES = {
    **{f"{n}.f32": _f32_binary(n) for n in o.BINARY_ORACLES},
    **{f"{n}.f32": _f32_unary(n) for n in o.UNARY_ORACLES},
    "fma.f32": o.f32_fma_bits, "exp.f32": o.f32_exp_bits,
}
CONVERSION_ORACLES = {
    "promote.f32.f64": lambda a: float(o.f32_of_bits(a)), "promote.i32.f64": float, "promote.u32.f64": float,
    "round.i64.f64": float, "round.u64.f64": float,  # Python rounds an int to nearest even
    "narrow.f64.f32": o.round_double_to_f32_bits,
    "wrap.f64.i32": lambda x: o.wrap_int(x, 32, True), "wrap.f64.u32": lambda x: o.wrap_int(x, 32, False),
    "wrap.f64.i64": lambda x: o.wrap_int(x, 64, True), "wrap.f64.u64": lambda x: o.wrap_int(x, 64, False),
    "reinterpret.i32.u32": o.same_bits_uint32, "reinterpret.u32.i32": o.same_bits_int32,
    "widen.i32.i64": int, "widen.u32.i64": int, "widen.u32.u64": int,
    "trunc.i64.i32": lambda n: _int_result(I64)(1 << (n & 63)),  # the kernel's 1LL << n
    "trunc.u64.i32": lambda n: _int_result(I64)(1 << (n & 63)),
    "bits.f32.u32": o.canonicalize_bits, "frombits.u32.f32": o.canonicalize_bits,
    "eq.bool": lambda a, b: a == b, "ne.bool": lambda a, b: a != b, "and.bool": lambda a, b: a and b,
    "or.bool": lambda a, b: a or b, "not.bool": lambda a: not a,
}


def oracle(op: str):
    """The spec's value of the op's kernel expression, from Python operand values
    (a binary32 as its canonical bits, a boolean as bool)."""
    info = OPS[op]
    if op in F64_ORACLES:
        return F64_ORACLES[op]
    if op in F32_ORACLES:
        return F32_ORACLES[op]
    if op in CONVERSION_ORACLES:
        return CONVERSION_ORACLES[op]
    if info.base in COMPARE_ORACLES:
        return COMPARE_ORACLES[info.base]  # by value: int64 against uint64 included
    wrap = _int_result(info.result)
    compute = INT_ORACLES[info.base](info.result)
    return lambda *args: wrap(compute(*args))


def python_value(value, width: Width):
    """A field's value as the op sees it."""
    if width is F32:
        return o.canonicalize_bits(int(value))  # fromBits
    if width is BOOL:
        return int(value) != 0
    if width is F64:
        return float(value)
    return int(value)


def stored_value(value, width: Width):
    """The kernel's stored result as a Python value."""
    if width is F32:
        return int(np.array([value], np.float32).view(np.uint32)[0])
    if width is BOOL:
        return bool(value)
    return float(value) if width is F64 else int(value)


def same_value(got, want, width: Width) -> bool:
    if width is F64:
        return (math.isnan(got) and math.isnan(want)) or struct.pack("<d", got) == struct.pack("<d", want)
    return got == want and type(got) is type(want)


def test_every_op_has_a_kernel_that_computes_it(ops_built):
    """The op kernels are what they claim: each function's IR holds its op, and the device takes every one."""
    module = compile_module(Source.from_file(str(ops_built.path)))
    for fn in module.functions:
        found = {x.op for s in statements(fn.body) for e in own_exprs(s) for x in subexprs(e)
                 if isinstance(x, ir.Op)}
        op = next(op for op in OPS if function_name(op) == fn.name)
        assert op in found, f"{fn.name} computes {sorted(found)}, not {op}"
    assert sorted(ops_built.device.kernels) == sorted(function_name(op) for op in OPS), ops_built.device.refused


def check_op(device, built: Built, op: str, rows: int | None, random_rows: int, with_literals: bool = False) -> None:
    info = OPS[op]
    width = result_width(op)
    inp = op_inputs(op, built.scalar.dtype(struct_name("In", info.operands)), rows, random_rows,
                    seed=sum(map(ord, op)))
    out = garbage_array(built.scalar.dtype(out_struct(op, with_literals)), len(inp))
    on_device = run_both(device, built, function_name(op, with_literals), (out, inp), op)
    assert on_device.error is None
    compute = oracle(op)
    wrong = []
    for v in variants(op, with_literals):
        for row, (got, args) in enumerate(zip(on_device.spans[0][v.field], inp)):
            operands = [v.fixed[k][1] if k in v.fixed else python_value(args[k], w)
                        for k, w in enumerate(info.operands)]
            want = compute(*operands)
            if width is BOOL:
                want = bool(want)
            if not same_value(stored_value(got, width), want, width):
                wrong.append(f"row {row}: {op_source(op, v.fixed)} of {tuple(operands)} gave "
                             f"{stored_value(got, width)!r}, the oracle {want!r}")
    assert not wrong, f"{op}: {len(wrong)} results differ from the oracle:\n" + "\n".join(wrong[:12])


@pytest.mark.parametrize("op", list(OPS))
def test_op_on_edge_inputs(device, ops_built, op):
    check_op(device, ops_built, op, QUICK_ROWS, RANDOM_ROWS)


@pytest.mark.parametrize("op", LITERAL_OPS)
def test_op_with_a_literal_operand(device, literal_ops_built, op):
    check_op(device, literal_ops_built, op, LITERAL_ROWS, RANDOM_ROWS // 4, with_literals=True)


@pytest.mark.slow
@pytest.mark.parametrize("op", list(OPS))
def test_op_on_every_combination_of_edge_inputs(device, ops_built, op):
    check_op(device, ops_built, op, None, 4000)


# ---- (b) errors: division by zero and failed asserts in element k --------------------------------

ERRORS = """\
local span = nupp.mem.span

local struct Cell
    a: int32
    q: int32
    r: uint32
    w: int64
    z: uint64
    b: int32
end

local struct Arg
    x: int32
    y: int32
    u: uint32
    v: int64
    t: uint64
end

@aot
local function divide(exclusive out: span.WriteSpan<Cell>, borrows inp: span.Span<Arg>, p: int32): nil
    assert(#out == #inp, "length mismatch")
    assert(p ~= 0, "p refused")
    for i = 1, #out do
        out[i].a = inp[i].x + p
        out[i].q = inp[i].x // inp[i].y
        out[i].r = inp[i].u % inp[i].u
        out[i].w = inp[i].v // inp[i].v
        out[i].z = inp[i].t % inp[i].t
        out[i].b = inp[i].y
    end
end

return {Cell = Cell, Arg = Arg, divide = divide}
"""


def line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


# the divisor field that is zero -> the line of the division it fails (each an integer width)
ERROR_LINES = {name: line_of(ERRORS, f"{'//' if name in 'yv' else '%'} inp[i].{name}") for name in "yuvt"}
ERROR_LENGTH = 130  # elements: two workgroups of 64 and a few more


@pytest.fixture(scope="module")
def errors_built(tmp_path_factory) -> Built:
    return write_module(tmp_path_factory.mktemp("spirv-errors"), "errors", ERRORS)


def error_inputs(built: Built, n: int, failures: dict) -> tuple[np.ndarray, np.ndarray]:
    """Garbage output and inputs that fail nowhere but at `failures` (element -> what fails there)."""
    inp = np.zeros(n, built.scalar.dtype("Arg"))
    inp["x"] = np.arange(n) * 7 - 50
    inp["y"] = np.where(np.arange(n) % 2, 3, -5)
    for name in ("u", "v", "t"):
        inp[name] = np.arange(n) % 5 + 1
    for element, divisor in failures.items():
        inp[divisor][element - 1] = 0
    return garbage_array(built.scalar.dtype("Cell"), n), inp


@pytest.mark.parametrize("what", sorted(ERROR_LINES))
@pytest.mark.parametrize("k", [1, 2, 33, 64, 65, ERROR_LENGTH])
def test_a_failure_in_element_k_stops_where_the_scalar_loop_stops(device, errors_built, what, k):
    out, inp = error_inputs(errors_built, ERROR_LENGTH, {k: what})
    outcome = run_both(device, errors_built, "divide", (out, inp, 5), f"{what} at element {k}")
    assert outcome.error == f"{errors_built.path}:{ERROR_LINES[what]}: integer division by zero"
    after = outcome.spans[0]
    assert differences(after[k:], out[k:]) == [], "elements after k are untouched"
    assert not np.any(same_values(after["b"][:k - 1], out["b"][:k - 1])), "elements before k are written"
    written_in_k = [name for name in after.dtype.names if not same_values(after[name][k - 1:k], out[name][k - 1:k])[0]]
    stores = ["a", "q", "r", "w", "z", "b"]
    assert written_in_k == stores[:stores.index({"y": "q", "u": "r", "v": "w", "t": "z"}[what])]


def test_the_lowest_failing_element_is_reported(device, errors_built):
    for failures in ({90: "y", 5: "t", 70: "u"}, {64: "t", 65: "y"}, {3: "v", 2: "u"}, {130: "y", 129: "t"}):
        out, inp = error_inputs(errors_built, ERROR_LENGTH, failures)
        outcome = run_both(device, errors_built, "divide", (out, inp, 1), f"failures {failures}")
        first = min(failures)
        assert outcome.error.startswith(f"{errors_built.path}:{ERROR_LINES[failures[first]]}: ")


@pytest.mark.parametrize("n", [0, 1, 64, ERROR_LENGTH])
def test_a_failed_assert_before_the_loop_writes_nothing(device, errors_built, n):
    out, inp = error_inputs(errors_built, n, {})
    refused = run_both(device, errors_built, "divide", (out, inp, 0), f"p = 0, length {n}")
    assert refused.error == f"{errors_built.path}:{line_of(ERRORS, 'p refused')}: p refused"
    assert differences(refused.spans[0], out) == []
    shorter = run_both(device, errors_built, "divide", (out, inp[:max(n - 1, 0)], 3), f"length mismatch {n}")
    if n:
        assert shorter.error == f"{errors_built.path}:{line_of(ERRORS, 'length mismatch')}: length mismatch"
        assert differences(shorter.spans[0], out) == []
    assert run_both(device, errors_built, "divide", (out, inp, 3), f"length {n}").error is None


PROLOGUE = """\
local span = nupp.mem.span

local struct Cell
    a: int32
    d: number
end

@aot
local function offset(exclusive out: span.WriteSpan<Cell>, borrows inp: span.Span<Cell>, p: int32, q: number): nil
    assert(#out == #inp, "length mismatch")
    local k = p * 3
    local scale: number = q + 0.5
    if p > 100 then
        k = 0
    end
    for i = 1, #out do
        out[i].a = inp[i].a + k
        out[i].d = inp[i].d * scale
    end
end

return {Cell = Cell, offset = offset}
"""


def test_locals_set_before_the_loop_reach_every_iteration(device, tmp_path):
    """Each invocation runs the statements before the loop; the loop reads their locals."""
    built = write_module(tmp_path, "prologue", PROLOGUE)
    for n in (0, 1, 65):
        inp = edge_array(built.scalar.dtype("Cell"), n)
        for p, q in ((7, 0.25), (101, -1e300), (-2147483648, math.nan)):
            run_both(device, built, "offset", (garbage_array(inp.dtype, n), inp, p, q), f"length {n}, {p}, {q}")


# ---- (c) lengths and layouts ----------------------------------------------------------------------

LAYOUTS = """\
local span = nupp.mem.span

local struct Bytes          -- 3 bytes an element: read-only on the device
    a: int8
    b: uint8
    c: int8
end

local struct Shorts         -- 6 bytes
    s: int16
    t: uint16
    u: int16
end

local struct Wide           -- 16 bytes: a byte, padding, a binary64
    k: int8
    d: number
end

local struct Packed         -- 4 bytes: two int8 and an int16 share one word
    a: int8
    b: uint8
    h: int16
end

local struct Mixed          -- 16 bytes
    s: int16
    t: uint16
    w: int64
end

@aot
local function pack(exclusive out: span.WriteSpan<Packed>, exclusive mix: span.WriteSpan<Mixed>,
                    borrows bytes: span.Span<Bytes>, borrows shorts: span.Span<Shorts>,
                    borrows wide: span.Span<Wide>, p: int32): nil
    assert(#out == #bytes, "length mismatch")
    assert(#mix == #bytes, "length mismatch")
    assert(#shorts == #bytes, "length mismatch")
    assert(#wide == #bytes, "length mismatch")
    for i = 1, #out do
        out[i].a = bytes[i].a + shorts[i].s
        out[i].b = bytes[i].b - bytes[i].c * p
        out[i].h = out[i].h + shorts[i].t + wide[i].k * 300
        mix[i].s = shorts[i].u * 3 + mix[i].t
        mix[i].t = nupp.math.i64.wrap(wide[i].d)
        mix[i].w = mix[i].w + nupp.math.i64.wrap(wide[i].d) * bytes[i].b
    end
end

@aot
local function spill(exclusive out: span.WriteSpan<Bytes>, borrows shorts: span.Span<Shorts>): nil
    assert(#out == #shorts, "length mismatch")
    for i = 1, #out do
        out[i].a = shorts[i].s
    end
end

return {Bytes = Bytes, Shorts = Shorts, Wide = Wide, Packed = Packed, Mixed = Mixed, pack = pack, spill = spill}
"""
LENGTHS = (*range(34), 63, 64, 65, 129)
LAYOUT_SPANS = ("Packed", "Mixed", "Bytes", "Shorts", "Wide")


@pytest.fixture(scope="module")
def layouts_built(tmp_path_factory) -> Built:
    return write_module(tmp_path_factory.mktemp("spirv-layouts"), "layouts", LAYOUTS)


def test_struct_layouts_are_the_c_layouts(layouts_built):
    sizes = {name: layouts_built.scalar.dtype(name).itemsize for name in LAYOUT_SPANS}
    assert sizes == {"Packed": 4, "Mixed": 16, "Bytes": 3, "Shorts": 6, "Wide": 16}
    spans = {s.name: (s.stride, s.writable) for s in layouts_built.kernel("pack").spans}
    assert spans == {"out": (4, True), "mix": (16, True), "bytes": (3, False), "shorts": (6, False),
                     "wide": (16, False)}


@pytest.mark.parametrize("p", [3, -1])
def test_fields_of_one_to_eight_bytes_at_every_length(device, layouts_built, p):
    for n in LENGTHS:
        spans = [edge_array(layouts_built.scalar.dtype(s), n, offset=3 * n + k) for k, s in enumerate(LAYOUT_SPANS)]
        run_both(device, layouts_built, "pack", (*spans, p), f"pack, length {n}, p = {p}")


def test_a_store_into_elements_of_three_bytes_is_refused(layouts_built):
    assert layouts_built.device.refused["spill"] == (
        "%out is written and its Bytes elements are 3 bytes: the device writes 32-bit words, "
        "which neighbouring elements would share")


@pytest.fixture(scope="module")
def committed(tmp_path_factory) -> dict[str, tuple[Kernel, Built]]:
    """The BENCH kernels and the lane test kernels the SPIR-V backend takes."""
    built = {}
    for name, kernel in write_test_kernels(tmp_path_factory.mktemp("spirv-kernels")).items():
        module = build(kernel.path)
        if kernel.function in module.device.kernels:
            built[name] = (kernel, module)
    return built


def test_the_device_takes_the_span_kernels(committed):
    assert {"mandelbrot", "corrected", "mixedwidth", "simd", "tecsbits", "seed_classify", "lanemix", "masked",
            "whiles", "fors", "raising"} <= set(committed)


@pytest.mark.parametrize("name", sorted(set(KERNELS) | {"lanemix", "masked", "whiles", "fors", "raising"}))
def test_kernel_agrees_at_every_length_and_on_edge_inputs(device, committed, name):
    kernel, built = committed[name]
    calls = [(f"length {n} {scalars}", (*kernel_inputs(built.scalar, kernel, n, offset=7 * n), *scalars))
             for n in LENGTHS for scalars in kernel.scalars[:2]]
    full = kernel_inputs(built.scalar, kernel, FULL_ROWS, RANDOM_ROWS)
    calls += [(f"full {scalars}", (*full, *scalars)) for scalars in kernel.scalars]
    for label, args in calls:
        run_both(device, built, kernel.function, args, f"{name} {label}")


# ---- (d) contraction: a * b + c rounds twice, fma once ---------------------------------------------

CONTRACTION = """\
local span = nupp.mem.span
local f32 = nupp.math.f32

local struct Triple32
    a: uint32
    b: uint32
    c: uint32
end

local struct Results32
    unfused: uint32
    fused: uint32
end

local struct Triple64
    a: number
    b: number
    c: number
end

local struct Result64
    r: number
end

@aot
local function f32_sums(exclusive out: span.WriteSpan<Results32>, borrows inp: span.Span<Triple32>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local a = f32.fromBits(inp[i].a)
        local b = f32.fromBits(inp[i].b)
        local c = f32.fromBits(inp[i].c)
        out[i].unfused = f32.bits(f32.add(f32.mul(a, b), c))
        out[i].fused = f32.bits(f32.fma(a, b, c))
    end
end

@aot
local function f64_sums(exclusive out: span.WriteSpan<Result64>, borrows inp: span.Span<Triple64>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        out[i].r = inp[i].a * inp[i].b + inp[i].c
    end
end

return {Triple32 = Triple32, Results32 = Results32, Triple64 = Triple64, Result64 = Result64,
        f32_sums = f32_sums, f64_sums = f64_sums}
"""
CONTRACTION_CASES = 400  # discriminating triples of each kind, beside the near-midpoint sweep and random ones


@pytest.fixture(scope="module")
def contraction_built(tmp_path_factory) -> Built:
    return write_module(tmp_path_factory.mktemp("spirv-contraction"), "contraction", CONTRACTION)


def f32_unfused_bits(a: int, b: int, c: int) -> int:
    return _f32_binary("add")(o.f32_mul_bits(a, b), c)


def f32_cancelling_cases(count: int, seed: int) -> list[tuple[int, int, int]]:
    """Triples with c near -(a * b rounded): the unfused sum is (nearly) the nudge, the
    fused one keeps the product's rounding error, so the two differ (checked exactly)."""
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        exponents = rng.integers(-60, 60, 2)
        a, b = (o.round_to_f32_bits(Fraction(int(rng.integers(2 ** 23, 2 ** 24))) * Fraction(2) ** int(e - 23))
                | (o.SIGN_BIT if rng.random() < 0.5 else 0) for e in exponents)
        c = (o.f32_mul_bits(a, b) ^ o.SIGN_BIT) + int(rng.integers(-2, 3))
        if o.f32_fma_bits(a, b, c) != f32_unfused_bits(a, b, c):
            cases.append((a, b, c))
    return cases


def f64_fused(a: float, b: float, c: float) -> float:
    """a * b + c rounded once (Fraction to float rounds to nearest even)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def f64_cancelling_cases(count: int, seed: int) -> list[tuple[float, float, float]]:
    """Binary64 triples whose fused and unfused a * b + c differ: c cancels the rounded product."""
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        a, b = (float(rng.uniform(1, 2)) * 2.0 ** int(e) * (-1 if rng.random() < 0.5 else 1)
                for e in rng.integers(-300, 300, 2))
        c = -(a * b)
        for _ in range(int(rng.integers(0, 3))):
            c = math.nextafter(c, math.inf if rng.random() < 0.5 else -math.inf)
        if f64_fused(a, b, c) != a * b + c:
            cases.append((a, b, c))
    return cases


def random_f32_triples(count: int, seed: int) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(seed)
    return [tuple(map(int, row)) for row in rng.integers(0, 2 ** 32, (count, 3), dtype=np.uint64)]


def f32_contraction_cases() -> list[tuple[int, int, int]]:
    a, b, c, _ = near_tie_fma_cases()
    return (f32_cancelling_cases(CONTRACTION_CASES, 1) + constructed_double_rounding_cases()
            + list(zip(map(int, a), map(int, b), map(int, c))) + random_f32_triples(2000, 2))


def test_binary32_multiply_then_add_rounds_twice_and_fma_once(device, contraction_built):
    cases = f32_contraction_cases()
    inp = np.array(cases, dtype=np.uint32).view(contraction_built.scalar.dtype("Triple32")).ravel()
    out = garbage_array(contraction_built.scalar.dtype("Results32"), len(inp))
    got = run_both(device, contraction_built, "f32_sums", (out, inp), "binary32 a * b + c").spans[0]
    unfused = [f32_unfused_bits(*t) for t in cases]
    fused = [o.f32_fma_bits(*t) for t in cases]
    assert sum(u != f for u, f in zip(unfused, fused)) >= 2 * CONTRACTION_CASES, "the cases must discriminate"
    assert sum(f != o.double_rounded_fma_bits(*t) for t, f in zip(cases, fused)) >= 100, \
        "the cases must defeat rounding in binary64 first"
    wrong = [f"{t[0]:08x} * {t[1]:08x} + {t[2]:08x}: mul/add {g:08x} (unfused {u:08x}), "
             f"fma {h:08x} (exact {f:08x})"
             for t, g, h, u, f in zip(cases, got["unfused"], got["fused"], unfused, fused) if g != u or h != f]
    assert not wrong, f"{len(wrong)} of {len(cases)} triples differ:\n" + "\n".join(wrong[:12])


def test_binary64_multiply_then_add_rounds_twice(device, contraction_built):
    rng = np.random.default_rng(3)
    random_rows = [tuple(map(float, row)) for row in rng.integers(0, 2 ** 64, (2000, 3), dtype=np.uint64)
                   .view(np.float64)]
    cases = f64_cancelling_cases(CONTRACTION_CASES, 4) + random_rows
    inp = np.array(cases, dtype=np.float64).view(contraction_built.scalar.dtype("Triple64")).ravel()
    out = garbage_array(contraction_built.scalar.dtype("Result64"), len(inp))
    got = run_both(device, contraction_built, "f64_sums", (out, inp), "binary64 a * b + c").spans[0]["r"]
    wrong = [f"{a!r} * {b!r} + {c!r}: {g!r}, unfused {a * b + c!r}" for (a, b, c), g in zip(cases, got)
             if not same_value(float(g), a * b + c, F64)]
    assert not wrong, f"{len(wrong)} of {len(cases)} triples differ:\n" + "\n".join(wrong[:12])
