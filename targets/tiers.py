"""Feature tiers: one lane library carries a build per x86-64 level and picks one at load time.

    tiers = tiers_to_build(pinned=None)
    choices = gang_choices(lane_ir, tier.vector_bytes, pinned_gang)  # targets/gang_choice.py: each loop's shape
    tiered = tiered_library(builds, "nupp_1a2b_")        # the units, the dispatcher among them
    library = build_units(tiered.units, toolchain, "kernels.nupp")   # targets/toolchain.py
    build = choose_tier(tiered.builds, <the library's cpu_tier()>, pinned=None)
    build.mode, build.c_module.functions                 # "lane8+32-v4", what to bind

(nupp/pipeline.py strings these together: `native_library`.)

TIERS, in order, each compiled with nupp's flags (targets/toolchain.BASE_FLAGS:
-O2 -ffp-contract=off -fno-fast-math) plus its own `-march` and
`-mprefer-vector-width` of its register width:

    baseline  -march=x86-64     SSE2                       16-byte vectors, gang 4
    v2        -march=x86-64-v2  + SSE3..SSE4.2, POPCNT     16-byte vectors, gang 4
    v3        -march=x86-64-v3  + AVX2, FMA, BMI1/2        32-byte vectors, gang 8
    v4        -march=x86-64-v4  + AVX-512 F/BW/CD/DQ/VL    64-byte vectors, gang 16

The gang listed is one register of 4-byte data.  Each span loop's gang at
a tier, and how many registers wide its vectors are, is the cost model's
choice for that loop (targets/gang_choice.py, from the loop's own features
and the tier's register width); a pinned gang (`gang=`, `--gang`) is every
loop's gang at every tier.

A tier changes which instructions compute each lane, never which operation:
the lane C computes exactly the scalar rule per lane, no tier contracts a
multiply and an add (-ffp-contract=off), and `f32.fma` is the C library's
correctly rounded fmaf at every tier.  So the choice of tier and gang cannot
change a bit of output (tests/test_tiers.py checks it on every tier this CPU
runs, at every gang, under GCC and Clang).

A tiered library holds one lane-C translation unit per tier built (symbols
`<prefix><tier>_NAME`, from `emit_lane_module` with that symbol prefix) and a
dispatcher unit compiled at baseline exporting

    int32_t <prefix>cpu_tier(void)     the index in TIERS of the best tier this CPU runs

It tests each feature the tier's -march may use, as the x86-64 psABI defines
the levels: `__builtin_cpu_supports` for the ones both GCC 12 and Clang 14
name (their run-time support also checks that the OS saves the AVX and
AVX-512 registers), a CPUID bit for the rest (CMPXCHG16B, LAHF/SAHF, F16C,
LZCNT, MOVBE), which need no OS support.

Which tiers a library carries: the pinned one, else all of them.  A host
(`nupp run`, `nupp.load`) pins the one it runs (`tier_to_build`: the
user's pin, else the best this CPU runs, as the dispatcher alone says), so
it compiles one tier; a tree for distribution (`nupp build`) carries every
tier.
NUPP_CPU_TIER_MAX=<tier> caps what the CPU is taken to run, to exercise an
older machine's choice (and the error for a pinned tier it lacks) on a newer
one; it can only lower the tier, never claim features the CPU lacks.

The tiers are x86-64's: the dispatcher needs <cpuid.h>, so lane mode builds
for x86-64 hosts only (another architecture would need its own TIERS).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from nupp.emit_c.scalar import CModule
from nupp.scalar_ir.lanes import GANG_SIZES
from nupp.targets.toolchain import Unit

CPU_TIER_MAX_VARIABLE = "NUPP_CPU_TIER_MAX"
_CPUID_REGISTERS = ("eax", "ebx", "ecx", "edx")


@dataclass(frozen=True)
class Feature:
    """A CPU feature a tier's code may use, and the C test for it at run time."""

    name: str
    test: str


def _named(name: str) -> Feature:
    """A feature both GCC 12 and Clang 14 accept in __builtin_cpu_supports."""
    return Feature(name, f'__builtin_cpu_supports("{name}")')


def _cpuid(name: str, leaf: int, register: str, bit: int) -> Feature:
    """A feature read from its CPUID bit (Clang 14's __builtin_cpu_supports cannot name it)."""
    return Feature(name, f"nu_cpuid_bit(0x{leaf:x}u, {_CPUID_REGISTERS.index(register)}, {bit})")


@dataclass(frozen=True)
class Tier:
    """One x86-64 level: its -march, the features it adds to the tier below, its register width."""

    name: str
    march: str
    adds: tuple[Feature, ...]
    vector_bytes: int  # one SIMD register

    @property
    def flags(self) -> tuple[str, ...]:
        """Its -march, and vectors of its register width preferred: at x86-64-v4 GCC and Clang
        prefer 256 bits, and Clang then splits each of the lane C's 64-byte vectors into two."""
        return (f"-march={self.march}", f"-mprefer-vector-width={self.vector_bytes * 8}")

    @property
    def gang(self) -> int:
        """The gang for 4-byte data: one register of int32 / binary32 lanes."""
        return self.vector_bytes // 4


TIERS = (
    Tier("baseline", "x86-64", (), 16),
    Tier("v2", "x86-64-v2", (_cpuid("cx16", 0x1, "ecx", 13), _cpuid("lahf_lm", 0x80000001, "ecx", 0),
                             _named("popcnt"), _named("sse3"), _named("ssse3"), _named("sse4.1"),
                             _named("sse4.2")), 16),
    Tier("v3", "x86-64-v3", (_named("avx"), _named("avx2"), _named("bmi"), _named("bmi2"), _named("fma"),
                             _cpuid("f16c", 0x1, "ecx", 29), _cpuid("lzcnt", 0x80000001, "ecx", 5),
                             _cpuid("movbe", 0x1, "ecx", 22)), 32),
    Tier("v4", "x86-64-v4", (_named("avx512f"), _named("avx512bw"), _named("avx512cd"), _named("avx512dq"),
                             _named("avx512vl")), 64),
)
TIER_NAMES = tuple(t.name for t in TIERS)


class TierError(ValueError):
    """The user asked for a tier this CPU cannot run, or one that does not exist."""


def tier_named(name: str) -> Tier:
    for tier in TIERS:
        if tier.name == name:
            return tier
    raise TierError(f"unknown tier '{name}' (tiers: {', '.join(TIER_NAMES)})")


@dataclass(frozen=True)
class TierBuild:
    """One tier's C inside a library (tier None: the module's scalar C), and the gangs its loops run in."""

    tier: Tier
    gangs: tuple[int, ...]  # the pinned gang, else the sizes of its Gangs, sorted (none: the scalar C)
    c_module: CModule

    @property
    def mode(self) -> str:
        """The execution's name, as nupp.executions(f) lists it: lane<gangs>-<tier>
        (`lane16-v4`; `lane8+32-v4` where its loops' gangs differ)."""
        return f"lane{'+'.join(map(str, self.gangs))}-{self.tier.name}"


@dataclass(frozen=True)
class TieredModule:
    """The compilation units of a tiered lane library and what the host binds from it."""

    units: tuple[Unit, ...]
    builds: tuple[TierBuild, ...]
    cpu_tier_symbol: str

    @property
    def cpu_tier_cdef(self) -> str:
        return f"int32_t {self.cpu_tier_symbol}(void);"


def tiers_to_build(pinned: str | None = None) -> tuple[Tier, ...]:
    """The tiers a library carries: the pinned one, else all of them."""
    return (tier_named(pinned),) if pinned is not None else TIERS


def tiered_library(builds: tuple[TierBuild, ...], symbol_prefix: str) -> TieredModule:
    """The units of a library carrying `builds` (each tier's C, symbols prefixed
    `<symbol_prefix><tier>_`) plus the dispatcher, compiled at baseline."""
    symbol = f"{symbol_prefix}cpu_tier"
    units = tuple(Unit(b.tier.name, b.c_module.source, b.tier.flags) for b in builds)
    return TieredModule(units + (dispatcher_unit(symbol),), builds, symbol)


def dispatcher_unit(symbol: str) -> Unit:
    """The dispatcher's unit, exporting `int32_t <symbol>(void)`, compiled at baseline."""
    return Unit("cpu_tier", cpu_tier_source(symbol), TIERS[0].flags)


def check_pins(gang: int | None, tier: str | None) -> None:
    """Refuse a pinned gang or tier that does not exist (ValueError, TierError), before any build."""
    if gang is not None and gang not in GANG_SIZES:
        raise ValueError(f"gang must be one of {', '.join(map(str, GANG_SIZES))}, not {gang}")
    if tier is not None:
        tier_named(tier)


def cpu_tier_source(symbol: str) -> str:
    """The dispatcher: C returning the index in TIERS of the best tier this CPU runs."""
    checks = []
    for index, tier in enumerate(TIERS[1:]):
        tests = " &&\n          ".join(f.test for f in tier.adds)
        checks.append(f"    /* {tier.name}: {tier.march} */\n    if (!({tests}))\n        return {index};")
    return "\n".join([
        "/* Generated by nupp (targets/tiers.py): which feature tier this CPU runs.  Compiled at baseline. */",
        "#include <stdint.h>",
        "#include <cpuid.h>",
        "",
        "/* Bit `bit` of register `reg` (eax, ebx, ecx, edx) of CPUID leaf `leaf`; 0 when the CPU lacks the leaf. */",
        "static int nu_cpuid_bit(unsigned leaf, int reg, int bit)",
        "{",
        "    unsigned r[4] = {0, 0, 0, 0};",
        "    if (!__get_cpuid(leaf, &r[0], &r[1], &r[2], &r[3]))",
        "        return 0;",
        "    return (int)((r[reg] >> bit) & 1u);",
        "}",
        "",
        f"int32_t {symbol}(void);",
        f"int32_t {symbol}(void)",
        "{",
        "    __builtin_cpu_init();",
        *checks,
        f"    return {len(TIERS) - 1};",
        "}",
        "",
    ])


def choose_tier(builds: tuple[TierBuild, ...], cpu_tier: int, pinned: str | None = None) -> TierBuild:
    """The build to run: the pinned tier, else the best one built that this CPU runs.

    `cpu_tier` is the library's own answer (an index in TIERS), lowered by
    NUPP_CPU_TIER_MAX when set.  A pinned tier the CPU cannot run is the
    user's error (TierError), caught here rather than as SIGILL mid-run."""
    runs = min(cpu_tier, _cpu_tier_cap())
    if pinned is not None:
        wanted = _runnable(pinned, runs)
        return next(b for b in builds if b.tier == wanted)
    return max((b for b in builds if TIERS.index(b.tier) <= runs), key=lambda b: TIERS.index(b.tier))


def tier_to_build(cpu_tier: int, pinned: str | None = None) -> Tier:
    """The one tier a host builds (`nupp run`, `nupp.load`; a tree for
    distribution carries every tier): the pinned one, else the best this CPU
    runs.  `cpu_tier` and the errors are choose_tier's."""
    runs = min(cpu_tier, _cpu_tier_cap())
    return _runnable(pinned, runs) if pinned is not None else TIERS[runs]


def _runnable(pinned: str, runs: int) -> Tier:
    """The pinned tier, if a CPU running tiers up to index `runs` runs it (else TierError)."""
    wanted = TIERS.index(tier_named(pinned))
    if wanted > runs:
        lacking = [f.name for t in TIERS[runs + 1:wanted + 1] for f in t.adds]
        raise TierError(f"this CPU cannot run tier {pinned}: it lacks some of {', '.join(lacking)} "
                        f"(-march={TIERS[wanted].march} may use them all); it runs "
                        f"{', '.join(TIER_NAMES[:runs + 1])}")
    return TIERS[wanted]


def _cpu_tier_cap() -> int:
    """The highest tier index NUPP_CPU_TIER_MAX allows (the last tier when unset)."""
    cap = os.environ.get(CPU_TIER_MAX_VARIABLE)
    if not cap:
        return len(TIERS) - 1
    if cap not in TIER_NAMES:
        raise TierError(f"{CPU_TIER_MAX_VARIABLE}={cap} names no tier (tiers: {', '.join(TIER_NAMES)})")
    return TIER_NAMES.index(cap)
