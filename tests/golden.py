"""Golden tests: text in, text out (Cranelift filetests, mypyc `[case]/[out]`).

A file `tests/golden/NAME.test` names its stage on its first line and holds
many small cases:

    test roundtrip

    [case empty_function]
    func f() -> nil {
    }

    [case undeclared]
    func f() -> i32 {
      return %x
    }
    [out]
    case.ir:2:10: error: undeclared variable %x
    ...

A case's input runs through the stage (`STAGES[stage](input) -> output`)
and must print its `[out]` section; a case without `[out]` expects its input
back unchanged.  Trailing blank lines of a section are not part of it; text
between the header and the first case is free commentary.
`NUPP_BLESS=1 pytest tests/test_golden.py` rewrites each `[out]` with the
actual output and leaves every other byte of the file as it was: review the
diff before committing it.

Stages: `roundtrip` (IR text, parsed then printed), `lower` (Nupp source to
IR), `verify` (IR to the verifier's inline rendering), `fold` (IR to folded
IR), `emit_c` (IR to C), `emit_lane_c` (IR to lane C at gang 4), `emit_lane_c_32` (at gang 32),
`emit_shaped_lane_c` (lane IR whose gangs carry their own size and vector width, to lane C),
`lanes` (IR to the lane analysis's report).  Every stage exists: one whose function cannot be found (renamed,
moved) raises `StageUnavailable`, and its cases fail, locally too (a skip
once hid a renamed stage until CI ran).  A user
error (NuppError, IRSyntaxError) is the stage's output, rendered like a
diagnostic `case.nupp:L:C: error: ...` / `case.ir:L:C: error: ...`.

`verify` cases also mark each expected error on the offending IR line,
Cranelift style:

    store %in[%i].x = 1.0:f32      @4:5  ; error: store-writable: read-only span

`check_error_annotations` then requires each annotation to be matched by an
error the verifier reports under that line (of that RULE, its message
containing the words) and every reported error to be annotated, so a
blessed `[out]` can never quietly accept a wrong or missing error.  Verify
inputs are written in printed form so that their lines and the rendering's
correspond one to one.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pytest

from nupp.errors import Diagnostic, Source
from nupp.scalar_ir.text import IRSyntaxError, parse_module, print_module


GOLDEN_DIR = Path(__file__).with_name("golden")
BLESS = os.environ.get("NUPP_BLESS", "") not in ("", "0")


# ---- the file format ---------------------------------------------------------

class GoldenFormatError(Exception):
    """A .test file that does not follow the format."""


@dataclass(frozen=True)
class Case:
    name: str
    line: int                         # 1-based line of `[case NAME]`
    input: str
    expected: Optional[str]           # None: no [out], the input is expected back
    input_end: int                    # index of the line after the input's last non-blank line
    out_span: Optional[tuple[int, int]]  # [start, end) line indices of the [out] text


@dataclass(frozen=True)
class GoldenFile:
    path: Path
    stage: str
    cases: tuple[Case, ...]

    def case(self, name: str) -> Case:
        return next(c for c in self.cases if c.name == name)


_HEADER = re.compile(r"test\s+(\w+)\s*")
_CASE = re.compile(r"\[case\s+([^\]\s]+)\]\s*")
_OUT = "[out]"


def load(path: Path) -> GoldenFile:
    return parse_golden(path.read_text(encoding="utf-8"), path)


def parse_golden(text: str, path: Path = Path("<golden>")) -> GoldenFile:
    lines = text.splitlines(keepends=True)
    header = _HEADER.fullmatch(lines[0].rstrip("\r\n")) if lines else None
    if header is None:
        raise GoldenFormatError(f"{path}:1: the first line must be 'test STAGE'")
    starts = [k for k, line in enumerate(lines) if _CASE.fullmatch(line.rstrip("\r\n"))]
    cases: list[Case] = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        cases.append(_case(path, lines, start, end))
    names = [c.name for c in cases]
    for name in names:
        if names.count(name) > 1:
            raise GoldenFormatError(f"{path}: two cases are named {name!r}")
    return GoldenFile(path, header.group(1), tuple(cases))


def _case(path: Path, lines: list[str], start: int, end: int) -> Case:
    name = _CASE.fullmatch(lines[start].rstrip("\r\n")).group(1)
    outs = [k for k in range(start + 1, end) if lines[k].rstrip("\r\n") == _OUT]
    if len(outs) > 1:
        raise GoldenFormatError(f"{path}:{outs[1] + 1}: case {name!r} has two [out] sections")
    input_end = _trim_end(lines, start + 1, outs[0] if outs else end)
    input_text = "".join(lines[start + 1:input_end])
    if not outs:
        return Case(name, start + 1, input_text, None, input_end, None)
    out_end = _trim_end(lines, outs[0] + 1, end)
    return Case(name, start + 1, input_text, "".join(lines[outs[0] + 1:out_end]), input_end,
                (outs[0] + 1, out_end))


def _trim_end(lines: list[str], start: int, end: int) -> int:
    while end > start and not lines[end - 1].strip():
        end -= 1
    return end


def normalize(text: str) -> str:
    """A section's text as compared: trailing blank lines dropped, one final newline."""
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return "".join(line + "\n" for line in lines)


def expected_output(case: Case) -> str:
    return normalize(case.input if case.expected is None else case.expected)


def bless(path: Path, name: str, actual: str) -> None:
    """Write `actual` as case `name`'s [out], keeping every other byte of the file."""
    text = path.read_text(encoding="utf-8")
    case = parse_golden(text, path).case(name)
    lines = text.splitlines(keepends=True)
    new = normalize(actual).splitlines(keepends=True)
    if case.out_span is not None:
        start, end = case.out_span
        lines[start:end] = new
    elif normalize(actual) != normalize(case.input):
        at = case.input_end
        if at > 0 and not lines[at - 1].endswith("\n"):
            lines[at - 1] += "\n"
        lines[at:at] = ["[out]\n"] + new
    path.write_text("".join(lines), encoding="utf-8")


def diff(expected: str, actual: str) -> str:
    return "".join(difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                        "expected", "actual"))


# ---- stages ------------------------------------------------------------------------

class StageUnavailable(Exception):
    """The stage's implementation is not importable yet."""


def _lazy(module_name: str, attr: str):
    """`module_name.attr`, or StageUnavailable when that module or name does not exist
    (a module that exists but fails to import is a real error and propagates)."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and (module_name == err.name or module_name.startswith(err.name + ".")):
            raise StageUnavailable(f"{module_name} does not exist yet") from None
        raise
    try:
        return getattr(module, attr)
    except AttributeError:
        raise StageUnavailable(f"{module_name}.{attr} is not implemented yet") from None


def skip_unavailable(reason: str) -> None:
    """A missing stage is a failure: every stage exists, so the function was renamed or moved."""
    pytest.fail(f"golden stage not available: {reason}")


def render_ir_error(text: str, err: IRSyntaxError) -> str:
    return Diagnostic(Source("case.ir", text), err.line, err.col, err.message).render()


def _parse(text: str):
    """The case's IR, or the rendered syntax error as the stage's output."""
    try:
        return parse_module(text), None
    except IRSyntaxError as err:
        return None, render_ir_error(text, err)


def stage_roundtrip(text: str) -> str:
    module, error = _parse(text)
    if error is not None:
        return error
    printed = print_module(module)
    again = parse_module(printed)
    assert again == module, "the printed IR parses back to a different module"
    assert print_module(again) == printed, "printing the re-parsed IR gives different text"
    return printed


def stage_lower(text: str) -> str:
    """Nupp source in, its verified scalar IR as lowered (before fold) out, or its diagnostics."""
    compile_module = _lazy("nupp.pipeline", "compile_module")
    from nupp.errors import NuppError
    try:
        return print_module(compile_module(Source("case.nupp", text), after="lower"))
    except NuppError as err:
        return str(err)


def stage_verify(text: str) -> str:
    verify_module = _lazy("nupp.verifier", "verify_module")
    render_inline = _lazy("nupp.verifier", "render_inline")
    module, error = _parse(text)
    return error if error is not None else render_inline(module, verify_module(module, lane_ir=True))


def stage_fold(text: str) -> str:
    fold_module = _lazy("nupp.scalar_ir.fold", "fold_module")
    module, error = _parse(text)
    return error if error is not None else print_module(fold_module(module))


def stage_emit_c(text: str) -> str:
    """IR in, the scalar C translation unit out (error texts name `case.nupp`)."""
    emit_module = _lazy("nupp.emit_c.scalar", "emit_module")
    module, error = _parse(text)
    return error if error is not None else emit_module(module, "case.nupp").source


def stage_emit_lane_c(text: str, gang: int = 4) -> str:
    """IR in, the lane C translation unit at gang 4 out (emit_c/lane.py)."""
    emit_lane_module = _lazy("nupp.emit_c.lane", "emit_lane_module")
    lanes_at = _lazy("nupp.pipeline", "lanes_at")
    module, error = _parse(text)
    return error if error is not None else emit_lane_module(lanes_at(module, gang), "case.nupp").source


def stage_emit_lane_c_32(text: str) -> str:
    """IR in, the lane C at gang 32 out: a gang of several vectors at each register width."""
    return stage_emit_lane_c(text, 32)


def stage_emit_shaped_lane_c(text: str) -> str:
    """Lane IR in, each Gang sized and perhaps capped in the text itself (`gang 32
    vector 256 %i = ...`, the cost model's kind of choice: targets/gang_choice.py),
    verified as lane IR, its lane C out."""
    emit_lane_module = _lazy("nupp.emit_c.lane", "emit_lane_module")
    verify = _lazy("nupp.verifier", "check")
    module, error = _parse(text)
    if error is not None:
        return error
    verify(module, "golden", lane_ir=True)
    return emit_lane_module(module, "case.nupp").source


def stage_lanes(text: str) -> str:
    """IR in, the lane rewrite out: its decision for each span loop (the `nupp
    emit --report` lines), then the lane IR at gang 8 (lane_rewrite/rewrite.py)."""
    render_report = _lazy("nupp.lane_rewrite.report", "render_report")
    lanes_at = _lazy("nupp.pipeline", "lanes_at")
    module, error = _parse(text)
    if error is not None:
        return error
    report = render_report(module, "case.nupp") or "(no loops over spans)\n"
    if _lazy("nupp.verifier", "verify_module")(module):
        return report + "\n(the input IR does not verify: no rewrite)\n"
    lanes = lanes_at(module, 8)
    return report if lanes == module else report + "\n" + print_module(lanes)


STAGES: dict[str, Callable[[str], str]] = {
    "roundtrip": stage_roundtrip,
    "lower": stage_lower,
    "verify": stage_verify,
    "fold": stage_fold,
    "emit_c": stage_emit_c,
    "emit_lane_c": stage_emit_lane_c,
    "emit_lane_c_32": stage_emit_lane_c_32,
    "emit_shaped_lane_c": stage_emit_shaped_lane_c,
    "lanes": stage_lanes,
}
# Stages whose output (when it is not a diagnostic) is IR in printed form.
IR_OUTPUT_STAGES = frozenset({"roundtrip", "lower", "fold"})
# Stages whose input is IR, so that a case without [out] expects IR back.
IR_INPUT_STAGES = frozenset({"roundtrip", "verify", "fold"})

_DIAGNOSTIC = re.compile(r"\S+:\d+:\d+: error: ")


def is_diagnostic(output: str) -> bool:
    return _DIAGNOSTIC.match(output) is not None


# ---- verify: expected errors marked on their lines --------------------------------------

_ERROR = re.compile(r";\s*error:\s*")


def check_error_annotations(input_text: str, output: str) -> list[str]:
    """Problems with the `; error: RULE: words` annotations of a verify case: an
    annotation no reported error under that line contains, or a reported error no
    annotation names.  An annotation on a line of its own belongs to the code
    line above it; so does an error line of the output."""
    if is_diagnostic(output):
        return []
    code_in, wanted = _annotated_lines(input_text.splitlines(), _input_line)
    code_out, found = _annotated_lines(output.splitlines(), _output_line)
    if [text for _, text in code_in] != [text for _, text in code_out]:
        return ["the verifier's rendering does not follow the input line for line; "
                "write verify inputs in printed form (print_module)"]
    problems = []
    for k in sorted(set(wanted) | set(found)):
        where = f"line {code_in[k][0]}" if k >= 0 else "before the first line"
        errors = found.get(k, [])
        for note in wanted.get(k, []):
            if not any(_matches(note, e) for e in errors):
                problems.append(f"{where}: expected an error {note!r}, got {errors or 'none'}")
        for e in errors:
            if not any(_matches(note, e) for note in wanted.get(k, [])):
                problems.append(f"{where}: unexpected error {e!r}")
    return problems


def _matches(note: str, error: str) -> bool:
    """`RULE: words` names the error's rule exactly, and its message contains the words."""
    rule, _, words = note.partition(":")
    error_rule, _, message = error.partition(":")
    return rule.strip() == error_rule.strip() and words.strip() in message


def _annotated_lines(lines: list[str], split) -> tuple[list[tuple[int, str]], dict[int, list[str]]]:
    """The code lines (1-based number, whitespace-normalized text) and, by index
    into them, the error texts attached to each (-1: before any code line)."""
    code: list[tuple[int, str]] = []
    notes: dict[int, list[str]] = {}
    for number, line in enumerate(lines, 1):
        text, errors = split(line)
        if text:
            code.append((number, text))
        if errors:
            notes.setdefault(len(code) - 1, []).extend(errors)
    return code, notes


def _input_line(line: str) -> tuple[str, list[str]]:
    code, comment = _split_comment(line)
    errors = [" ".join(part.split()).rstrip(" ;") for part in _ERROR.split(comment)[1:]]
    return " ".join(code.split()), errors


def _output_line(line: str) -> tuple[str, list[str]]:
    m = _ERROR.match(line.strip())
    if m:
        return "", [" ".join(line.strip()[m.end():].split())]
    return " ".join(_split_comment(line)[0].split()), []


# Checks beyond comparing the output, by stage: (input, output) -> problems.
CHECKS: dict[str, Callable[[str, str], list[str]]] = {
    "verify": check_error_annotations,
}


def _split_comment(line: str) -> tuple[str, str]:
    """(code, comment) at the first `;` outside a string literal."""
    in_string = escaped = False
    for k, ch in enumerate(line):
        if in_string:
            in_string, escaped = (not (ch == '"' and not escaped)), (ch == "\\" and not escaped)
        elif ch == '"':
            in_string = True
        elif ch == ";":
            return line[:k], line[k:]
    return line, ""
