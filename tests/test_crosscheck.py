"""`nupp crosscheck` (nupp/crosscheck.py, emit_c/driver.py): scalar C against
lane C in standalone C programs, GCC's builds against Clang's.

  * every committed kernel of bench/kernel-subset-spike and every lane test
    kernel (test_lane_c.TEST_KERNELS) agrees: by default at the best tier this
    CPU runs, gangs 4 and 8 and the tier's default shapes, under GCC (and the
    bench kernels under Clang); in the slow set under both at every tier it
    runs, gangs 4, 8 and 16 and each tier's default shapes; once under UBSan;
    the bench scripts crosscheck.sh and simd.sh pass (slow);
  * the default shapes are the lane C a tier's library runs (pipeline.lanes_at_tier),
    and every length 0..2G+1 of their widest gang G runs;
  * ten modules of the fuzz generator (tests/fuzz/generator.py) agree (slow);
  * a planted difference is caught and reported precisely: one output bit of
    the last variant's lane C, the default shapes', flipped (the driver's
    NU_PLANT_FLIP; a pinned gang's report names its gang), and one bit
    of the scalar C's outputs flipped in the Clang build only (NU_PLANT_DIGEST:
    the digests differ, and the rerun names the first differing value);
  * a module dividing by zero in some elements agrees, statuses and the
    spans after the error included, and some case does raise;
  * usage errors exit 2 with a message, no traceback.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from nupp.crosscheck import DEFAULT_PREFIX, Build, Options, _mismatch_report, crosscheck
from nupp.errors import Source
from nupp.pipeline import compile_module, lanes_at_tier
from nupp.runtime.cli import main
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.walk import statements
from nupp.targets.backends import backend_named
from nupp.targets.cross import host_machine

from .conftest import require_tool
from .fuzz.generator import generate
from .fuzz.program import module_text
from .test_lane_c import TEST_KERNELS

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "kernel-subset-spike"
COMPILERS = ("gcc", "clang")


def best_tier() -> str:
    return host_machine().runnable_tiers()[-1]


def run(paths, **options) -> tuple[int, list[str]]:
    lines: list[str] = []
    status = crosscheck([str(p) for p in paths], Options(**options), lines.append)
    return status, lines


@pytest.fixture(scope="module")
def lane_kernels(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lane-kernels")
    for stem, text, *_ in TEST_KERNELS.values():
        (folder / f"{stem}.nupp").write_text(text)
    return folder


def assert_agrees(status: int, lines: list[str]) -> None:
    assert status == 0, "\n".join(lines)
    assert lines and not any("mismatch" in line or "differs" in line for line in lines)


def test_every_kernel_agrees_at_the_best_tier_under_gcc(lane_kernels):
    require_tool("gcc")
    status, lines = run([BENCH, lane_kernels], tiers=(best_tier(),), gangs=(4, 8), cases=6)
    assert_agrees(status, lines)
    summaries = [line for line in lines if "cases compared" in line]
    assert len(summaries) == 5 + len({stem for stem, *_ in TEST_KERNELS.values()})
    assert all(re.search(r"[\d,]+ cases/s in the C harness", line) for line in summaries)
    assert sum("skipped, no @aot functions" in line for line in lines) == 5  # the *_main.nupp host scripts


def test_the_bench_kernels_agree_at_the_best_tier_under_clang():
    require_tool("clang")
    status, lines = run([BENCH], compilers=("clang",), tiers=(best_tier(),), gangs=(4, 8), cases=6)
    assert_agrees(status, lines)


@pytest.mark.slow
def test_every_kernel_agrees_at_every_tier_and_gang_under_both_compilers(lane_kernels):
    for cc in COMPILERS:
        require_tool(cc)
    status, lines = run([BENCH, lane_kernels], compilers=COMPILERS, gangs=(4, 8, 16))
    assert_agrees(status, lines)


def test_the_kernels_agree_under_ubsan():
    require_tool("gcc")
    status, lines = run([BENCH / "tecsbits.nupp", BENCH / "mixedwidth.nupp"], tiers=(best_tier(),),
                        gangs=(4, 8), cases=4, sanitize=True)
    assert_agrees(status, lines)


@pytest.mark.slow
def test_generated_modules_agree(tmp_path):
    require_tool("clang")
    programs = [p for p in (generate(seed, f"p{seed}") for seed in range(1, 40)) if not p.isolated][:10]
    for k, program in enumerate(programs):
        (tmp_path / f"gen{k}.nupp").write_text(module_text([program]))
    status, lines = run([tmp_path], compilers=COMPILERS, tiers=(best_tier(),), gangs=(4, 8, 16), cases=8)
    assert_agrees(status, lines)


def test_a_flipped_lane_output_bit_is_reported_precisely():
    require_tool("gcc")
    status, lines = run([BENCH / "mixedwidth.nupp"], tiers=(best_tier(),), gangs=(4, 8), cases=2,
                        extra_flags=("-DNU_PLANT_FLIP",))
    assert status == 1
    reports = [line for line in lines if "mismatch in" in line]
    # the first non-empty length, its last element, the first field; only the low bit differs
    report = reports[0]
    match = re.search(r"mixedwidth\.nupp: mismatch in mix \(gcc, tier (\w+), the default shapes\): length 1, "
                      r"case 0, outputs\[1\]\.value \(element 1 of span outputs, field value\): "
                      r"scalar C 0x([0-9a-f]+), lane C 0x([0-9a-f]+)\n  reproduce: (.*)", report)
    assert match, report
    assert int(match[2], 16) ^ int(match[3], 16) == 1
    assert match[4].startswith(f"nupp crosscheck {BENCH / 'mixedwidth.nupp'} --cc gcc --tier {match[1]} "
                               "--gang 4,8 --seed 1 --cases 2 --keep ")


def test_a_pinned_gangs_mismatch_names_its_gang_and_narrows_the_reproduction_to_it():
    build = Build("gcc", "v3", (), Path("check-gcc-v3"))
    record = ["mix", "8", "3", "1", "outputs[2].value", "0x0", "0x1"]
    report = _mismatch_report(Path("m.nupp"), build, record, Options(gangs=(4, 8, 16), tiers=("v3",)))
    assert report.startswith("m.nupp: mismatch in mix (gcc, tier v3, gang 8): length 3, case 1, outputs[2].value")
    assert " --cc gcc --tier v3 --gang 8 --seed 1 " in report


def test_the_default_shapes_are_each_tiers_library_and_run_every_length_of_their_widest_gang(tmp_path):
    """mandelbrot's loop: a masked while, two registers per gang at every tier (gang 8 at v2, 32 at v4)."""
    require_tool("gcc")
    tiers = tuple(t for t in ("v2", best_tier()) if t in host_machine().runnable_tiers())
    status, lines = run([BENCH / "mandelbrot.nupp"], tiers=tiers, gangs=(4,), cases=1, keep=tmp_path)
    assert_agrees(status, lines)
    module = compile_module(Source.from_file(str(BENCH / "mandelbrot.nupp")))
    widest = 0
    for tier in tiers:
        lanes = lanes_at_tier(module, tier)
        expected = backend_named("lane-c").emit(lanes, str(BENCH / "mandelbrot.nupp"), DEFAULT_PREFIX).source
        assert (tmp_path / "mandelbrot" / f"default-{tier}.c").read_text() == expected, tier
        widest = max([widest, *(g.size for fn in lanes.functions for g in statements(fn.body)
                                if isinstance(g, ir.Gang))])
    assert widest >= 8
    exe = tmp_path / "mandelbrot" / f"check-gcc-{tiers[-1]}"
    dump = subprocess.run([str(exe), "1", "1", "dump"], capture_output=True, text=True, check=True).stdout
    lengths = {int(line.split("\t")[2]) for line in dump.splitlines() if line.startswith("case\t")}
    assert set(range(2 * widest + 2)) <= lengths


def test_a_difference_between_compilers_names_the_first_differing_value():
    for cc in COMPILERS:
        require_tool(cc)
    status, lines = run([BENCH / "tecsbits.nupp"], compilers=COMPILERS, tiers=(best_tier(),), gangs=(4,),
                        cases=2, extra_flags=("-DNU_PLANT_DIGEST",))
    assert status == 1
    report = next(line for line in lines if "differs" in line)
    assert re.search(r"tecsbits\.nupp: query differs between gcc tier \w+ and clang tier \w+ \(scalar C\): "
                     r"length 1, case 0, out\[1\]\.selected \(element 1 of span out, field selected\): "
                     r"gcc 0x0, clang 0x1\n  reproduce: nupp crosscheck \S+ --cc gcc,clang", report), report


DIVIDES = """\
local span = nupp.mem.span

local struct Cell
    n: int32
    d: int32
    q: int32
end

@aot
local function divide(exclusive cells: span.WriteSpan<Cell>, k: int32): int32
    local total: int32 = 0
    for i = 1, #cells do
        cells[i].q = cells[i].n // cells[i].d + k
        total = total + cells[i].q
    end
    return total
end

return {Cell = Cell, divide = divide}
"""


def test_a_division_by_zero_agrees_with_its_status_and_the_spans_after(tmp_path):
    require_tool("gcc")
    module = tmp_path / "divides.nupp"
    module.write_text(DIVIDES)
    keep = tmp_path / "kept"
    status, lines = run([module], tiers=(best_tier(),), gangs=(4, 8), cases=4, keep=keep)
    assert_agrees(status, lines)
    exe = next((keep / "divides").glob("check-gcc-*"))
    statuses = [subprocess.run([str(exe), "1", "4", "show", "divide", str(length), str(case)],
                               capture_output=True, text=True, check=True).stdout
                for length in range(1, 10) for case in range(4)]
    assert any("divides.nupp:13: integer division by zero" in out for out in statuses)
    assert any("status\t0 (no error)" in out for out in statuses)


@pytest.mark.parametrize("argv, message", [
    (["crosscheck", "no-such-module.nupp"], "neither a .nupp file nor a folder"),
    (["crosscheck", str(BENCH), "--tier", "v9"], "unknown tier 'v9'"),
    (["crosscheck", str(BENCH), "--cc", "no-such-cc"], "'no-such-cc' was not found on PATH"),
    (["crosscheck", str(BENCH), "--target", "pdp11"], "unknown target 'pdp11'"),
    (["crosscheck", str(BENCH), "--gang", "5"], "gangs are 4, 8, 16"),
    (["crosscheck", str(BENCH), "--cases", "0"], "must be at least 1"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own refusals
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("script, args", [("crosscheck.sh", ["v2"]), ("simd.sh", ["--cases", "4"])])
def test_the_bench_scripts_pass(script, args):
    for cc in COMPILERS:
        require_tool(cc)
    done = subprocess.run([str(BENCH / script), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cases compared" in done.stdout
