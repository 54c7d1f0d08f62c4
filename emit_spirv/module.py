"""A SPIR-V binary module, built instruction by instruction.

    module = Module(version=(1, 3))
    module.capability("Shader")
    uint = module.type_int(32, signed=False)
    ...
    module.to_bytes()  # the binary: header, then each section in the spec's order

Instructions are encoded as the spec defines (SPIR-V 1.6, section 2.3): a
first word holding the word count (high 16 bits) and the opcode (low 16),
then the operands, one word each, a literal string taking as many words as
its UTF-8 bytes and terminating NUL need.  Opcode and enumerant numbers come
from emit_spirv/grammar.py, generated from the Khronos grammar.

The module keeps one list of words per section of the logical layout (spec
2.4); every instruction is appended to its section, so callers may declare
things in any order that defines an id before using it.  Non-aggregate types
and constants are declared once: asking again returns the first id (the
validator rejects duplicate non-aggregate types).  Structs and runtime
arrays are declared fresh each time: they carry their own layout decorations.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .grammar import ENUMS, MAGIC_NUMBER, OPCODES

Operand = int | str  # a word (id, literal number, enumerant value) or a literal string

SECTIONS = (
    "capabilities", "extensions", "ext_inst_imports", "memory_model", "entry_points",
    "execution_modes", "debug_names", "annotations", "declarations",
)


def enumerant(kind: str, name: str) -> int:
    """The number of the enumerant NAME of operand kind KIND (e.g. StorageClass, Uniform)."""
    try:
        return ENUMS[kind][name]
    except KeyError:
        raise ValueError(f"SPIR-V has no {kind} {name!r} in emit_spirv/grammar.py") from None


def instruction(opname: str, *operands: Operand) -> list[int]:
    """The words of one instruction."""
    words = [word for operand in operands for word in operand_words(operand)]
    return [(len(words) + 1) << 16 | OPCODES[opname], *words]


def operand_words(operand: Operand) -> list[int]:
    if isinstance(operand, str):
        return string_words(operand)
    if not 0 <= operand < 1 << 32:
        raise ValueError(f"SPIR-V operand {operand} does not fit in a word")
    return [operand]


def string_words(text: str) -> list[int]:
    """A literal string: UTF-8, NUL-terminated, zero-padded to whole little-endian words."""
    data = text.encode("utf-8") + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def version_word(version: tuple[int, int]) -> int:
    major, minor = version
    return major << 16 | minor << 8


@dataclass(frozen=True)
class ScalarType:
    """What a constant of a numeric type needs to be encoded."""

    kind: str  # "int" or "float"
    width: int


def scalar_literal_words(scalar: ScalarType, value: int | float) -> list[int]:
    """VALUE as the literal of an OpConstant of type SCALAR: low-order word first."""
    if scalar.kind == "float":
        data = struct.pack({16: "<e", 32: "<f", 64: "<d"}[scalar.width], value)
        data += b"\0" * (-len(data) % 4)  # a 16-bit float fills the low bits of its word
        return list(struct.unpack(f"<{len(data) // 4}I", data))
    bits = int(value) % (1 << scalar.width)  # two's complement for negative values
    return [(bits >> shift) & 0xFFFFFFFF for shift in range(0, max(scalar.width, 32), 32)]


@dataclass
class Function:
    """One function's instructions, OpFunction to OpFunctionEnd; the module hands out its ids."""

    module: Module
    id: int
    words: list[int] = field(default_factory=list)
    ended: bool = False

    def label(self) -> int:
        """Start a block; its id."""
        result = self.module.fresh_id()
        self.words += instruction("OpLabel", result)
        return result

    def value(self, opname: str, result_type: int, *operands: Operand) -> int:
        """An instruction with a result type and a result id; the result id."""
        result = self.module.fresh_id()
        self.words += instruction(opname, result_type, result, *operands)
        return result

    def effect(self, opname: str, *operands: Operand) -> None:
        """An instruction without a result (a store, a branch, a return)."""
        self.words += instruction(opname, *operands)

    def end(self) -> None:
        self.words += instruction("OpFunctionEnd")
        self.ended = True


class Module:
    """A SPIR-V module under construction; `words()` / `to_bytes()` give the binary."""

    def __init__(self, version: tuple[int, int] = (1, 3),
                 addressing: str = "Logical", memory: str = "GLSL450"):
        self.version = version
        self.bound = 1  # ids start at 1; the header's bound is one past the largest
        self.sections: dict[str, list[int]] = {name: [] for name in SECTIONS}
        self.functions: list[Function] = []
        self._declared: dict[tuple, int] = {}  # (opname, operands) -> id of a deduplicated declaration
        self._scalars: dict[int, ScalarType] = {}  # numeric type id -> how its constants encode
        self._capabilities: set[str] = set()
        self._extensions: set[str] = set()
        self._add("memory_model", "OpMemoryModel", enumerant("AddressingModel", addressing),
                  enumerant("MemoryModel", memory))

    def fresh_id(self) -> int:
        result = self.bound
        self.bound += 1
        return result

    # -- mode setting and debug information -----------------------------------------

    def capability(self, name: str) -> None:
        if name not in self._capabilities:
            self._capabilities.add(name)
            self._add("capabilities", "OpCapability", enumerant("Capability", name))

    def extension(self, name: str) -> None:
        if name not in self._extensions:
            self._extensions.add(name)
            self._add("extensions", "OpExtension", name)

    def ext_inst_import(self, name: str) -> int:
        """The id of an extended instruction set such as "GLSL.std.450", imported once."""
        return self._declare_once("ext_inst_imports", "OpExtInstImport", name)

    def entry_point(self, model: str, function: int, name: str, interface: tuple[int, ...]) -> None:
        self._add("entry_points", "OpEntryPoint", enumerant("ExecutionModel", model),
                  function, name, *interface)

    def execution_mode(self, function: int, mode: str, *literals: int) -> None:
        self._add("execution_modes", "OpExecutionMode", function,
                  enumerant("ExecutionMode", mode), *literals)

    def name(self, target: int, text: str) -> None:
        self._add("debug_names", "OpName", target, text)

    def member_name(self, struct_type: int, member: int, text: str) -> None:
        self._add("debug_names", "OpMemberName", struct_type, member, text)

    def decorate(self, target: int, decoration: str, *literals: int) -> None:
        self._add("annotations", "OpDecorate", target, enumerant("Decoration", decoration), *literals)

    def member_decorate(self, struct_type: int, member: int, decoration: str, *literals: int) -> None:
        self._add("annotations", "OpMemberDecorate", struct_type, member,
                  enumerant("Decoration", decoration), *literals)

    # -- types, constants, global variables ---------------------------------------------

    def type_void(self) -> int:
        return self._declare_once("declarations", "OpTypeVoid")

    def type_bool(self) -> int:
        return self._declare_once("declarations", "OpTypeBool")

    def type_int(self, width: int, signed: bool) -> int:
        result = self._declare_once("declarations", "OpTypeInt", width, int(signed))
        self._scalars[result] = ScalarType("int", width)
        return result

    def type_float(self, width: int) -> int:
        result = self._declare_once("declarations", "OpTypeFloat", width)
        self._scalars[result] = ScalarType("float", width)
        return result

    def type_vector(self, component: int, count: int) -> int:
        return self._declare_once("declarations", "OpTypeVector", component, count)

    def type_pointer(self, storage_class: str, pointee: int) -> int:
        return self._declare_once("declarations", "OpTypePointer",
                                  enumerant("StorageClass", storage_class), pointee)

    def type_function(self, return_type: int, *parameters: int) -> int:
        return self._declare_once("declarations", "OpTypeFunction", return_type, *parameters)

    def type_runtime_array(self, element: int) -> int:
        return self._declare_fresh("OpTypeRuntimeArray", element)

    def type_struct(self, *members: int) -> int:
        return self._declare_fresh("OpTypeStruct", *members)

    def constant(self, type_id: int, value: int | float) -> int:
        """A numeric constant of the integer or float type TYPE_ID, declared once."""
        scalar = self._scalars.get(type_id)
        if scalar is None:
            raise ValueError(f"SPIR-V constant of id {type_id}, which is not a numeric type of this module")
        return self._declare_once("declarations", "OpConstant",
                                  *scalar_literal_words(scalar, value), result_type=type_id)

    def constant_bool(self, value: bool) -> int:
        return self._declare_once("declarations", "OpConstantTrue" if value else "OpConstantFalse",
                                  result_type=self.type_bool())

    def global_variable(self, pointer_type: int, storage_class: str) -> int:
        result = self.fresh_id()
        self._add("declarations", "OpVariable", pointer_type, result,
                  enumerant("StorageClass", storage_class))
        return result

    # -- functions ---------------------------------------------------------------------

    def function(self, return_type: int, function_type: int, control: str = "None") -> Function:
        """Begin a function (its OpFunction is written); end it with `Function.end()`."""
        function = Function(self, self.fresh_id())
        function.words += instruction("OpFunction", return_type, function.id,
                                      enumerant("FunctionControl", control), function_type)
        self.functions.append(function)
        return function

    # -- the binary ----------------------------------------------------------------------

    def words(self) -> list[int]:
        unfinished = [f.id for f in self.functions if not f.ended]
        if unfinished:
            raise ValueError(f"SPIR-V functions {unfinished} were never ended")
        header = [MAGIC_NUMBER, version_word(self.version), 0, self.bound, 0]
        body = [word for name in SECTIONS for word in self.sections[name]]
        return header + body + [word for f in self.functions for word in f.words]

    def to_bytes(self) -> bytes:
        words = self.words()
        return struct.pack(f"<{len(words)}I", *words)

    # -- helpers -------------------------------------------------------------------------

    def _add(self, section: str, opname: str, *operands: Operand) -> None:
        self.sections[section] += instruction(opname, *operands)

    def _declare_once(self, section: str, opname: str, *operands: Operand,
                      result_type: int | None = None) -> int:
        key = (opname, result_type, operands)
        if key not in self._declared:
            self._declared[key] = self._declare(section, opname, operands, result_type)
        return self._declared[key]

    def _declare_fresh(self, opname: str, *operands: Operand) -> int:
        return self._declare("declarations", opname, operands, None)

    def _declare(self, section: str, opname: str, operands: tuple[Operand, ...],
                 result_type: int | None) -> int:
        result = self.fresh_id()
        leading = () if result_type is None else (result_type,)
        self._add(section, opname, *leading, result, *operands)
        return result
