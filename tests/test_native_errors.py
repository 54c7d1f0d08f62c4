"""Bad input at run time: the same error text with --aot on and --aot off.

Each case is a Nupp script that defines @aot functions and calls one of them
wrongly.  It runs in a `Host` in mode "interp" (--aot off: the functions as
ordinary Nupp) and in mode "scalar" (--aot on: compiled C behind the same
host boundary); the LuaRunError message must be the same text in both, and
the text LANGUAGE.md sections 3, 6 and 7 prescribe:

  * an int32 parameter given 3.5                 bad argument #1 to 'f' (int32 expected, got 3.5)
  * a read-only span passed as a WriteSpan       bad argument #1 to 'k' (span.WriteSpan<S> expected, ...)
  * a span of the wrong struct                   bad argument #2 to 'k' (span.Span<S> expected, ...)
  * an exclusive span overlapping a borrows one  bad argument #1 to 'k' (exclusive span overlaps argument #2),
                                                 raised before anything is written: the output is unchanged
  * integer division by zero                     <file>:<line of the op>: integer division by zero
  * a failed assert                              <file>:<line of the assert>: length mismatch

Where the failing call writes spans, the script goes on (pcall) to print
them, and that output must agree too: nothing written for refused
arguments, the earlier iterations' stores for a division by zero in the loop.
The same cases go through the command line (`nupp run --aot on|off`, whose
rendered diagnostics must match) and through the Python API, where each
raises `NuppRuntimeError` with the same text in both modes.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from nupp.errors import Source
from nupp.runtime.api import NuppRuntimeError, load
from nupp.runtime.cli import main as cli_main
from nupp.runtime.host import Host, LuaRunError

from .conftest import require_tool

MODES = ("interp", "scalar")

MODULE = """\
local span = nupp.mem.span

local struct S
    v: int32
end

local struct Other
    v: int32
end

@aot
local function f(a: int32): int32
    return a + 1
end

@aot
local function k(exclusive out: span.WriteSpan<S>, borrows inp: span.Span<S>, d: int32): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        out[i].v = inp[i].v // d + i
    end
end

@aot
local function div(a: int32, b: int32): int32
    return a % b
end

@aot
local function wide(exclusive out: span.WriteSpan<S>, borrows inp: span.Span<S>, d: int64): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        local q: int64 = inp[i].v
        out[i].v = q // (d - i)
    end
end
"""
EXPORTS = "return {S = S, Other = Other, f = f, k = k, div = div, wide = wide}\n"


def line_of(fragment: str) -> int:
    """The 1-based line of MODULE holding `fragment`."""
    for number, line in enumerate(MODULE.splitlines(), 1):
        if fragment in line:
            return number
    raise ValueError(fragment)


SETUP = """
local function filled(T, n)
    local s = span.new(T, n)
    for i = 1, n do s[i].v = 10 * i end
    return s
end
local function show(s)
    local parts = {}
    for i = 1, #s do parts[i] = tostring(s[i].v) end
    return table.concat(parts, ",")
end
local s = filled(S, 6)
local t = filled(S, 6)
"""

# name -> (the failing statement, the message after "FILE:LINE: " -- None when the message
# itself is a position (errors raised inside the function), the span whose contents are printed)
CASES = {
    "int32 given 3.5": ("f(3.5)", "bad argument #1 to 'f' (int32 expected, got 3.5)"),
    "int32 out of range": ("f(2147483648)", "bad argument #1 to 'f' (int32 expected, got 2147483648)"),
    "read-only span as WriteSpan": ("k(span.readonly(s), t, 1)",
                                    "bad argument #1 to 'k' (span.WriteSpan<S> expected, got read-only span.Span<S>)"),
    "span of the wrong struct": ("k(s, filled(Other, 6), 1)",
                                 "bad argument #2 to 'k' (span.Span<S> expected, got span.WriteSpan<Other>)"),
    "exclusive overlaps borrows": ("k(s:sub(1, 3), span.readonly(s):sub(3, 5), 1)",
                                   "bad argument #1 to 'k' (exclusive span overlaps argument #2)"),
    "exclusive is the borrows": ("k(s, s, 1)", "bad argument #1 to 'k' (exclusive span overlaps argument #2)"),
    "integer division by zero": ("div(7, 0)", None),
    "division by zero in the loop": ("k(s, t, 0)", None),
    "int64 division by zero on the 4th row": ("wide(s, t, 4LL)", None),
    "failed assert": ("k(s, filled(S, 5), 1)", None),
}
EXPECTED_AT = {  # the errors raised inside a function: its line and message
    "integer division by zero": (line_of("return a % b"), "integer division by zero"),
    "division by zero in the loop": (line_of("inp[i].v // d + i"), "integer division by zero"),
    "int64 division by zero on the 4th row": (line_of("q // (d - i)"), "integer division by zero"),
    "failed assert": (line_of('assert(#out == #inp'), "length mismatch"),
}
# what the span `s` holds afterwards, when the call fails (filled: 10,20,...)
UNCHANGED = "10,20,30,40,50,60"
S_AFTER = {
    "read-only span as WriteSpan": UNCHANGED,
    "span of the wrong struct": UNCHANGED,
    "exclusive overlaps borrows": UNCHANGED,
    "exclusive is the borrows": UNCHANGED,
    "division by zero in the loop": UNCHANGED,          # the first row already divides by zero
    "int64 division by zero on the 4th row": "3,10,30,40,50,60",  # rows 1..3 stored: 10//3, 20//2, 30//1
    "failed assert": UNCHANGED,
}


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "nupp-cache"))


def script(statement: str) -> str:
    return MODULE + SETUP + f"{statement}\n"


def probe_script(statement: str) -> str:
    """The failing statement under pcall, then the message and `s` printed."""
    return MODULE + SETUP + (f"local ok, err = pcall(function() {statement} end)\n"
                             "print(ok, err)\nprint(show(s))\n")


def run_script(text: str, mode: str, path: str = "errs.nupp") -> str:
    """The LuaRunError message the script ends with."""
    host = Host(mode=mode)
    with pytest.raises(LuaRunError) as err:
        host.run_source(Source(path, text))
    return err.value.message


def run_probe(text: str, mode: str, path: str = "errs.nupp") -> list[str]:
    host = Host(mode=mode)
    out = host.capture_output()
    host.run_source(Source(path, text))
    return out().splitlines()


def expected_message(name: str, path: str = "errs.nupp") -> str:
    statement, message = CASES[name]
    if message is not None:
        return f"{path}:{len(script(statement).splitlines())}: {message}"
    line, text = EXPECTED_AT[name]
    return f"{path}:{line}: {text}"


@pytest.mark.parametrize("name", CASES)
def test_the_same_error_text_in_both_modes(name):
    require_tool("gcc")
    statement, _ = CASES[name]
    messages = {mode: run_script(script(statement), mode) for mode in MODES}
    assert messages["interp"] == messages["scalar"], messages
    assert messages["interp"] == expected_message(name)


@pytest.mark.parametrize("name", CASES)
def test_spans_after_the_error_agree(name):
    """pcall the failing call: the same message, and `s` as the spec says it is left."""
    require_tool("gcc")
    statement, _ = CASES[name]
    lines = {mode: run_probe(probe_script(statement), mode) for mode in MODES}
    assert lines["interp"] == lines["scalar"], lines
    ok, message = lines["interp"][0].split("\t", 1)
    assert ok == "false"
    # pcall(function() ... end) moves the caller-level position onto the probe line
    assert re.sub(r"^errs\.nupp:\d+: ", "", message) == re.sub(r"^errs\.nupp:\d+: ", "", expected_message(name))
    if name in S_AFTER:
        assert lines["interp"][1] == S_AFTER[name]


def test_overlap_refusal_writes_nothing_even_where_it_could():
    """The refusal comes before any store, also for the part of `s` that the
    borrows span does not cover."""
    require_tool("gcc")
    text = MODULE + SETUP + ("local ok = pcall(k, s:sub(2, 4), span.readonly(s):sub(4, 6), 1)\n"
                             "print(ok, show(s))\n"
                             "k(s:sub(1, 3), span.readonly(s):sub(4, 6), 1)\n"  # disjoint: allowed
                             "print(show(s))\n")
    outputs = {mode: run_probe(text, mode) for mode in MODES}
    assert outputs["interp"] == outputs["scalar"] == ["false\t" + UNCHANGED, "41,52,63,40,50,60"]


def test_command_line_aot_on_and_off_print_the_same(tmp_path, capsys, monkeypatch):
    """`nupp run --aot off|on`: exit 1 and the same rendered diagnostic for each case."""
    require_tool("gcc")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "errs.nupp"
    for name, (statement, _) in CASES.items():
        path.write_text(script(statement))
        rendered = []
        for aot in ("off", "on"):
            assert cli_main(["run", "--aot", aot, "errs.nupp"]) == 1
            rendered.append(capsys.readouterr().err)
        assert expected_message(name).split(": ", 1)[1] in rendered[0], rendered[0]
        # The diagnostic (position, message, quoted line) is the same.  The "from:" list of
        # Nupp frames that may follow is not compared: compiled C is one native call, listed
        # as "in native code of 'f'" before the script's frames, where the interpreter's
        # traceback lists the line inside the @aot function (tests/test_cli.py pins both).
        diagnostics = [text.split("\nfrom:\n")[0].rstrip("\n") for text in rendered]
        assert diagnostics[0] == diagnostics[1], f"{name}:\n--aot off:\n{rendered[0]}\n--aot on:\n{rendered[1]}"


# ---- the Python API -----------------------------------------------------------------------

@pytest.fixture
def modules(tmp_path):
    require_tool("gcc")
    path = tmp_path / "errs.nupp"
    path.write_text(MODULE + EXPORTS)
    return {mode: load(path, mode=mode) for mode in MODES}


def api_error(module, fn: str, *args) -> str:
    with pytest.raises(NuppRuntimeError) as err:
        getattr(module, fn)(*args)
    return str(err.value)


def _filled(module, n: int) -> np.ndarray:
    a = np.zeros(n, dtype=module.dtype("S"))
    a["v"] = 10 * np.arange(1, n + 1)
    return a


API_CASES = {
    "int32 given 3.5": (lambda m: ("f", 3.5), "bad argument #1 to 'f' (int32 expected, got 3.5)"),
    "read-only array as WriteSpan": (
        lambda m: ("k", _readonly(_filled(m, 4)), _filled(m, 4), 1),
        "bad argument #1 to 'k' (span.WriteSpan<S> expected, got read-only span.Span<S>)"),
    "array of the wrong dtype": (
        lambda m: ("k", _filled(m, 4), np.zeros(4, dtype=[("v", np.float64)]), 1),
        "bad argument #2 to 'k' (an array of the dtype of S expected, got an array of dtype [('v', '<f8')])"),
    "integer division by zero": (lambda m: ("div", 7, 0), f":{line_of('return a % b')}: integer division by zero"),
    "failed assert": (lambda m: ("k", _filled(m, 4), _filled(m, 3), 1),
                      f":{line_of('assert(#out == #inp')}: length mismatch"),
}


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("name", API_CASES)
def test_python_api_raises_the_same_text(modules, name):
    make, expected = API_CASES[name]
    texts = {}
    for mode, module in modules.items():
        fn, *args = make(module)
        texts[mode] = api_error(module, fn, *args)
    assert texts["interp"] == texts["scalar"], texts
    assert texts["interp"].endswith(expected), texts["interp"]


def test_python_api_overlap_leaves_the_array_unchanged(modules):
    texts, contents = {}, {}
    for mode, module in modules.items():
        a = _filled(module, 6)
        texts[mode] = api_error(module, "k", a[0:3], a[2:5], 1)
        contents[mode] = a.copy()
        module.k(a[0:3], a[3:6], 1)  # disjoint views of one array: allowed
        assert list(a["v"]) == [41, 52, 63, 40, 50, 60]
    assert texts["interp"] == texts["scalar"]
    assert texts["interp"].endswith("bad argument #1 to 'k' (exclusive span overlaps argument #2)")
    for mode in MODES:
        assert list(contents[mode]["v"]) == [10, 20, 30, 40, 50, 60]


def test_python_api_division_by_zero_keeps_earlier_stores(modules):
    outs = {}
    for mode, module in modules.items():
        out, inp = _filled(module, 6), _filled(module, 6)
        text = api_error(module, "wide", out, inp, 4)
        assert text.endswith(f":{line_of('q // (d - i)')}: integer division by zero")
        outs[mode] = list(out["v"])
    assert outs["interp"] == outs["scalar"] == [3, 10, 30, 40, 50, 60]


def test_python_api_refuses_an_array_of_the_wrong_dtype_on_every_call(tmp_path, monkeypatch):
    """The span checks are worked out once per function; every call still checks."""
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path))
    kernels = load(str(Path(__file__).resolve().parents[1] / "bench" / "kernel-subset-spike" / "mixedwidth.nupp"))
    good = np.zeros(4, dtype=kernels.dtype("Sample"))
    for _ in range(2):
        with pytest.raises(NuppRuntimeError, match=r"bad argument #2 to 'mix' \(an array of the dtype of Sample "
                                                   r"expected, got an array of dtype float64\)"):
            kernels.mix(good, np.zeros(4))
        # a strided view has the right dtype: its layout is what is wrong
        stride = 2 * good.itemsize
        with pytest.raises(NuppRuntimeError, match=rf"bad argument #2 to 'mix' \(an array with contiguous elements "
                                                   rf"expected, got a strided one \(stride {stride} bytes"):
            kernels.mix(good, good.copy()[::2])
        with pytest.raises(NuppRuntimeError, match=r"\(a 1-d array expected, got a 2-d array of shape \(2, 2\)\)"):
            kernels.mix(good, np.zeros((2, 2), dtype=good.dtype))
        assert kernels.mix(good, good.copy()) is None
