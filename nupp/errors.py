"""Diagnostics: every message nupp shows a user about their source.

A diagnostic prints as

    FILE:LINE:COL: error: MESSAGE
       12 |     local x = a ~ = b
          |                   ^
    hint: did you mean '~='?

User mistakes raise `NuppError` (carrying one or more diagnostics); a failure
of nupp itself raises `InternalError`, which says it is a bug and where.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

# One line break as LuaJIT's lexer counts it: \n, \r, \r\n or \n\r.  Every
# line number and column nupp computes counts lines this way (Python's
# splitlines would also break at \v, \f and others, and \n\r twice).
LINE_BREAK = re.compile(r"\r\n|\n\r|\r|\n")


def line_breaks(text: str) -> tuple[int, int]:
    """How many line breaks `text` holds, and the offset just past the last (0: none)."""
    if "\r" not in text:  # the common case, at C speed
        count = text.count("\n")
        return count, text.rindex("\n") + 1 if count else 0
    count = after = 0
    for m in LINE_BREAK.finditer(text):
        count, after = count + 1, m.end()
    return count, after


@dataclass(frozen=True)
class Source:
    """A source file: its display path and its text.

    Lua source is bytes, and LuaJIT takes any byte in a string, a comment or
    a name: the text is the file's bytes read as UTF-8, each byte that is not
    UTF-8 kept as a surrogate escape, so `source_bytes` gives back exactly the
    bytes the file held (and, of a translation, the bytes LuaJIT must read)."""

    path: str
    text: str

    @classmethod
    def from_file(cls, path: str | Path) -> "Source":
        return cls(str(path), Path(path).read_bytes().decode("utf-8", errors="surrogateescape"))

    def line_text(self, line: int) -> str:
        lines = LINE_BREAK.split(self.text)
        return lines[line - 1] if 1 <= line <= len(lines) else ""


def source_bytes(text: str) -> bytes:
    """Text read from a source, or made from one (its Lua translation), as the
    bytes it stands for: the inverse of `Source.from_file`'s reading."""
    return text.encode("utf-8", errors="surrogateescape")


def displayable(text: str) -> str:
    """`text` fit for a terminal: each byte that was not UTF-8 shown as U+FFFD
    (one character for one, so columns stay put)."""
    return text.translate(_UNDECODED_BYTES)


_UNDECODED_BYTES = {0xDC80 + b: "\ufffd" for b in range(128)}  # surrogateescape's range


def first_non_blank_column(line_text: str) -> int:
    """The column of a line's first non-blank character as a diagnostic shows
    the line (a BOM is not shown, so not counted): where a caret goes when
    nothing finer is known (LuaJIT reports a line only)."""
    shown = line_text.removeprefix("\ufeff")
    return len(shown) - len(shown.lstrip()) + 1


@dataclass(frozen=True)
class Diagnostic:
    """One message about a position in a source (line and column are 1-based)."""

    source: Source
    line: int
    col: int
    message: str
    hint: str | None = None
    severity: str = "error"

    def render(self) -> str:
        head = f"{self.source.path}:{self.line}:{self.col}: {self.severity}: {self.message}"
        text = self.source.line_text(self.line).removeprefix("\ufeff").expandtabs(1)
        parts = [head]
        if text.strip():
            gutter = f"{self.line:5d} | "
            parts.append(gutter + text)
            parts.append(" " * (len(gutter) - 2) + "| " + " " * (self.col - 1) + "^")
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return displayable("\n".join(parts))


@dataclass
class NuppError(Exception):
    """The user's program is wrong; `diagnostics` says where and why."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(d.render() for d in self.diagnostics)


class InternalError(Exception):
    """nupp itself failed: a bug, reported with the stage where it happened."""

    def __init__(self, stage: str, detail: str):
        super().__init__(f"internal compiler error in {stage}: {detail}\n"
                         "This is a bug in nupp; please report it with the input that caused it.")
        self.stage = stage


def error_at(source: Source, line: int, col: int, message: str, hint: str | None = None) -> NuppError:
    """A NuppError holding a single diagnostic."""
    return NuppError([Diagnostic(source, line, col, message, hint)])
