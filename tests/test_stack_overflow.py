"""A stack overflow in a Nupp program is a diagnostic at the call that overflowed.

LuaJIT positions a stack overflow at the line of the function whose entry
overflowed, or nowhere when it had to drop that frame, and gives the error
handler a few dozen stack slots, which a deep report can run out of; which
happens depends on how the stack last grew.  Whatever happened, nupp reports
`FILE:LINE:COL: error: stack overflow` at the recursive call, with the source
line and a caret.  The programs run interpreted (jit.off(): there the
position was lost every time), with frames of many sizes (each size meets
the limit at a different slot), through a metamethod, and calling an @aot
function at every level under --aot on and off.

Not covered: recursion the JIT compiled can overflow with so little room
left that LuaJIT cannot even call the handler (6 runs of 120 here, frames of
40 sizes); the message then has no position, as under `luajit`.
"""

from __future__ import annotations

import pytest

from nupp.runtime.cli import main as cli_main
from nupp.runtime.run_errors import FRAMES_HEADING, render_run_error
from nupp.runtime.host import Host, LuaRunError


def recursion(extra_locals: int, jit: bool) -> tuple[str, int]:
    """A function recursing without end, with `extra_locals` more slots per
    frame; the program and the line of its recursive call."""
    lines = ([] if jit else ["jit.off()"]) + ["local function down(n: number): number"]
    lines += [f"    local x{k} = n + {k}" for k in range(extra_locals)]
    lines += ["    return 1 + down(n + 1)", "end", "print(down(1))"]
    return "\n".join(lines) + "\n", len(lines) - 2


def overflow(tmp_path, monkeypatch, text: str) -> str:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.nupp").write_text(text)
    with pytest.raises(LuaRunError) as raised:
        Host(search_path=[tmp_path]).run_file("deep.nupp")
    return render_run_error(raised.value)


def at_line(rendered: str, line: int, text: str, at: str) -> bool:
    """The diagnostic's head at `line` (its column where `at` starts in the line, `a|b`: where
    one of them does, as the overflow took one call or the other), the line, the caret."""
    cols = [text.index(part) + 1 for part in at.split("|")]
    head, source, caret = rendered.splitlines()[:3]
    return any(head == f"deep.nupp:{line}:{col}: error: stack overflow" and source == f"{line:5} | {text}"
               and caret == "      | " + " " * (col - 1) + "^" for col in cols)


@pytest.mark.parametrize("extra_locals", range(0, 40, 3))
def test_interpreted_recursion(tmp_path, monkeypatch, extra_locals):
    text, line = recursion(extra_locals, jit=False)
    assert at_line(overflow(tmp_path, monkeypatch, text), line, text.splitlines()[line - 1], "down(")


METAMETHOD = ("local t = setmetatable({}, {})\n"
              "getmetatable(t).__index = function(self, k)\n"
              "    return self[k + 1]\n"
              "end\n"
              "print(t[1])\n")


def test_through_a_metamethod(tmp_path, monkeypatch):
    assert at_line(overflow(tmp_path, monkeypatch, METAMETHOD), 3, "    return self[k + 1]", "self[")


def test_the_report_is_whole_every_time(tmp_path, monkeypatch):
    """The handler's room after an overflow varies from run to run and with the
    frame size: the report (its traceback, and the callee the caret needs) is
    whole in every run.  Made in the handler's nested calls, it was lost in
    about one metamethod overflow in eight and half the interpreted ones."""
    reports = {overflow(tmp_path, monkeypatch, METAMETHOD) for _ in range(30)}
    assert len(reports) == 1 and FRAMES_HEADING in reports.pop()
    for extra_locals in range(40):
        text, line = recursion(extra_locals, jit=False)
        assert FRAMES_HEADING in overflow(tmp_path, monkeypatch, text), extra_locals


AOT = """jit.off()
@aot
local function step(n: int32): int32
    return n + 1
end

local function down(n: number): number
    return 1 + down(step(n))
end

print(down(1))
"""


@pytest.mark.parametrize("aot", ["on", "off"])
def test_recursion_through_an_aot_call(tmp_path, monkeypatch, capsys, aot):
    """The runtime's frames (the boundary of the @aot function) are not the program's call."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.nupp").write_text(AOT)
    assert cli_main(["run", "--aot", aot, "deep.nupp"]) == 1
    assert at_line(capsys.readouterr().err, 8, "    return 1 + down(step(n))", "down(|step(")
