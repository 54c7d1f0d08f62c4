"""The fuzz loop: generate, check, run in every execution, compare, minimize, save.

    fuzzer = Fuzzer(Options(minutes=3))
    report = fuzzer.run()          # report.text(): coverage table, throughput, failures

Each batch is `batch_size` generated programs.  Each is first compiled on its
own in process up to the C (`compile_in_process`: a program the generator
wrote is well-typed, so a refusal is a failure, as is an internal error on
the way) and measured for coverage; the accepted ones share
one module (one C compile per execution serves them all), run in every
execution through the worker pool, every call compared with the
interpreter's.  A program that defines a name twice runs alone: the
executions agree if all refuse it with the same diagnostic, or all run it
alike and it computes what its twin (the earlier definition renamed) does.

A failure is minimized (minimize.py) and saved (regressions.py) once per
signature (its kind, the family of the execution, the head of its message)
per run; later ones of that signature are counted.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from nupp.emit_c.lane import emit_lane_module
from nupp.emit_c.scalar import emit_module
from nupp.emit_spirv import emit_module as emit_device_module
from nupp.errors import NuppError, Source
from nupp.pipeline import compile_module, lanes_at_tier, translate

from ..spirv_tools import validate_kernels
from .coverage import measure, table
from .generator import generate
from .program import Program, module_text
from .runs import FRONT_END, REFERENCE, CallSpec, Execution, call_plan, difference, executions_matching, failed_itself
from .worker import Entry, Job, JobResult, Pool

LOAD_TIMEOUT = 600.0


@dataclass
class Options:
    minutes: float = 3.0
    seed: int = 0
    batch_size: int = 32
    jobs: int = 1
    executions: list[str] = field(default_factory=list)   # name patterns; empty: all
    avoid: frozenset = frozenset()
    call_timeout: float = 20.0
    minimize_seconds: float = 600.0
    save_dir: Optional[Path] = None
    known: dict = field(default_factory=dict)    # signature -> known bug: reported, not failing
    log: Callable[[str], None] = print


@dataclass
class Failure:
    """A program whose run in `execution` differs from the reference (or fails by itself)."""

    program: Program
    execution: Execution
    kind: str            # refused, exception, load, hang, crash, error-text, result, spans, twin
    detail: str
    call: Optional[CallSpec] = None

    @property
    def signature(self) -> str:
        family = re.sub(r"\d+|-(gcc|clang)|-(baseline|v\d)", "", self.execution.name)
        head = "" if self.kind in ("spans", "result") else re.sub(r"\d+", "N", _message_head(self.detail))
        return f"{self.kind} | {family} | {head}"

    def describe(self) -> str:
        call = f" in the call with {self.call.label()}" if self.call else ""
        return f"{self.kind} in {self.execution.name}{call}: {self.detail}"


def _message_head(detail: str) -> str:
    """The message's first two lines without the places and names they mention (files, IR
    positions and locals, the tier a C compiler built for), so one bug has one head."""
    head = " ".join(detail.splitlines()[:2])
    head = re.sub(r"\S*/\S*|\S+\.(nupp|c)\b(:\d+)*:?|\w+@\d+:\d+:?|%\w+|\((baseline|v\d)\)", "", head)
    return re.sub(r"\s+", " ", head)[:160]


def entry_of(program: Program, calls: Optional[list[CallSpec]] = None) -> Entry:
    spans = tuple((s.struct, s.writable) for s in program.spans)
    return Entry(program.entry.name, spans, tuple(program.scalars), program.result,
                 tuple(calls if calls is not None else call_plan(bool(program.spans))))


def _front_end(source: Source):
    """(the scalar IR, None), or (None, ("refused" | "exception", text)) where the front end fails."""
    try:
        return compile_module(source), None
    except NuppError as err:
        return None, ("refused", str(err))
    except Exception as err:  # noqa: BLE001 - any other failure of the front end is a bug
        return None, ("exception", f"{type(err).__name__}: {err}")


def front_end(program: Program, path: str) -> Optional[tuple[str, str]]:
    """None when the front end accepts the program alone; else ("refused" | "exception", text)."""
    return _front_end(Source(path, module_text([program])))[1]


def compile_in_process(program: Program, path: str, executions: list[Execution]) -> Optional[tuple[Execution, str, str]]:
    """Where nupp fails on a program alone before any C compiler runs, as (execution, kind,
    detail): the front end refuses it, or translating it for the interpreter or emitting the
    scalar or lane C of one of `executions` raises, which a worker would report as a failure
    to load.  Cheap, so a batch is spared a program that would fail to load."""
    source = Source(path, module_text([program]))
    module, refusal = _front_end(source)
    if refusal:
        return (FRONT_END, *refusal)
    emit = {"interp": lambda e: translate(source, None), "scalar": lambda e: emit_module(module, path, "fuzz_"),
            "lane": lambda e: emit_lane_module(lanes_at_tier(module, e.tier, e.gang), path, "fuzz_"),
            "spirv": lambda e: validate_kernels(emit_device_module(module, path))}
    for execution in executions:
        try:
            emit[execution.mode](execution)
        except Exception as err:  # noqa: BLE001 - the same words a worker would report
            return execution, "load", f"{type(err).__name__}: {err}"
    return None


def emitters(executions: list[Execution]) -> list[Execution]:
    """One execution per distinct text nupp emits for them: the interpreter's Lua, the scalar C,
    the lane C of each gang at each tier's loop shapes (the same with either compiler)."""
    out: dict = {}
    for e in executions:
        out.setdefault((e.mode, (e.gang, e.tier) if e.mode == "lane" else None), e)
    return list(out.values())


class Runner:
    """Runs modules of programs in executions and finds where they disagree."""

    def __init__(self, pool: Pool, executions: list[Execution], workdir: Path, call_timeout: float):
        self.pool = pool
        self.executions = executions
        self.workdir = workdir
        self.call_timeout = call_timeout
        self.emitters = emitters(executions)

    def write(self, name: str, programs: list[Program]) -> str:
        path = self.workdir / f"{name}.nupp"
        path.write_text(module_text(programs))
        return str(path)

    def run(self, path: str, entries: list[Entry], executions: Optional[list[Execution]] = None) -> list[JobResult]:
        executions = executions or self.executions
        return self.pool.run_all([Job(path, e, tuple(entries)) for e in executions], LOAD_TIMEOUT, self.call_timeout)

    def failures(self, programs: list[Program], entries: list[Entry], results: list[JobResult],
                 executions: list[Execution]) -> list[Failure]:
        """Per program, its first failure in each execution (the reference's own first)."""
        reference = results[0]
        found = []
        for execution, result in zip(executions, results):
            if result.load[0] != "ok":
                found += [Failure(p, execution, "load", result.load[1]) for p in programs]
                continue
            for e, (program, entry) in enumerate(zip(programs, entries)):
                for c, call in enumerate(entry.calls):
                    mine = result.outcomes.get((e, c))
                    theirs = reference.outcomes.get((e, c))
                    if mine is None or theirs is None or theirs.exception and execution != REFERENCE:
                        continue
                    diff = difference(theirs, mine) if execution != REFERENCE else failed_itself(mine)
                    if diff:
                        found.append(Failure(program, execution, diff[0], diff[1], call))
                        break
        return found

    def check(self, programs: list[Program], calls: Optional[list[CallSpec]] = None,
              executions: Optional[list[Execution]] = None, name: str = "batch") -> list[Failure]:
        """Run `programs` in one module in every execution; the failures."""
        executions = executions or self.executions
        entries = [entry_of(p, calls) for p in programs]
        results = self.compare(self.write(name, programs), entries, executions)
        failures = self.failures(programs, entries, results, executions)
        unloaded = [e for e, r in zip(executions, results) if r.load[0] != "ok"]
        if not unloaded or len(programs) == 1:
            return failures
        return [f for f in failures if f.kind != "load"] + self.unloaded(programs, calls, unloaded, name)

    def compare(self, path: str, entries: list[Entry], executions: list[Execution]) -> list[JobResult]:
        """The results of a module in `executions`, the first (the reference) first: an entry that
        fails by itself there (hangs, crashes) is not run again in the others."""
        results = self.run(path, entries, executions[:1])
        if len(executions) > 1:
            failed = {e for (e, _), o in results[0].outcomes.items() if failed_itself(o)}
            rest = [replace(entry, calls=()) if e in failed else entry for e, entry in enumerate(entries)]
            results += self.run(path, rest, executions[1:])
        return results

    def check_module(self, path: str, entries: list[Entry]) -> list[Failure]:
        """The failures of a written module's entries in every execution (a saved case)."""
        results = self.compare(path, entries, self.executions)
        return self.failures([None] * len(entries), entries, results, self.executions)

    def unloaded(self, programs: list[Program], calls, unloaded: list[Execution], name: str) -> list[Failure]:
        """A module that fails to load in `unloaded`: which programs fail alone (tried in the first
        of them; each is taken to fail in all), then the others run again there."""
        culprits = []
        for k, p in enumerate(programs):
            alone = self.check([p], [], [unloaded[0]], f"{name}_alone{k}")
            culprits += [(p, alone[0].detail)] if alone else []
        if not culprits:
            return [Failure(programs[0], unloaded[0], "load", "the module fails to load; no program alone does")]
        failures = [Failure(p, e, "load", detail) for p, detail in culprits for e in unloaded]
        rest = [p for p in programs if all(p is not c for c, _ in culprits)]
        comparing = unloaded if REFERENCE in unloaded else [REFERENCE, *unloaded]
        return failures + (self.check(rest, calls, comparing, f"{name}_rest") if rest else [])

    def check_isolated(self, program: Program, name: str) -> list[Failure]:
        """A program defining a name twice: refused alike everywhere, or run alike and like its twin."""
        entry = entry_of(program)
        results = self.run(self.write(name, [program]), [entry])
        loads = {r.load for r in results}
        if all(r.load[0] == "refused" for r in results) and len(loads) == 1:
            return []
        failures = self.failures([program], [entry], results, self.executions)
        if failures or results[0].load[0] != "ok":
            return failures or [Failure(program, REFERENCE, "load", results[0].load[1])]
        twin = self.run(self.write(name + "_twin", [program.twin]), [entry], [REFERENCE])[0]
        for c, call in enumerate(entry.calls):
            mine, theirs = results[0].outcomes.get((0, c)), twin.outcomes.get((0, c))
            if mine and theirs:
                theirs.error = theirs.error and theirs.error.replace(name + "_twin.nupp", name + ".nupp")
                diff = difference(theirs, mine)
                if diff:
                    return [Failure(program, REFERENCE, "twin", f"unlike its twin: {diff[1]}", call)]
        return []


@dataclass
class Report:
    programs: int = 0
    seconds: float = 0.0
    coverage: Counter = field(default_factory=Counter)
    failures: dict = field(default_factory=dict)       # signature -> [Failure]
    saved: list = field(default_factory=list)          # paths of saved regressions
    known: Counter = field(default_factory=Counter)    # known bug -> times seen
    refusals_agreed: int = 0

    @property
    def per_minute(self) -> float:
        return self.programs / (self.seconds / 60) if self.seconds else 0.0

    def text(self) -> str:
        lines = [table(self.coverage, self.programs), "",
                 f"{self.programs} programs in {self.seconds:.0f} s: {self.per_minute:.1f} programs per minute",
                 f"{self.refusals_agreed} programs defining a name twice, refused alike in every execution"]
        lines += [f"known bug, seen {n} times: {bug}" for bug, n in self.known.items()]
        if not self.failures:
            lines.append("no disagreements" + " but the known bugs" * bool(self.known))
        for signature, failures in self.failures.items():
            lines.append(f"FAILURE x{len(failures)}: {signature}\n    first: {failures[0].describe()[:600]}")
        lines += [f"saved: {p}" for p in self.saved]
        return "\n".join(lines)


class Fuzzer:
    def __init__(self, options: Options):
        self.options = options
        self.workdir = Path(tempfile.mkdtemp(prefix="nupp-fuzz-"))
        self.pool = Pool(options.jobs, str(self.workdir / "cache"))
        self.executions = executions_matching(options.executions)
        self.runner = Runner(self.pool, self.executions, self.workdir, options.call_timeout)
        self.report = Report()

    def run(self) -> Report:
        o = self.options
        o.log(f"fuzzing for {o.minutes:g} min from seed {o.seed}, batches of {o.batch_size}, "
              f"{len(self.executions)} executions: {', '.join(e.name for e in self.executions)}")
        start = time.monotonic()
        deadline = start + o.minutes * 60
        batch, last = 0, 0.0
        try:
            # a batch starts only where one as long as the last ends by the deadline: the budget is
            # the run's wall time (a batch of every execution takes minutes on 2 cores)
            while time.monotonic() + last < deadline or batch == 0:
                began = time.monotonic()
                seeds = range(o.seed + batch * o.batch_size, o.seed + (batch + 1) * o.batch_size)
                self.batch(batch, seeds)
                batch += 1
                last = time.monotonic() - began
                self.report.seconds = time.monotonic() - start
                o.log(f"batch {batch}: {self.report.programs} programs, {sum(map(len, self.report.failures.values()))}"
                      f" failures, {self.report.per_minute:.1f} programs/min")
        finally:
            self.report.seconds = time.monotonic() - start
            self.close()
        return self.report

    def batch(self, number: int, seeds) -> None:
        programs = [generate(seed, f"p{seed}", self.options.avoid) for seed in seeds]
        accepted = []
        for p in programs:
            self.report.coverage.update(measure(module_text([p]), f"p_{p.ident}.nupp"))
            failed = None if p.isolated else compile_in_process(p, f"{p.ident}.nupp", self.runner.emitters)
            if failed:
                self.found([Failure(p, *failed)])
            elif not p.isolated:
                accepted.append(p)
        self.found(self.runner.check(accepted, name=f"batch{number}"))
        for p in programs:
            if p.isolated:
                failures = self.runner.check_isolated(p, f"alone_{p.ident}")
                self.report.refusals_agreed += not failures
                self.found(failures)
        self.report.programs += len(programs)

    def found(self, failures: list[Failure]) -> None:
        from .minimize import minimize
        from .regressions import save

        for f in failures:
            self.options.log(f"  {f.program.ident}: {' '.join(f.describe().split())[:300]}")
            if f.signature in self.options.known:
                self.report.known[self.options.known[f.signature]] += 1
                continue
            seen = f.signature in self.report.failures
            self.report.failures.setdefault(f.signature, []).append(f)
            if seen or self.options.save_dir is None:
                continue
            small = minimize(f, self.runner, self.options.minimize_seconds, self.options.log)
            self.report.saved.append(save(small, self.options.save_dir))
            self.options.log(f"  saved {self.report.saved[-1]}")

    def close(self) -> None:
        self.pool.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
