"""What a fuzz run executes and how outcomes compare.

Executions: every way nupp runs an @aot function, as the Python API names
them (`nupp.load(path, mode=..., cc=..., tier=..., gang=...)`): the
interpreter (the reference), scalar C and lane C at every tier this CPU runs
x every gang, each with GCC and with Clang, and SPIR-V on the Vulkan device
(where one opens) through each runner: the raw Vulkan API and wgpu.

Calls: a program's entry is called on edge inputs (tests/kernelgen.py's
`edge_array`: boundary values per field type, every pair of the first two
fields, then random bits) at every span length 0..2G+1 for the largest gang
G (so every gang meets full gangs and every tail), a long call that runs
past LuaJIT's hot-loop threshold, two `borrows` spans that are one array,
and lengths that differ (the assert).  A `CallSpec` is plain data: each
execution builds the same arrays from it.

Outcomes compare as LANGUAGE.md section 3 says: the error text exactly;
`float` results to the bit (the f32 surface is exact, canonical NaN
included); `number` results, and `float` and `number` fields, to the bit
except that any NaN equals any NaN (a NaN's payload and sign from ordinary
arithmetic are not observable, and a store narrows binary64 as it is;
test_native_differential.same_values).  Any other exception (an internal
error, a Python traceback) is a failure wherever it appears, as is a hang or
a crash.
"""

from __future__ import annotations

import math
import shutil
import struct
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from nupp.scalar_ir.lanes import GANG_SIZES as GANGS

from ..kernelgen import F32_EDGE_BITS, F64_EDGES, INT_EDGES, edge_array, garbage_array

COMPILERS = ("gcc", "clang")


@dataclass(frozen=True)
class Execution:
    mode: str                  # "interp", "scalar", "lane" or "spirv"
    cc: str = "gcc"
    tier: Optional[str] = None
    gang: Optional[int] = None
    runner: str = "vulkan"     # spirv: the device runner
    threads: Optional[int] = None  # lane: the threads its span loops may split between (nupp.load's)

    @property
    def name(self) -> str:
        if self.mode in ("interp", "front end"):
            return self.mode
        if self.mode == "scalar":
            return f"scalar-{self.cc}"
        if self.mode == "spirv":
            return f"spirv-{self.runner}"
        gang = self.gang or ""  # none: each loop's gang, the cost model's (targets/gang_choice.py)
        return f"lane{gang}-{self.tier}-{self.cc}" + (f"-threads{self.threads}" if self.threads else "")

    def load_arguments(self) -> dict:
        return {"mode": self.mode, "cc": self.cc, "tier": self.tier, "gang": self.gang, "spirv_runner": self.runner,
                "threads": self.threads}


REFERENCE = Execution("interp")
FRONT_END = Execution("front end")  # not an execution: where a refused program is reported


def runnable_tiers() -> tuple[str, ...]:
    """The tiers this CPU runs, by the x86-64 psABI levels /proc/cpuinfo shows (tests/test_tiers.py's oracle)."""
    from .. import test_tiers
    try:
        return test_tiers.runnable_tiers()
    except BaseException:  # pytest.skip outside an x86-64 Linux machine: no lane C here
        return ()


def all_executions(compilers: tuple[str, ...] = COMPILERS, tiers: Optional[tuple[str, ...]] = None) -> list[Execution]:
    """The reference first, then scalar and lane C with every compiler found on PATH."""
    compilers = tuple(cc for cc in compilers if shutil.which(cc))
    tiers = runnable_tiers() if tiers is None else tiers
    out = [REFERENCE] + [Execution("scalar", cc) for cc in compilers]
    out += [Execution("lane", cc, tier, gang) for cc in compilers for tier in tiers for gang in (*GANGS, None)]
    # and on threads: the smallest gang splits the most ways (3 threads: odd splits of up to 16 gangs);
    # the workers run every loop on threads, however short (worker.py: NUPP_THREADS_MIN=0)
    if compilers and tiers:
        out.append(Execution("lane", compilers[0], tiers[-1], min(GANGS), threads=3))
    out += [Execution("spirv", runner=kind) for kind in device_runners()]
    return out


def device_runners() -> tuple[str, ...]:
    """The SPIR-V runners that open a device here (none without a Vulkan driver)."""
    from nupp.targets.device import Runner, open_runners
    return tuple(kind for kind, opened in open_runners().items() if isinstance(opened, Runner))


def executions_matching(patterns: list[str]) -> list[Execution]:
    """The executions whose names contain one of `patterns` (all of them when none), reference first."""
    chosen = [e for e in all_executions() if not patterns or any(p in e.name for p in patterns)]
    return [REFERENCE] + [e for e in chosen if e != REFERENCE]

# ---- calls ------------------------------------------------------------------------------------

MAX_TAIL = 2 * max(GANGS) + 1
FULL_ROWS, RANDOM_ROWS = 150, 100

SCALAR_VALUES = {
    "i32": INT_EDGES["int32"],
    "u32": INT_EDGES["uint32"],
    "i64": INT_EDGES["int64"],
    "u64": INT_EDGES["uint64"],
    "f64": F64_EDGES,
    "f32": tuple(float(v) for v in np.array(F32_EDGE_BITS, dtype=np.uint32).view(np.float32)) + (0.1, 1e300),
    "bool": (True, False),
}


@dataclass(frozen=True)
class CallSpec:
    """One call of an entry: spans of `rows` rows (the first, written one `extra` rows longer),
    edge rows shifted by `offset`, `random_rows` of random bits after them; scalar arguments
    set number `scalars`; `same_aux`: a third span argument is the second one's array."""

    rows: int
    scalars: int
    offset: int = 0
    random_rows: int = 0
    extra: int = 0
    same_aux: bool = False

    def label(self) -> str:
        extras = [f"+{self.random_rows} random" if self.random_rows else "",
                  f"out {self.extra} longer" if self.extra else "", "aux is inp" if self.same_aux else ""]
        return f"{self.rows} rows, scalars #{self.scalars}" + "".join(f", {e}" for e in extras if e)


def call_plan(has_spans: bool) -> list[CallSpec]:
    """Every call an entry gets."""
    if not has_spans:
        return [CallSpec(0, k) for k in range(40)]
    calls = [CallSpec(FULL_ROWS, k, random_rows=RANDOM_ROWS) for k in range(3)]
    calls += [CallSpec(n, n, offset=7 * n) for n in range(MAX_TAIL + 1)]
    calls += [CallSpec(20, 3, offset=3, same_aux=True), CallSpec(5, 4, extra=1)]
    return calls


def scalar_arguments(widths: list[str], k: int) -> list:
    """Scalar argument set number k: edge values per width, combined differently per set."""
    return [SCALAR_VALUES[w][(k * 7 + j * 3) % len(SCALAR_VALUES[w])] for j, w in enumerate(widths)]


def arguments(module, spans: list[tuple[str, bool]], widths: list[str], call: CallSpec) -> tuple:
    """The arguments of one call, built from the module's dtypes (every execution builds the same)."""
    args = []
    for k, (struct_name, writable) in enumerate(spans):
        dtype = module.dtype(struct_name)
        if writable:
            args.append(garbage_array(dtype, call.rows + call.extra + call.random_rows, seed=call.rows + 1))
        elif k == 2 and call.same_aux:
            args.append(args[1])
        else:
            args.append(edge_array(dtype, call.rows, offset=call.offset + 5 * k, random_rows=call.random_rows,
                                   seed=k + 1))
    return (*args, *scalar_arguments(widths, call.scalars))


# ---- outcomes ------------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What one call did: its error text or its result (canonical), the spans afterwards,
    or an exception that is a bug wherever it appears."""

    error: Optional[str] = None
    result: object = None
    spans: list = field(default_factory=list)
    exception: Optional[str] = None   # "hang: ...", "crash: ...", "InternalError: ..."


def canonical_result(value, result_type: str):
    if isinstance(value, float):
        if result_type == "float":
            return "f32", struct.pack("<f", value).hex()
        return "f64", "nan" if math.isnan(value) else struct.pack("<d", value).hex()
    return type(value).__name__, value


def failed_itself(outcome: Outcome) -> Optional[tuple[str, str]]:
    """(kind, detail) when an outcome is a failure by itself: a hang, a crash, an exception."""
    if not outcome.exception:
        return None
    kind = outcome.exception.split(":", 1)[0]
    return kind if kind in ("hang", "crash") else "exception", outcome.exception


def difference(reference: Outcome, other: Outcome) -> Optional[tuple[str, str]]:
    """(kind, detail) of how `other` differs from the reference, None if it agrees."""
    if other.exception:
        return failed_itself(other)
    if reference.error != other.error:
        return "error-text", f"error {other.error!r}, the reference {reference.error!r}"
    if reference.result != other.result:
        return "result", f"result {other.result!r}, the reference {reference.result!r}"
    from ..test_native_differential import field_differences
    for k, (a, b) in enumerate(zip(reference.spans, other.spans)):
        rows = field_differences(a, b)  # field by field: not the padding
        if rows:
            return "spans", f"span #{k + 1} differs in {len(rows)} places: " + "; ".join(rows[:4])
    return None
