"""Widths: the one place that says what every Nupp type name computes in.

LANGUAGE.md section 2.  Every expression of the AOT subset has exactly one
width; `float` is binary32 as a value and a storage fact in a struct field
(a load widens it to binary64); `int8`..`uint16` exist only as field storage
and load as int32.  Conversions between widths are listed once here
(`CONVERSIONS`), so the checker, the IR, the folder and every emitter agree
on which conversion exists and what it is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from nupp.scalar_ir.numerics import round_f32


class Width(Enum):
    F64 = "f64"   # binary64: number, double
    F32 = "f32"   # binary32: float
    I32 = "i32"
    U32 = "u32"
    I64 = "i64"
    U64 = "u64"
    BOOL = "bool"

    @property
    def is_int(self) -> bool:
        return self in (Width.I32, Width.U32, Width.I64, Width.U64)

    @property
    def is_float(self) -> bool:
        return self in (Width.F64, Width.F32)

    @property
    def is_signed(self) -> bool:
        return self in (Width.I32, Width.I64)

    @property
    def bits(self) -> int:
        return {Width.F64: 64, Width.F32: 32, Width.I32: 32, Width.U32: 32,
                Width.I64: 64, Width.U64: 64, Width.BOOL: 1}[self]

    @property
    def int_range(self) -> tuple[int, int]:
        """Inclusive range of an integer width."""
        if not self.is_int:
            raise ValueError(f"{self.value} is not an integer width")
        if self.is_signed:
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return 0, (1 << self.bits) - 1

    @property
    def source_name(self) -> str:
        """How a Nupp programmer spells this width."""
        return {Width.F64: "number", Width.F32: "float", Width.I32: "int32", Width.U32: "uint32",
                Width.I64: "int64", Width.U64: "uint64", Width.BOOL: "boolean"}[self]

    def __str__(self) -> str:
        return self.value


# Type names of parameters, locals and results.
TYPE_WIDTHS: dict[str, Width] = {
    "number": Width.F64, "double": Width.F64, "float": Width.F32,
    "int32": Width.I32, "uint32": Width.U32, "int64": Width.I64, "uint64": Width.U64,
    "boolean": Width.BOOL,
}
SCALAR_TYPES = frozenset(TYPE_WIDTHS)


@dataclass(frozen=True)
class FieldStorage:
    """A struct field type: how many bits it stores and the width a load gives."""

    name: str
    load_width: Width
    bits: int
    is_float: bool = False
    signed: bool = False

    @property
    def store_width(self) -> Width | None:
        """The width a value the field does not take as it is (`takes`: a
        literal, an integer or binary32 for a double field) is converted to;
        None for integer fields (their rules: the checker's integer_store)."""
        if self.is_float:
            return Width.F32 if self.bits == 32 else Width.F64
        return None

    def takes(self, value: Width) -> bool:
        """Whether a store takes a `value`-wide value as it is, no conversion
        written in the IR: the store itself narrows or reduces it.  An integer
        field takes every integer width, reduced modulo 2^bits (LANGUAGE.md
        section 4); a float field binary32 and binary64, which the store
        narrows (section 2: a store narrows); a double field binary64."""
        if not self.is_float:
            return value.is_int
        return value is Width.F64 or (self.bits == 32 and value is Width.F32)

    def stores_canonical_nan(self, value: Width) -> bool:
        """Whether a store of a `value`-wide value makes its NaN canonical.

        The rule of every execution: a binary32 value's NaN is 0x7FC00000
        wherever it becomes visible (a float field, a float result, `bits`),
        since it may be a nupp.math.f32 result, exact to the bit (LANGUAGE.md
        section 3).  No emitter tracks where a binary32 came from, so a float
        local holding narrowed binary64 stores the canonical NaN too: a valid
        answer for ordinary arithmetic's NaN.  A binary64 value's NaN is
        ordinary arithmetic's (a promoted f32 result's included, as in a
        number field), its payload and sign not observable: a float field
        stores it as the hardware's narrowing leaves it."""
        return self.is_float and self.bits == 32 and value is Width.F32


FIELD_STORAGE: dict[str, FieldStorage] = {s.name: s for s in (
    FieldStorage("number", Width.F64, 64, is_float=True),
    FieldStorage("double", Width.F64, 64, is_float=True),
    FieldStorage("float", Width.F64, 32, is_float=True),     # a load widens binary32 to binary64
    FieldStorage("int8", Width.I32, 8, signed=True),
    FieldStorage("uint8", Width.I32, 8),
    FieldStorage("int16", Width.I32, 16, signed=True),
    FieldStorage("uint16", Width.I32, 16),
    FieldStorage("int32", Width.I32, 32, signed=True),
    FieldStorage("uint32", Width.U32, 32),
    FieldStorage("int64", Width.I64, 64, signed=True),
    FieldStorage("uint64", Width.U64, 64),
)}
STORAGE_TYPES = frozenset(FIELD_STORAGE)


# Every conversion between widths, by (from, to), with the name the IR prints
# (`promote.f32.f64`) and its meaning.  A pair missing here has no conversion.
CONVERSIONS: dict[tuple[Width, Width], tuple[str, str]] = {
    (Width.F32, Width.F64): ("promote", "binary32 to binary64, exact"),
    (Width.I32, Width.F64): ("promote", "int32 to binary64, exact"),
    (Width.U32, Width.F64): ("promote", "uint32 to binary64, exact"),
    (Width.I64, Width.F64): ("round", "int64 to binary64, round to nearest even"),
    (Width.U64, Width.F64): ("round", "uint64 to binary64, round to nearest even"),
    (Width.F64, Width.F32): ("narrow", "round to nearest even; a NaN gives the canonical NaN"),
    (Width.F64, Width.I32): ("wrap", "ECMAScript ToInt32: NaN/inf give 0, truncate, modulo 2^32"),
    (Width.F64, Width.U32): ("wrap", "ECMAScript ToUint32"),
    (Width.F64, Width.I64): ("wrap", "NaN/inf give 0, truncate toward zero, modulo 2^64, as signed"),
    (Width.F64, Width.U64): ("wrap", "NaN/inf give 0, truncate toward zero, modulo 2^64"),
    (Width.I32, Width.U32): ("reinterpret", "the same 32 bits"),
    (Width.U32, Width.I32): ("reinterpret", "the same 32 bits"),
    (Width.I32, Width.I64): ("widen", "sign extension, exact"),
    (Width.U32, Width.I64): ("widen", "zero extension, exact"),
    (Width.U32, Width.U64): ("widen", "zero extension, exact"),
    (Width.I64, Width.I32): ("trunc", "the low 32 bits (a shift count's: only its low 5 or 6 count)"),
    (Width.U64, Width.I32): ("trunc", "the low 32 bits (a shift count's: only its low 5 or 6 count)"),
    (Width.F32, Width.U32): ("bits", "the same 32 bits (a NaN is canonical)"),
    (Width.U32, Width.F32): ("frombits", "the same 32 bits; a NaN pattern gives the canonical NaN"),
}


def conversion_name(src: Width, dst: Width) -> str:
    """The IR opcode converting src to dst, e.g. `widen.i32.i64`."""
    kind, _ = CONVERSIONS[(src, dst)]
    return f"{kind}.{src}.{dst}"


def integer_fits(value: int, width: Width) -> bool:
    lo, hi = width.int_range
    return lo <= value <= hi


def holds_in_binary32(x: float) -> bool:
    """Whether binary32 holds the binary64 `x` exactly (a NaN counts: it stays a NaN)."""
    return x != x or round_f32(x) == x


@dataclass(frozen=True)
class StructLayout:
    """The natural C layout of a struct's fields (each aligned to its own size,
    the struct padded to its largest field): what the runtime's FFI structs,
    NumPy's aligned dtypes and the C emitter's struct declarations all are."""

    size: int
    offsets: dict  # field name -> byte offset


def struct_layout(fields) -> StructLayout:
    """The layout of (field name, storage type name) pairs, in order."""
    offset, align, offsets = 0, 1, {}
    for name, type_name in fields:
        size = FIELD_STORAGE[type_name].bits // 8
        offset = -(-offset // size) * size
        offsets[name] = offset
        offset += size
        align = max(align, size)
    return StructLayout(-(-offset // align) * align, offsets)
