"""The SPIR-V foundation of issue 12: the generated grammar table and the binary
module builder (emit_spirv/module.py).

The encodings are checked against the spec's definitions written out here
(word layout, string literals, header), and a hand-built GLCompute module
(one storage buffer of uints, each invocation adds 1 to its element) must pass
Khronos' validator `spirv-val` and disassemble, through `spirv-dis`, to the
expected text.  The grammar table must be what gen_grammar.py makes from the
installed grammar JSON.
"""

from __future__ import annotations

import struct
import subprocess

import pytest

from nupp.emit_spirv import gen_grammar
from nupp.emit_spirv.grammar import ENUMS, OPCODES
from nupp.emit_spirv.module import Module, instruction, string_words

from .conftest import UNDER_CI, require_tool
from .spirv_tools import spirv_val_problem


# -- the grammar table -------------------------------------------------------------------

def test_grammar_table_is_what_the_generator_makes(tmp_path):
    if not gen_grammar.GRAMMAR_PATH.exists():
        message = f"{gen_grammar.GRAMMAR_PATH} (Debian's spirv-headers) is not installed"
        if UNDER_CI:
            pytest.fail(message + " but is required under CI")
        pytest.skip(message)
    regenerated = tmp_path / "grammar.py"
    gen_grammar.main([str(gen_grammar.GRAMMAR_PATH), str(regenerated)])
    assert regenerated.read_text(encoding="utf-8") == gen_grammar.OUTPUT_PATH.read_text(encoding="utf-8"), \
        "emit_spirv/grammar.py is stale: run python -m nupp.emit_spirv.gen_grammar and commit it"


def test_grammar_numbers_match_the_spec():
    # Numbers from the SPIR-V specification's tables (3.x), typed here independently.
    assert OPCODES["OpCapability"] == 17
    assert OPCODES["OpIAdd"] == 128
    assert OPCODES["OpFunctionEnd"] == 56
    assert ENUMS["StorageClass"]["StorageBuffer"] == 12
    assert ENUMS["BuiltIn"]["GlobalInvocationId"] == 28
    assert ENUMS["Decoration"]["NoContraction"] == 42
    assert ENUMS["MemorySemantics"]["AcquireRelease"] == 0x8
    assert ENUMS["FunctionControl"]["Inline"] == 0x1


# -- word encodings ------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("", [0]),
    ("abc", [0x00636261]),
    ("main", [0x6E69616D, 0]),            # 4 bytes fill a word: the NUL takes another
    ("gl_Gl", [0x475F6C67, 0x0000006C]),
    ("é", [0x0000A9C3]),                  # UTF-8 bytes C3 A9, then NUL and padding
])
def test_string_literal_encoding(text, expected):
    assert string_words(text) == expected


def test_instruction_word_holds_count_and_opcode():
    assert instruction("OpReturn") == [1 << 16 | 253]
    assert instruction("OpName", 7, "ab") == [3 << 16 | 5, 7, 0x00006261]
    with pytest.raises(ValueError):
        instruction("OpNop", 1 << 32)


def test_header_words():
    module = Module(version=(1, 3))
    void = module.type_void()
    words = module.words()
    assert words[:5] == [0x07230203, 0x00010300, 0, void + 1, 0]
    assert module.to_bytes() == struct.pack(f"<{len(words)}I", *words)
    assert module.to_bytes()[:4] == b"\x03\x02\x23\x07"  # little-endian magic


def test_types_and_constants_are_declared_once():
    module = Module()
    uint = module.type_int(32, signed=False)
    assert module.type_int(32, signed=False) == uint
    assert module.type_int(32, signed=True) != uint
    assert module.constant(uint, 7) == module.constant(uint, 7)
    assert module.constant(uint, 7) != module.constant(module.type_int(32, signed=True), 7)
    assert module.type_pointer("StorageBuffer", uint) == module.type_pointer("StorageBuffer", uint)
    assert module.constant_bool(True) == module.constant_bool(True) != module.constant_bool(False)
    # Aggregates carry their own layout decorations: each request is a new type.
    assert module.type_struct(uint) != module.type_struct(uint)
    assert module.type_runtime_array(uint) != module.type_runtime_array(uint)


@pytest.mark.parametrize("kind, width, value, expected", [
    ("int", 32, -1, [0xFFFFFFFF]),
    ("int", 64, -2, [0xFFFFFFFE, 0xFFFFFFFF]),          # low-order word first
    ("int", 64, 1 << 40, [0, 1 << 8]),
    ("float", 32, 1.0, [0x3F800000]),
    ("float", 32, -0.0, [0x80000000]),
    ("float", 64, 1.0, [0, 0x3FF00000]),
])
def test_constant_literal_words(kind, width, value, expected):
    module = Module()
    type_id = module.type_int(width, signed=True) if kind == "int" else module.type_float(width)
    constant = module.constant(type_id, value)
    assert module.sections["declarations"][-(3 + len(expected)):] == [
        (3 + len(expected)) << 16 | OPCODES["OpConstant"], type_id, constant, *expected]


def test_unended_function_is_refused():
    module = Module()
    void = module.type_void()
    module.function(void, module.type_function(void)).label()
    with pytest.raises(ValueError, match="never ended"):
        module.words()


# -- a whole module through spirv-val and spirv-dis ------------------------------------------

def add_one_module(block_decoration: bool = True) -> Module:
    """GLCompute, local size 64: buffer.data[gl_GlobalInvocationID.x] += 1."""
    m = Module(version=(1, 3))
    m.capability("Shader")
    void, uint = m.type_void(), m.type_int(32, signed=False)
    main_type = m.type_function(void)
    uvec3 = m.type_vector(uint, 3)
    gid = m.global_variable(m.type_pointer("Input", uvec3), "Input")
    data = m.type_runtime_array(uint)
    buffer_type = m.type_struct(data)
    buffer = m.global_variable(m.type_pointer("StorageBuffer", buffer_type), "StorageBuffer")
    zero, one = m.constant(uint, 0), m.constant(uint, 1)

    main = m.function(void, main_type)
    m.entry_point("GLCompute", main.id, "main", (gid,))
    m.execution_mode(main.id, "LocalSize", 64, 1, 1)
    for target, text in ((main.id, "main"), (gid, "gl_GlobalInvocationID"),
                         (buffer_type, "Buffer"), (buffer, "buffer")):
        m.name(target, text)
    m.member_name(buffer_type, 0, "data")
    m.decorate(gid, "BuiltIn", ENUMS["BuiltIn"]["GlobalInvocationId"])
    m.decorate(data, "ArrayStride", 4)
    m.member_decorate(buffer_type, 0, "Offset", 0)
    if block_decoration:
        m.decorate(buffer_type, "Block")
    m.decorate(buffer, "DescriptorSet", 0)
    m.decorate(buffer, "Binding", 0)

    main.label()
    index = main.value("OpLoad", uint, main.value("OpAccessChain", m.type_pointer("Input", uint), gid, zero))
    element = main.value("OpAccessChain", m.type_pointer("StorageBuffer", uint), buffer, zero, index)
    total = main.value("OpIAdd", uint, main.value("OpLoad", uint, element), one)
    main.effect("OpStore", element, total)
    main.effect("OpReturn")
    main.end()
    return m


EXPECTED_DISASSEMBLY = """\
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gl_GlobalInvocationID
OpExecutionMode %main LocalSize 64 1 1
OpName %main "main"
OpName %gl_GlobalInvocationID "gl_GlobalInvocationID"
OpName %Buffer "Buffer"
OpName %buffer "buffer"
OpMemberName %Buffer 0 "data"
OpDecorate %gl_GlobalInvocationID BuiltIn GlobalInvocationId
OpDecorate %_runtimearr_uint ArrayStride 4
OpMemberDecorate %Buffer 0 Offset 0
OpDecorate %Buffer Block
OpDecorate %buffer DescriptorSet 0
OpDecorate %buffer Binding 0
%void = OpTypeVoid
%uint = OpTypeInt 32 0
%3 = OpTypeFunction %void
%v3uint = OpTypeVector %uint 3
%_ptr_Input_v3uint = OpTypePointer Input %v3uint
%gl_GlobalInvocationID = OpVariable %_ptr_Input_v3uint Input
%_runtimearr_uint = OpTypeRuntimeArray %uint
%Buffer = OpTypeStruct %_runtimearr_uint
%_ptr_StorageBuffer_Buffer = OpTypePointer StorageBuffer %Buffer
%buffer = OpVariable %_ptr_StorageBuffer_Buffer StorageBuffer
%uint_0 = OpConstant %uint 0
%uint_1 = OpConstant %uint 1
%_ptr_Input_uint = OpTypePointer Input %uint
%_ptr_StorageBuffer_uint = OpTypePointer StorageBuffer %uint
%main = OpFunction %void None %3
%14 = OpLabel
%16 = OpAccessChain %_ptr_Input_uint %gl_GlobalInvocationID %uint_0
%17 = OpLoad %uint %16
%19 = OpAccessChain %_ptr_StorageBuffer_uint %buffer %uint_0 %17
%20 = OpLoad %uint %19
%21 = OpIAdd %uint %20 %uint_1
OpStore %19 %21
OpReturn
OpFunctionEnd
"""


def spirv_val(binary: bytes) -> str | None:
    require_tool("spirv-val")
    return spirv_val_problem(binary)


def test_hand_built_compute_module_passes_spirv_val():
    problem = spirv_val(add_one_module().to_bytes())
    assert problem is None, problem


def test_spirv_val_catches_a_missing_block_decoration():
    # The validator check above can fail: the same module without `Block` is invalid for Vulkan.
    problem = spirv_val(add_one_module(block_decoration=False).to_bytes())
    assert problem is not None and "Block" in problem


def test_hand_built_compute_module_disassembly(tmp_path):
    binary = tmp_path / "add_one.spv"
    binary.write_bytes(add_one_module().to_bytes())
    result = subprocess.run([require_tool("spirv-dis"), "--no-header", "--no-indent", "--no-color",
                             str(binary)], capture_output=True, text=True, check=True)
    assert result.stdout == EXPECTED_DISASSEMBLY
