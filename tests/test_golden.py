"""Golden tests: every case of tests/golden/*.test through its stage (see
tests/golden.py for the format and NUPP_BLESS=1), every expected IR output in
printed form, and the runner's own machinery."""

from __future__ import annotations

import pytest

from nupp.scalar_ir.text import IRSyntaxError, parse_module, print_module

from . import golden
from .golden import GOLDEN_DIR, GoldenFormatError


def _collect(stages=None) -> list:
    params = []
    for path in sorted(GOLDEN_DIR.glob("*.test")):
        try:
            file = golden.load(path)
        except GoldenFormatError:
            params.append(pytest.param(path, None, id=path.name))  # the test reports the error
            continue
        if stages is None or file.stage in stages:
            params += [pytest.param(path, c.name, id=f"{path.stem}::{c.name}") for c in file.cases]
    return params


@pytest.mark.parametrize("path, name", _collect())
def test_golden_case(path, name):
    file = golden.load(path)
    stage = golden.STAGES.get(file.stage)
    if stage is None:
        pytest.fail(f"{path}:1: unknown stage {file.stage!r} (known: {', '.join(golden.STAGES)})")
    case = file.case(name)
    try:
        actual = golden.normalize(stage(case.input))
    except golden.StageUnavailable as err:
        golden.skip_unavailable(f"{path.name}: {err}")
    expected = golden.expected_output(case)
    if actual != expected:
        if not golden.BLESS:
            pytest.fail(f"{path}:{case.line}: case {name}: the output differs "
                        f"(NUPP_BLESS=1 accepts it)\n{golden.diff(expected, actual)}", pytrace=False)
        golden.bless(path, name, actual)
    problems = golden.CHECKS.get(file.stage, lambda i, o: [])(case.input, actual)
    assert not problems, f"{path}:{case.line}: case {name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path, name", _collect(golden.IR_OUTPUT_STAGES))
def test_expected_ir_is_in_printed_form(path, name):
    """Every expected IR output parses and prints back byte for byte."""
    file = golden.load(path)
    case = file.case(name)
    if case.expected is None and file.stage not in golden.IR_INPUT_STAGES:
        pytest.fail(f"{path}:{case.line}: case {name} needs an [out] section")
    out = golden.expected_output(case)
    if golden.is_diagnostic(out):
        return
    try:
        module = parse_module(out)
    except IRSyntaxError as err:
        pytest.fail(f"{path}:{case.line}: case {name}: [out] is not IR:\n{golden.render_ir_error(out, err)}")
    assert print_module(module) == out


# ---- the runner's machinery ---------------------------------------------------------

SAMPLE = """test roundtrip
Commentary before the first case.

[case first]
func f() -> nil {
}

[case second]
func g() -> nil {
  break
}
[out]
wrong


[case last]
func h() -> nil {
  return
}"""


def test_parse_golden():
    file = golden.parse_golden(SAMPLE)
    assert file.stage == "roundtrip"
    assert [(c.name, c.line) for c in file.cases] == [("first", 4), ("second", 8), ("last", 16)]
    first, second, last = file.cases
    assert (first.input, first.expected) == ("func f() -> nil {\n}\n", None)
    assert (second.input, second.expected) == ("func g() -> nil {\n  break\n}\n", "wrong\n")
    assert last.input == "func h() -> nil {\n  return\n}"
    assert golden.expected_output(last) == "func h() -> nil {\n  return\n}\n"


@pytest.mark.parametrize("text, words", [
    ("[case a]\n", "the first line must be 'test STAGE'"),
    ("", "the first line must be 'test STAGE'"),
    ("test fold\n[case a]\nx\n[case a]\ny\n", "two cases are named 'a'"),
    ("test fold\n[case a]\nx\n[out]\ny\n[out]\nz\n", "case 'a' has two [out] sections"),
])
def test_bad_golden_file(text, words):
    with pytest.raises(GoldenFormatError, match=words.replace("[", r"\[").replace("]", r"\]")):
        golden.parse_golden(text)


def test_bless_rewrites_only_out_sections(tmp_path):
    path = tmp_path / "sample.test"
    path.write_text(SAMPLE)
    for case in golden.parse_golden(SAMPLE).cases:
        golden.bless(path, case.name, golden.stage_roundtrip(case.input))
    blessed = path.read_text()
    assert blessed == SAMPLE.replace("[out]\nwrong\n", "[out]\nfunc g() -> nil {\n  break\n}\n")
    path.write_text(SAMPLE.replace("  return\n}", "  return %x\n}"))
    golden.bless(path, "last", "case.ir:2:10: error: undeclared variable %x\n")
    assert path.read_text().endswith("[case last]\nfunc h() -> nil {\n  return %x\n}\n"
                                     "[out]\ncase.ir:2:10: error: undeclared variable %x\n")


def test_roundtrip_stage_renders_syntax_errors():
    out = golden.stage_roundtrip("func f() -> i32 {\n  return %x\n}\n")
    assert out == ("case.ir:2:10: error: undeclared variable %x\n"
                   "    2 |   return %x\n"
                   "      |          ^")
    assert golden.is_diagnostic(out)


def test_a_missing_stage_fails():
    with pytest.raises(golden.StageUnavailable, match="nupp.scalar_ir.no_such_pass does not exist yet"):
        golden._lazy("nupp.scalar_ir.no_such_pass", "run")
    with pytest.raises(golden.StageUnavailable, match="nupp.scalar_ir.text.no_such_name is not implemented"):
        golden._lazy("nupp.scalar_ir.text", "no_such_name")
    with pytest.raises(pytest.fail.Exception):
        golden.skip_unavailable("not yet")


def test_a_broken_stage_module_is_not_a_missing_stage(monkeypatch):
    def broken_import(name):
        raise ModuleNotFoundError("No module named 'numpyy'", name="numpyy")
    monkeypatch.setattr(golden.importlib, "import_module", broken_import)
    with pytest.raises(ModuleNotFoundError):
        golden._lazy("nupp.pipeline", "compile_module")


VERIFY_IN = """func f(%s: span<S> read borrows) -> nil {     @1:1
  for %i = 1:i32 to len %s step 1 {                @2:3
    store %s[%i].x = 1.0:f32   @3:5  ; error: store-writable: read-only span
    break ; a plain comment
  }
  ; error: missing-return: falls off
}
"""
VERIFY_OUT = """func f(%s: span<S> read borrows) -> nil {                 @1:1
  for %i = 1:i32 to len %s step 1 {                       @2:3
    store %s[%i].x = 1.0:f32                              @3:5
; error: store-writable: %s is a read-only span
    break
  }
  ; error: missing-return: f falls off its end
}"""


def test_error_annotations_match():
    assert golden.check_error_annotations(VERIFY_IN, VERIFY_OUT) == []


def test_error_annotations_report_missing_and_unexpected_errors():
    out = VERIFY_OUT.replace("  ; error: missing-return: f falls off its end\n", "")
    out = out.replace("    break\n", "    break\n; error: break-outside-loop: nonsense\n")
    assert golden.check_error_annotations(VERIFY_IN, out) == [
        "line 4: unexpected error 'break-outside-loop: nonsense'",
        "line 5: expected an error 'missing-return: falls off', got none",
    ]
    assert golden.check_error_annotations(VERIFY_IN, out.replace("    break\n", "")) == [
        "the verifier's rendering does not follow the input line for line; "
        "write verify inputs in printed form (print_module)"]


def test_error_annotations_ignore_semicolons_in_strings():
    text = 'func f() -> nil {\n  assert true, "a; error: b"  ; error: x: y ; error: w\n}\n'
    out = 'func f() -> nil {\n  assert true, "a; error: b"\n  ; error: x: y z\n  ; error: w: v\n}\n'
    assert golden.check_error_annotations(text, out) == []
    assert golden.check_error_annotations(text, out.replace("x: y z", "x2: y z")) == [
        "line 2: expected an error 'x: y', got ['x2: y z', 'w: v']", "line 2: unexpected error 'x2: y z'"]
