"""Feature tiers (targets/tiers.py): one lane library per module, a build per x86-64 level.

  * the dispatcher's cpu_tier() agrees with an independent oracle: the x86-64
    psABI level definitions over the flags of /proc/cpuinfo; and it tests
    every feature the psABI lists for each level;
  * which build runs: the pinned tier, else the best this CPU runs;
    NUPP_CPU_TIER_MAX lowers that; a pinned tier the CPU lacks is a clear
    error (TierError from the API, exit 2 from `nupp run`), never SIGILL;
  * every tier of every BENCH kernel compiles warning-free (-Wall -Wextra
    -Wpedantic -Werror) under GCC and Clang, the dispatcher included;
  * lane output is byte-identical to the scalar C on the BENCH kernels over
    every span length 0..2G+1 and the full edge set (tests/test_lane_c.py's
    cases and comparison): quick, each tier this CPU runs at its default gang
    under GCC; slow, every tier it runs x gangs 4, 8, 16 x GCC and Clang;
  * the cache: a tiered library is reused by the second load and rebuilt when
    corrupted;
  * `nupp run --tier v2 --gang 4` runs and names its execution lane4-v2.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import uuid
from pathlib import Path

import cffi
import pytest

from nupp.scalar_ir.lanes import GANG_SIZES as GANGS
from nupp.targets.tiers import (CPU_TIER_MAX_VARIABLE, TIER_NAMES, TIERS, TierBuild, TierError, choose_tier,
                                cpu_tier_source, tiered_library)
from nupp.errors import Source
from nupp.pipeline import Request, compile_for_tree, compile_module, tier_builds
from nupp.targets import toolchain as native
from nupp.runtime.api import load
from nupp.runtime.host import Host


def tiered_module(module, path, prefix):
    """The units of a library carrying every tier at its own gang, as the host builds it."""
    return tiered_library(tier_builds(module, path, prefix), prefix)
from nupp.targets.toolchain import Unit, build_units, find_toolchain

from .conftest import require_tool
from .test_lane_c import assert_same, lane_cases
from .test_native_differential import COMPILERS, KERNELS, ROOT, call

# The x86-64 psABI's micro-architecture levels, as /proc/cpuinfo names the
# flags (pni is SSE3, abm carries LZCNT).  Each level includes the ones below.
PSABI_LEVELS = {
    "v2": {"cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2"},
    "v3": {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
    "v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
}
# /proc/cpuinfo's name -> the dispatcher's (xsave: __builtin_cpu_supports("avx") checks the OS saves AVX state)
CPUINFO_TO_FEATURE = {"pni": "sse3", "sse4_1": "sse4.1", "sse4_2": "sse4.2", "bmi1": "bmi", "abm": "lzcnt",
                      "xsave": "avx"}


def cpuinfo_flags() -> set[str]:
    if platform.machine() not in ("x86_64", "AMD64") or not Path("/proc/cpuinfo").is_file():
        pytest.skip("the oracle reads /proc/cpuinfo of an x86-64 Linux machine")
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    raise AssertionError("/proc/cpuinfo lists no flags")


def oracle_tier() -> int:
    """The index in TIERS of the best level whose flags (and all below) /proc/cpuinfo shows."""
    flags, best = cpuinfo_flags(), 0
    for index, level in enumerate(("v2", "v3", "v4"), start=1):
        if not PSABI_LEVELS[level] <= flags:
            break
        best = index
    return best


def runnable_tiers() -> tuple[str, ...]:
    return TIER_NAMES[:oracle_tier() + 1]


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch) -> Path:
    folder = tmp_path_factory.getbasetemp() / "nupp-tier-cache"
    monkeypatch.setenv("NUPP_CACHE_DIR", str(folder))
    monkeypatch.delenv(CPU_TIER_MAX_VARIABLE, raising=False)
    return folder


def compiled(path: Path):
    source = Source.from_file(str(path))
    return source, compile_module(source)


# ---- the dispatcher --------------------------------------------------------------------------

def test_every_tier_tests_every_feature_of_its_psabi_level():
    for tier in TIERS[1:]:
        tested = {f.name for f in tier.adds}
        wanted = {CPUINFO_TO_FEATURE.get(flag, flag) for flag in PSABI_LEVELS[tier.name]}
        assert wanted <= tested | {f.name for t in TIERS[:TIERS.index(tier)] for f in t.adds}, tier.name


@pytest.mark.parametrize("cc", COMPILERS)
def test_cpu_tier_agrees_with_proc_cpuinfo(cc):
    require_tool(cc)
    expected = oracle_tier()
    library = build_units([Unit("cpu_tier", cpu_tier_source("probe_cpu_tier"), TIERS[0].flags)],
                          find_toolchain(cc), "cpu_tier.c")
    ffi = cffi.FFI()
    ffi.cdef("int32_t probe_cpu_tier(void);")
    assert ffi.dlopen(str(library)).probe_cpu_tier() == expected, f"/proc/cpuinfo says {TIER_NAMES[expected]}"


def test_the_host_runs_the_best_tier_at_its_gang_unless_pinned():
    """mixedwidth computes in binary64: one register of 64-bit lanes (targets/gang_choice.py)."""
    source, _ = compiled(KERNELS["mixedwidth"].path)
    best = TIERS[oracle_tier()]
    assert Host(mode="lane").compile(source).native.mode == f"lane{max(4, best.gang // 2)}-{best.name}"
    assert Host(mode="lane", gang=4).compile(source).native.mode == f"lane4-{best.name}"
    assert Host(mode="lane", tier="baseline").compile(source).native.mode == "lane4-baseline"
    assert Host(mode="lane", tier="baseline", gang=16).compile(source).native.mode == "lane16-baseline"


# ---- choosing a build --------------------------------------------------------------------------

BUILDS = tuple(TierBuild(t, (t.gang,), None) for t in TIERS)


def test_choose_takes_the_best_built_tier_the_cpu_runs():
    assert [choose_tier(BUILDS, cpu).tier.name for cpu in range(4)] == list(TIER_NAMES)
    assert choose_tier(BUILDS[:2], 3).tier.name == "v2"  # nothing better was built
    assert choose_tier(BUILDS, 3, pinned="v2").mode == "lane4-v2"


def test_cpu_tier_max_lowers_the_choice(monkeypatch):
    monkeypatch.setenv(CPU_TIER_MAX_VARIABLE, "v2")
    assert choose_tier(BUILDS, 3).tier.name == "v2"
    assert choose_tier(BUILDS, 0).tier.name == "baseline"  # it never claims more than the CPU has
    monkeypatch.setenv(CPU_TIER_MAX_VARIABLE, "v5")
    with pytest.raises(TierError, match="NUPP_CPU_TIER_MAX=v5 names no tier"):
        choose_tier(BUILDS, 3)


def test_a_pinned_tier_the_cpu_lacks_is_a_clear_error():
    with pytest.raises(TierError) as err:
        choose_tier(BUILDS[3:], 2, pinned="v4")
    assert str(err.value) == ("this CPU cannot run tier v4: it lacks some of avx512f, avx512bw, avx512cd, "
                              "avx512dq, avx512vl (-march=x86-64-v4 may use them all); it runs baseline, v2, v3")
    with pytest.raises(TierError, match="lacks some of avx, avx2, bmi, .*avx512vl .*it runs baseline, v2$"):
        choose_tier(BUILDS[3:], 1, pinned="v4")


def test_the_api_refuses_a_tier_the_cpu_lacks_and_unknown_pins(monkeypatch):
    path = KERNELS["mixedwidth"].path
    monkeypatch.setenv(CPU_TIER_MAX_VARIABLE, "baseline")
    with pytest.raises(TierError, match="cannot run tier v2.*it runs baseline$"):
        load(path, tier="v2")
    with pytest.raises(TierError, match="unknown tier 'v5'"):
        load(path, tier="v5")
    with pytest.raises(ValueError, match="gang must be one of 4, 8, 16"):
        load(path, gang=5)


# ---- the C compiles clean ----------------------------------------------------------------------

@pytest.mark.parametrize("cc", COMPILERS)
def test_every_tier_compiles_without_warnings(cc):
    require_tool(cc)
    toolchain = find_toolchain(cc, extra_flags=("-Wall", "-Wextra", "-Wpedantic", "-Werror"))
    for name, kernel in sorted(KERNELS.items()):
        source, module = compiled(kernel.path)
        units = tiered_module(module, source.path, "nupp_").units  # gangs 4, 4, 8, 16
        assert [u.name for u in units] == [*TIER_NAMES, "cpu_tier"]
        build_units(units, toolchain, source.path)  # an InternalError carries the compiler's words


# ---- lane C equals scalar C at every tier ------------------------------------------------------

_LOADED: dict = {}


def loaded(path: Path, mode: str, cc: str, gang=None, tier=None):
    key = (str(path), mode, cc, gang, tier)
    if key not in _LOADED:
        _LOADED[key] = load(str(path), mode=mode, cc=cc, gang=gang, tier=tier)
    return _LOADED[key]


def assert_tier_agrees_with_scalar(name: str, tier: str, gang: int, cc: str) -> None:
    require_tool(cc)
    kernel = KERNELS[name]
    scalar = loaded(kernel.path, "scalar", cc)
    lane = loaded(kernel.path, "lane", cc, gang, tier)
    for label, args in lane_cases(scalar, kernel, gang):
        assert_same(call(scalar, kernel.function, args), call(lane, kernel.function, args),
                    f"{name} {label} ({tier}, G={gang}, {cc})")


@pytest.mark.parametrize("tier", TIER_NAMES)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_tier_agrees_with_scalar_at_its_gang(name, tier):
    if tier not in runnable_tiers():
        pytest.skip(f"this CPU does not run {tier}")
    assert_tier_agrees_with_scalar(name, tier, TIERS[TIER_NAMES.index(tier)].gang, "gcc")


@pytest.mark.slow
@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("gang", GANGS)
@pytest.mark.parametrize("tier", TIER_NAMES)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_tier_and_gang_agrees_with_scalar(name, tier, gang, cc):
    if tier not in runnable_tiers():
        pytest.skip(f"this CPU does not run {tier}")
    assert_tier_agrees_with_scalar(name, tier, gang, cc)


# ---- the cache ---------------------------------------------------------------------------------

def unique_kernel(folder: Path) -> Path:
    """A module of its own (a unique constant), so its library is new even in a shared cache."""
    path = folder / f"k{uuid.uuid4().hex[:8]}.nupp"
    path.write_text(KERNELS["mixedwidth"].path.read_text().replace(
        "return {", f"local _unique: number = {uuid.uuid4().int % 10**9}\nreturn {{", 1))
    return path


class Builds:
    """Counts library builds (targets/toolchain.py's _compile)."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = native._compile

        def counting(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(native, "_compile", counting)


def manifest_units(library) -> list:
    """Each unit's name and its -march (a unit with threaded loops adds -fopenmp, which is not the tier's)."""
    units = json.loads(Path(library).with_suffix(".json").read_text())["units"]
    return [(u["name"], [f for f in u["flags"] if f != "-fopenmp"]) for u in units]


def test_a_host_compiles_the_tier_it_runs_alone_and_reuses_it(tmp_path, cache, monkeypatch):
    best = TIERS[oracle_tier()]
    Host(mode="lane").compile(Source.from_file(str(unique_kernel(tmp_path))))  # builds the dispatcher alone once
    path = unique_kernel(tmp_path)
    builds = Builds(monkeypatch)
    first = Host(mode="lane").compile(Source.from_file(str(path))).native
    second = Host(mode="lane").compile(Source.from_file(str(path))).native
    assert builds.count == 1 and first.library == second.library
    assert manifest_units(first.library) == [(best.name, list(best.flags)), ("cpu_tier", list(TIERS[0].flags))]
    monkeypatch.setenv(CPU_TIER_MAX_VARIABLE, "baseline")
    capped = Host(mode="lane").compile(Source.from_file(str(path))).native
    assert capped.mode == "lane4-baseline" and builds.count == 2
    assert manifest_units(capped.library) == [("baseline", list(TIERS[0].flags)), ("cpu_tier", list(TIERS[0].flags))]


def test_a_tree_for_distribution_carries_every_tier(tmp_path):
    source = Source.from_file(str(unique_kernel(tmp_path)))
    library = compile_for_tree(source, Request(mode="lane"), "lib/kernels.so").library
    assert [b.tier.name for b in library.builds] == list(TIER_NAMES)
    assert manifest_units(library.path) == [(t.name, list(t.flags)) for t in TIERS] + [
        ("cpu_tier", list(TIERS[0].flags))]


def test_a_corrupted_tiered_library_is_rebuilt(tmp_path, monkeypatch):
    path = unique_kernel(tmp_path)
    source, module = compiled(path)
    # built but never loaded: a rebuilt file under a path dlopen'ed before would not be mapped again
    units = tiered_module(module, source.path, "nupp_t_").units
    library = build_units(units, find_toolchain("gcc"), source.path)
    data = bytearray(library.read_bytes())
    data[len(data) // 2] ^= 0x01
    library.write_bytes(bytes(data))
    builds = Builds(monkeypatch)
    assert build_units(units, find_toolchain("gcc"), source.path) == library
    assert builds.count == 1
    assert native._intact(library, library.with_suffix(".json"))


def test_a_failing_unit_is_kept_and_named(tmp_path, cache):
    from nupp.errors import InternalError
    units = [Unit("v3", "int broken(void) { return }", ("-march=x86-64-v3",)), Unit("cpu_tier", "int ok;")]
    with pytest.raises(InternalError, match=r"could not compile the C generated for t\.nupp \(v3\); the C is kept"):
        build_units(units, find_toolchain("gcc"), "t.nupp")
    assert [p.read_text() for p in (cache / "failed").glob("*-t.c")] == ["int broken(void) { return }"]


# ---- the command line --------------------------------------------------------------------------

def nupp_run(*args, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.run([sys.executable, "-m", "nupp", "run", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


SCRIPT = str(ROOT / "bench" / "kernel-subset-spike" / "mixedwidth_main.nupp")


def test_nupp_run_pins_tier_and_gang(cache):
    env = {"NUPP_CACHE_DIR": str(cache)}
    pinned = nupp_run("--tier", "v2", "--gang", "4", SCRIPT, "100", env_extra=env)
    assert pinned.returncode == 0, pinned.stderr
    assert "  lane4-v2 " in pinned.stdout
    best = TIERS[oracle_tier()]
    default = nupp_run(SCRIPT, "100", env_extra=env)
    assert default.returncode == 0 and f"  lane{best.gang}-{best.name} " in default.stdout


def test_nupp_run_refuses_a_bad_or_unrunnable_tier(cache):
    bad = nupp_run("--tier", "v5", SCRIPT)
    assert bad.returncode == 2 and "invalid choice: 'v5'" in bad.stderr
    env = {"NUPP_CACHE_DIR": str(cache), CPU_TIER_MAX_VARIABLE: "v2"}
    lacking = nupp_run("--tier", "v3", SCRIPT, "100", env_extra=env)
    assert lacking.returncode == 2 and lacking.stdout == ""
    assert lacking.stderr.startswith("nupp run: error: this CPU cannot run tier v3: it lacks some of avx, ")
    scalar = nupp_run("--mode", "scalar", "--gang", "8", SCRIPT)
    assert scalar.returncode == 2 and "--gang 8 is for lane code; it cannot be combined with --mode scalar" \
        in scalar.stderr


def test_each_tier_shapes_each_loop_by_the_cost_model():
    """simd's binary64 lanes, moved as blocks (a Body of 8- and 4-byte fields):
    one register, and at least 4 lanes (2 x 128 at baseline); mandelbrot's
    masked while: two registers of binary32 lanes."""
    from nupp.lane_rewrite.rewrite import rewrite_lanes  # the rewrite's (unsized) gangs suffice
    from nupp.targets.gang_choice import gang_choices

    def shapes(lanes, tier):
        return [(c.shape.size, c.shape.vector_bits) for _, _, c in gang_choices(lanes, tier.vector_bytes)]

    wide, narrow = (rewrite_lanes(compiled(KERNELS[name].path)[1]) for name in ("simd", "mandelbrot"))
    assert [shapes(wide, t) for t in TIERS] == [[(4, 128)], [(4, 128)], [(4, 256)], [(8, 512)]]
    assert [shapes(narrow, t) for t in TIERS] == [[(8, 128)], [(8, 128)], [(16, 256)], [(32, 256)]]


def test_binary64_lanes_at_a_16_byte_tier_run_in_gangs_of_two_registers():
    """simd at baseline: two binary64 lanes per register, a gang of 4 as two
    vectors (measured faster than scalar C: targets/gang_choice.py)."""
    source, _ = compiled(KERNELS["simd"].path)
    assert Host(mode="lane", tier="baseline").compile(source).native.mode == "lane4-baseline"
    assert Host(mode="lane", tier="baseline", gang=8).compile(source).native.mode == "lane8-baseline"
