"""What a lane vector is in lane C: the element C type of each width, names, sizes.

A varying value of width W is a GCC/Clang vector of G lanes of
`ELEMENTS[W]`, typedef'd `nu_<SHORT>x<G>` (`nu_f64x8`); a varying boolean is
a mask, int32 lanes of 0 or -1.  Selects blend a value as the signed integer
of its size (`BLEND`).  In the C written for one lane, `LANE` stands for the
lane's index until it is written out per lane or as a loop's `l`.
"""

from __future__ import annotations

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
