"""An uncaught run-time error as `nupp run` reports it, for a built program
to report the same text (runtime/project/boot.lua).

`nupp run` renders the error in Python (render_run_error):
when the message starts with a position in a program file, the diagnostic at
that line (Diagnostic.render: header, source line, caret), else `error: ` and
the message; then, when more than one, the traceback's frames in program
files under `from:` (and `...` where LuaJIT left levels out).  A built
program has neither Python nor the sources, so
the build renders each line's diagnostic with the column and the message
left out (line_reports, lib/nupp/diagnostics/FILE.lua in the tree) and
boot.lua only glues: it finds the position and the frames by report_rule's
Lua patterns, puts the column and the message into its line's diagnostic
(the message made displayable as Diagnostic.render makes it: the one rule
boot.lua holds itself, as the message is known only then) and joins the
frames.  The column is `nupp run`'s: the build stores, per line, the column
of each key a message there could produce (error_position.line_columns), and
boot.lua classifies the message by the rules of runtime/error_keys.py
(runtime/project/error_keys.lua) and takes the first key the line holds.
tests/test_build_errors.py compares the two programs' texts for each shape
of error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nupp.errors import LINE_BREAK, Diagnostic, Source, displayable, first_non_blank_column
from nupp.runtime.error_keys import FRAME, PLACED_FRAME_LUA, lua_rule
from nupp.runtime.host import LUA_DIR, LuaRunError

# The words of a report, nupp run's and boot.lua's (report_rule): an error
# without a position in a program file, what heads the frames, a frame.
UNPOSITIONED = "error: "
FRAMES_HEADING = "\nfrom:\n"
FRAME_FORMAT = "  %s:%s:%s"  # path, line, the rest of LuaJIT's frame (Python's % and Lua's format alike)
LEFT_OUT = "\t..."  # the traceback's line where LuaJIT left levels out
FRAMES_LEFT_OUT = "  ..."  # and the list's

# "path/file.nupp:12: message" as LuaJIT writes positions
_LUA_POSITION = re.compile(r"^(?P<path>[^\n:]+\.(?:nupp|lua)):(?P<line>\d+): (?P<message>.*)$", re.S)


def render_run_error(err: LuaRunError) -> str:
    """A Lua run-time error as `nupp run` shows it: the diagnostic at its line, its
    caret under the construct that failed (runtime/error_position.py), plus the
    program's frames of the traceback."""
    match = _LUA_POSITION.match(err.message)
    if match is None or not Path(match["path"]).is_file():
        text = UNPOSITIONED + err.message
    else:
        from nupp.runtime.error_position import column_for, raising_function  # parses: only for an error
        source = Source.from_file(match["path"])
        line = int(match["line"])
        callee = raising_function(err.traceback, match["path"], line)
        col = column_for(source, line, match["message"], callee)
        text = Diagnostic(source, line, col, match["message"]).render()
    frames, listed = [], 0
    for line in err.traceback.split("\n"):
        if line == LEFT_OUT and listed:
            frames.append(FRAMES_LEFT_OUT)
        elif (m := FRAME.match(line)) is not None and m["path"] is not None and _is_program_file(m["path"]):
            frames.append(FRAME_FORMAT % (m["path"], m["line"], m["rest"]))
            listed += 1
    if listed > 1:
        text += FRAMES_HEADING + "\n".join(frames)
    return text


def _is_program_file(path: str) -> bool:
    """A file of the program's own (the runtime's Lua files are nupp's; LuaJIT
    shortens a long chunk name to '...tail', which names no file)."""
    return has_reported_positions(path) and Path(path).is_file() and LUA_DIR not in Path(path).resolve().parents

# Where a message's position names a file whose lines a diagnostic can show:
# render_run_error's patterns.  The path runs to the first ':' and ends in
# .nupp or .lua; report_rule's Lua patterns say the rest (boot.lua looks the
# path up among the tree's files, whose names the build checked with
# has_reported_positions).
_REPORTED_PATH = re.compile(r"[^\n:]+\.(?:nupp|lua)")


def has_reported_positions(path: str) -> bool:
    """Whether `nupp run` shows the source line of an error positioned in the file `path`."""
    return _REPORTED_PATH.fullmatch(path) is not None


def report_rule() -> dict:
    """What boot.lua needs besides each file's line_reports: the Lua patterns of
    a message's position (path, line, message) and of a traceback's frame
    (path, line, the rest), the words of an error without a program position,
    how a frame is listed, what heads the list and marks levels left out
    (render_run_error's), and the rules a message's keys are found by
    (error_keys.lua_rule)."""
    return {"position": "^([^\n:]+):(%d+): (.*)$", "frame": PLACED_FRAME_LUA,
            "unpositioned": UNPOSITIONED, "frame_format": FRAME_FORMAT, "frames_heading": FRAMES_HEADING,
            "left_out": LEFT_OUT, "frames_left_out": FRAMES_LEFT_OUT, "keys": lua_rule()}


# Diagnostic.render with these as the column and the message: where they go
# (a path or a source line may hold any other character, but not NUL in a
# path, which comes first, nor \1 in the header's text after the path).
_MESSAGE, _COLUMN = "\0", "\1"


class _ColumnMark(int):
    """Column 1, which Diagnostic.render's header writes as _COLUMN."""

    def __format__(self, spec: str) -> str:
        return _COLUMN


@dataclass(frozen=True)
class LineReports:
    """The diagnostic of a run-time error at each line 1..N, for any column
    and message: heads[i] .. COL .. middle .. MESSAGE .. excerpts[i], then,
    when excerpts[i] is not empty (a blank line shows none), COL - 1 blanks
    and the caret; firsts[i]: the line's first non-blank column, where the
    caret goes when the message's keys find nothing."""

    heads: list[str]
    middle: str
    excerpts: list[str]
    caret: str
    firsts: list[int]

    def render(self, line: int, col: int, message: str) -> str:
        """What Diagnostic.render shows (tests/test_build_errors.py checks it; boot.lua does this)."""
        excerpt = self.excerpts[line - 1]
        caret = " " * (col - 1) + self.caret if excerpt else ""
        return f"{self.heads[line - 1]}{col}{self.middle}{displayable(message)}{excerpt}{caret}"


def line_reports(source: Source, lines: int) -> LineReports:
    """For each line 1..`lines` of `source` (past its end: blank), the
    diagnostic of a run-time error there as parts (Diagnostic.render's, with
    the column and message left out)."""
    texts = LINE_BREAK.split(source.text)
    split = _SplitSource(source.path, source.text, tuple(texts))
    heads, middles, excerpts, carets = [], set(), [], set()
    for line in range(1, lines + 1):
        before, after = Diagnostic(split, line, _ColumnMark(1), _MESSAGE).render().split(_MESSAGE, 1)
        head, middle = before.rsplit(_COLUMN, 1)
        excerpt, caret = (after[:-1], after[-1:]) if after else ("", None)
        heads.append(head)
        middles.add(middle)
        excerpts.append(excerpt)
        carets.add(caret)
    carets.discard(None)
    assert len(middles) <= 1 and len(carets) <= 1, (middles, carets)  # Diagnostic.render's one layout
    middle, caret = min(middles, default=""), min(carets, default="")
    firsts = [first_non_blank_column(split.line_text(line)) for line in range(1, lines + 1)]
    return LineReports(heads, middle, excerpts, caret, firsts)


def line_count(text: str) -> int:
    """How many lines LuaJIT counts in `text` (a chunk's positions are at most this)."""
    return len(LINE_BREAK.split(text))


class _SplitSource(Source):
    """A Source whose lines are split once (Source.line_text splits the text at each call)."""

    def __init__(self, path: str, text: str, lines: tuple[str, ...]):
        super().__init__(path, text)
        object.__setattr__(self, "_lines", lines)

    def line_text(self, line: int) -> str:
        return self._lines[line - 1] if 1 <= line <= len(self._lines) else ""
