"""The SPIR-V device runners (targets/device.py) on the Vulkan device here:
Mesa's lavapipe on a machine without a GPU.

Each kernel is built by hand with emit_spirv/module.py in the emitter's
buffer convention (a Block struct holding a runtime array of 32-bit words,
ArrayStride 4, in the StorageBuffer class; NonWritable on the variable of a
read-only buffer), must pass `spirv-val --target-env vulkan1.1`, and runs
through both runners: wgpu (naga translates the module) and raw Vulkan (the
driver gets it untranslated).  Results are compared bit for bit with NumPy.

The kernels are the constructs the SPIR-V emitter writes: a 2-D dispatch
indexed through NumWorkgroups; binary64 and 64-bit integers carried as word
pairs (joined with OpUConvert, shifts and OR, never a uvec2 bitcast, which naga
mistranslates); atomics on plain words; a
function call, a return inside a selection, a structured loop over Function
variables; NoContraction; GLSL.std.450 Floor/Trunc/Sqrt/FAbs; OpIsNan,
OpSelect, conversions between 32 and 64 bits, a 64-bit shift by a 32-bit count;
signed operations on signed operands (naga computes OpSDiv, OpSRem,
OpShiftRightArithmetic and OpConvertSToF by the operands' type, unsigned on
uint operands, so the emitter bitcasts them to int first).

Locally the tests skip when wgpu, vulkan or a Vulkan driver is missing; under
CI nothing skips (.ci/run installs mesa-vulkan-drivers and libvulkan1, and
the test extra pulls in the spirv extra).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from nupp.emit_spirv.grammar import ENUMS
from nupp.emit_spirv.module import Module
from nupp.targets import device
from nupp.targets.device import RUNNERS, Binding, DeviceError, DeviceUnavailable

from .conftest import UNDER_CI, require_tool
from .spirv_tools import spirv_val_problem

LOCAL_SIZE = 64
# GLSL.std.450 extended instruction numbers (the extended instruction set's specification, typed here).
FLOOR, TRUNC, FABS, SQRT = 8, 3, 4, 31
RNG = np.random.default_rng(12)


def open_runner(kind: str) -> device.Runner:
    try:
        return device.runner(kind)
    except DeviceUnavailable as unavailable:
        if UNDER_CI:
            pytest.fail(f"the {kind} SPIR-V runner is required under CI: {unavailable}")
        pytest.skip(f"the {kind} SPIR-V runner is unavailable: {unavailable}")


@pytest.fixture(params=RUNNERS)
def runner(request) -> device.Runner:
    return open_runner(request.param)


# -- a kernel in the emitter's conventions ----------------------------------------------------------

class Kernel:
    """A GLCompute module, local size 64, whose buffers are runtime arrays of words in set 0.

    `body(k, index)` writes the code of one invocation; `index` is its linear
    index, id.y * (NumWorkgroups.x * 64) + id.x, and the kernel returns first
    when it is not below `length` words (the buffers' element count)."""

    def __init__(self, writable: Sequence[bool], capabilities: Sequence[str] = (),
                 storage: str = "StorageBuffer"):
        m = self.m = Module(version=(1, 3))
        for capability in ("Shader", *capabilities):
            m.capability(capability)
        self.storage = storage
        self.void, self.bool = m.type_void(), m.type_bool()
        self.uint, self.int, self.float = m.type_int(32, False), m.type_int(32, True), m.type_float(32)
        self.uvec3 = m.type_vector(self.uint, 3)
        self.buffers = [self._buffer(binding, w) for binding, w in enumerate(writable)]
        self.builtins = {name: self._builtin(name) for name in ("GlobalInvocationId", "NumWorkgroups")}
        self.main = m.function(self.void, m.type_function(self.void))
        self.f = self.main  # the function being written
        self.glsl = m.ext_inst_import("GLSL.std.450")

    def _buffer(self, binding: int, writable: bool) -> int:
        m = self.m
        words = m.type_runtime_array(self.uint)
        m.decorate(words, "ArrayStride", 4)
        block = m.type_struct(words)
        m.member_decorate(block, 0, "Offset", 0)
        m.decorate(block, "Block" if self.storage == "StorageBuffer" else "BufferBlock")
        variable = m.global_variable(m.type_pointer(self.storage, block), self.storage)
        m.decorate(variable, "DescriptorSet", 0)
        m.decorate(variable, "Binding", binding)
        if not writable:
            m.decorate(variable, "NonWritable")
        return variable

    def _builtin(self, name: str) -> int:
        variable = self.m.global_variable(self.m.type_pointer("Input", self.uvec3), "Input")
        self.m.decorate(variable, "BuiltIn", ENUMS["BuiltIn"][name])
        return variable

    # -- values
    def c(self, type_id: int, value) -> int:
        return self.m.constant(type_id, value)

    def op(self, opname: str, type_id: int, *operands) -> int:
        return self.f.value(opname, type_id, *operands)

    def exact(self, opname: str, type_id: int, *operands) -> int:
        """A float operation decorated NoContraction, as the emitter writes every one."""
        result = self.op(opname, type_id, *operands)
        self.m.decorate(result, "NoContraction")
        return result

    def ext(self, type_id: int, instruction: int, *operands) -> int:
        return self.op("OpExtInst", type_id, self.glsl, instruction, *operands)

    def builtin_x_y(self, name: str) -> tuple[int, int]:
        vector = self.op("OpLoad", self.uvec3, self.builtins[name])
        return (self.op("OpCompositeExtract", self.uint, vector, 0),
                self.op("OpCompositeExtract", self.uint, vector, 1))

    def word(self, buffer: int, index: int) -> int:
        """A pointer to word `index` of buffer `buffer`."""
        pointer = self.m.type_pointer(self.storage, self.uint)
        return self.op("OpAccessChain", pointer, self.buffers[buffer], self.c(self.uint, 0), index)

    def load(self, buffer: int, index: int) -> int:
        return self.op("OpLoad", self.uint, self.word(buffer, index))

    def store(self, buffer: int, index: int, value: int) -> None:
        self.f.effect("OpStore", self.word(buffer, index), value)

    def join64(self, buffer: int, index: int, type_id: int) -> int:
        """Words 2*index (low) and 2*index+1 (high) as one 64-bit value of `type_id`, joined as
        u64(low) | u64(high) << 32.  (naga translates an OpBitcast from a uvec2 to a 64-bit
        scalar as a bitcast of each component: the value is wrong, without an error.)"""
        u64 = self.m.type_int(64, False)
        low_at = self.op("OpIMul", self.uint, index, self.c(self.uint, 2))
        high_at = self.op("OpIAdd", self.uint, low_at, self.c(self.uint, 1))
        low = self.op("OpUConvert", u64, self.load(buffer, low_at))
        high = self.op("OpShiftLeftLogical", u64, self.op("OpUConvert", u64, self.load(buffer, high_at)),
                       self.c(self.uint, 32))
        joined = self.op("OpBitwiseOr", u64, low, high)
        return joined if type_id == u64 else self.op("OpBitcast", type_id, joined)

    def split64(self, buffer: int, index: int, value: int) -> None:
        """Store a 64-bit value as words 2*index (low) and 2*index+1 (high)."""
        u64 = self.m.type_int(64, False)
        bits = self.op("OpBitcast", u64, value)
        low_at = self.op("OpIMul", self.uint, index, self.c(self.uint, 2))
        self.store(buffer, low_at, self.op("OpUConvert", self.uint, bits))
        self.store(buffer, self.op("OpIAdd", self.uint, low_at, self.c(self.uint, 1)),
                   self.op("OpUConvert", self.uint, self.op("OpShiftRightLogical", u64, bits, self.c(self.uint, 32))))

    def if_then_return(self, condition: int, then: Callable[[], None]) -> None:
        """if condition { then(); return } -- a return inside a selection construct."""
        taken, merge = self.m.fresh_id(), self.m.fresh_id()
        self.f.effect("OpSelectionMerge", merge, 0)
        self.f.effect("OpBranchConditional", condition, taken, merge)
        self.f.effect("OpLabel", taken)
        then()
        self.f.effect("OpReturn")
        self.f.effect("OpLabel", merge)

    def build(self, body: Callable[[Kernel, int], None], length: int, prelude: Callable[[Kernel], None] = None
              ) -> bytes:
        self.f.label()
        if prelude:
            prelude(self)  # Function variables: the first instructions of the first block
        id_x, id_y = self.builtin_x_y("GlobalInvocationId")
        groups_x, _ = self.builtin_x_y("NumWorkgroups")
        row = self.op("OpIMul", self.uint, groups_x, self.c(self.uint, LOCAL_SIZE))
        index = self.op("OpIAdd", self.uint, self.op("OpIMul", self.uint, id_y, row), id_x)
        self.if_then_return(self.op("OpUGreaterThanEqual", self.bool, index, self.c(self.uint, length)),
                            lambda: None)
        body(self, index)
        self.f.effect("OpReturn")
        self.f.end()
        self.m.entry_point("GLCompute", self.main.id, "main", tuple(self.builtins.values()))
        self.m.execution_mode(self.main.id, "LocalSize", LOCAL_SIZE, 1, 1)
        return self.m.to_bytes()


def spirv_val(spirv: bytes) -> None:
    """spirv-val accepts the module (tests/spirv_tools.py; missing, it skips locally and fails under CI)."""
    require_tool("spirv-val")
    problem = spirv_val_problem(spirv)
    assert problem is None, problem


def run(runner, spirv: bytes, arrays: Sequence[np.ndarray], writable: Sequence[bool],
        groups=None, needs=frozenset()) -> list[np.ndarray]:
    """Validate, run, and give every buffer's contents after the run (read-only ones as they were)."""
    spirv_val(spirv)
    words = max(a.nbytes for a in arrays) // 4
    groups = groups or (-(-words // LOCAL_SIZE), 1, 1)
    out = runner.run(spirv, [Binding(n, a.tobytes(), w) for n, (a, w) in enumerate(zip(arrays, writable))],
                     groups, needs)
    assert sorted(out) == [n for n, w in enumerate(writable) if w]
    return [np.frombuffer(out[n], a.dtype) if w else a for n, (a, w) in enumerate(zip(arrays, writable))]


def random_bits(count: int, dtype) -> np.ndarray:
    return RNG.integers(0, 1 << 32, count * np.dtype(dtype).itemsize // 4, dtype=np.uint32).view(dtype)


def float_edges(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, -1.5, 2.5, info.tiny, info.smallest_subnormal,
             -info.smallest_subnormal, info.max, -info.max, np.inf, -np.inf, 1e10, -1e10, 3.999]
    return np.array(edges, dtype=dtype)


def floats(count: int, dtype) -> np.ndarray:
    """Edge values, then random bit patterns without NaNs (NaN payloads are the emitter's business)."""
    values = np.concatenate([float_edges(dtype), random_bits(count, dtype)])[:count]
    return np.where(np.isnan(values), dtype(1.25), values).astype(dtype)


def same_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    expected = np.asarray(expected, actual.dtype)
    different = np.flatnonzero(actual.view(f"u{actual.itemsize}") != expected.view(f"u{actual.itemsize}"))
    assert different.size == 0, (f"{different.size} of {actual.size} differ; first at {different[0]}: "
                                 f"{actual[different[0]]!r} != {expected[different[0]]!r}")


# -- 1. words in, words out over a 2-D dispatch ------------------------------------------------------

def double_words(k: Kernel, index: int) -> None:
    k.store(1, index, k.op("OpIMul", k.uint, k.load(0, index), k.c(k.uint, 2)))


@pytest.mark.parametrize("groups, storage", [
    ((1, 1, 1), "StorageBuffer"), ((3, 1, 1), "StorageBuffer"), ((4, 5, 1), "StorageBuffer"),
    ((4, 5, 1), "Uniform"),  # SPIR-V 1.0's Uniform + BufferBlock: accepted too
])
def test_two_d_dispatch_doubles_every_word(runner, groups, storage):
    length = groups[0] * groups[1] * LOCAL_SIZE - 5  # the last invocations are past the end
    a = random_bits(length, np.uint32)
    spirv = Kernel([False, True], storage=storage).build(double_words, length)
    _, b = run(runner, spirv, [a, np.full(length, 7, np.uint32)], [False, True], groups)
    same_bits(b, a * np.uint32(2))


def test_a_million_words(runner):
    length = 1 << 20
    groups = (1024, length // (1024 * LOCAL_SIZE), 1)
    a = random_bits(length, np.uint32)
    _, b = run(runner, Kernel([False, True]).build(double_words, length),
               [a, np.zeros(length, np.uint32)], [False, True], groups)
    same_bits(b, a * np.uint32(2))


# -- 2. binary64 and 64-bit integers as word pairs -----------------------------------------------------

def test_float64_arithmetic(runner):
    n, ops = 500, ("OpFAdd", "OpFSub", "OpFMul", "OpFDiv")

    def body(k: Kernel, index: int) -> None:
        f64 = k.m.type_float(64)
        x, y = k.join64(0, index, f64), k.join64(1, index, f64)
        for out, opname in enumerate(ops, 2):
            k.split64(out, index, k.exact(opname, f64, x, y))

    a, b = floats(n, np.float64), floats(n, np.float64)[::-1].copy()
    results = run(runner, Kernel([False, False] + [True] * 4, ["Float64", "Int64"]).build(body, n),
                  [a, b] + [np.zeros(n, np.float64)] * 4, [False, False] + [True] * 4, needs=frozenset({"f64", "i64"}))
    with np.errstate(all="ignore"):
        expected = [a + b, a - b, a * b, a / b]
    for got, want in zip(results[2:], expected):
        same_bits(got, np.where(np.isnan(want), got, want))  # NaN bits are the emitter's to make canonical


def test_int64_arithmetic(runner):
    n = 500

    def body(k: Kernel, index: int) -> None:
        u64, i64 = k.m.type_int(64, False), k.m.type_int(64, True)
        x, y = k.join64(0, index, u64), k.join64(1, index, u64)
        sx, sy = k.op("OpBitcast", i64, x), k.op("OpBitcast", i64, y)
        k.split64(2, index, k.op("OpIAdd", u64, x, y))
        k.split64(3, index, k.op("OpIMul", i64, sx, sy))
        k.split64(4, index, k.op("OpUDiv", u64, x, y))
        k.split64(5, index, k.op("OpSRem", i64, sx, sy))

    x, y = random_bits(n, np.uint64), random_bits(n, np.uint64) >> np.uint64(17) | np.uint64(1)
    results = run(runner, Kernel([False, False] + [True] * 4, ["Int64"]).build(body, n),
                  [x, y] + [np.zeros(n, np.uint64)] * 4, [False, False] + [True] * 4, needs=frozenset({"i64"}))
    sx, sy = x.view(np.int64), y.view(np.int64)
    with np.errstate(over="ignore"):
        expected = [x + y, (sx * sy).view(np.uint64), x // y, np.fmod(sx, sy).view(np.uint64)]
    for got, want in zip(results[2:], expected):
        same_bits(got, want)


# -- 3. atomics on plain words -------------------------------------------------------------------------

DEVICE_SCOPE, RELAXED = 1, 0


def atomic(k: Kernel, opname: str, word: int, value: int) -> None:
    k.op(opname, k.uint, k.word(1, k.c(k.uint, word)), k.c(k.uint, DEVICE_SCOPE), k.c(k.uint, RELAXED), value)


def test_atomic_minimum_records_the_lowest_failing_index(runner):
    """Invocations whose word is odd "fail": they record their index with an atomic
    minimum on word 0 of a buffer whose other words are plain loads and stores, and return."""
    n = 1000

    def body(k: Kernel, index: int) -> None:
        word = k.load(0, index)
        odd = k.op("OpINotEqual", k.bool, k.op("OpBitwiseAnd", k.uint, word, k.c(k.uint, 1)), k.c(k.uint, 0))
        k.if_then_return(odd, lambda: atomic(k, "OpAtomicUMin", 0, index))
        k.store(1, k.op("OpIAdd", k.uint, index, k.c(k.uint, 1)), word)

    a = np.arange(n, dtype=np.uint32) * 2
    a[[700, 333, 999]] |= 1
    status = np.zeros(n + 1, np.uint32)
    status[0] = 0xFFFFFFFF
    _, out = run(runner, Kernel([False, True]).build(body, n), [a, status], [False, True])
    assert out[0] == 333
    same_bits(out[1:], np.where(a % 2 == 1, 0, a))


def test_atomic_reductions(runner):
    n = 1000
    ops = ("OpAtomicIAdd", "OpAtomicUMax", "OpAtomicUMin", "OpAtomicOr", "OpAtomicAnd", "OpAtomicXor")

    def body(k: Kernel, index: int) -> None:
        word = k.load(0, index)
        for slot, opname in enumerate(ops):
            atomic(k, opname, slot, word)

    a = random_bits(n, np.uint32)
    start = np.array([0, 0, 0xFFFFFFFF, 0, 0xFFFFFFFF, 0], np.uint32)
    _, out = run(runner, Kernel([False, True]).build(body, n), [a, start], [False, True])
    same_bits(out, [a.sum(dtype=np.uint32), a.max(), a.min(), np.bitwise_or.reduce(a),
                    np.bitwise_and.reduce(a), np.bitwise_xor.reduce(a)])


# -- 4, 5. functions, selections, loops, Function variables, NoContraction ------------------------------

def test_helper_function_call(runner):
    """float madd(float a, float b) { return a * b + 1.0; }, both operations NoContraction:
    unfused, as NumPy's separate roundings (the random operands make a fused result differ often)."""
    n = 500

    def body(k: Kernel, index: int) -> None:
        main, f32 = k.f, k.float
        madd = k.f = k.m.function(f32, k.m.type_function(f32, f32, f32))
        a, b = madd.value("OpFunctionParameter", f32), madd.value("OpFunctionParameter", f32)
        madd.label()
        madd.effect("OpReturnValue", k.exact("OpFAdd", f32, k.exact("OpFMul", f32, a, b), k.c(f32, 1.0)))
        madd.end()
        k.f = main
        x, y = (k.op("OpBitcast", f32, k.load(buffer, index)) for buffer in (0, 1))
        k.store(2, index, k.op("OpBitcast", k.uint, k.op("OpFunctionCall", f32, madd.id, x, y)))

    a, b = floats(n, np.float32), floats(n, np.float32)[::-1].copy()
    *_, out = run(runner, Kernel([False, False, True]).build(body, n),
                  [a, b, np.zeros(n, np.float32)], [False, False, True])
    with np.errstate(all="ignore"):
        expected = a * b + np.float32(1)
    same_bits(out, np.where(np.isnan(expected), out, expected))


def test_structured_loop_over_function_variables(runner):
    """s = 0; for j = 0, word % 50 - 1 do s += 3 * j end: a loop header (OpLoopMerge), a
    condition block leaving to the merge, a body, a continue block branching back."""
    n = 300

    def variables(k: Kernel) -> None:
        pointer = k.m.type_pointer("Function", k.uint)
        k.j, k.s = (k.op("OpVariable", pointer, ENUMS["StorageClass"]["Function"]) for _ in range(2))

    def body(k: Kernel, index: int) -> None:
        f, uint = k.f, k.uint
        count = k.op("OpUMod", uint, k.load(0, index), k.c(uint, 50))
        f.effect("OpStore", k.j, k.c(uint, 0))
        f.effect("OpStore", k.s, k.c(uint, 0))
        header, condition, loop_body, advance, merge = (k.m.fresh_id() for _ in range(5))
        f.effect("OpBranch", header)
        f.effect("OpLabel", header)
        f.effect("OpLoopMerge", merge, advance, 0)
        f.effect("OpBranch", condition)
        f.effect("OpLabel", condition)
        j = k.op("OpLoad", uint, k.j)
        f.effect("OpBranchConditional", k.op("OpULessThan", k.bool, j, count), loop_body, merge)
        f.effect("OpLabel", loop_body)
        tripled = k.op("OpIMul", uint, j, k.c(uint, 3))
        f.effect("OpStore", k.s, k.op("OpIAdd", uint, k.op("OpLoad", uint, k.s), tripled))
        f.effect("OpBranch", advance)
        f.effect("OpLabel", advance)
        f.effect("OpStore", k.j, k.op("OpIAdd", uint, k.op("OpLoad", uint, k.j), k.c(uint, 1)))
        f.effect("OpBranch", header)
        f.effect("OpLabel", merge)
        k.store(1, index, k.op("OpLoad", uint, k.s))

    a = random_bits(n, np.uint32)
    _, out = run(runner, Kernel([False, True]).build(body, n, variables),
                 [a, np.zeros(n, np.uint32)], [False, True])
    count = a % 50
    same_bits(out, count * (count - 1) // 2 * 3)


def test_return_inside_a_selection(runner):
    n = 300

    def body(k: Kernel, index: int) -> None:
        small = k.op("OpULessThan", k.bool, k.load(0, index), k.c(k.uint, 1 << 31))
        k.if_then_return(small, lambda: k.store(1, index, k.c(k.uint, 1)))
        k.store(1, index, k.c(k.uint, 2))

    a = random_bits(n, np.uint32)
    _, out = run(runner, Kernel([False, True]).build(body, n), [a, np.zeros(n, np.uint32)], [False, True])
    same_bits(out, np.where(a < 1 << 31, 1, 2))


# -- 6. GLSL.std.450 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [32, 64])
def test_glsl_floor_trunc_fabs_sqrt(runner, width):
    n, dtype = 500, {32: np.float32, 64: np.float64}[width]
    instructions = (FLOOR, TRUNC, FABS, SQRT)

    def body(k: Kernel, index: int) -> None:
        real = k.m.type_float(width)
        if width == 32:
            x = k.op("OpBitcast", real, k.load(0, index))
            for out, instruction in enumerate(instructions, 1):
                k.store(out, index, k.op("OpBitcast", k.uint, k.ext(real, instruction, x)))
        else:
            x = k.join64(0, index, real)
            for out, instruction in enumerate(instructions, 1):
                k.split64(out, index, k.ext(real, instruction, x))

    capabilities, needs = ((), frozenset()) if width == 32 else (("Float64", "Int64"), frozenset({"f64", "i64"}))
    a = floats(n, dtype)
    results = run(runner, Kernel([False] + [True] * 4, capabilities).build(body, n),
                  [a] + [np.zeros(n, dtype)] * 4, [False] + [True] * 4, needs=needs)
    with np.errstate(invalid="ignore"):
        expected = [np.floor(a), np.trunc(a), np.abs(a), np.sqrt(a)]
    for got, want in zip(results[1:], expected):
        same_bits(got, np.where(np.isnan(want), got, want))


# -- 7. NaN tests, selects, conversions, mixed-width shifts, signed operations ----------------------------

def test_isnan_and_select_keep_payloads(runner):
    n = 256

    def body(k: Kernel, index: int) -> None:
        x, y = (k.op("OpBitcast", k.float, k.load(buffer, index)) for buffer in (0, 1))
        k.store(2, index, k.op("OpSelect", k.uint, k.op("OpIsNan", k.bool, x), k.c(k.uint, 1), k.c(k.uint, 0)))
        smaller = k.op("OpSelect", k.float, k.op("OpFOrdLessThan", k.bool, x, y), x, y)
        k.store(3, index, k.op("OpBitcast", k.uint, smaller))

    a = random_bits(n, np.float32)
    a[:5] = np.array([0x7F800001, 0xFFC00001, 0x7FC12345, 0xFF800001, 0x7FFFFFFF], np.uint32).view(np.float32)
    b = floats(n, np.float32)
    *_, nan, smaller = run(runner, Kernel([False, False, True, True]).build(body, n),
                           [a, b, np.zeros(n, np.uint32), np.zeros(n, np.float32)], [False, False, True, True])
    same_bits(nan, np.isnan(a))
    with np.errstate(invalid="ignore"):
        same_bits(smaller, np.where(a < b, a, b))  # a NaN operand's payload passes through unchanged


def test_conversions_between_32_and_64_bits(runner):
    n = 256
    rng = np.random.default_rng(7)
    f32 = np.concatenate([[0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2147483520.0, -2147483648.0, 0.99999994],
                          rng.uniform(-2.0 ** 31, 2.0 ** 31 - 128, n)])[:n].astype(np.float32)
    f64 = np.concatenate([[0.0, -0.0, 0.5, -0.5, 2147483647.9, -2147483648.9, 1e-300, -1e-300, 1e300],
                          rng.uniform(-2.0 ** 31, 2.0 ** 31, n)])[:n]
    f64[8] = 1e30  # f64 -> f32 rounding of a large value (not converted to an integer below)
    i32, i64 = random_bits(n, np.int32), random_bits(n, np.int64)
    count = i32.view(np.uint32) & np.uint32(63)
    with np.errstate(all="ignore"):
        in_i32_range = np.where(np.abs(f64) < 2.0 ** 31, f64, 0.0)
        cases = [  # (name, result dtype, expected, SPIR-V of one invocation)
            ("f32 -> i32", np.int32, np.trunc(f32).astype(np.int32), lambda k, v: k.op("OpConvertFToS", k.int, v.f32)),
            ("f64 -> i32", np.int32, np.trunc(in_i32_range).astype(np.int32),
             lambda k, v: k.op("OpConvertFToS", k.int, v.f64_small)),
            ("f64 -> i64", np.int64, np.trunc(in_i32_range).astype(np.int64),
             lambda k, v: k.op("OpConvertFToS", v.i64_type, v.f64_small)),
            ("i32 -> f64", np.float64, i32.astype(np.float64), lambda k, v: k.op("OpConvertSToF", v.f64_type, v.i32)),
            ("i64 -> f64", np.float64, i64.astype(np.float64), lambda k, v: k.op("OpConvertSToF", v.f64_type, v.i64)),
            ("i64 -> f32", np.float32, i64.astype(np.float32), lambda k, v: k.op("OpConvertSToF", k.float, v.i64)),
            ("f32 -> f64", np.float64, f32.astype(np.float64), lambda k, v: k.op("OpFConvert", v.f64_type, v.f32)),
            ("f64 -> f32", np.float32, f64.astype(np.float32), lambda k, v: k.op("OpFConvert", k.float, v.f64)),
            ("i32 -> i64", np.int64, i32.astype(np.int64), lambda k, v: k.op("OpSConvert", v.i64_type, v.i32)),
            ("i64 -> i32", np.int32, i64.astype(np.int32), lambda k, v: k.op("OpSConvert", k.int, v.i64)),
            ("u32 -> u64", np.uint64, i32.view(np.uint32).astype(np.uint64),
             lambda k, v: k.op("OpUConvert", v.u64_type, v.u32)),
            ("u64 -> u32", np.uint32, i64.view(np.uint64).astype(np.uint32),
             lambda k, v: k.op("OpUConvert", k.uint, k.op("OpBitcast", v.u64_type, v.i64))),
            ("u64 << u32", np.uint64, i64.view(np.uint64) << count.astype(np.uint64),
             lambda k, v: k.op("OpShiftLeftLogical", v.u64_type, k.op("OpBitcast", v.u64_type, v.i64), v.count)),
            ("i64 >> u32", np.int64, i64 >> count.astype(np.int64),
             lambda k, v: k.op("OpShiftRightArithmetic", v.i64_type, v.i64, v.count)),
        ]

    class Values:
        """The inputs of one invocation, as SPIR-V ids."""

    def body(k: Kernel, index: int) -> None:
        v = Values()
        v.f64_type, v.i64_type, v.u64_type = k.m.type_float(64), k.m.type_int(64, True), k.m.type_int(64, False)
        v.f32 = k.op("OpBitcast", k.float, k.load(0, index))
        v.f64, v.f64_small = k.join64(1, index, v.f64_type), k.join64(2, index, v.f64_type)
        v.u32 = k.load(3, index)
        v.i32 = k.op("OpBitcast", k.int, v.u32)
        v.i64 = k.join64(4, index, v.i64_type)
        v.count = k.op("OpBitwiseAnd", k.uint, v.u32, k.c(k.uint, 63))
        for out, (_, dtype, _, make) in enumerate(cases, 5):
            if np.dtype(dtype).itemsize == 8:
                k.split64(out, index, make(k, v))
            else:
                k.store(out, index, k.op("OpBitcast", k.uint, make(k, v)))

    inputs = [f32, f64, in_i32_range, i32, i64]
    writable = [False] * len(inputs) + [True] * len(cases)
    results = run(runner, Kernel(writable, ["Float64", "Int64"]).build(body, n),
                  inputs + [np.zeros(n, dtype) for _, dtype, _, _ in cases], writable, needs=frozenset({"f64", "i64"}))
    for (name, _, expected, _), got in zip(cases, results[len(inputs):]):
        try:
            same_bits(got, expected)
        except AssertionError as err:
            raise AssertionError(f"{name}: {err}") from None


SIGNED_OPS = {  # SPIR-V op -> NumPy over int64 copies of int32 operands (the divisor is odd: never 0)
    "OpSDiv": lambda x, y: np.trunc(x / y),
    "OpSRem": np.fmod,
    "OpShiftRightArithmetic": lambda x, y: x >> (y & 31),
}


@pytest.mark.parametrize("opname", SIGNED_OPS)
def test_signed_operations_on_signed_operands(runner, opname):
    """The form the emitter writes: int-typed operands (naga computes these ops by the operands'
    type: on uint operands it divides, takes remainders and shifts unsigned)."""
    n = 500

    def body(k: Kernel, index: int) -> None:
        x, y = (k.op("OpBitcast", k.int, k.load(buffer, index)) for buffer in (0, 1))
        if opname == "OpShiftRightArithmetic":
            y = k.op("OpBitwiseAnd", k.int, y, k.c(k.int, 31))
        k.store(2, index, k.op("OpBitcast", k.uint, k.op(opname, k.int, x, y)))

    a, b = random_bits(n, np.int32), random_bits(n, np.int32) | np.int32(1)
    a[a == np.iinfo(np.int32).min] = 0  # INT_MIN / -1 is undefined in SPIR-V: the emitter guards it
    *_, out = run(runner, Kernel([False, False, True]).build(body, n),
                  [a, b, np.zeros(n, np.int32)], [False, False, True])
    same_bits(out, SIGNED_OPS[opname](a.astype(np.int64), b.astype(np.int64)).astype(np.int64).astype(np.int32))


# -- the runner itself ------------------------------------------------------------------------------------

def test_execution_name_names_the_device(runner):
    assert runner.execution_name == f"spirv-{runner.device_name}"
    if "llvmpipe" in runner.adapter_name:
        assert runner.device_name == "lavapipe"


def test_one_runner_per_kind_and_pipelines_cached_by_module(runner):
    assert device.runner(runner.kind) is runner
    n = 64
    spirv = Kernel([False, True]).build(double_words, n)
    a = random_bits(n, np.uint32)
    run(runner, spirv, [a, a], [False, True])
    cached = dict(runner._pipelines)
    _, again = run(runner, spirv, [a, a], [False, True])
    assert runner._pipelines == cached  # the same pipeline objects: nothing new compiled
    same_bits(again, a * np.uint32(2))


def test_zero_workgroups_leave_the_buffers_as_they_were(runner):
    a = random_bits(64, np.uint32)
    spirv = Kernel([False, True]).build(double_words, 64)
    out = runner.run(spirv, [Binding(0, a.tobytes(), False), Binding(1, a.tobytes(), True)], (0, 1, 1))
    assert out == {1: a.tobytes()}


@pytest.mark.parametrize("bindings, groups, needs, message", [
    ([Binding(0, b"\0" * 6, False), Binding(1, b"\0" * 8, True)], (1, 1, 1), frozenset(), "positive multiple of 4"),
    ([Binding(0, b"", False), Binding(1, b"\0" * 8, True)], (1, 1, 1), frozenset(), "positive multiple of 4"),
    ([Binding(1, b"\0" * 8, False), Binding(1, b"\0" * 8, True)], (1, 1, 1), frozenset(), "distinct"),
    ([Binding(0, memoryview(b"\0" * 16)[::2], False), Binding(1, b"\0" * 8, True)], (1, 1, 1), frozenset(),
     "not contiguous"),
    ([Binding(0, b"\0" * 8, False), Binding(1, b"\0" * 8, True)], (-1, 1, 1), frozenset(), "workgroup counts"),
    ([Binding(0, b"\0" * 8, False), Binding(1, b"\0" * 8, True)], (1 << 20, 1, 1), frozenset(), "workgroup counts"),
    ([Binding(0, b"\0" * 8, False), Binding(1, b"\0" * 8, True)], (1, 1, 1), frozenset({"f16"}), "unknown"),
])
def test_bad_calls_are_refused_before_the_device_sees_them(runner, bindings, groups, needs, message):
    spirv = Kernel([False, True]).build(double_words, 2)
    with pytest.raises(ValueError, match=message):
        runner.run(spirv, bindings, groups, needs)


def test_a_module_must_be_spirv_and_ask_for_what_it_declares(runner):
    with pytest.raises(ValueError, match="not a little-endian SPIR-V binary"):
        runner.run(b"\0" * 40, [Binding(0, b"\0" * 4, True)], (1, 1, 1))
    float64 = Kernel([True], ["Float64"]).build(lambda k, index: None, 1)
    with pytest.raises(ValueError, match=r"capabilities of \['f64'\]"):
        runner.run(float64, [Binding(0, b"\0" * 4, True)], (1, 1, 1))


def test_a_feature_the_device_lacks_is_device_unavailable(runner, monkeypatch):
    monkeypatch.setattr(runner, "features", frozenset({"i64"}))
    float64 = Kernel([True], ["Float64"]).build(lambda k, index: None, 1)
    feature = {"wgpu": "shader-f64", "vulkan": "shaderFloat64"}[runner.kind]
    with pytest.raises(DeviceUnavailable, match=f"lacks f64 .*{feature}"):
        runner.run(float64, [Binding(0, b"\0" * 4, True)], (1, 1, 1), frozenset({"f64"}))


def test_a_driver_refusal_names_the_step(runner):
    """A module whose entry point is not "main": the device refuses the pipeline, and says so."""
    spirv = Kernel([False, True]).build(double_words, 64).replace(b"main\0\0\0\0", b"mian\0\0\0\0", 1)
    with pytest.raises(DeviceError, match=f"{runner.kind} runner: creating the compute pipeline failed"):
        runner.run(spirv, [Binding(0, b"\0" * 256, False), Binding(1, b"\0" * 256, True)], (1, 1, 1))


def test_naga_checks_the_bindings_against_the_module():
    """Through wgpu a binding the module writes cannot be bound read-only."""
    runner = open_runner("wgpu")
    spirv = Kernel([False, True]).build(double_words, 64)
    with pytest.raises(DeviceError, match="wgpu runner: creating the compute pipeline failed"):
        runner.run(spirv, [Binding(0, b"\0" * 256, False), Binding(1, b"\0" * 256, False)], (1, 1, 1))


def test_unknown_runner_kind():
    with pytest.raises(ValueError, match="no SPIR-V runner named 'opencl'"):
        device.runner("opencl")


def test_an_unavailable_runner_says_why_each_time(monkeypatch):
    calls = []

    def unavailable():
        calls.append(1)
        raise DeviceUnavailable("no device here; install one")

    monkeypatch.setattr(device, "_opened", {})
    monkeypatch.setitem(device._OPENERS, "vulkan", unavailable)
    for _ in range(2):
        with pytest.raises(DeviceUnavailable, match="no device here; install one"):
            device.runner("vulkan")
    assert calls == [1]  # probed once per process


def test_a_missing_package_names_the_install():
    with pytest.raises(DeviceUnavailable, match=r"nupp_no_such_package is not installed; pip install 'nupp\[spirv\]'"):
        device._import("nupp_no_such_package")


@pytest.mark.parametrize("adapter, name", [
    ("llvmpipe (LLVM 15.0.6, 256 bits)", "lavapipe"),
    ("NVIDIA H200", "nvidia-h200"),
    ("AMD Radeon RX 7900 XTX (RADV NAVI31)", "amd-radeon-rx-7900-xtx-radv-navi31"),
])
def test_device_names(adapter, name):
    assert device.device_name_of(adapter) == name


def test_the_preferred_device(monkeypatch):
    candidates = [("llvmpipe (LLVM 15.0.6, 256 bits)", 3), ("NVIDIA H200", 0), ("Intel(R) Graphics", 1)]
    monkeypatch.delenv(device.DEVICE_VARIABLE, raising=False)
    assert device.preferred(candidates) == 1
    monkeypatch.setenv(device.DEVICE_VARIABLE, "lavapipe")
    assert device.preferred(candidates) == 0
    monkeypatch.setenv(device.DEVICE_VARIABLE, "intel")
    assert device.preferred(candidates) == 2
    monkeypatch.setenv(device.DEVICE_VARIABLE, "radeon")
    with pytest.raises(DeviceUnavailable, match="names no Vulkan device here"):
        device.preferred(candidates)


def test_the_wayland_complaint_is_filtered_from_stderr(capfd):
    with device._stderr_without(device.WAYLAND_NOISE):
        os.write(2, b"error: XDG_RUNTIME_DIR is invalid or not set in the environment.\nsomething else\n")
    assert capfd.readouterr().err == "something else\n"
