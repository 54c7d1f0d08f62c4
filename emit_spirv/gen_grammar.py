"""Generate emit_spirv/grammar.py from the SPIR-V grammar JSON.

    python -m nupp.emit_spirv.gen_grammar [GRAMMAR_JSON] [OUTPUT]

The numbers of the GLSL.std.450 extended instructions (Floor, Sqrt, ...)
come from the grammar beside it, extinst.glsl.std.450.grammar.json.

The opcode and enumerant numbers of SPIR-V are read from Khronos'
machine-readable grammar (Debian's `spirv-headers` installs it at
GRAMMAR_PATH) instead of being typed by hand.  The generated module is
committed, so emitting SPIR-V needs no extra package; tests/test_spirv_module.py
regenerates it and checks it equals the committed file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GRAMMAR_PATH = Path("/usr/include/spirv/unified1/spirv.core.grammar.json")
GLSL_GRAMMAR_NAME = "extinst.glsl.std.450.grammar.json"
OUTPUT_PATH = Path(__file__).with_name("grammar.py")

# The operand kinds a compute module uses; the others (images, ray tracing, ...) stay out.
ENUM_KINDS = (
    "Capability", "ExecutionModel", "AddressingModel", "MemoryModel", "ExecutionMode",
    "StorageClass", "Decoration", "BuiltIn", "FunctionControl", "SelectionControl",
    "LoopControl", "MemoryAccess", "MemorySemantics", "Scope",
)


def render_grammar(grammar: dict, glsl: dict) -> str:
    """The text of grammar.py for a parsed spirv.core.grammar.json and its
    GLSL.std.450 extended instruction grammar."""
    lines = [
        '"""SPIR-V opcode and enumerant numbers (generated: do not edit).',
        "",
        f"Made by emit_spirv/gen_grammar.py from spirv.core.grammar.json, SPIR-V "
        f"{grammar['major_version']}.{grammar['minor_version']} revision {grammar['revision']}.",
        '"""',
        "",
        f"MAGIC_NUMBER = {int(grammar['magic_number'], 16):#010x}",
        f"GRAMMAR_VERSION = ({grammar['major_version']}, {grammar['minor_version']})",
        f"GRAMMAR_REVISION = {grammar['revision']}",
        "",
        "OPCODES: dict[str, int] = {",
        *(f"    {name!r}: {number}," for name, number in opcodes(grammar).items()),
        "}",
        "",
        "# ENUMS[kind][enumerant]: the value of a ValueEnum, or the mask bit of a BitEnum.",
        "ENUMS: dict[str, dict[str, int]] = {",
    ]
    for kind, enumerants in enums(grammar).items():
        lines.append(f"    {kind!r}: {{")
        lines.extend(f"        {name!r}: {value}," for name, value in enumerants.items())
        lines.append("    },")
    lines += ["}", "", "# The GLSL.std.450 extended instructions (OpExtInst), by name.", "GLSL_STD_450: dict[str, int] = {"]
    lines += [f"    {inst['opname']!r}: {inst['opcode']}," for inst in glsl["instructions"]]
    lines.append("}")
    return "\n".join(lines) + "\n"


def opcodes(grammar: dict) -> dict[str, int]:
    return {inst["opname"]: inst["opcode"] for inst in grammar["instructions"]}


def enums(grammar: dict) -> dict[str, dict[str, int]]:
    kinds = {kind["kind"]: kind for kind in grammar["operand_kinds"]}
    return {name: enumerant_values(kinds[name]) for name in ENUM_KINDS}


def enumerant_values(kind: dict) -> dict[str, int]:
    # BitEnum values are hex strings ("0x0004"); ValueEnum values are integers.
    return {e["enumerant"]: int(e["value"], 0) if isinstance(e["value"], str) else e["value"]
            for e in kind["enumerants"]}


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else GRAMMAR_PATH
    target = Path(argv[1]) if len(argv) > 1 else OUTPUT_PATH
    grammar = json.loads(source.read_text(encoding="utf-8"))
    glsl = json.loads(source.with_name(GLSL_GRAMMAR_NAME).read_text(encoding="utf-8"))
    target.write_text(render_grammar(grammar, glsl), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
