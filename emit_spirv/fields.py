"""Struct fields in a span's buffer of 32-bit words: the load and store rules.

Element i of a span (1-based, as Nupp counts) starts at byte (i - 1) * stride.
A 32-bit field is one word; a 64-bit field two (8-aligned, so an even word);
an int8..uint16 field sits inside one word, at a byte offset known when the
stride is a multiple of 4 (admit.py refuses stores otherwise, and a load then
computes the shift).  A load gives the field's load width (a float widens to
binary64, int8..uint16 extend to int32); a store takes the value as the C
emitter's `store_value` does: a float field the binary32 (a binary32 value's
NaN canonical: FieldStorage.stores_canonical_nan), a number field binary64,
an integer field the value modulo 2^bits.
"""

from __future__ import annotations

from nupp.emit_spirv.rules import canonical_f32, narrow, sign_extend
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.widths import FIELD_STORAGE, Width

F64, F32, I32, U32, I64, U64 = Width.F64, Width.F32, Width.I32, Width.U32, Width.I64, Width.U64


def _location(w, span: str, index: str, field: str):
    """(buffer, id of the field's first word, id of its bit shift or None, storage)."""
    buffer, layout, struct = w.span_vars[span]
    storage = FIELD_STORAGE[w.ir_module.struct(struct).field_type(field)]
    offset = layout.offsets[field]
    var, _ = w.lookup(index)
    element = w.op("OpBitcast", U32, w.op("OpISub", I32, w.op("OpLoad", I32, var), w.const(1, I32)))
    uint = lambda value: w.const(value, U32)  # noqa: E731
    if layout.size % 4 == 0:
        word = w.op("OpIAdd", U32, w.op("OpIMul", U32, element, uint(layout.size // 4)), uint(offset // 4))
        return buffer, word, uint(offset % 4 * 8), storage
    byte = w.op("OpIAdd", U32, w.op("OpIMul", U32, element, uint(layout.size)), uint(offset))
    shift = w.op("OpShiftLeftLogical", U32, w.op("OpBitwiseAnd", U32, byte, uint(3)), uint(3))
    return buffer, w.op("OpShiftRightLogical", U32, byte, uint(2)), shift, storage


def _words(w, buffer, word, count: int) -> list[int]:
    return [w.load_word(buffer, word if k == 0 else w.op("OpIAdd", U32, word, w.const(k, U32)))
            for k in range(count)]


def load_field(w, e: ir.Load) -> int:
    buffer, word, shift, storage = _location(w, e.span, e.index, e.field)
    if storage.bits == 64:
        return w.from_words(_words(w, buffer, word, 2), e.width)
    bits = _words(w, buffer, word, 1)[0]
    if storage.is_float:
        return w.op("OpFConvert", F64, w.op("OpBitcast", F32, bits))
    if storage.bits == 32:
        return w.from_words([bits], e.width)
    # int8..uint16: the field's bits to the top of the word, then back down
    # with the sign (arithmetic shift) or zeros (logical)
    up = w.op("OpISub", U32, w.const(32 - storage.bits, U32), shift)
    top = w.op("OpShiftLeftLogical", U32, bits, up)
    if storage.signed:  # an int operand: naga shifts by the operand's type
        return w.op("OpShiftRightArithmetic", I32, w.op("OpBitcast", I32, top), w.const(32 - storage.bits, I32))
    return w.op("OpBitcast", I32, w.op("OpShiftRightLogical", U32, top, w.const(32 - storage.bits, U32)))


def store_field(w, s: ir.Store, value: int) -> None:
    buffer, word, shift, storage = _location(w, s.span, s.index, s.field)
    width = s.value.width
    if storage.is_float:
        if storage.bits == 32:
            value = canonical_f32(w, value) if storage.stores_canonical_nan(width) else narrow(w, value)
            return _store_words(w, buffer, word, w.to_words(value, F32))
        return _store_words(w, buffer, word, w.to_words(value, F64))
    if storage.bits == 64:
        if width.bits == 32:  # extended by its own signedness: the value modulo 2^64
            value = sign_extend(w, value) if width.is_signed else w.op("OpUConvert", U64, value)
            width = I64 if width.is_signed else U64
        return _store_words(w, buffer, word, w.to_words(value, width))
    low = w.op("OpUConvert", U32, value) if width.bits == 64 else w.to_words(value, width)[0]
    if storage.bits == 32:
        return _store_words(w, buffer, word, [low])
    mask = w.op("OpShiftLeftLogical", U32, w.const((1 << storage.bits) - 1, U32), shift)
    kept = w.op("OpBitwiseAnd", U32, w.load_word(buffer, word), w.op("OpNot", U32, mask))
    placed = w.op("OpBitwiseAnd", U32, w.op("OpShiftLeftLogical", U32, low, shift), mask)
    _store_words(w, buffer, word, [w.op("OpBitwiseOr", U32, kept, placed)])


def _store_words(w, buffer, word, words: list[int]) -> None:
    for k, bits in enumerate(words):
        at = word if k == 0 else w.op("OpIAdd", U32, word, w.const(k, U32))
        w.f.effect("OpStore", w.word_pointer(buffer, at), bits)
