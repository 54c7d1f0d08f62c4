"""The values of Nupp literals, read as LuaJIT reads them.

Numerals: a plain numeral is a binary64 (`0x10`, `1e3`, `.5`, `0x1p-2`); a numeral with
an `LL`/`ULL` suffix is LuaJIT's 64-bit integer; an `i` suffix an imaginary
number (outside the AOT subset).

Strings: `decode_string` is the one reader of string literals (escapes, long
brackets) for the whole compiler; it gives bytes, as a Lua string holds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nupp.errors import LINE_BREAK


@dataclass(frozen=True)
class Numeral:
    value: float | int   # a float for plain numerals, an int for LL/ULL ones
    suffix: str = ""     # "", "LL", "ULL" or "i"
    integer_syntax: bool = False  # written without a point or exponent: 5, 0xFF
    exact_int: int = 0            # its value as written, when integer_syntax

    @property
    def is_integer(self) -> bool:
        """An exact integer literal: written as an integer and exactly that value.
        `2.0` and `1e3` are binary64 literals, as a reader of the source expects."""
        if isinstance(self.value, int):
            return True
        return self.integer_syntax and self.value.is_integer() and int(self.value) == self.exact_int

    def as_int(self) -> int:
        return int(self.value)


# What LuaJIT's lexer reads as one numeral (the grammar's NUMBER) is more than
# a number: `1..2` and `1e` are numerals it refuses ("malformed number").
# Which are numbers, lj_strscan.c decides; this is its rule: decimal or hex
# (with a fraction and exponent), an `i` making it imaginary, or an integer
# with LL or ULL in any case that fits in 64 bits.
_VALID_NUMERAL = re.compile(
    r"(?:0[xX](?:[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    r"|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[iI]?"
    r"|(?P<integer>0[xX][0-9a-fA-F]+|[0-9]+)[uU]?[lL][lL]")


def is_numeral(raw: str) -> bool:
    """Whether LuaJIT takes `raw`, as its lexer read it, for a number."""
    match = _VALID_NUMERAL.fullmatch(raw)
    if match is None:
        return False
    digits = match["integer"]
    return digits is None or int(digits, 16 if digits[:2].lower() == "0x" else 10) < 1 << 64


def read_numeral(raw: str) -> Numeral:
    text = raw.strip()
    if text.startswith("-"):  # a negative switch case: `case -2147483648`
        n = read_numeral(text[1:])
        return Numeral(-n.value, n.suffix, n.integer_syntax, -n.exact_int)
    lower = text.lower()
    # No digit, hex ones included, is 'i', 'l' or 'u': a suffix is unambiguous.
    for suffix in ("ull", "ll"):
        if lower.endswith(suffix):
            return Numeral(_integer_64(text[: -len(suffix)], unsigned=suffix == "ull"), suffix.upper())
    if lower.endswith("i"):
        return Numeral(_plain(text[:-1]), "i")
    integer = _INTEGER_NUMERAL.fullmatch(text) is not None
    exact = (int(text, 16) if text[:2].lower() == "0x" else int(text)) if integer else 0
    return Numeral(_plain(text), "", integer, exact)


_INTEGER_NUMERAL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]+")


def _plain(text: str) -> float:
    if text[:2].lower() == "0x":
        mantissa = text[2:]
        if "p" not in mantissa.lower():
            mantissa += "p0"
        try:
            return float.fromhex("0x" + (mantissa if not mantissa.startswith(".") else "0" + mantissa))
        except OverflowError:  # past the largest binary64: LuaJIT reads infinity, as float() does
            return math.inf
    return float(text)


def _integer_64(text: str, unsigned: bool) -> int:
    value = int(text, 16) if text[:2].lower() == "0x" else int(text)
    value &= (1 << 64) - 1  # LuaJIT wraps one from 2^63 up (a larger one is no numeral)
    if not unsigned and value >= 1 << 63:
        value -= 1 << 64
    return value


# ---- strings ----------------------------------------------------------------------

class StringLiteralError(ValueError):
    """A string literal LuaJIT's lexer refuses; `offset` is the character of
    the literal's text where it stops."""

    def __init__(self, offset: int, message: str, hint: str | None = None):
        super().__init__(message)
        self.offset, self.message, self.hint = offset, message, hint


ESCAPES_HINT = ("Lua's escapes are \\a \\b \\f \\n \\r \\t \\v \\\\ \\\" \\', \\ddd (decimal, up to 255), "
                "\\xXX (two hex digits), \\u{XXX} (a code point), \\z (skips the spaces and line breaks after it) "
                "and a backslash before a line break; write \\\\ for a backslash")
_SIMPLE_ESCAPES = {"a": b"\a", "b": b"\b", "f": b"\f", "n": b"\n", "r": b"\r", "t": b"\t", "v": b"\v",
                   "\\": b"\\", '"': b'"', "'": b"'"}
_SPACE = re.compile(r"[ \t\n\v\f\r]*")        # what \z skips (ASCII whitespace only)
_HEX_DIGIT = re.compile(r"[0-9a-fA-F]")
_DECIMAL_ESCAPE = re.compile(r"[0-9]{1,3}")
_LONG_BRACKET = re.compile(r"\[=*\[")


def decode_string(raw: str) -> bytes:
    """The bytes LuaJIT makes of a string literal written `raw` (quotes or
    long brackets included), as its lexer (lj_lex.c) reads it; a literal it
    refuses raises StringLiteralError.

    Source text keeps undecodable bytes as surrogate escapes (`Source`), so
    every character encodes back to the byte or bytes the file held."""
    opening = _LONG_BRACKET.match(raw)
    if opening is not None:
        return _long_string(raw[opening.end():len(raw) - opening.end()])
    return _short_string(raw)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _long_string(body: str) -> bytes:
    # the line break right after the opening bracket is skipped; the others are each "\n"
    first = LINE_BREAK.match(body)
    if first is not None:
        body = body[first.end():]
    return _encode(LINE_BREAK.sub("\n", body))


def _short_string(raw: str) -> bytes:
    out = bytearray()
    end = len(raw) - 1  # the closing quote
    pos = 1
    while True:
        backslash = raw.find("\\", pos, end)
        if backslash < 0:
            out += _encode(raw[pos:end])
            return bytes(out)
        out += _encode(raw[pos:backslash])
        pos = _escape(raw, backslash, out)


def _escape(raw: str, at: int, out: bytearray) -> int:
    """Decode the escape starting with the backslash at `at` into `out`; return where the text resumes."""
    kind = raw[at + 1]
    if kind in _SIMPLE_ESCAPES:
        out += _SIMPLE_ESCAPES[kind]
        return at + 2
    if kind in "\r\n":
        out += b"\n"
        return LINE_BREAK.match(raw, at + 1).end()
    if kind == "z":
        return _SPACE.match(raw, at + 2).end()
    if kind == "x":
        digits = raw[at + 2:at + 4]
        if len(digits) == 2 and all(_HEX_DIGIT.fullmatch(d) for d in digits):
            out.append(int(digits, 16))
            return at + 4
        raise StringLiteralError(at, "invalid escape sequence '\\x' (it takes exactly two hex digits)",
                                 ESCAPES_HINT)
    if kind == "u":
        return _unicode_escape(raw, at, out)
    decimal = _DECIMAL_ESCAPE.match(raw, at + 1)
    if decimal is not None:
        value = int(decimal.group())
        if value > 255:
            raise StringLiteralError(at, f"invalid escape sequence '\\{decimal.group()}' (a byte is at most 255)",
                                     ESCAPES_HINT)
        out.append(value)
        return decimal.end()
    shown = kind if kind.isprintable() else repr(kind)[1:-1]
    raise StringLiteralError(at, f"invalid escape sequence '\\{shown}'", ESCAPES_HINT)


def _unicode_escape(raw: str, at: int, out: bytearray) -> int:
    """`\\u{XXX}`: a code point below 0x110000 and not a surrogate, as UTF-8 (LuaJIT 2.1)."""
    close = raw.find("}", at + 3)
    digits = raw[at + 3:close] if raw[at + 2:at + 3] == "{" and close > 0 else ""
    if digits and all(_HEX_DIGIT.fullmatch(d) for d in digits):
        code = int(digits, 16)
        if code < 0x110000 and not 0xD800 <= code < 0xE000:
            out += chr(code).encode("utf-8")
            return close + 1
    raise StringLiteralError(at, "invalid escape sequence '\\u' (it takes a code point in braces, "
                                 "\\u{0} to \\u{10FFFF} without the surrogates D800-DFFF)", ESCAPES_HINT)


def string_value(raw: str) -> str:
    """A string literal's value as text, each byte that is not UTF-8 kept as
    a surrogate escape (as `Source` keeps the file's): printed back into Lua
    source, it gives LuaJIT the same bytes."""
    return decode_string(raw).decode("utf-8", errors="surrogateescape")
