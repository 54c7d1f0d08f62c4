"""What a lane vector is in lane C, and how lane C runs each op on one.

A varying value of width W is a GCC/Clang vector of `ELEMENTS[W]` lanes,
typedef'd `nu_<SHORT>x<lanes>` (`nu_f64x8`): the gang's G lanes, or a
register's share of them (`REGISTERS`, the register widths lane C is written
for; emit_c/lane.py); a varying boolean is a mask, int32 lanes of 0 or -1.  Selects blend a value as the signed integer
of its size (`BLEND`).  In the C written for one lane, `LANE` stands for the
lane's index until it is written out per lane or as a loop's `l`.
"""

from __future__ import annotations

from typing import Optional

from nupp.emit_c.helpers import C_OPS, c_type
from nupp.scalar_ir.ops import CAST, OPERATOR, OPS, OpTableMismatch
from nupp.scalar_ir.widths import Width

# The element type and short name of each width's vector.  A varying boolean
# is a mask: the int32 vector, lanes 0 or -1.
ELEMENTS: dict[Width, str] = {
    Width.F64: "double", Width.F32: "float", Width.I32: "int32_t", Width.U32: "uint32_t",
    Width.I64: "int64_t", Width.U64: "uint64_t", Width.BOOL: "int32_t",
}
SHORT = {"double": "f64", "float": "f32", "int32_t": "i32", "uint32_t": "u32", "int64_t": "i64",
         "uint64_t": "u64"}
SIZES = {"double": 8, "float": 4, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8}
BLEND = {4: "int32_t", 8: "int64_t"}  # the signed element a value of each size blends as
LANE = "@LANE@"  # in the C of one lane: its index, written out per lane or as the loop's `l`

# The vector registers a target may have, widest first: (bytes, the predefined
# macro that says the target has them; None: every target, SSE2 or NEON).  A
# gang's every vector fits one register: a gang wider than that runs as
# several register-wide vectors (emit_c/lane.py), since GCC lowers a wider
# generic vector through memory, lane by lane.
REGISTERS: tuple[tuple[int, Optional[str]], ...] = (
    (64, "defined(__AVX512F__)"), (32, "defined(__AVX2__)"), (16, None))


# ---- how lane C runs each op (ops.OpInfo.vector) ---------------------------------
# An `operator` op is a GCC/Clang vector operator: NATIVE (op -> the C operator
# and, for signed modular arithmetic, the unsigned width to compute in: signed
# vector overflow is undefined) or, for a comparison, COMPARE (a vector
# comparison gives 0 / -1 lanes, C's comparison per lane, NaN included).
# Masks are 0 / -1 lanes, so the bitwise operators are the boolean ones.  A
# `cast` is CONVERT: __builtin_convertvector converts each lane as the scalar
# C cast does.  A `rule` runs as its lane form (lane_helpers.LANE_FORMS) or as
# the scalar C_OPS template lane by lane.
_ARITHMETIC = {"add": "+", "sub": "-", "mul": "*", "div": "/", "neg": "-",
               "band": "&", "bor": "|", "bxor": "^", "bnot": "~"}
_MODULAR = ("add", "sub", "mul", "neg")
_MASK = {"and": "&", "or": "|", "ne": "^", "not": "~"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_UNSIGNED = {Width.I32: Width.U32, Width.I64: Width.U64}


def _vector_operator(op: str, table: dict[str, str]) -> str:
    base = OPS[op].base
    if base not in table:
        raise OpTableMismatch(f"emit_c/lane_vectors.py has no vector operator for {op}, "
                              "which scalar_ir/ops.py calls an operator")
    return table[base]


NATIVE: dict[str, tuple[str, Optional[Width]]] = {}
COMPARE: dict[str, str] = {}
for _op, _info in OPS.items():
    if _info.vector != OPERATOR:
        continue
    if all(w is Width.BOOL for w in _info.operands):
        NATIVE[_op] = (_vector_operator(_op, _MASK), None)
    elif _info.result is Width.BOOL:
        COMPARE[_op] = _vector_operator(_op, _COMPARE)
    else:
        _unsigned = _UNSIGNED.get(_info.result) if _info.base in _MODULAR else None
        NATIVE[_op] = (_vector_operator(_op, _ARITHMETIC), _unsigned)

CONVERT = {op for op, info in OPS.items() if info.vector == CAST}
for _op in CONVERT:  # ops.py's plain conversion must be scalar C's plain cast
    if C_OPS[_op].scalar != f"(({c_type(OPS[_op].result)}){{0}})":
        raise OpTableMismatch(f"{_op} is a plain conversion in scalar_ir/ops.py, but its C_OPS "
                              f"rendering {C_OPS[_op].scalar!r} is not a C cast")
