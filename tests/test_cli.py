"""The `nupp` command as a user runs it: exit codes, output, and no tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import nupp

from .conftest import require_tool

ROOT = Path(__file__).resolve().parent.parent


def nupp_cmd(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "nupp", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_version_and_help():
    assert nupp_cmd("--version").stdout.strip() == f"nupp {nupp.__version__}"
    for sub in ([], ["run"], ["check"], ["emit"], ["bench"]):
        proc = nupp_cmd(*sub, "--help")
        assert proc.returncode == 0 and "usage: nupp" in proc.stdout


def test_the_usage_summary_names_every_option_of_every_command():
    """runtime/cli.py's docstring: each `nupp CMD` entry (its lines and those indented under them) names
    every option the command's parser takes."""
    import argparse
    import re

    from nupp.runtime import cli

    summary: dict[str, str] = {}
    command = None
    for line in cli.__doc__.split("\n\n")[1].splitlines():
        entry = re.match(r"    nupp (\w+)", line)
        command = entry[1] if entry else command
        summary[command] = summary.get(command, "") + line + "\n"
    commands = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(summary) == set(commands)
    for name, parser in commands.items():
        options = {o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
        missing = {o for o in options if not re.search(re.escape(o) + r"\b", summary[name])}
        assert not missing, f"the usage summary of nupp {name} lacks {sorted(missing)}"


def test_no_command_prints_help_and_fails():
    proc = nupp_cmd()
    assert proc.returncode == 2 and "COMMAND" in proc.stdout


def test_run_prints_and_passes_arguments(tmp_path):
    (tmp_path / "lib.nupp").write_text("return {twice = function(x: number): number return 2 * x end}\n")
    (tmp_path / "main.nupp").write_text('local lib = require("lib")\nprint(lib.twice(21), ...)\n')
    proc = nupp_cmd("run", tmp_path / "main.nupp", "x", "y", cwd=tmp_path.parent)
    assert (proc.returncode, proc.stdout) == (0, "42\tx\ty\n")


def test_run_time_error_is_a_diagnostic_at_the_nupp_line(tmp_path):
    (tmp_path / "main.nupp").write_text("local t = nil\n\nprint(t.x)\n")
    proc = nupp_cmd("run", "main.nupp", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("main.nupp:3:7: error: attempt to index local 't' (a nil value)")
    assert "| print(t.x)" in proc.stderr


FAILING_AOT = """@aot
local function inner(a: int32): int32
    assert(a > 0, "a must be positive")
    return a
end

@aot
local function outer(a: int32): int32
    local b = inner(a)
    return b // 0
end

local function run(x)
    local r = outer(x)
    return r
end

print(run(tonumber((...))))
"""


@pytest.mark.parametrize("argument, frames", [
    # the assert in inner, called from outer: compiled, inner is part of outer's native code
    ("-1", {"interp": ["main.nupp:3: in function 'inner'", "main.nupp:9: in function 'outer'"],
            "scalar": ["main.nupp:3: in native code of 'outer'"]}),
    # outer's `return b // 0` tail-calls the interpreter's division, which takes its frame
    ("1", {"interp": ["main.nupp:10: in function 'outer'"], "scalar": ["main.nupp:10: in native code of 'outer'"]}),
    # refused by the boundary before outer runs: outer has no frame
    ("1.5", {"interp": [], "scalar": []}),
])
def test_run_time_error_in_an_aot_function_lists_the_frames_the_program_has(tmp_path, argument, frames):
    """The frames of an @aot function are named as the program names it, in ordinary
    and in native execution, followed by the host script's calling frames."""
    require_tool("gcc")
    (tmp_path / "main.nupp").write_text(FAILING_AOT)
    host_frames = ["main.nupp:14: in function 'run'", "main.nupp:18: in main chunk"]
    for mode in ("interp", "scalar"):
        proc = nupp_cmd("run", "--mode", mode, "main.nupp", argument, cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        listed = proc.stderr.split("\nfrom:\n")[1].splitlines()
        assert listed == ["  " + frame for frame in frames[mode] + host_frames], (mode, proc.stderr)


def test_error_in_a_required_module_names_that_module(tmp_path):
    (tmp_path / "lib.nupp").write_text("local x = = 1\n")
    (tmp_path / "main.nupp").write_text('require("lib")\n')
    proc = nupp_cmd("run", "main.nupp", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.startswith("lib.nupp:1:11: error:")


def test_aot_off_cannot_be_combined_with_a_native_mode(tmp_path):
    (tmp_path / "main.nupp").write_text("print(1)\n")
    proc = nupp_cmd("run", tmp_path / "main.nupp", "--aot", "off", "--mode", "scalar")
    assert proc.returncode == 2 and "cannot be combined" in proc.stderr and proc.stdout == ""


def test_check_clean_and_dirty(tmp_path):
    good, bad = tmp_path / "good.nupp", tmp_path / "bad.nupp"
    good.write_text((ROOT / "bench" / "kernel-subset-spike" / "mandelbrot.nupp").read_text())
    bad.write_text("@inline\nlocal function f() end\nlocal struct S\n  x: text\nend\n")
    assert nupp_cmd("check", good).returncode == 0
    proc = nupp_cmd("check", "bad.nupp", cwd=tmp_path)
    assert proc.returncode == 1
    assert "bad.nupp:1:1: error: unknown attribute '@inline'" in proc.stderr
    assert "bad.nupp:4:6: error: unknown field type 'text'" in proc.stderr


def test_missing_file_is_a_clear_error(tmp_path):
    proc = nupp_cmd("run", tmp_path / "nope.nupp")
    assert proc.returncode == 1 and "cannot read" in proc.stderr and "nope.nupp" in proc.stderr
    proc = nupp_cmd("check", tmp_path)
    assert proc.returncode == 1 and "cannot read" in proc.stderr


def test_emit_lua_keeps_lines(tmp_path):
    src = tmp_path / "m.nupp"
    src.write_text("local x: int32 = 5 & 3\n\nlocal y = x // 2\nprint(y)\n")
    proc = nupp_cmd("emit", "--lua", src)
    assert proc.returncode == 0
    lines = proc.stdout.split("\n")
    assert "band(5, 3)" in lines[0] and "__nupp_floor(x / 2)" in lines[2] and "print(y)" in lines[3]


@pytest.mark.slow
def test_showcase_runs():
    proc = nupp_cmd("run", ROOT / "bench" / "kernel-subset-spike" / "mandelbrot_main.nupp", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_run_options_may_follow_the_file_and_script_args_follow_them(tmp_path):
    (tmp_path / "main.nupp").write_text("print(...)\n")
    assert nupp_cmd("run", "main.nupp", "--aot", "off", "a", cwd=tmp_path).stdout == "a\n"
    assert nupp_cmd("run", "main.nupp", "--aot=off", "--", "--aot", cwd=tmp_path).stdout == "--aot\n"
    bad = nupp_cmd("run", "main.nupp", "--aot", "maybe", cwd=tmp_path)
    assert bad.returncode == 2 and "on or off" in bad.stderr


def test_check_reports_subset_refusals(tmp_path):
    (tmp_path / "k.nupp").write_text('@aot\nlocal function f(a: int32, b: uint32): int32\n    return a + b\nend\n')
    proc = nupp_cmd("check", "k.nupp", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("k.nupp:3:12: error: `+` mixes int32 and uint32")


def test_emit_ir_after_each_stage(tmp_path):
    (tmp_path / "k.nupp").write_text("@aot\nlocal function f(a: int32): int32\n"
                                     "    return a + nupp.math.i32.wrap(6.5)\nend\n")
    lowered = nupp_cmd("emit", "--ir", "--after", "lower", tmp_path / "k.nupp")
    folded = nupp_cmd("emit", "--ir", tmp_path / "k.nupp")
    assert "add.i32(%a, wrap.f64.i32(6.5:f64))" in lowered.stdout
    assert "add.i32(%a, 6:i32)" in folded.stdout
    assert nupp_cmd("emit", "--ir", "--after", "nope", tmp_path / "k.nupp").returncode == 2


def test_emit_report_names_each_span_loop(tmp_path):
    (tmp_path / "k.nupp").write_text(
        "local struct S\n    v: number\nend\n@aot\n"
        "local function total(borrows s: span.Span<S>): number\n"
        "    local sum = 0.0\n    for i = 1, #s do\n        sum = sum + s[i].v\n    end\n    return sum\nend\n")
    proc = nupp_cmd("emit", "--report", "k.nupp", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith("k.nupp:7:5: loop over %i: stays scalar:")
    assert "add.f64" in proc.stdout


def test_emit_lane_ir_lane_c_and_the_report_at_a_gang(tmp_path):
    kernel = Path(nupp.__file__).resolve().parents[1] / "bench" / "kernel-subset-spike" / "mandelbrot.nupp"
    lanes = nupp_cmd("emit", "--ir", "--after", "lanes", "--gang", "16", kernel)
    assert lanes.returncode == 0 and "gang 16 %i = 1:i32 to len %out varying(" in lanes.stdout
    assert "while.masked " in lanes.stdout
    lane_c = nupp_cmd("emit", "--c", "--gang", "4", kernel)
    assert lane_c.returncode == 0 and "the lane C (gangs of 4)" in lane_c.stdout
    report = nupp_cmd("emit", "--report", "--gang", "8", kernel)
    assert "loop over %i: lane-rewritten in gangs of 8 (" in report.stdout
    wrong = nupp_cmd("emit", "--lua", "--gang", "4", kernel)
    assert wrong.returncode == 2 and "--gang goes with" in wrong.stderr


def test_bench_refuses_an_unknown_kernel():
    proc = nupp_cmd("bench", "--kernels", "mandelbrot,nbody")
    assert proc.returncode == 2 and "no kernel named nbody (kernels: mandelbrot, " in proc.stderr
