"""Special values through both SPIR-V runners: x op x, and expressions whose operands share a value.

A driver's optimizer may rewrite float arithmetic by rules that hold only for
finite numbers (x - x = 0, (x + y) - x = y, x*y + x*z = x*(y + z), ...).
Mesa applies them to every instruction not marked exact; NoContraction marks
one exact, but wgpu's translation (naga) drops that decoration, so through the
wgpu runner every rule can fire.  These tests give such rules every chance:

  (a) every op of scalar_ir/ops.py OPS with a float operand (binary64
      arithmetic, comparisons, min/max, the nupp.math.f32 surface, the
      conversions from floats) applied to one local in every operand position
      (`op(a, a)`, `f32.fma(a, a, a)`), a over the special values
      {+-0, +-inf, NaN, +-the smallest denormal, +-the largest finite, 1, -1};
  (b) expressions whose operands share a value or a subexpression, shaped after
      the optimizer's rules (a - a after common subexpressions merge, (x + y) - x,
      x - (x - y), -x + x, x*y + x*x, sqrt(x*x), ...), over every pair of
      special values, in binary64 and in binary32;
  (c) without a device, the emitter's defence itself (emit_spirv/kernel.py
      KernelWriter.op) in every kernel of (a) and (b): no OpFSub, and the float
      result of every instruction a driver may rewrite is read only through
      an OpBitcast (into the integer or that hides it).

Each kernel runs through both runners (targets/device.py), as scalar C and in
the interpreter (nupp.load's modes), and every result is compared with an
oracle written from the spec (tests/test_spirv_ops.py's per-op oracles; NumPy
step by step for the expressions): a binary64 NaN equals any NaN (its payload
is not observable, LANGUAGE.md section 3), everything else, the binary32
surface included, bit for bit (a NaN canonical).  Device tests skip locally
without a Vulkan device and fail under CI (tests/test_device_runner.py).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from nupp.emit_spirv import emit_module, kernel
from nupp.emit_spirv.grammar import OPCODES
from nupp.emit_spirv.kernel import REWRITABLE  # bound here: a test turns the emitter's off
from nupp.errors import Source
from nupp.pipeline import compile_module
from nupp.runtime.api import load
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.widths import Width

from . import oracles as o
from .test_device_runner import open_runner
from .test_spirv_ops import (OPERAND_FIELD, RESULT_FIELD, op_source, operand_source, oracle, result_width,
                             same_value, stored_value)

F64, F32, BOOL = Width.F64, Width.F32, Width.BOOL
F64_SPECIALS = (0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 1.7976931348623157e308,
                -1.7976931348623157e308, 1.0, -1.0)
# the same values in binary32, by their bits
F32_SPECIALS = (0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x80000001,
                0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000)
SPECIALS = {F64: F64_SPECIALS, F32: F32_SPECIALS}

# (mode, spirv runner) of every execution compared; the device's skip without one
EXECUTIONS = (("interp", None), ("scalar", None), ("spirv", "vulkan"), ("spirv", "wgpu"))


@pytest.fixture(scope="module", params=EXECUTIONS, ids=lambda e: e[1] and f"spirv-{e[1]}" or e[0])
def execution(request):
    mode, runner = request.param
    if runner is not None:
        open_runner(runner)
    return request.param


@pytest.fixture(scope="module", autouse=True)
def _isolated_cache(tmp_path_factory):
    """A compile cache of this file's own (set before the module-scoped loads)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NUPP_CACHE_DIR", str(tmp_path_factory.mktemp("spirv-specials-cache")))
        yield


def load_as(path: Path, execution) -> object:
    """The module in `execution`; under mode spirv every function must run on the device
    (a refused one would run as lane C and prove nothing here)."""
    mode, runner = execution
    module = load(str(path), mode=mode, spirv_runner=runner or "vulkan")
    if mode == "spirv":
        off_device = {f: e for f, e in module.executions.items() if not e.startswith("spirv-")}
        assert not off_device, f"not run on the device: {off_device}"
    return module


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, execution) -> dict[str, object]:
    """Both modules of kernels, (a)'s and (b)'s, by name, loaded in `execution`."""
    folder = tmp_path_factory.mktemp("spirv-specials")
    modules = {}
    for name, text in (("same_operand", same_operand_module()), ("shapes", shapes_module())):
        path = folder / f"{name}.nupp"
        path.write_text(text)
        modules[name] = load_as(path, execution)
    return modules


def shown_value(value, width: Width) -> str:
    """A value for a message: a binary32 by its bits."""
    return f"0x{value:08X}" if width is F32 else repr(value)


# ---- (a) x op x ------------------------------------------------------------------------------------

FLOAT_OPS = [op for op, info in OPS.items() if any(w in (F64, F32) for w in info.operands)]


def same_operand_kernel(op: str) -> list[str]:
    """`op` with one local in every operand position, stored to out[i].r."""
    info = OPS[op]
    (width,) = set(info.operands)
    result = result_width(op)
    everywhere = {k: ("a", None) for k in range(len(info.operands))}
    store = ("if r then out[i].r = 1 else out[i].r = 0 end" if result is BOOL else "out[i].r = r")
    return ["@aot",
            f"local function {kernel_name(op)}(exclusive out: span.WriteSpan<Out_{result.value}>, "
            f"borrows inp: span.Span<In_{width.value}>): nil",
            '    assert(#out == #inp, "length mismatch")',
            "    for i = 1, #out do",
            f"        local a: {width.source_name} = {operand_source(0, width)}",
            f"        local r: {result.source_name} = {op_source(op, everywhere)}",
            f"        {store}",
            "    end", "end", ""]


def kernel_name(op: str) -> str:
    return "same_" + op.replace(".", "_")


def same_operand_module() -> str:
    widths = {w for op in FLOAT_OPS for w in OPS[op].operands}
    results = {result_width(op) for op in FLOAT_OPS}
    lines = ["local span = nupp.mem.span", ""]
    lines += [line for w in sorted(widths, key=str) for line in
              (f"local struct In_{w.value}", f"    o0: {OPERAND_FIELD[w]}", "end", "")]
    lines += [line for w in sorted(results, key=str) for line in
              (f"local struct Out_{w.value}", f"    r: {RESULT_FIELD[w]}", "end", "")]
    for op in FLOAT_OPS:
        lines += same_operand_kernel(op)
    exports = [*(f"In_{w.value}" for w in widths), *(f"Out_{w.value}" for w in results),
               *(kernel_name(op) for op in FLOAT_OPS)]
    lines.append("return {" + ", ".join(f"{n} = {n}" for n in sorted(exports)) + "}")
    return "\n".join(lines) + "\n"


def test_the_float_ops_take_in_the_f32_surface_comparisons_and_conversions():
    """Binary64 and binary32 arithmetic, comparisons, min/max, fma, exp and the conversions from
    floats are among them, and each takes operands of one width (one local can fill them all)."""
    for op in ("sub.f64", "sub.f32", "add.f64", "div.f32", "min.f64", "max.f32", "fma.f32", "exp.f32",
               "ne.f64", "ge.f64", "narrow.f64.f32", "wrap.f64.u64", "bits.f32.u32", "sqrt.f32", "neg.f64"):
        assert op in FLOAT_OPS
    assert all(len(set(OPS[op].operands)) == 1 for op in FLOAT_OPS)


@pytest.mark.parametrize("op", FLOAT_OPS)
def test_x_op_x_on_special_values(loaded, execution, op):
    info = OPS[op]
    (width,) = set(info.operands)
    module = loaded["same_operand"]
    inp = np.zeros(len(SPECIALS[width]), module.dtype(f"In_{width.value}"))
    inp["o0"] = SPECIALS[width]
    out = np.zeros(len(inp), module.dtype(f"Out_{result_width(op).value}"))
    getattr(module, kernel_name(op))(out, inp)
    compute, result = oracle(op), result_width(op)
    wrong = []
    for a, got in zip(SPECIALS[width], out["r"]):
        value = o.canonicalize_bits(a) if width is F32 else a
        want = compute(*[value] * len(info.operands))
        want = bool(want) if result is BOOL else want
        got = stored_value(got, result)
        if not same_value(got, want, result):
            shown = {k: (shown_value(a, width), None) for k in range(len(info.operands))}
            wrong.append(f"{op_source(op, shown)} gave {shown_value(got, result)}, want {shown_value(want, result)}")
    assert not wrong, f"{execution}: {op}:\n  " + "\n  ".join(wrong)


# ---- (b) expressions whose operands share values -----------------------------------------------------

@dataclass(frozen=True)
class Shape:
    """An expression of x and y (binary64) or of a and b (binary32 bits), and its value by NumPy, step by step."""

    name: str
    width: Width
    source: str
    value: object  # (x, y) -> the expression's value, NumPy scalars of the width


def _f32_min(a: np.float32, b: np.float32) -> np.float32:
    return o.f32_of_bits(int(o.f32_min_bits(np.array([o.bits_of_f32(a)], np.uint32),
                                            np.array([o.bits_of_f32(b)], np.uint32))[0]))


SHAPES = (
    # a - a once common subexpressions merge
    Shape("product_less_itself", F64, "x * y - x * y", lambda x, y: x * y - x * y),
    Shape("quotient_less_itself", F64, "x / y - x / y", lambda x, y: x / y - x / y),
    Shape("sum_less_itself", F64, "(x + y) - (x + y)", lambda x, y: (x + y) - (x + y)),
    Shape("floor_less_itself", F64, "math.floor(x) - math.floor(x)", lambda x, y: np.floor(x) - np.floor(x)),
    # ~fadd(-a, a + b) -> b, ~fadd(a, -a + b) -> b, and relatives
    Shape("sum_less_first", F64, "(x + y) - x", lambda x, y: (x + y) - x),
    Shape("first_less_difference", F64, "x - (x - y)", lambda x, y: x - (x - y)),
    Shape("difference_plus_second", F64, "(x - y) + y", lambda x, y: (x - y) + y),
    Shape("negated_plus_itself", F64, "-x + x", lambda x, y: -x + x),
    Shape("negated_plus_sum", F64, "-x + (x + y)", lambda x, y: -x + (x + y)),
    # ~fadd(a*b, a*c) -> a*(b + c); a*b + c fused
    Shape("common_factor", F64, "x * y + x * x", lambda x, y: x * y + x * x),
    Shape("product_plus", F64, "x * y + y", lambda x, y: x * y + y),
    Shape("root_of_square", F64, "math.sqrt(x * x)", lambda x, y: np.sqrt(x * x)),
    Shape("twice_negated", F64, "-(-x) - y", lambda x, y: -(-x) - y),
    Shape("narrowed_and_back", F64, "nupp.math.f32.narrow(x)", lambda x, y: np.float64(np.float32(x))),
    Shape("f32_sub_itself", F32, "f32.sub(f32.mul(a, b), f32.mul(a, b))", lambda a, b: a * b - a * b),
    Shape("f32_sum_less_first", F32, "f32.sub(f32.add(a, b), a)", lambda a, b: (a + b) - a),
    Shape("f32_first_less_difference", F32, "f32.sub(a, f32.sub(a, b))", lambda a, b: a - (a - b)),
    Shape("f32_negated_plus_itself", F32, "f32.add(f32.neg(a), a)", lambda a, b: -a + a),
    Shape("f32_common_factor", F32, "f32.add(f32.mul(a, b), f32.mul(a, a))", lambda a, b: a * b + a * a),
    Shape("f32_root_of_square", F32, "f32.sqrt(f32.mul(a, a))", lambda a, b: np.sqrt(a * a)),
    Shape("f32_min_less_itself", F32, "f32.sub(f32.min(a, b), f32.min(a, b))",
          lambda a, b: _f32_min(a, b) - _f32_min(a, b)),
)


def shape_kernel(shape: Shape) -> list[str]:
    """The expression over every row's pair, stored to out[i].r (a binary64 through a number local,
    a binary32 result through a float local)."""
    if shape.width is F64:
        operands = ["        local x: number = inp[i].x", "        local y: number = inp[i].y"]
        result = "number"
    else:
        operands = ["        local a: float = f32.fromBits(inp[i].a)",
                    "        local b: float = f32.fromBits(inp[i].b)"]
        result = "float"
    return ["@aot",
            f"local function {shape.name}(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<Pair>): nil",
            '    assert(#out == #inp, "length mismatch")',
            "    for i = 1, #out do", *operands,
            f"        local r: {result} = {shape.source}",
            f"        out[i].{'r' if shape.width is F64 else 's'} = r",
            "    end", "end", ""]


def shapes_module() -> str:
    lines = ["local span = nupp.mem.span", "local f32 = nupp.math.f32", "",
             "local struct Pair", "    x: number", "    y: number", "    a: uint32", "    b: uint32", "end", "",
             "local struct Out", "    r: number", "    s: float", "end", ""]
    for shape in SHAPES:
        lines += shape_kernel(shape)
    lines.append("return {Pair = Pair, Out = Out, " + ", ".join(f"{s.name} = {s.name}" for s in SHAPES) + "}")
    return "\n".join(lines) + "\n"


def every_pair(module) -> np.ndarray:
    """Every ordered pair of special values, in both widths."""
    n = len(F64_SPECIALS)
    rows = np.zeros(n * n, module.dtype("Pair"))
    rows["x"] = np.repeat(F64_SPECIALS, n)
    rows["y"] = np.tile(F64_SPECIALS, n)
    rows["a"] = np.repeat(np.array(F32_SPECIALS, np.uint32), n)
    rows["b"] = np.tile(np.array(F32_SPECIALS, np.uint32), n)
    return rows


def shape_value(shape: Shape, row) -> float | int:
    """The oracle: a binary64 value, or a binary32 result's canonical bits."""
    with np.errstate(all="ignore"):
        if shape.width is F64:
            return float(shape.value(np.float64(row["x"]), np.float64(row["y"])))
        a, b = (o.f32_of_bits(o.canonicalize_bits(int(row[k]))) for k in ("a", "b"))
        return o.canonicalize_bits(o.bits_of_f32(np.float32(shape.value(a, b))))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_expressions_sharing_operands_on_special_values(loaded, execution, shape):
    module = loaded["shapes"]
    inp = every_pair(module)
    out = np.zeros(len(inp), module.dtype("Out"))
    getattr(module, shape.name)(out, inp)
    wrong = []
    for row, result in zip(inp, out):
        want = shape_value(shape, row)
        got = stored_value(result["r" if shape.width is F64 else "s"], shape.width)
        if not same_value(got, want, shape.width):
            operands = (f"x={float(row['x'])!r}, y={float(row['y'])!r}" if shape.width is F64 else
                        f"a=0x{int(row['a']):08X}, b=0x{int(row['b']):08X}")
            wrong.append(f"{operands}: {shown_value(got, shape.width)}, want {shown_value(want, shape.width)}")
    assert not wrong, f"{execution}: {shape.source}:\n  " + "\n  ".join(wrong[:12]) + \
        (f"\n  ... {len(wrong)} in all" if len(wrong) > 12 else "")


# ---- (c) the emitted modules hide every float result ---------------------------------------------------

OPNAMES = {number: name for name, number in OPCODES.items()}
# instructions with no result type and result id (their operands start at word 1)
NO_RESULT = {"OpStore", "OpBranch", "OpBranchConditional", "OpSelectionMerge", "OpLoopMerge", "OpReturn",
             "OpReturnValue", "OpFunctionEnd", "OpLabel"}
# the words of an instruction (its first, the opcode's, is 0) that are literals, not ids
LITERAL_WORDS = {"OpExtInst": range(4, 5), "OpCompositeExtract": range(4, 99), "OpSelectionMerge": range(2, 3),
                 "OpLoopMerge": range(3, 4), "OpFunction": range(3, 4), "OpVariable": range(3, 4)}


def instructions(spirv: bytes) -> list[tuple[str, tuple[int, ...]]]:
    """(opcode name, words after the first) of each instruction after the header."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    found, at = [], 5
    while at < len(words):
        count = words[at] >> 16
        found.append((OPNAMES[words[at] & 0xFFFF], words[at + 1:at + count]))
        at += count
    return found


def hiding_faults(spirv: bytes) -> list[str]:
    """Where a module lets a driver see a float result it may rewrite, or subtracts."""
    code = instructions(spirv)
    floats = {operands[0] for name, operands in code if name == "OpTypeFloat"}
    # a float made of the bits an or / xor hid (KernelWriter.opaque, negated) is the hidden value
    hidden_bits = {operands[1] for name, operands in code if name in ("OpBitwiseOr", "OpBitwiseXor")}
    rewritable = {operands[1]: name for name, operands in code
                  if name in REWRITABLE and operands[0] in floats
                  and not (name == "OpBitcast" and operands[2] in hidden_bits)}
    faults = [f"an {name}" for name, _ in code if name == "OpFSub"]
    in_functions = False
    for name, operands in code:
        in_functions |= name == "OpFunction"
        if not in_functions:
            continue
        first = 0 if name in NO_RESULT else 2
        literal = LITERAL_WORDS.get(name, range(0))
        for k, word in enumerate(operands[first:], start=first + 1):
            if k not in literal and word in rewritable and name != "OpBitcast":
                faults.append(f"{name} reads %{word}, an {rewritable[word]}, unhidden")
    return faults


def module_faults(text: str) -> dict[str, list[str]]:
    """hiding_faults of every module of every kernel of a Nupp module's text."""
    device = emit_module(compile_module(Source("kernels.nupp", text)), "kernels.nupp")
    assert not device.refused, device.refused
    faults = {f"{name} ({role})": hiding_faults(spirv) for name, kernel in device.kernels.items()
              for role, spirv in kernel.modules()}
    return {where: found for where, found in faults.items() if found}


@pytest.mark.parametrize("module_text", [same_operand_module, shapes_module], ids=["same_operand", "shapes"])
def test_every_float_result_a_driver_may_rewrite_is_hidden(module_text):
    assert module_faults(module_text()) == {}


def test_the_hiding_check_finds_an_unhidden_result(monkeypatch):
    """hiding_faults reads the SPIR-V the emitter writes: without the defence, the shapes fail it."""
    monkeypatch.setattr(kernel, "REWRITABLE", ())
    faults = module_faults(shapes_module())
    assert set(faults) == {f"{shape.name} (main)" for shape in SHAPES}, faults
