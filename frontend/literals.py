"""The values of Nupp numerals, read as LuaJIT reads them.

A plain numeral is a binary64 (`0x10`, `1e3`, `.5`, `0x1p-2`); a numeral with
an `LL`/`ULL` suffix is LuaJIT's 64-bit integer; an `i` suffix an imaginary
number (outside the AOT subset).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


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
        return float.fromhex("0x" + (mantissa if not mantissa.startswith(".") else "0" + mantissa))
    return float(text)


def _integer_64(text: str, unsigned: bool) -> int:
    value = int(text, 16) if text[:2].lower() == "0x" else int(text)
    value &= (1 << 64) - 1  # LuaJIT wraps an oversized 64-bit literal
    if not unsigned and value >= 1 << 63:
        value -= 1 << 64
    return value
