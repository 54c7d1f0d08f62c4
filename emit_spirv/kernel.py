"""One admitted @aot function as a SPIR-V compute kernel (emit_spirv/admit.py says which).

Invocation g runs iteration g of the span loop, i = start + g; the host
counts the iterations (`DeviceKernel.start`/`stop` are expressions of the
arguments) and dispatches max(count, 1) invocations in workgroups of
WORKGROUP_SIZE, over a 2-D grid when one row would be too long.  Every
invocation first runs the statements before the loop (the same for all), so
an assert there fails in every invocation, as it fails once before the
scalar loop.

Buffers, all in descriptor set 0, each a runtime array of 32-bit words:

    binding 0  arguments  word 0 start, word 1 count, word 2 zero (a value the
                          driver cannot fold), then per parameter in
                          order: a span's length, or a scalar's bits (one word,
                          or two, low first, for 64-bit widths; a boolean 0 / 1)
    binding 1  status     word s for error status s: the lowest rank that
                          failed with it (atomic minimum; the host fills it
                          with NO_ERROR), word 0 (BREAK) the lowest that broke
                          out of the span loop.  Rank 0 is the statements
                          before the loop, rank g + 1 iteration g
    binding 2+ one per span parameter, its elements in the C layout
                          (scalar_ir/widths.struct_layout), NonWritable
                          unless the function stores to it
    then       one per reduction the statements after the loop read
                          (admit.kernel_reductions): invocation g's partial
                          result in its word(s) g
    then       the finish kernel's result: one or two words

A function with statements after its span loop (a result, an assert, a
reduction's use) gets a second module, the finish kernel: one invocation runs
the statements before the loop again (they are the same for every
invocation), combines the first `count` partial results of each reduction
(the host passes the iterations up to the lowest that broke) into the
reduction's value before the loop with its exact op, in order, then the
statements after the loop, and writes the returned value's bits.  Its errors
share the main kernel's status words, at rank 0.

A call of another @aot function (of numbers only: admit.py) is a call of a
SPIR-V function written from its IR on first use.  An error inside it records
the invocation's rank (kept in a Private variable) and sets the Private flag
`stopped`; each caller returns when it finds the flag set after a call, up to
the entry point.

A field is read and written as the words it occupies (a 64-bit field two
words joined as a uint64; int8..int16 shifted out of, or masked into, its
word), so the module needs neither 8- nor 16-bit types, and Float64 / Int64
only where the kernel uses 64-bit values.  Locals are Function variables.
An error (a failed assert, an integer division by zero) records its rank
and returns: the rest of that invocation does nothing, as the scalar loop
stops there; a break out of the span loop does the same in word BREAK.  Every float arithmetic instruction is
decorated NoContraction, and every float result a driver may rewrite is hidden from the instructions that
use it (KernelWriter.op), for wgpu drops NoContraction.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Optional

from nupp.emit_spirv.admit import calls_in, kernel_reductions, split_kernel
from nupp.emit_spirv.fields import load_field, store_field
from nupp.emit_spirv.grammar import GLSL_STD_450
from nupp.emit_spirv.module import Module, enumerant, instruction
from nupp.emit_spirv.rules import SPIRV_OPS
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import OPS, SHORT_CIRCUIT, combining_op
from nupp.scalar_ir.walk import fails_itself, raises, statements
from nupp.scalar_ir.widths import Width, struct_layout

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)
WORKGROUP_SIZE = 64
ARGUMENTS, STATUS, FIRST_SPAN = 0, 1, 2
NO_ERROR = 0xFFFFFFFF  # a status word no invocation wrote
BREAK = 0  # the status word of a break out of the span loop
HEADER_WORDS = 3  # start, count, a zero (KernelWriter.unknown_zero)
# the unsigned width of a number's bit pattern
_BITS = {F32: U32, F64: U64, I32: U32, U32: U32, I64: U64, U64: U64}
_SIGN = {F32: 1 << 31, F64: 1 << 63}
FLOAT_ARITHMETIC = ("OpFAdd", "OpFSub", "OpFMul", "OpFDiv", "OpFNegate")
# instructions whose float results a driver's optimizer may rewrite (KernelWriter.op); a float
# made of integer bits too, which it may know (fromBits(p - p) is 0.0, and x * 0.0 became 0)
REWRITABLE = FLOAT_ARITHMETIC + ("OpFConvert", "OpConvertSToF", "OpConvertUToF", "OpExtInst", "OpBitcast")


@dataclass(frozen=True)
class SpanBuffer:
    name: str
    binding: int
    writable: bool  # the kernel stores to it
    stride: int     # bytes per element


@dataclass(frozen=True)
class PartialBuffer:
    """A reduction's partial results, one per invocation, combined by the finish kernel."""

    name: str     # the reduction's local
    op: str       # how partial results combine (sub's partials are sums of negated terms: add)
    binding: int

    @property
    def width(self) -> Width:
        return OPS[self.op].result

    @property
    def words(self) -> int:
        return self.width.bits // 32


@dataclass(frozen=True)
class DeviceKernel:
    """What the host needs to run one function on a device."""

    function: str
    spirv: bytes
    params: tuple[ir.Param, ...]
    spans: tuple[SpanBuffer, ...]
    errors: tuple[str, ...]  # status s (1-based) -> "path:line: message"
    start: ir.Expr           # the span loop's bounds: constants, parameters, span lengths
    stop: ir.Expr
    needs: frozenset[str]    # "f64", "i64": device features the modules use
    partials: tuple[PartialBuffer, ...] = ()
    finish: Optional[bytes] = None  # the finish kernel's module, if statements follow the loop
    result: Optional[Width] = None  # the function's result, which the finish kernel writes
    result_binding: int = 0
    workgroup_size: int = WORKGROUP_SIZE

    def modules(self) -> tuple[tuple[str, bytes], ...]:
        """(role, binary) of each of its SPIR-V modules: "main", then "finish" if it has one."""
        return (("main", self.spirv),) + ((("finish", self.finish),) if self.finish is not None else ())

    def argument_words(self, start: int, count: int, values: dict) -> bytes:
        """The arguments buffer: `values` holds each scalar parameter's value and
        each span parameter's length, by name."""
        words = [start & 0xFFFFFFFF, count, 0]
        for p in self.params:
            words += _argument_words(values[p.name], p.type)
        return struct.pack(f"<{len(words)}I", *words)


def argument_offsets(params) -> dict[str, int]:
    """The word of the arguments buffer where each parameter starts."""
    offsets, at = {}, HEADER_WORDS
    for p in params:
        offsets[p.name] = at
        at += 2 if isinstance(p.type, Width) and p.type.bits == 64 else 1
    return offsets


def _argument_words(value, type_) -> list[int]:
    if not isinstance(type_, Width):
        return [value]  # a span: its length
    if type_ is BOOL:
        return [1 if value else 0]
    if type_.is_float:
        data = struct.pack("<d" if type_ is F64 else "<f", value)
    else:
        data = (value % (1 << type_.bits)).to_bytes(type_.bits // 8, "little")
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def emit_kernel(module: ir.Module, fn: ir.Function, path: str) -> DeviceKernel:
    """The kernels of an admitted function (device_refusal(fn) is None)."""
    writer = KernelWriter(module, fn, path)
    writer.write()
    _, loop, epilogue = split_kernel(fn)
    finish, needs = None, set(writer.needs)
    if epilogue:  # the finish kernel: its errors join the main kernel's
        finisher = KernelWriter(module, fn, path, finish=True, errors=writer.errors)
        finisher.write()
        finish, needs = finisher.m.to_bytes(), needs | finisher.needs
    return DeviceKernel(fn.name, writer.m.to_bytes(), fn.params, writer.span_buffers, tuple(writer.errors),
                        loop.start, loop.stop, frozenset(needs), writer.partials, finish, fn.result,
                        writer.result_binding)


@dataclass
class _Loop:
    merge: int


class KernelWriter:
    """Writes the module; `expr` gives the id of an expression's value, `stmt` writes a statement."""

    def __init__(self, module: ir.Module, fn: ir.Function, path: str, finish: bool = False,
                 errors: Optional[list[str]] = None):
        self.ir_module, self.fn, self.path = module, fn, path
        self.finish = finish  # the finish kernel (else the main one)
        self.m = Module(version=(1, 3))
        self.m.capability("Shader")
        self.glsl = self.m.ext_inst_import("GLSL.std.450")
        self.errors: list[str] = [] if errors is None else errors
        self.needs: set[str] = set()
        self.scopes: list[dict[str, tuple[int, Width]]] = [{}]
        self.loops: list[_Loop] = []
        self.helpers: dict[str, int] = {}
        self.f = None
        self.open = False
        self.variables: list[int] = []  # words of the entry function's OpVariables
        self.rank = None
        self.calls = bool(calls_in(fn.body))  # callees need the rank and the stopped flag as Private variables
        self.callees: dict[str, int] = {}  # @aot function name -> its SPIR-V function
        self.callee_result: Optional[Width] = None
        self.in_callee = False
        self.g = None  # the main kernel's invocation index (its partial results' place)
        self.result_var = None
        self.uint = self.m.type_int(32, False)
        self._declare_buffers()

    # ---- types and constants ---------------------------------------------------------
    def t(self, width: Width) -> int:
        """The SPIR-V type of a width (declaring the capability a 64-bit one needs)."""
        if width is BOOL:
            return self.m.type_bool()
        if width.bits == 64:
            self.m.capability("Float64" if width.is_float else "Int64")
            self.needs.add("f64" if width.is_float else "i64")
        if width.is_float:
            return self.m.type_float(width.bits)
        return self.m.type_int(width.bits, width.is_signed)

    def const(self, value, width: Width) -> int:
        if width is BOOL:
            return self.m.constant_bool(bool(value))
        return self.m.constant(self.t(width), value)

    # ---- instructions ------------------------------------------------------------------
    def op(self, opname: str, width: Width, *operands) -> int:
        """An instruction whose result has `width`'s type, out of reach of a driver's rewriting.

        Mesa rewrites float instructions not marked exact by rules that hold
        for finite numbers only: a - a to 0, (a + b) - a to b, a*b + a*c to
        a*(b + c), a*b + c to a fused multiply-add, ...  NoContraction marks
        an instruction exact, but wgpu's translation (naga) drops it, and
        SPIR-V passthrough, which would keep it, is a feature wgpu-native does
        not offer.  Each such rule matches an instruction whose operand is a
        float instruction, a constant, or the other operand; and a float made
        of integer bits (a bitcast) is one it may know when it folds the
        integer (fromBits(p - p) * x became 0).  So the float
        result of a REWRITABLE instruction reaches later ones only through
        `opaque`, literals are opaque (expr_Const), and a - b is
        a + `negated`(b): no two operands of a float instruction are one value
        unless the program's are (a * a, a + a: exact rules)."""
        if opname == "OpFSub":
            a, b = operands
            return self.op("OpFAdd", width, a, self.negated(b, width))
        result = self.typed(opname, self.t(width), *operands)
        return self.opaque(result, width) if opname in REWRITABLE and width.is_float else result

    def typed(self, opname: str, type_id: int, *operands) -> int:
        result = self.f.value(opname, type_id, *operands)
        if opname in FLOAT_ARITHMETIC:
            self.m.decorate(result, "NoContraction")
        return result

    def ext(self, name: str, width: Width, *operands) -> int:
        return self.op("OpExtInst", width, self.glsl, GLSL_STD_450[name], *operands)

    def unknown_zero(self, width: Width) -> int:
        """An integer zero of `width`, read from the arguments buffer: a value no
        driver knows, so that no rule of its optimizer can see through it."""
        zero = self.load_word(self.arguments, self.m.constant(self.uint, 2))
        return self.op("OpUConvert", width, zero) if width.bits == 64 else zero

    def negated(self, x: int, width: Width) -> int:
        """-x of a float width: its bits with the sign flipped by a mask no
        driver knows, so no rule of its optimizer sees a negation (a NaN's
        sign may differ from OpFNegate's, which no result shows)."""
        bits = _BITS[width]
        mask = self.op("OpBitwiseXor", bits, self.unknown_zero(bits), self.const(_SIGN[width], bits))
        flipped = self.op("OpBitwiseXor", bits, self.op("OpBitcast", bits, x), mask)
        return self.typed("OpBitcast", self.t(width), flipped)  # its bits are opaque already

    def opaque(self, x: int, width: Width) -> int:
        """x, through an or with a zero no driver knows: no rule of its optimizer
        matches across it.  lavapipe folds 0.0 + x to x and x * 0.0 to 0 (wrong
        for -0, infinities and NaN) even under NoContraction and
        SignedZeroInfNanPreserve; `op` says what else it guards against."""
        unsigned = _BITS[width]
        bits = x if unsigned is width else self.op("OpBitcast", unsigned, x)
        bits = self.op("OpBitwiseOr", unsigned, bits, self.unknown_zero(unsigned))
        return bits if unsigned is width else self.typed("OpBitcast", self.t(width), bits)

    def opaque_float(self, value: float, width: Width) -> int:
        """A float literal no driver sees (`opaque`); a NaN or an infinity as its
        bits (naga refuses such literals)."""
        pattern = int.from_bytes(struct.pack("<d" if width is F64 else "<f", value), "little")
        return self.op("OpBitcast", width, self.const(pattern, _BITS[width]))  # opaque: op's rule

    def select(self, width: Width, cond: int, a: int, b: int) -> int:
        return self.op("OpSelect", width, cond, a, b)

    def call_helper(self, name: str, build: Callable[["KernelWriter", list[int]], int],
                    result: Width, operands: tuple[Width, ...], args) -> int:
        """A call of the module's function `name` (written on first use by
        `build(writer, parameter ids)`, straight-line code returning its value)."""
        if name not in self.helpers:
            self.helpers[name] = self._helper_function(build, result, operands)
        return self.op("OpFunctionCall", result, self.helpers[name], *args)

    def _helper_function(self, build, result: Width, operands) -> int:
        outer, outer_open = self.f, self.open
        fn_type = self.m.type_function(self.t(result), *(self.t(w) for w in operands))
        self.f = self.m.function(self.t(result), fn_type)
        params = [self.f.value("OpFunctionParameter", self.t(w)) for w in operands]
        self.f.label()
        self.f.effect("OpReturnValue", build(self, params))
        self.f.end()
        helper, self.f, self.open = self.f.id, outer, outer_open
        return helper

    # ---- blocks and structured control flow -------------------------------------------
    def label(self, label: Optional[int] = None) -> int:
        label = label or self.m.fresh_id()
        self.f.effect("OpLabel", label)
        self.open = True
        return label

    def branch(self, target: int) -> None:
        if self.open:
            self.f.effect("OpBranch", target)
            self.open = False

    def terminate(self, opname: str, *operands) -> None:
        self.f.effect(opname, *operands)
        self.open = False

    def selection(self, cond: int, then: Callable[[], None], orelse: Optional[Callable[[], None]] = None) -> None:
        """if cond then `then()` else `orelse()`, as a selection construct."""
        merge, then_label = self.m.fresh_id(), self.m.fresh_id()
        else_label = self.m.fresh_id() if orelse else merge
        self.f.effect("OpSelectionMerge", merge, 0)
        self.terminate("OpBranchConditional", cond, then_label, else_label)
        for label, arm in ((then_label, then), (else_label, orelse)):
            if arm is not None:
                self.label(label)
                arm()
                self.branch(merge)
        self.label(merge)

    def loop(self, test: Callable[[], int], body: Callable[[], None],
             step: Optional[Callable[[], Optional[int]]] = None) -> None:
        """while test() do body() end; `step` (the continue block) may give a
        condition under which the loop ends after the step (a counter's overflow)."""
        header, check, body_label, cont, merge = (self.m.fresh_id() for _ in range(5))
        self.branch(header)
        self.label(header)
        self.f.effect("OpLoopMerge", merge, cont, 0)
        self.branch(check)
        self.label(check)
        self.terminate("OpBranchConditional", test(), body_label, merge)
        self.label(body_label)
        self.loops.append(_Loop(merge))
        body()
        self.loops.pop()
        self.branch(cont)
        self.label(cont)
        ends = step() if step else None
        if ends is None:
            self.terminate("OpBranch", header)
        else:
            self.terminate("OpBranchConditional", ends, merge, header)
        self.label(merge)

    def ensure_open(self) -> None:
        """Code after a break or return: an unreachable block of its own."""
        if not self.open:
            self.label()

    # ---- errors --------------------------------------------------------------------------
    def error_status(self, text: str) -> int:
        if text not in self.errors:
            self.errors.append(text)
        return self.errors.index(text) + 1

    def fail_unless(self, ok: int, message: str, loc: ir.Loc) -> None:
        """If not `ok`: record this invocation's rank for the error and return."""
        status = self.error_status(f"{self.path}:{loc.line}: {message}")
        self.selection(self.op("OpLogicalNot", BOOL, ok), lambda: self.stop_invocation(status))

    def stop_invocation(self, status: int) -> None:
        """Record this invocation's rank in status word `status` (BREAK: the span
        loop ends after this iteration), and return."""
        word = self.word_pointer(self.status, self.m.constant(self.uint, status))
        scope, semantics = enumerant("Scope", "Device"), 0  # Relaxed
        rank = self.op("OpLoad", U32, self.rank_var) if self.in_callee else self.rank
        self.typed("OpAtomicUMin", self.uint, word, self.m.constant(self.uint, scope),
                   self.m.constant(self.uint, semantics), rank)
        if self.in_callee:
            self.f.effect("OpStore", self.stopped_var, self.m.constant_bool(True))
        self.leave()

    def leave(self) -> None:
        """Return from the function being written: the entry point ends the
        invocation; a callee returns (a zero if it has a result: its caller
        finds `stopped` set and returns too)."""
        if self.in_callee and self.callee_result is not None:
            self.terminate("OpReturnValue", self.const(0, self.callee_result))
        else:
            self.terminate("OpReturn")

    def set_rank(self, rank: int) -> None:
        """The rank an error of what follows records (kept where callees read it)."""
        self.rank = rank
        if self.calls:
            self.f.effect("OpStore", self.rank_var, rank)

    # ---- buffers ---------------------------------------------------------------------------
    def _declare_buffers(self) -> None:
        """The bindings of the module header's list; the finish kernel declares
        no span (the statements it runs index none)."""
        self.arguments = self._buffer(ARGUMENTS, "arguments", writable=False)
        self.status = self._buffer(STATUS, "status", writable=True)
        _, loop, _ = split_kernel(self.fn)
        stored = {s.span for s in statements(loop.body) if isinstance(s, ir.Store)}
        self.span_buffers, self.span_vars = [], {}
        for k, p in enumerate(self.fn.span_params()):
            layout = struct_layout(self.ir_module.struct(p.type.struct).fields)
            buffer = SpanBuffer(p.name, FIRST_SPAN + k, p.name in stored, layout.size)
            self.span_buffers.append(buffer)
            if not self.finish:
                self.span_vars[p.name] = (self._buffer(buffer.binding, p.name, buffer.writable), layout,
                                          p.type.struct)
        self.span_buffers = tuple(self.span_buffers)
        after_spans = FIRST_SPAN + len(self.span_buffers)
        self.partials = tuple(PartialBuffer(name, combining_op(op), after_spans + k)
                              for k, (name, op) in enumerate(sorted(kernel_reductions(self.fn).items())))
        self.partial_vars = {p.name: self._buffer(p.binding, f"{p.name} partials", not self.finish)
                             for p in self.partials}
        self.result_binding = after_spans + len(self.partials)
        if self.finish and self.fn.result is not None:
            self.result_var = self._buffer(self.result_binding, "result", writable=True)
        self.argument_offsets = argument_offsets(self.fn.params)

    def _buffer(self, binding: int, name: str, writable: bool) -> int:
        array = self.m.type_runtime_array(self.uint)
        self.m.decorate(array, "ArrayStride", 4)
        block = self.m.type_struct(array)
        self.m.decorate(block, "Block")
        self.m.member_decorate(block, 0, "Offset", 0)
        var = self.m.global_variable(self.m.type_pointer("StorageBuffer", block), "StorageBuffer")
        self.m.decorate(var, "DescriptorSet", 0)
        self.m.decorate(var, "Binding", binding)
        if not writable:
            self.m.decorate(var, "NonWritable")
        self.m.name(var, name)
        return var

    def word_pointer(self, buffer: int, index: int) -> int:
        pointer = self.m.type_pointer("StorageBuffer", self.uint)
        return self.typed("OpAccessChain", pointer, buffer, self.m.constant(self.uint, 0), index)

    def load_word(self, buffer: int, index: int) -> int:
        return self.typed("OpLoad", self.uint, self.word_pointer(buffer, index))

    def argument(self, name: str, width: Width) -> int:
        """A parameter's value (or a span's length, as int32) from the arguments buffer."""
        at = self.argument_offsets[name]
        words = [self.load_word(self.arguments, self.m.constant(self.uint, at + k))
                 for k in range(2 if width.bits == 64 else 1)]
        return self.from_words(words, width)

    def from_words(self, words: list[int], width: Width) -> int:
        """The value of `width` whose bits are `words` (low word first).  Two
        words join as u64(low) | u64(high) << 32: naga mistranslates a uvec2
        bitcast to a 64-bit type (per component, silently)."""
        if width is BOOL:
            return self.op("OpINotEqual", BOOL, words[0], self.m.constant(self.uint, 0))
        if len(words) == 2:
            low, high = (self.op("OpUConvert", U64, word) for word in words)
            joined = self.op("OpBitwiseOr", U64, low, self.op("OpShiftLeftLogical", U64, high, self.const(32, U64)))
            return joined if width is U64 else self.op("OpBitcast", width, joined)
        return words[0] if width is U32 else self.op("OpBitcast", width, words[0])

    def to_words(self, value: int, width: Width) -> list[int]:
        if width is BOOL:
            return [self.select(U32, value, self.m.constant(self.uint, 1), self.m.constant(self.uint, 0))]
        if width.bits == 64:
            bits = value if width is U64 else self.op("OpBitcast", U64, value)
            high = self.op("OpShiftRightLogical", U64, bits, self.const(32, U64))
            return [self.op("OpUConvert", U32, part) for part in (bits, high)]
        return [value if width is U32 else self.typed("OpBitcast", self.uint, value)]

    # ---- the function --------------------------------------------------------------------------
    def write(self) -> None:
        void = self.m.type_void()
        self.f = self.m.function(void, self.m.type_function(void))
        self.label()
        self.first_block_at = len(self.f.words)
        ids = self._builtin("GlobalInvocationId"), self._builtin("NumWorkgroups")
        self.m.entry_point("GLCompute", self.f.id, "main", ids)
        self.m.execution_mode(self.f.id, "LocalSize", WORKGROUP_SIZE, 1, 1)
        if self.calls:
            self.rank_var = self.m.global_variable(self.m.type_pointer("Private", self.uint), "Private")
            self.stopped_var = self.m.global_variable(self.m.type_pointer("Private", self.t(BOOL)), "Private")
            self.f.effect("OpStore", self.stopped_var, self.m.constant_bool(False))
        g = self._invocation_index(*ids)
        count = self.load_word(self.arguments, self.m.constant(self.uint, 1))
        prologue, loop, epilogue = split_kernel(self.fn)
        if self.finish:
            runs = self.op("OpIEqual", BOOL, g, self.m.constant(self.uint, 0))
            self.selection(runs, lambda: self._finish(count, prologue, epilogue))
        else:
            runs = self.op("OpULessThan", BOOL, g, self.typed("OpExtInst", self.uint, self.glsl,
                                                              GLSL_STD_450["UMax"], count, self.m.constant(self.uint, 1)))
            self.selection(runs, lambda: self._run(g, count, prologue, loop))
        self.ensure_open()
        self.terminate("OpReturn")
        self.f.end()
        self.f.words[self.first_block_at:self.first_block_at] = self.variables

    def _builtin(self, name: str) -> int:
        uvec3 = self.m.type_vector(self.uint, 3)
        var = self.m.global_variable(self.m.type_pointer("Input", uvec3), "Input")
        self.m.decorate(var, "BuiltIn", enumerant("BuiltIn", name))
        return var

    def _invocation_index(self, global_id: int, groups: int) -> int:
        """id.y * (NumWorkgroups.x * WORKGROUP_SIZE) + id.x: the host's grid is 2-D past 65535 groups."""
        uvec3 = self.m.type_vector(self.uint, 3)
        gid, ngroups = self.typed("OpLoad", uvec3, global_id), self.typed("OpLoad", uvec3, groups)
        x, y = (self.typed("OpCompositeExtract", self.uint, gid, k) for k in (0, 1))
        row = self.typed("OpIMul", self.uint, self.typed("OpCompositeExtract", self.uint, ngroups, 0),
                         self.m.constant(self.uint, WORKGROUP_SIZE))
        return self.typed("OpIAdd", self.uint, self.typed("OpIMul", self.uint, y, row), x)

    def _prologue(self, prologue) -> None:
        """The parameters and the statements before the loop, at rank 0, in the
        function's scope (the loop and what follows it read their locals)."""
        self.set_rank(self.m.constant(self.uint, 0))
        for p in self.fn.params:
            if isinstance(p.type, Width):  # a local, which the function may assign
                self.declare(p.name, p.type, self.argument(p.name, p.type))
        self.write_statements(prologue)
        self.ensure_open()

    def _run(self, g: int, count: int, prologue, loop: ir.For) -> None:
        self._prologue(prologue)
        self.set_rank(self.typed("OpIAdd", self.uint, g, self.m.constant(self.uint, 1)))
        self.g = g

        def iteration() -> None:
            for partial in self.partials:  # this invocation's partial result starts at the identity
                self.f.effect("OpStore", self.lookup(partial.name)[0],
                              self.expr(ir.Const(OPS[partial.op].identity, partial.width)))
            start = self.expr(loop.start)
            i = self.op("OpIAdd", I32, start, self.op("OpBitcast", I32, g))
            self.scopes.append({})
            self.declare(loop.var, I32, i)
            self.block(loop.body)
            self.scopes.pop()
            if self.open:
                self.store_partials()

        self.selection(self.op("OpULessThan", BOOL, g, count), iteration)

    def store_partials(self) -> None:
        """This invocation's partial result of each reduction, into its word(s) g."""
        for partial in self.partials:
            var, width = self.lookup(partial.name)
            first = self.typed("OpIMul", self.uint, self.g, self.m.constant(self.uint, partial.words))
            for k, word in enumerate(self.to_words(self.op("OpLoad", width, var), width)):
                at = self.typed("OpIAdd", self.uint, first, self.m.constant(self.uint, k))
                self.f.effect("OpStore", self.word_pointer(self.partial_vars[partial.name], at), word)

    def _finish(self, count: int, prologue, epilogue) -> None:
        """The finish kernel: the prologue again, each reduction's value before the
        loop combined with the first `count` partial results, then the epilogue."""
        self._prologue(prologue)
        for partial in self.partials:
            self._combine(partial, count)
        self.write_statements(epilogue)

    def _combine(self, partial: PartialBuffer, count: int) -> None:
        var, width = self.lookup(partial.name)
        self.scopes.append({})
        self.declare(f"{partial.name} partial", U32, self.m.constant(self.uint, 0))
        k, _ = self.lookup(f"{partial.name} partial")

        def combine() -> None:
            first = self.typed("OpIMul", self.uint, self.op("OpLoad", U32, k),
                               self.m.constant(self.uint, partial.words))
            words = [self.load_word(self.partial_vars[partial.name],
                                    self.typed("OpIAdd", self.uint, first, self.m.constant(self.uint, j)))
                     for j in range(partial.words)]
            value = SPIRV_OPS[partial.op](self, [self.op("OpLoad", width, var), self.from_words(words, width)])
            self.f.effect("OpStore", var, value)

        def advance() -> None:
            self.f.effect("OpStore", k, self.typed("OpIAdd", self.uint, self.op("OpLoad", U32, k),
                                                   self.m.constant(self.uint, 1)))

        self.loop(lambda: self.op("OpULessThan", BOOL, self.op("OpLoad", U32, k), count), combine, advance)
        self.scopes.pop()

    # ---- locals -------------------------------------------------------------------------------
    def declare(self, name: str, width: Width, value: Optional[int]) -> None:
        var = self.m.fresh_id()
        pointer = self.m.type_pointer("Function", self.t(width))
        self.variables += instruction("OpVariable", pointer, var, enumerant("StorageClass", "Function"))
        self.scopes[-1][name] = (var, width)
        self.f.effect("OpStore", var, value if value is not None else self.const(0, width))

    def lookup(self, name: str) -> tuple[int, Width]:
        return next(scope[name] for scope in reversed(self.scopes) if name in scope)

    # ---- statements ------------------------------------------------------------------------
    def block(self, stmts) -> None:
        self.scopes.append({})
        self.write_statements(stmts)
        self.scopes.pop()

    def write_statements(self, stmts) -> None:
        """The statements, in the current scope."""
        for s in stmts:
            self.ensure_open()
            getattr(self, "stmt_" + type(s).__name__)(s)

    def stmt_Let(self, s: ir.Let) -> None:
        self.declare(s.name, s.width, self.expr(s.value) if s.value is not None else None)

    def stmt_Assign(self, s: ir.Assign) -> None:
        value = self.expr(s.value)
        self.f.effect("OpStore", self.lookup(s.name)[0], value)

    def stmt_Store(self, s: ir.Store) -> None:
        store_field(self, s, self.expr(s.value))

    def stmt_If(self, s: ir.If) -> None:
        self.selection(self.expr(s.cond), lambda: self.block(s.then),
                       (lambda: self.block(s.orelse)) if s.orelse else None)

    def stmt_While(self, s: ir.While) -> None:
        self.loop(lambda: self.expr(s.cond), lambda: self.block(s.body))

    def stmt_For(self, s: ir.For) -> None:
        """Lua's numeric for: bounds evaluated once, and it stops where the counter
        would overflow int32 (a wrapping step that goes backwards)."""
        start, stop = self.expr(s.start), self.expr(s.stop)
        self.scopes.append({})
        self.declare(f"{s.var} counter", I32, start)
        counter, _ = self.lookup(f"{s.var} counter")
        step = self.const(s.step, I32)
        compare = "OpSLessThanEqual" if s.step > 0 else "OpSGreaterThanEqual"
        beyond = "OpSLessThan" if s.step > 0 else "OpSGreaterThan"

        def body() -> None:
            self.scopes.append({})
            self.declare(s.var, I32, self.op("OpLoad", I32, counter))
            self.block(s.body)
            self.scopes.pop()

        def advance() -> int:
            now = self.op("OpLoad", I32, counter)
            after = self.op("OpIAdd", I32, now, step)
            self.f.effect("OpStore", counter, after)
            return self.op(beyond, BOOL, after, now)

        self.loop(lambda: self.op(compare, BOOL, self.op("OpLoad", I32, counter), stop), body, advance)
        self.scopes.pop()

    def stmt_Break(self, s: ir.Break) -> None:
        if self.loops:
            self.terminate("OpBranch", self.loops[-1].merge)
        else:  # out of the span loop: no later iteration counts, this one's partial results do
            self.store_partials()
            self.stop_invocation(BREAK)

    def stmt_Return(self, s: ir.Return) -> None:
        """The value is computed (its errors are the function's) and, in the
        finish kernel, written to the result buffer."""
        if self.in_callee:
            if s.value is None:
                self.terminate("OpReturn")
            else:
                self.terminate("OpReturnValue", self.expr(s.value))
            return
        if s.value is not None:
            value = self.expr(s.value)
            if self.finish:
                for k, word in enumerate(self.to_words(value, s.value.width)):
                    self.f.effect("OpStore", self.word_pointer(self.result_var, self.m.constant(self.uint, k)), word)
        self.terminate("OpReturn")

    def stmt_Eval(self, s: ir.Eval) -> None:
        self.expr(s.expr)

    def stmt_Assert(self, s: ir.Assert) -> None:
        self.fail_unless(self.expr(s.cond), s.message, s.loc)

    # ---- expressions ------------------------------------------------------------------------
    def expr(self, e) -> int:
        return getattr(self, "expr_" + type(e).__name__)(e)

    def expr_Const(self, e: ir.Const) -> int:
        """A literal of the program, which no driver may know: lavapipe folds
        float arithmetic on known operands wrongly (0.0 / v with a local v = 0
        gave 0), so numbers reach it as `opaque` values."""
        if e.width.is_float:
            return self.opaque_float(e.value, e.width)
        if e.width.is_int:
            return self.opaque(self.const(e.value, e.width), e.width)
        return self.const(e.value, e.width)

    def expr_Var(self, e: ir.Var) -> int:
        var, width = self.lookup(e.name)
        return self.op("OpLoad", width, var)

    def expr_Len(self, e: ir.Len) -> int:
        return self.argument(e.span, I32)

    def expr_Load(self, e: ir.Load) -> int:
        return load_field(self, e)

    def expr_Call(self, e: ir.Call) -> int:
        """The callee's SPIR-V function; after it, return if it failed."""
        args = [self.expr(a) for a in e.args]
        result_type = self.m.type_void() if e.width is None else self.t(e.width)
        value = self.typed("OpFunctionCall", result_type, self.callee(e.func), *args)
        self.selection(self.op("OpLoad", BOOL, self.stopped_var), self.leave)
        return value

    def callee(self, name: str) -> int:
        """The SPIR-V function of the @aot function `name`, written on first use."""
        if name not in self.callees:
            self.callees[name] = self._write_callee(self.ir_module.function(name))
        return self.callees[name]

    def _write_callee(self, fn: ir.Function) -> int:
        """`fn` as a SPIR-V function: its parameters are locals, its errors set `stopped`."""
        saved = (self.f, self.open, self.variables, self.scopes, self.loops, self.in_callee, self.callee_result)
        result_type = self.m.type_void() if fn.result is None else self.t(fn.result)
        self.f = self.m.function(result_type, self.m.type_function(result_type, *(self.t(p.type) for p in fn.params)))
        values = [self.f.value("OpFunctionParameter", self.t(p.type)) for p in fn.params]
        self.variables, self.scopes, self.loops = [], [{}], []
        self.in_callee, self.callee_result = True, fn.result
        self.label()
        first_block_at = len(self.f.words)
        for p, value in zip(fn.params, values):
            self.declare(p.name, p.type, value)
        self.write_statements(fn.body)
        if self.open:
            self.leave()
        self.f.end()
        self.f.words[first_block_at:first_block_at] = self.variables
        written = self.f.id
        self.f, self.open, self.variables, self.scopes, self.loops, self.in_callee, self.callee_result = saved
        return written

    def expr_Op(self, e: ir.Op) -> int:
        info = OPS[e.op]
        if info.lane == SHORT_CIRCUIT and raises(e.args[1]):
            return self.short_circuit(e)
        args = [self.expr(a) for a in e.args]
        if fails_itself(e):
            divisor_width = info.operands[1]
            self.fail_unless(self.op("OpINotEqual", BOOL, args[1], self.const(0, divisor_width)),
                             info.raises, e.loc)
        return SPIRV_OPS[e.op](self, args)

    def short_circuit(self, e: ir.Op) -> int:
        """`a and b` / `a or b` whose b can fail: b runs only when a leaves it to."""
        self.scopes.append({})
        name = f"{id(e)} short-circuit"
        self.declare(name, BOOL, self.expr(e.args[0]))
        var, _ = self.lookup(name)
        left = self.op("OpLoad", BOOL, var)
        needs_right = left if OPS[e.op].base == "and" else self.op("OpLogicalNot", BOOL, left)
        self.selection(needs_right, lambda: self.f.effect("OpStore", var, self.expr(e.args[1])))
        self.scopes.pop()
        return self.op("OpLoad", BOOL, var)
