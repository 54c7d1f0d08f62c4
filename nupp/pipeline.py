"""The compiler's pipeline, every stage in order, in one place.

    source --lower--> scalar IR --fold--> scalar IR --lanes--> lane IR --size G--> lane IR at G
           (parse, validate, check)      (verified)           (verified)          (verified)

`compile_for_host` is the whole of it for one module, as the host runs it
(`nupp run`, `require`, the Python API); the CLI's `check` and `emit` and the
tests run the same stage functions.  The front end runs once per module and
feeds both the Lua writer and the IR; the verifier runs after every stage
and nowhere else (a verifier failure is a compiler bug and says which rule
broke where); lane IR is made once per module and sized once per gang.
Backends (emit_c/, registered in targets/backends.py) only emit, and
targets (targets/) only compile and link.  How @aot functions run is a
mode: "interp" (their IR as Lua) or one of LIBRARIES (at the end), each
building the module's native library from a backend's output.

Every stage walks trees recursively and a legal program can nest deeply, so
the entry points here run `with_deep_stack` (nupp/deep_stack.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from nupp.compiled import Compiled, NativeModule, TierCheck
from nupp.deep_stack import compiling, with_deep_stack
from nupp.emit_lua.to_lua import check_loads, write_lua
from nupp.errors import Source, source_bytes
from nupp.frontend.lower import FrontEnd, lower
from nupp.lane_rewrite.gang_size import size_gangs
from nupp.lane_rewrite.rewrite import rewrite_lanes
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.fold import fold_module
from nupp.scalar_ir.lanes import GANG_SIZES, VECTOR_BITS
from nupp.targets.backends import backend_named
from nupp.targets.cross import require_compiler_for_host
from nupp.targets.device import RUNNERS, Runner, runner
from nupp.targets.gang_choice import gang_choices, shaped_as
from nupp.targets.tiers import (TIERS, TierBuild, TieredModule, check_pins, choose_tier, dispatcher_unit, tier_named,
                                tier_to_build, tiered_library, tiers_to_build)
from nupp.targets.toolchain import Unit, build_library, build_units, find_toolchain
from nupp.verifier import check as verify

STAGES = ("lower", "fold", "lanes")


# ---- the stages ---------------------------------------------------------------------

def scalar_ir(front: FrontEnd) -> ir.Module:
    """The verified, folded scalar IR of a module: what every execution starts from."""
    verify(front.module, "lower")
    module = fold_module(front.module)
    verify(module, "fold")
    return module


def lane_ir(module: ir.Module) -> ir.Module:
    """The lane IR of verified scalar IR: admitted span loops become (unsized) Gangs."""
    lanes = rewrite_lanes(module)
    verify(lanes, "lanes", lane_ir=True)
    return lanes


def sized(lanes: ir.Module, gang: int) -> ir.Module:
    """Lane IR with every Gang of size `gang`: what lane C is emitted from."""
    module = size_gangs(lanes, gang)
    verify(module, f"gang size {gang}", lane_ir=True)
    return module


def shaped(lanes: ir.Module, choices: list, tier: str) -> ir.Module:
    """Lane IR with each Gang shaped as the cost model chose for `tier` (targets/gang_choice.py)."""
    module = shaped_as(lanes, choices)
    verify(module, f"gang shapes at {tier}", lane_ir=True)
    return module


def tier_shapes(module: ir.Module, gang: int | None = None) -> dict[tuple[str, ir.Loc], list[str]]:
    """How each rewritten loop of verified scalar IR runs at every feature tier,
    and why, by (function, loop location): the lines `nupp emit --report` prints."""
    lanes = lane_ir(module)
    lines: dict[tuple[str, ir.Loc], list[str]] = {}
    for t in TIERS:
        for fn, g, choice in gang_choices(lanes, t.vector_bytes, gang):
            lines.setdefault((fn.name, g.loc), []).append(f"{t.name}: {choice.text}")
    return lines


def lanes_at_tier(module: ir.Module, tier: str, gang: int | None = None) -> ir.Module:
    """The lane IR of verified scalar IR, each loop shaped as the cost model says
    for `tier` (at `gang` where pinned): what that tier's library runs."""
    lanes = lane_ir(module)
    return shaped(lanes, gang_choices(lanes, tier_named(tier).vector_bytes, gang), tier)


def lanes_at(module: ir.Module, gang: int) -> ir.Module:
    """The lane IR of verified scalar IR, sized to `gang`."""
    return sized(lane_ir(module), gang)


@with_deep_stack
def compile_module(source: Source, after: str | None = None, gang: int = 8) -> ir.Module:
    """The IR of a module after stage `after` (default: fold, the last scalar
    stage; "lanes": the lane IR at `gang`), for `nupp emit --ir` and tests."""
    if after is not None and after not in STAGES:
        raise ValueError(f"unknown stage '{after}' (stages: {', '.join(STAGES)})")
    front = lower(source)
    if after == "lower":
        verify(front.module, "lower")
        return front.module
    module = scalar_ir(front)
    return sized(lane_ir(module), gang) if after == "lanes" else module


@with_deep_stack
def emit(source: Source, backend: str, gang: int = 8, symbol_prefix: str = "nupp_"):
    """A backend's artifact for a module (`nupp emit --c`): the IR the backend
    takes (lane IR sized to `gang` for a lane backend), then its `emit`."""
    chosen = backend_named(backend)
    module = compile_module(source)
    if chosen.takes == "lanes":
        module = lanes_at(module, gang)
    return chosen.emit(module, source.path, symbol_prefix)


@with_deep_stack
def translate(source: Source, native: NativeModule | None = None) -> str:
    """The Lua of a module, its @aot functions running their IR as Lua (or the
    library `native` describes): `nupp emit --lua`."""
    front = lower(source)
    return write_lua(front, scalar_ir(front), native)


def translate_text(text: str, path: str = "<string>") -> str:
    return translate(Source(path, text))


@with_deep_stack
def check(source: Source) -> None:
    """`nupp check`: every diagnostic of the module, and what LuaJIT's loader
    would refuse in its translation; NuppError if there is any."""
    front = lower(source)
    check_loads(source, write_lua(front, scalar_ir(front)))


# ---- a module as the host runs it -------------------------------------------------------

@dataclass(frozen=True)
class Request:
    """How a module's @aot functions are to run: `mode` (MODES), the C compiler,
    for lane code a pinned gang and tier (None: each tier's own, the best
    tier this CPU runs), and for spirv the runner (targets/device.py).
    `vector_bits` caps every loop's vectors below the tier's registers: for
    measuring shapes (bench/lane_speed.py), not an option of nupp.load."""

    mode: str = "interp"
    cc: str = "gcc"
    gang: Optional[int] = None
    tier: Optional[str] = None
    spirv_runner: str = "vulkan"
    vector_bits: Optional[int] = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown mode '{self.mode}' (modes: {', '.join(MODES)})")
        if self.mode in TIERED_MODES:
            check_pins(self.gang, self.tier)
        if self.vector_bits is not None and self.vector_bits not in VECTOR_BITS:
            raise ValueError(f"vector_bits must be one of {', '.join(map(str, VECTOR_BITS))}, not {self.vector_bits}")
        if self.spirv_runner not in RUNNERS:
            raise ValueError(f"unknown SPIR-V runner '{self.spirv_runner}' (runners: {', '.join(RUNNERS)})")


# The index (in targets.tiers.TIERS) of the best tier a tiered library says this CPU
# runs: (library, the dispatcher's cdef, its symbol) -> index.  The host asks the
# library itself, through LuaJIT's FFI.
CpuTier = Callable[[Path, str, str], int]


def compile_for_host(source: Source, request: Request, cpu_tier: CpuTier | None = None) -> Compiled:
    """The pipeline for one module, from source to what the host loads.  The
    stages run on a deep stack (nupp/deep_stack.py); `cpu_tier` runs on the
    caller's thread, which may hold the LuaJIT state it calls into."""
    if request.mode != "interp":
        find_toolchain(request.cc)  # a missing compiler named first
        require_compiler_for_host(request.cc)
    with compiling():  # one pause of the garbage collector for every step
        request = at_this_cpus_tier(request, cpu_tier)
        front, module, library = with_deep_stack(_stages_before_lua)(source, request)
        native, tier, device, check = None, None, None, None
        if library is not None:
            check = library.tier_check(cpu_tier)
            build = library.build_to_run(check, request)
            native, tier = library.bind(build), build.tier.name if build.tier is not None else None
            if library.device is not None:
                native, device = library.device.bind(native)
        return Compiled(with_deep_stack(write_lua)(front, module, native), native, tier, device, check)


# The dispatcher alone, asked which tier to build before a host builds lane code.
CPU_TIER_SYMBOL = "nupp_cpu_tier"


def at_this_cpus_tier(request: Request, cpu_tier: CpuTier | None) -> Request:
    """The request with the tier a host runs pinned (the pinned one, else the
    best this CPU runs), so that its lane library carries that tier alone; a
    tree for distribution (compile_for_tree) carries every tier.  A pinned
    tier this CPU cannot run is refused here (TierError), before any build."""
    if request.mode not in TIERED_MODES or cpu_tier is None:
        return request
    dispatcher = build_units((dispatcher_unit(CPU_TIER_SYMBOL),), find_toolchain(request.cc), "the CPU's tier")
    index = cpu_tier(dispatcher, f"int32_t {CPU_TIER_SYMBOL}(void);", CPU_TIER_SYMBOL)
    return replace(request, tier=tier_to_build(index, request.tier).name)


@dataclass(frozen=True)
class TreeModule:
    """A module compiled for an output tree (`nupp build`, runtime/project/): its
    front end's tree, its verified IR, its library (None: interp, or no @aot
    functions) and the Lua of each of the library's builds (None: the one Lua)."""

    front: FrontEnd
    module: ir.Module
    library: Optional[Library]
    lua: tuple  # of (TierBuild or None, Lua text)


def compile_for_tree(source: Source, request: Request, library_name: str) -> TreeModule:
    """compile_for_host without a host: the Lua binds every build of the library,
    which it loads as `library_name` (the tree's path), so that the built
    program picks a tier where it runs, not where it was built."""
    with compiling():
        front, module, library = with_deep_stack(_stages_before_lua)(source, request)
        write = with_deep_stack(write_lua)
        if library is None:
            return TreeModule(front, module, None, ((None, write(front, module, None)),))
        return TreeModule(front, module, library, tuple(
            (build, write(front, module, replace(library.bind(build), library=library_name)))
            for build in library.builds))


def _stages_before_lua(source: Source, request: Request):
    front = lower(source)                            # parse, validate, check: once per module
    module = scalar_ir(front)                        # verified after lowering and after fold
    library = native_library(module, source, request)  # the @aot functions' library, built (None: interp)
    return front, module, library


@dataclass(frozen=True)
class Library:
    """A built library of a module's @aot functions, before the host binds it:
    one build (scalar C), or a build per tier and the dispatcher that picks one."""

    path: Path
    builds: tuple  # of TierBuild; for scalar C one with tier None
    tiered: Optional[TieredModule] = None
    device: Optional["DeviceFunctions"] = None  # spirv mode: the functions a device runs instead

    def tier_check(self, cpu_tier: CpuTier | None) -> TierCheck | None:
        """A tiered library's dispatcher asked which tier this CPU runs, and its answer (None: not tiered)."""
        if self.tiered is None:
            return None
        if cpu_tier is None:
            raise ValueError("a tiered library needs cpu_tier to pick the tier this CPU runs")
        cdef, symbol = self.tiered.cpu_tier_cdef, self.tiered.cpu_tier_symbol
        return TierCheck(str(self.path), cdef, symbol, cpu_tier(self.path, cdef, symbol))

    def build_to_run(self, check: TierCheck | None, request: Request) -> TierBuild:
        """The build the host binds: the one scalar C build, else the tier this
        CPU runs (the pinned tier, else the best), as `check` answers."""
        if check is None:
            return self.builds[0]
        return choose_tier(self.builds, check.answer, request.tier)

    def bind(self, build: TierBuild) -> NativeModule:
        """What the host binds of one of this library's builds, named as
        nupp.executions(f) lists it: "scalar" (the module's own scalar C), else
        after its tier and gang (TierBuild.mode)."""
        c_module = build.c_module
        return NativeModule(str(self.path), c_module.cdef, c_module.errors,
                            {f.name: (f.symbol, f.result) for f in c_module.functions},
                            build.mode if build.tier is not None else "scalar")


def native_library(module: ir.Module, source: Source, request: Request) -> Library | None:
    """The compiled library of a module's @aot functions in the request's mode
    (None: interp, or no @aot functions)."""
    if request.mode not in NATIVE_MODES or not module.functions:
        return None
    return LIBRARIES[request.mode](module, source.path, module_prefix(source), request)


def module_prefix(source: Source) -> str:
    """The symbol prefix of a module's libraries: LuaJIT's C namespace is shared by every module of a state."""
    return "nupp_" + hashlib.sha256(source_bytes(f"{source.path}\0{source.text}")).hexdigest()[:10] + "_"


def scalar_library(module: ir.Module, path: str, prefix: str, request: Request) -> Library:
    """One unit: the module's scalar C."""
    c_module = backend_named("c").emit(module, path, prefix)
    library = build_library(c_module.source, find_toolchain(request.cc), path)
    return Library(library, (TierBuild(None, (), c_module),))


def tiered_lane_library(module: ir.Module, path: str, prefix: str, request: Request) -> Library:
    """A unit per feature tier (each tier's lane C, or its scalar C) and the dispatcher."""
    builds = tier_builds(module, path, prefix, request.gang, request.tier, request.vector_bits)
    tiered = tiered_library(builds, prefix)
    return Library(build_units(tiered.units, find_toolchain(request.cc), path), builds, tiered)


def tier_builds(module: ir.Module, path: str, prefix: str, gang: int | None = None,
                tier: str | None = None, vector_bits: int | None = None) -> tuple[TierBuild, ...]:
    """Each tier's C (the pinned tier, else every one): the lane C of the lane
    IR with each loop shaped as the cost model says for the tier (at `gang`
    where pinned; in registers of at most `vector_bits` where capped).  The
    rewrite runs once; each distinct set of shapes is applied once."""
    lanes = lane_ir(module)
    at_shapes: dict[tuple, ir.Module] = {}
    builds = []
    for t in tiers_to_build(tier):
        register_bytes = t.vector_bytes if vector_bits is None else min(t.vector_bytes, vector_bits // 8)
        choices = gang_choices(lanes, register_bytes, gang)
        shapes = tuple(c.shape for _, _, c in choices)
        if shapes not in at_shapes:
            at_shapes[shapes] = shaped(lanes, choices, t.name)
        c_module = backend_named("lane-c").emit(at_shapes[shapes], path, f"{prefix}{t.name}_")
        # no loop in gangs: the C of any pinned gang, named after one register of 4-byte lanes
        gangs = (gang,) if gang else tuple(sorted({s.size for s in shapes})) or (t.gang,)
        builds.append(TierBuild(t, gangs, c_module))
    return tuple(builds)


@with_deep_stack
def native_executions(source: Source, request: Request, tier: str) -> tuple[NativeModule, ...]:
    """Every native execution of a module at `tier` (execution_library), for
    nupp.executions(f): built only when a program asks, never by a plain run."""
    with compiling():
        module = scalar_ir(lower(source))
        if not module.functions:
            return ()
        library = execution_library(module, source.path, module_prefix(source), request, tier)
        return tuple(library.bind(build) for build in library.builds)


def execution_library(module: ir.Module, path: str, prefix: str, request: Request, tier: str) -> Library:
    """One library holding a module's scalar C and its lane C at every gang in
    GANG_SIZES for one tier (a gang wider than the tier's registers runs, just
    slower), each under its own symbol prefix: `<prefix>scalar_` and
    `<prefix>lane<G>_<tier>_`, which no tiered library's `<prefix><tier>_` meets."""
    at = tier_named(tier)
    lanes = lane_ir(module)
    builds = [TierBuild(None, (), backend_named("c").emit(module, path, f"{prefix}scalar_"))]
    for gang in GANG_SIZES:
        at_gang = shaped(lanes, gang_choices(lanes, at.vector_bytes, gang), at.name)
        c_module = backend_named("lane-c").emit(at_gang, path, f"{prefix}lane{gang}_{at.name}_")
        builds.append(TierBuild(at, (gang,), c_module))
    units = [Unit("scalar", builds[0].c_module.source)]
    units += [Unit(f"lane{b.gangs[0]}", b.c_module.source, at.flags) for b in builds[1:]]
    return Library(build_units(units, find_toolchain(request.cc), path), tuple(builds))


@dataclass(frozen=True)
class DeviceBinding:
    """What the host calls for a module's device symbols: each kernel by the
    symbol its Lua binds, with the offset of its error statuses among the
    module's (after those of the C library bound with it)."""

    runner: Runner
    kernels: dict  # symbol -> (DeviceKernel, status offset)


@dataclass(frozen=True)
class DeviceFunctions:
    """The @aot functions of a module that a device runs (spirv mode), by name."""

    runner: Runner
    kernels: dict  # @aot name -> DeviceKernel
    prefix: str

    def bind(self, native: NativeModule) -> tuple[NativeModule, DeviceBinding]:
        """The C library's binding with these functions moved to the device."""
        errors, functions, bound, devices = list(native.errors), dict(native.functions), {}, {}
        for name, kernel in self.kernels.items():
            symbol = f"{self.prefix}device_{name}"
            bound[symbol] = (kernel, len(errors))
            errors += kernel.errors
            devices[name] = (self.runner.execution_name, functions[name][0])  # the C function: a call the device cannot take
            functions[name] = (symbol, functions[name][1])  # the C function's result type
        return (replace(native, errors=tuple(errors), functions=functions, devices=devices),
                DeviceBinding(self.runner, bound))


def device_library(module: ir.Module, path: str, prefix: str, request: Request) -> Library:
    """The lane library (every function, for those the device refuses) and the
    SPIR-V kernels of the functions it runs, on the request's runner."""
    library = tiered_lane_library(module, path, prefix, request)
    kernels = backend_named("spirv").emit(module, path, prefix).kernels
    return replace(library, device=DeviceFunctions(runner(request.spirv_runner), kernels, prefix))


# ---- the executions ---------------------------------------------------------------------
# How @aot functions run: "interp" (their IR written as Lua, emit_lua/), or from a
# native library that one of these builds; a new execution is one entry here.
LIBRARIES: dict[str, Callable[[ir.Module, str, str, Request], Library]] = {
    "scalar": scalar_library,
    "lane": tiered_lane_library,
    "spirv": device_library,
}
NATIVE_MODES = tuple(LIBRARIES)
TIERED_MODES = ("lane", "spirv")  # the modes whose library carries lane C per feature tier
MODES = ("interp",) + NATIVE_MODES
