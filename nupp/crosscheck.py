"""`nupp crosscheck`: scalar C against lane C, and compiler against compiler,
in standalone C programs with no Python or LuaJIT in the checking process.

    status = crosscheck(["bench/kernel-subset-spike"], Options(compilers=("gcc", "clang")))

For each module with @aot functions, one program: its scalar C (symbols
`s_NAME`), its lane C at each asked gang (`l4_NAME`, `l8_NAME`, ...), its
lane C at the default shapes (`d_NAME`: each loop's own gang and vectors, as
the cost model chooses them per tier, targets/gang_choice.py: what users run)
and the driver (emit_c/driver.py), which generates the inputs and compares
every lane variant with the scalar C in C.  Each (compiler, tier) is one
plain compiler command over those files, the default shapes' of its own tier
(nupp's BASE_FLAGS, the tier's flags, `-lm`; UBSan with `sanitize`), built
for and run on a `targets.cross.Machine`.  Every length runs from 0 to 2G+1
for G the widest gang, pinned or a default one at any tier checked.
Every build of a module prints a digest of the scalar C's outcomes per
function; all builds must agree (a tier or a compiler changes no bit), and
when two do not, both run again with a digest per case, then with every
value of the first differing case, to name the value that differs.

A mismatch names the module, function, compiler, tier, gang (or the default
shapes), length, case,
the element and field (or status/result), both bit patterns, and the command
that reproduces it.  `crosscheck` returns 1 on any mismatch, else 0; a
missing compiler is a NuppEnvironmentError, a bad option a CrosscheckUsageError.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Optional

from nupp.emit_c.driver import driver_source
from nupp.errors import InternalError, Source
from nupp.paths import NuppEnvironmentError
from nupp.pipeline import compile_module, lane_ir, shaped, sized
from nupp.scalar_ir.lanes import GANG_SIZES
from nupp.targets.backends import backend_named
from nupp.targets.cross import MACHINES, Machine, host_machine
from nupp.targets.gang_choice import gang_choices
from nupp.targets.toolchain import BASE_FLAGS

DEFAULT_CASES = 24
SCALAR_PREFIX = "s_"
DEFAULT_PREFIX = "d_"


class CrosscheckUsageError(ValueError):
    """An option names something that does not exist (exit status 2)."""


@dataclass(frozen=True)
class Options:
    compilers: tuple[str, ...] = ("gcc",)
    tiers: Optional[tuple[str, ...]] = None  # None: every tier the machine runs here
    gangs: tuple[int, ...] = (4, 8, 16)
    target: Optional[str] = None  # a key of targets.cross.MACHINES; None: this host
    sanitize: bool = False
    seed: int = 1
    cases: int = DEFAULT_CASES
    verbose: bool = False
    keep: Optional[Path] = None  # keep each module's C (and programs) in this folder
    extra_flags: tuple[str, ...] = ()  # added to every compile (tests plant differences with it)


@dataclass(frozen=True)
class Build:
    """One compile of a module's program: compiler, tier, its command and executable."""

    cc: str
    tier: str
    command: tuple[str, ...]
    exe: Path


@dataclass
class Outcome:
    """What a build's run printed, parsed."""

    digests: dict[str, str]
    mismatches: list[list[str]]
    seconds: float = 0.0
    cases: int = 0
    failure: str = ""  # the program did not finish (a crash, a sanitizer report)


def crosscheck(paths: list[str], options: Options, say: Callable[[str], None] = print) -> int:
    """Crosscheck every module under `paths`; 1 on any mismatch, else 0."""
    machine = _machine(options)
    options = _resolved(options, machine)
    modules = _modules(paths)
    failed = False
    for path in modules:
        failed |= _check_module(path, machine, options, say)
    return 1 if failed else 0


# ---- options ----------------------------------------------------------------------------------

def _machine(options: Options) -> Machine:
    if options.target is None:
        return host_machine()
    if options.target not in MACHINES:
        raise CrosscheckUsageError(f"unknown target '{options.target}' (targets: {', '.join(MACHINES)})")
    return MACHINES[options.target]


def _resolved(options: Options, machine: Machine) -> Options:
    """The options with the tiers filled in and every name checked against the machine."""
    for cc in options.compilers:
        missing = machine.missing(cc)
        if missing is not None:
            raise NuppEnvironmentError(missing)
    bad = [g for g in options.gangs if g not in GANG_SIZES]
    if bad or not options.gangs:
        raise CrosscheckUsageError(f"gangs are {', '.join(map(str, GANG_SIZES))}, not {bad or 'none'}")
    if options.cases < 1:
        raise CrosscheckUsageError(f"--cases must be at least 1, not {options.cases}")
    known = [name for name, _ in machine.tiers()]
    runnable = machine.runnable_tiers()
    tiers = options.tiers if options.tiers is not None else runnable
    for tier in tiers:
        if tier not in known:
            raise CrosscheckUsageError(f"unknown tier '{tier}' for {machine.name} (tiers: {', '.join(known)})")
        if tier not in runnable:
            raise NuppEnvironmentError(f"this machine cannot run {machine.name} tier {tier}; "
                                       f"it runs {', '.join(runnable) or 'none'}")
    return replace(options, tiers=tuple(tiers), gangs=tuple(sorted(set(options.gangs))))


def _modules(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found += sorted(path.rglob("*.nupp"))
        elif path.is_file():
            found.append(path)
        else:
            raise CrosscheckUsageError(f"'{text}' is neither a .nupp file nor a folder")
    return found


# ---- one module ------------------------------------------------------------------------------

def _check_module(path: Path, machine: Machine, options: Options, say: Callable[[str], None]) -> bool:
    """Build and run the module's program under every (compiler, tier); True when anything differs."""
    source = Source.from_file(str(path))
    module = compile_module(source)
    if not module.functions:
        say(f"{path}: skipped, no @aot functions")
        return False
    with _program_folder(path, options) as folder:
        return _check_program(path, module, source, machine, options, say, folder)


def _check_program(path: Path, module, source: Source, machine: Machine, options: Options,
                   say: Callable[[str], None], folder: Path) -> bool:
    files, defaults = _write_program(module, source.path, options, machine, folder)
    builds = [_build_of(path, cc, tier, [*files, defaults[tier]], folder, machine, options)
              for cc in options.compilers for tier in options.tiers]
    _compile_all(builds, options, say, folder)
    outcomes = _run_all(builds, machine, options)
    failed = False
    for build, outcome in zip(builds, outcomes):
        for record in outcome.mismatches:
            failed = True
            say(_mismatch_report(path, build, record, options))
        if outcome.failure:
            failed = True
            say(f"{path}: the {build.cc} {build.tier} program failed: {outcome.failure}\n"
                f"  reproduce: {_reproduce(path, (build,), None, options)}")
    if not failed:
        failed = _compare_digests(path, builds, outcomes, machine, options, say)
    _summary(path, module, builds, outcomes, options, say)
    return failed


@contextmanager
def _program_folder(path: Path, options: Options) -> Iterator[Path]:
    """Where a module's program is written: under --keep, else a temporary folder."""
    if options.keep is None:
        with tempfile.TemporaryDirectory(prefix=f"nupp-crosscheck-{path.stem}-") as tmp:
            yield Path(tmp)
        return
    folder = options.keep / path.stem
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise NuppEnvironmentError(f"cannot create {folder} for --keep: {err.strerror or err}") from None
    yield folder


def _write_program(module, display: str, options: Options, machine: Machine,
                   folder: Path) -> tuple[list[Path], dict[str, Path]]:
    """The program's C files every build compiles (the scalar C, the lane C at each
    gang, the driver), and each tier's lane C at its default shapes (`d_` symbols)."""
    scalar = backend_named("c").emit(module, display, SCALAR_PREFIX)
    variants = [(SCALAR_PREFIX, None, scalar.errors)]
    units = {"scalar.c": scalar.source}
    lanes = lane_ir(module)
    for gang in options.gangs:
        prefix = f"l{gang}_"
        lane = backend_named("lane-c").emit(sized(lanes, gang), display, prefix)
        variants.append((prefix, gang, lane.errors))
        units[f"lane{gang}.c"] = lane.source
    defaults, errors, widest = {}, set(), 0
    for tier in options.tiers:
        choices = gang_choices(lanes, machine.register_bytes(tier))
        lane = backend_named("lane-c").emit(shaped(lanes, choices, tier), display, DEFAULT_PREFIX)
        units[defaults.setdefault(tier, f"default-{tier}.c")] = lane.source
        errors.add(lane.errors)
        widest = max([widest, *(choice.shape.size for _, _, choice in choices)])
    if len(errors) != 1:  # the driver holds one table of the default shapes' statuses
        raise InternalError("emit_c", f"the lane C of {display} numbers its errors differently at different "
                                      f"tiers' default shapes: {sorted(errors)}")
    variants.append((DEFAULT_PREFIX, _default_number(widest, options.gangs), errors.pop()))
    units["driver.c"] = driver_source(module, display, tuple(variants))
    for name, text in units.items():
        (folder / name).write_text(text)
    return ([folder / name for name in units if name not in defaults.values()],
            {tier: folder / name for tier, name in defaults.items()})


def _default_number(widest: int, gangs: tuple[int, ...]) -> int:
    """The default shapes' number in the driver, which prints it in a mismatch and
    runs every length up to twice the greatest number, plus one: their widest gang
    where that is wider than every pinned one, else -1 (no pinned gang's)."""
    return widest if widest > max(gangs) else -1


def _variant(gang: int, options: Options) -> str:
    """What a mismatch's number names: a pinned gang, or the default shapes."""
    return f"gang {gang}" if gang in options.gangs else "the default shapes"


def _build_of(path: Path, cc: str, tier: str, files: list[Path], folder: Path, machine: Machine,
              options: Options) -> Build:
    flags = dict(machine.tiers())[tier]
    exe = folder / f"check-{Path(cc).name}-{tier}"
    command = (*machine.compile_command(cc), *BASE_FLAGS, *flags,
               *(machine.sanitize_flags(cc) if options.sanitize else ()), *options.extra_flags,
               "-o", str(exe), *map(str, files), "-lm")
    return Build(cc, tier, tuple(command), exe)


def _compile_all(builds: list[Build], options: Options, say: Callable[[str], None], folder: Path) -> None:
    for build in builds:
        if options.verbose:
            say(shlex.join(build.command))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda b: subprocess.run(b.command, capture_output=True, text=True), builds))
    for build, result in zip(builds, results):
        if result.returncode != 0:
            raise InternalError("emit_c", f"{build.cc} could not compile the crosscheck program at tier "
                                f"{build.tier}; the C is in {folder}\n{result.stderr.strip()[:4000]}")


def _run_all(builds: list[Build], machine: Machine, options: Options, *mode: str) -> list[Outcome]:
    def run(build: Build) -> Outcome:
        argv = [*machine.run_prefix(), str(build.exe), str(options.seed), str(options.cases), *mode]
        done = subprocess.run(argv, capture_output=True, text=True)
        return _parsed(done)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(run, builds))


def _parsed(done: subprocess.CompletedProcess) -> Outcome:
    outcome = Outcome({}, [])
    for line in done.stdout.splitlines():
        record = line.split("\t")
        if record[0] == "digest":
            outcome.digests[record[1]] = record[2]
        elif record[0] == "mismatch":
            outcome.mismatches.append(record[1:])
        elif record[0] == "time":
            outcome.seconds, outcome.cases = float(record[1]), int(record[2])
    if done.returncode not in (0, 1) or (done.returncode == 1 and not outcome.mismatches):
        outcome.failure = f"exit status {done.returncode}\n{done.stderr.strip()[-4000:]}"
    return outcome


# ---- reports ----------------------------------------------------------------------------------

def _mismatch_report(path: Path, build: Build, record: list[str], options: Options) -> str:
    function, gang, length, case, where, scalar, lane = record
    pinned = int(gang) if int(gang) in options.gangs else None
    return (f"{path}: mismatch in {function} ({build.cc}, tier {build.tier}, {_variant(int(gang), options)}): "
            f"length {length}, case {case}, {_where(where)}: scalar C {scalar}, lane C {lane}\n"
            f"  reproduce: {_reproduce(path, (build,), pinned, options)}")


def _where(where: str) -> str:
    """`out[3].y` -> 'element 3 of out, field y'; status and result as they are."""
    if "[" not in where:
        return where
    span, rest = where.split("[", 1)
    index, field = rest.split("].", 1)
    return f"{span}[{index}].{field} (element {index} of span {span}, field {field})"


def _reproduce(path: Path, builds: tuple[Build, ...], gang: int | None, options: Options) -> str:
    """The command line narrowed to these builds' compilers and tiers and to `gang` (None: every gang)."""
    compilers = ",".join(dict.fromkeys(b.cc for b in builds))
    tiers = ",".join(dict.fromkeys(b.tier for b in builds))
    words = ["nupp", "crosscheck", str(path), "--cc", compilers, "--tier", tiers]
    words += ["--gang", str(gang if gang is not None else ",".join(map(str, options.gangs)))]
    words += ["--seed", str(options.seed), "--cases", str(options.cases)]
    if options.target is not None:
        words += ["--target", options.target]
    if options.sanitize:
        words.append("--sanitize")
    words += ["--keep", str(options.keep or Path(tempfile.gettempdir()) / "nupp-crosscheck")]
    return shlex.join(words)


def _compare_digests(path: Path, builds: list[Build], outcomes: list[Outcome], machine: Machine,
                     options: Options, say: Callable[[str], None]) -> bool:
    """Every build's digests must equal the first build's; name the first value that differs."""
    first, reference = builds[0], outcomes[0]
    failed = False
    for build, outcome in zip(builds[1:], outcomes[1:]):
        for function, digest in reference.digests.items():
            if outcome.digests.get(function) != digest:
                failed = True
                say(_first_difference(path, function, first, build, machine, options))
    return failed


def _first_difference(path: Path, function: str, a: Build, b: Build, machine: Machine, options: Options) -> str:
    """Rerun both builds with a digest per case, then with every value of the first differing case."""
    dumps = [_case_digests(x, machine, options) for x in (a, b)]
    differing = [key for key in dumps[0] if key[0] == function and dumps[0][key] != dumps[1].get(key)]
    head = f"{path}: {function} differs between {a.cc} tier {a.tier} and {b.cc} tier {b.tier} (scalar C)"
    if not differing:
        return f"{head}, though no single case does; reproduce: {_reproduce(path, (a, b), None, options)}"
    _, length, case = differing[0]
    values = [_case_values(x, function, length, case, machine, options) for x in (a, b)]
    where = next((w for w in values[0] if values[0][w] != values[1].get(w)), "?")
    return (f"{head}: length {length}, case {case}, {_where(where)}: {a.cc} {values[0].get(where)}, "
            f"{b.cc} {values[1].get(where)}\n  reproduce: {_reproduce(path, (a, b), None, options)}")


def _case_digests(build: Build, machine: Machine, options: Options) -> dict[tuple[str, str, str], str]:
    argv = [*machine.run_prefix(), str(build.exe), str(options.seed), str(options.cases), "dump"]
    lines = subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()
    return {tuple(r[1:4]): r[4] for r in (line.split("\t") for line in lines) if r[0] == "case"}


def _case_values(build: Build, function: str, length: str, case: str, machine: Machine,
                 options: Options) -> dict[str, str]:
    argv = [*machine.run_prefix(), str(build.exe), str(options.seed), str(options.cases), "show",
            function, length, case]
    lines = subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()
    return {r[4]: r[5] for r in (line.split("\t") for line in lines) if r[0] == "value"}


def _summary(path: Path, module, builds: list[Build], outcomes: list[Outcome], options: Options,
             say: Callable[[str], None]) -> None:
    cases = sum(o.cases for o in outcomes)
    seconds = sum(o.seconds for o in outcomes)
    compared = cases * (len(options.gangs) + 1)
    rate = f"{cases / seconds:,.0f}" if seconds > 0 else "-"
    say(f"{path}: {len(module.functions)} functions, {compared} cases compared "
        f"({len(builds)} builds: {', '.join(sorted(set(b.cc for b in builds)))} x {', '.join(options.tiers)}; "
        f"gangs {', '.join(map(str, options.gangs))} and each tier's default shapes), "
        f"{rate} cases/s in the C harness")


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run it as `nupp crosscheck`")
