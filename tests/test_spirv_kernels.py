"""SPIR-V modules of whole kernels: valid, as expected in text, refused for a reason, and run.

  (1) `spirv-val --target-env vulkan1.1` accepts every kernel the backend
      emits for the committed .nupp files (bench/, tests/), the lane test
      kernels, the modules of tests/test_spirv_ops.py, and generated modules
      (tests/kernelgen.py through hypothesis; the fuzzer's generator,
      tests/fuzz/generator.py, by seed);
  (2) golden disassembly: tests/golden/spirv/*.test hold Nupp modules
      (`test spirv`, cases as in tests/golden.py) and, per function, the
      `spirv-dis` text of its kernel or the reason it has none;
      NUPP_BLESS=1 rewrites the [out] sections;
  (3) `device_refusal` names the reason for each shape the device cannot run;
  (4) the generated kernels the device takes agree with scalar C bit for bit
      through the vulkan runner (tests/test_spirv_ops.py `run_both`) on edge
      inputs, at lengths 0, 1, 3 and a few hundred.

spirv-val and spirv-dis skip locally when missing and fail under CI, as does a missing Vulkan device.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from nupp.emit_spirv import emit_module
from nupp.emit_spirv.admit import device_refusal
from nupp.errors import NuppError, Source
from nupp.pipeline import compile_module
from nupp.scalar_ir.text import parse_module, print_module

from . import golden
from .conftest import require_tool
from .fuzz.generator import generate
from .fuzz.program import module_text
from .kernelgen import KERNEL_SCALARS, edge_array, garbage_array, kernels
from .test_device_runner import spirv_val
from .test_lane_c import TEST_KERNELS
from .test_native_differential import GENERATED_RANDOM_ROWS, GENERATED_ROWS, ROOT, write_generated
from .test_spirv_ops import CONTRACTION, ERRORS, LAYOUTS, PROLOGUE, build, ops_module, run_both
from .test_spirv_ops import _isolated_cache, cache_dir, device  # noqa: F401  (fixtures)

SPIRV_GOLDEN_DIR = golden.GOLDEN_DIR / "spirv"


def device_module(text: str, path: str = "case.nupp"):
    return emit_module(compile_module(Source(path, text)), path)


def assert_kernels_valid(text: str, path: str) -> int:
    """spirv-val accepts the kernels of every function the backend takes; how many functions there were."""
    module = device_module(text, path)
    for name, kernel in module.kernels.items():
        try:
            spirv_val(kernel.spirv)
            if kernel.finish is not None:
                spirv_val(kernel.finish)
        except AssertionError as err:
            raise AssertionError(f"{path}: function {name}: {err}") from None
    return len(module.kernels)


# ---- (1) spirv-val ---------------------------------------------------------------------------------

def committed_modules() -> dict[str, str]:
    """Every committed .nupp module, the lane test kernels and test_spirv_ops's modules, by name."""
    found = {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "bench").rglob("*.nupp"))}
    found |= {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "tests").rglob("*.nupp"))}
    found |= {f"lane test kernel {stem}": text for stem, text, *_ in TEST_KERNELS.values()}
    return found | {"ops": ops_module(), "literal ops": ops_module(with_literals=True), "errors": ERRORS,
                    "layouts": LAYOUTS, "prologue": PROLOGUE, "contraction": CONTRACTION}


def test_every_committed_kernel_passes_spirv_val():
    validated = sum(assert_kernels_valid(text, name) for name, text in committed_modules().items())
    assert validated >= 240  # 228 op kernels, the BENCH and lane test kernels, the error and layout kernels


def test_generated_kernels_pass_spirv_val():
    accepted = []

    @given(kernels())
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    def valid(kernel):
        accepted.append(assert_kernels_valid(kernel.text, "gen.nupp"))

    valid()
    assert sum(accepted) >= 5, "the generator's kernels must reach the device"


@pytest.mark.parametrize("seeds", [range(40), pytest.param(range(40, 600), marks=pytest.mark.slow)],
                         ids=["quick", "many"])
def test_fuzzer_programs_pass_spirv_val(seeds):
    programs = [generate(seed) for seed in seeds]
    texts = [module_text([p]) for p in programs if not p.isolated]  # an isolated one repeats a name: refused
    assert sum(assert_kernels_valid(text, "fuzz.nupp") for text in texts) >= len(seeds) // 60


# ---- (2) golden disassembly ---------------------------------------------------------------------------

def disassembly(spirv: bytes, folder: Path) -> str:
    binary = folder / "kernel.spv"
    binary.write_bytes(spirv)
    return subprocess.run([require_tool("spirv-dis"), "--no-header", "--no-indent", "--no-color", str(binary)],
                          capture_output=True, text=True, check=True).stdout


def stage_spirv(text: str, folder: Path) -> str:
    """Nupp source in; per function, its kernel's disassembly or why it has none (or the diagnostics)."""
    try:
        module = device_module(text)
    except NuppError as err:
        return str(err)
    parts = []
    for name in [*module.kernels, *module.refused]:
        if name in module.refused:
            parts.append(f"; function {name}: refused: {module.refused[name]}\n")
        else:
            kernel = module.kernels[name]
            spirv_val(kernel.spirv)
            parts.append(f"; function {name}\n" + disassembly(kernel.spirv, folder))
            if kernel.finish is not None:
                spirv_val(kernel.finish)
                parts.append(f"; function {name}: finish kernel\n" + disassembly(kernel.finish, folder))
    return "".join(parts)


def golden_cases() -> list:
    return [pytest.param(path, case.name, id=f"{path.stem}::{case.name}")
            for path in sorted(SPIRV_GOLDEN_DIR.glob("*.test")) for case in golden.load(path).cases]


def test_the_golden_files_hold_cases():
    assert len(golden_cases()) >= 5
    assert all(golden.load(path).stage == "spirv" for path in SPIRV_GOLDEN_DIR.glob("*.test"))


@pytest.mark.parametrize("path, name", golden_cases())
def test_golden_disassembly(tmp_path, path, name):
    case = golden.load(path).case(name)
    actual = golden.normalize(stage_spirv(case.input, tmp_path))
    expected = golden.expected_output(case)
    if actual != expected:
        if not golden.BLESS:
            pytest.fail(f"{path}:{case.line}: case {name}: the disassembly differs "
                        f"(NUPP_BLESS=1 accepts it)\n{golden.diff(expected, actual)}", pytrace=False)
        golden.bless(path, name, actual)


# ---- (3) refusals -------------------------------------------------------------------------------------

REFUSAL_HEADER = """\
local span = nupp.mem.span
local struct Cell
    a: int32
    b: int32
end
"""
REFUSED = {
    "a loop-carried local": ("""
@aot
local function f(exclusive out: span.WriteSpan<Cell>): nil
    local last: int32 = 0
    for i = 1, #out do
        out[i].a = last
        last = out[i].b
    end
end
""", "%last, declared outside the span loop at 10:5, is assigned in it and is not an exact reduction "
     "(each iteration runs in its own invocation: no other value carries between them)"),
    "a span loop inside an if": ("""
@aot
local function f(exclusive out: span.WriteSpan<Cell>, go: boolean): nil
    if go then
        for i = 1, #out do
            out[i].b = 1
        end
    end
end
""", "the loop over spans at 10:9 is inside another statement (the device runs one at function level)"),
    "a store not at the counter": ("""
@aot
local function f(exclusive out: span.WriteSpan<Cell>): nil
    for i = 1, #out do
        for j = 1, #out do
            out[j].a = i
        end
    end
end
""", "a store to %out at %j, not the span loop's counter, at 11:13"),
    "a load of a written span not at the counter": ("""
@aot
local function f(exclusive out: span.WriteSpan<Cell>): nil
    for i = 1, #out do
        for j = 1, #out do
            out[i].a = out[j].b
        end
    end
end
""", "a load of %out, which the loop writes, at %j, not the counter, at 11:13"),
    "two span loops": ("""
@aot
local function f(exclusive out: span.WriteSpan<Cell>): nil
    for i = 1, #out do
        out[i].a = 1
    end
    for j = 1, #out do
        out[j].b = 2
    end
end
""", "it has 2 loops over spans, at 9:5, 12:5 (the device runs one)"),
    "a sum that rounds": ("""
@aot
local function f(exclusive out: span.WriteSpan<Cell>): number
    local total: number = 0
    for i = 1, #out do
        out[i].a = 1
        total = total + out[i].b / 3
    end
    return total
end
""", "%total, declared outside the span loop at 10:5, is assigned in it and is not an exact reduction "
     "(each iteration runs in its own invocation: no other value carries between them)"),
    "a step other than 1": ("""
@aot
local function f(exclusive out: span.WriteSpan<Cell>): nil
    for i = 1, #out, 2 do
        out[i].a = 1
    end
end
""", "the span loop at 9:5 has step 2 (the device runs step 1)"),
}


@pytest.mark.parametrize("shape", sorted(REFUSED))
def test_a_refused_shape_names_its_reason(shape):
    body, reason = REFUSED[shape]
    module = device_module(REFUSAL_HEADER + body)
    assert "f" not in module.kernels
    assert module.refused["f"] == reason


COPY = """
@aot
local function f(exclusive out: span.WriteSpan<Cell>, borrows inp: span.Span<Cell>): nil
    assert(#out == #inp, "length mismatch")
    for i = 1, #out do
        out[i].a = inp[i].b
    end
end
"""


@pytest.mark.parametrize("fact", ["  alias %out %inp shared-read\n", ""], ids=["shared-read", "no fact"])
def test_a_written_span_not_known_disjoint_is_refused(fact):
    """Source always makes a written span exclusive (LANGUAGE.md section 6); IR need not."""
    text = print_module(compile_module(Source("case.nupp", REFUSAL_HEADER + COPY)))
    assert "  alias %out %inp disjoint\n" in text
    module = parse_module(text.replace("  alias %out %inp disjoint\n", fact))
    assert device_refusal(module.functions[0], module) == (
        "%out is written and not known disjoint from %inp (each span is its own device buffer: mark %out exclusive)")


# ---- (4) generated kernels on the device ---------------------------------------------------------------

def generated_calls(built):
    """(label, arguments) of each call: edge rows and random rows, then short spans, with each scalar pair."""
    In, Out = built.scalar.dtype("In"), built.scalar.dtype("Out")
    edges = edge_array(In, GENERATED_ROWS, random_rows=GENERATED_RANDOM_ROWS)
    shapes = [(edges, garbage_array(Out, len(edges)))] + [(edges[:n], garbage_array(Out, n, seed=n)) for n in (0, 1, 3)]
    shapes.append((edges[:2], garbage_array(Out, 3)))  # the length mismatch
    for (rows, out), (p, q) in itertools.product(shapes, KERNEL_SCALARS):
        yield f"k(out[{len(out)}], inp[{len(rows)}], {p}, {q})", (out, rows, p, q)


@pytest.mark.parametrize("examples", [12, pytest.param(60, marks=pytest.mark.slow)], ids=["quick", "many"])
def test_generated_kernels_agree_with_scalar_c(device, tmp_path, examples):  # noqa: F811
    ran = []

    @given(kernels())
    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    def agree(kernel):
        built = build(write_generated(tmp_path, kernel.text))
        if "k" not in built.device.kernels:
            return
        for label, args in generated_calls(built):
            run_both(device, built, "k", args, f"{built.path}\n{kernel.text}\n{label}")
        ran.append(built.path)

    agree()
    assert len(ran) >= examples // 4, "the generator's kernels must reach the device"
