"""Executions run in child processes, each call under a timeout.

A hung native call cannot be interrupted inside the process that made it, so
every execution runs in a worker process (multiprocessing, spawned): the
parent sends a `Job` (a module, an execution, the entries and calls to make)
and reads back one message per call.  A call that gives no answer within the
timeout is a hang: the worker is killed, a fresh one is started and the job
resumes with the next entry (that entry's other calls are not made); a worker
that dies is a crash, handled the same way.

    pool = Pool(jobs=2, cache_dir=...)
    results = pool.run_all([Job(path, execution, entries), ...], load_timeout, call_timeout)
    results[k].load        ("ok", execution name) | ("refused", diagnostics) | ("exception", text)
    results[k].outcomes    {(entry index, call index): Outcome}
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
from dataclasses import dataclass, field, replace
from typing import Optional

from .runs import CallSpec, Execution, Outcome, arguments, canonical_result


@dataclass(frozen=True)
class Entry:
    """A function to call and how: its span parameters (struct, writable), scalar widths, result type."""

    function: str
    spans: tuple[tuple[str, bool], ...]
    scalars: tuple[str, ...]
    result: str
    calls: tuple[CallSpec, ...]


@dataclass(frozen=True)
class Job:
    path: str
    execution: Execution
    entries: tuple[Entry, ...]
    resume: tuple[int, int] = (0, 0)   # the first (entry, call) to make


@dataclass
class JobResult:
    load: tuple[str, str] = ("exception", "not run")
    outcomes: dict = field(default_factory=dict)


# ---- the child -----------------------------------------------------------------------------------

# Fills 64 KiB of stack below the caller with 0xFF: called right before each call, so native code
# that reads a stack slot it never wrote (a spilled lane mask reloaded wider) reads garbage every
# time, as it would in a long-running program, instead of the zeros of a fresh stack.
DIRTY_STACK_C = """
void nupp_fuzz_dirty_stack(void);
void nupp_fuzz_dirty_stack(void)
{
    volatile unsigned char junk[1 << 16];
    for (unsigned i = 0; i < sizeof junk; i++)
        junk[i] = 0xFF;
}
"""


def _stack_dirtier():
    import ctypes
    from nupp.targets.toolchain import build_library, find_toolchain
    return ctypes.CDLL(str(build_library(DIRTY_STACK_C, find_toolchain("gcc"), "dirty_stack.c"))).nupp_fuzz_dirty_stack


def serve(connection, environment: dict) -> None:
    """The worker's loop: load each job's module in its execution, make its calls, report each."""
    os.environ.update(environment)
    from nupp.errors import NuppError
    from nupp.runtime.api import NuppRuntimeError, load

    dirty_stack = _stack_dirtier()
    while True:
        job = connection.recv()
        if job is None:
            return
        try:
            module = load(job.path, **job.execution.load_arguments())
        except NuppError as err:
            connection.send(("load", ("refused", str(err))))
            continue
        except Exception as err:  # noqa: BLE001 - reported: any other failure to load is a bug
            connection.send(("load", ("exception", f"{type(err).__name__}: {err}")))
            continue
        connection.send(("load", ("ok", module.execution)))
        for e, c in _calls_from(job):
            entry = job.entries[e]
            connection.send(("outcome", ((e, c), _call(module, entry, entry.calls[c], NuppRuntimeError,
                                                       dirty_stack))))
        connection.send(("done", None))


def _calls_from(job: Job):
    first_entry, first_call = job.resume
    for e in range(first_entry, len(job.entries)):
        for c in range(first_call if e == first_entry else 0, len(job.entries[e].calls)):
            yield e, c


def _call(module, entry: Entry, call: CallSpec, runtime_error, dirty_stack) -> Outcome:
    try:
        args = arguments(module, list(entry.spans), list(entry.scalars), call)
        function = getattr(module, entry.function)
    except Exception as err:  # noqa: BLE001
        return Outcome(exception=f"{type(err).__name__}: {err}")
    try:
        dirty_stack()
        outcome = Outcome(result=canonical_result(function(*args), entry.result))
    except runtime_error as err:
        outcome = Outcome(error=str(err))
    except Exception as err:  # noqa: BLE001 - a Python exception reaching the user is a bug
        outcome = Outcome(exception=f"{type(err).__name__}: {err}")
    outcome.spans = list(args[:len(entry.spans)])
    return outcome


# ---- the parent ------------------------------------------------------------------------------------

JOBS_PER_PROCESS = 40  # then a fresh process: every load keeps a LuaJIT state and a library mapped


class Worker:
    """One child process, restarted after a hang or a crash, and after JOBS_PER_PROCESS jobs."""

    def __init__(self, environment: dict):
        self.environment = environment
        self.process = None
        self.connection = None
        self.jobs = 0

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=serve, args=(child, self.environment), daemon=True)
        self.process.start()
        child.close()

    def stop(self) -> None:
        if self.process is not None:
            if self.process.is_alive():
                self.process.kill()
            self.process.join()
            self.connection.close()
        self.process = None

    def close(self) -> None:
        if self.process is not None and self.process.is_alive():
            try:
                self.connection.send(None)
                self.process.join(5)
            except OSError:
                pass
        self.stop()

    def receive(self, timeout: float):
        """The next message, or ("lost", "hang: ..." | "crash: ...") after which the worker is gone."""
        try:
            if self.connection.poll(timeout):
                return self.connection.recv()
        except (EOFError, OSError):
            pass
        alive = self.process.is_alive()
        code = self.process.exitcode
        self.stop()
        if alive:
            return "lost", f"hang: no answer within {timeout:g} s"
        return "lost", f"crash: the worker died (exit code {code})"

    def run(self, job: Job, load_timeout: float, call_timeout: float) -> JobResult:
        result = JobResult()
        pending = list(_calls_from(job))
        self.jobs += 1
        if self.jobs % JOBS_PER_PROCESS == 0:
            self.close()
        while True:
            if self.process is None:
                self.start()
            self.connection.send(job)
            kind, value = self.receive(load_timeout)
            if kind != "load":
                result.load = ("exception", f"{value} (loading)")
                return result
            result.load = value
            if value[0] != "ok":
                return result
            while pending:
                kind, value = self.receive(call_timeout)
                if kind == "lost":  # the entry's other calls are not made: one timeout per entry
                    result.outcomes[pending[0]] = Outcome(exception=value)
                    pending = [k for k in pending if k[0] != pending[0][0]]
                    break
                result.outcomes[value[0]] = value[1]
                pending.remove(value[0])
            else:
                kind, _ = self.receive(call_timeout)
                if kind == "lost":
                    self.stop()
                return result
            if not pending:
                return result
            job = replace(job, resume=pending[0])


class Pool:
    """`jobs` workers sharing a compile cache folder; runs jobs concurrently, one per worker."""

    def __init__(self, jobs: int, cache_dir: str):
        # NUPP_THREADS_MIN=0: an execution with threads (runs.py) splits loops of any length between them
        self.workers = [Worker({"NUPP_CACHE_DIR": cache_dir, "NUPP_THREADS_MIN": "0"}) for _ in range(max(1, jobs))]

    def run_all(self, jobs: list[Job], load_timeout: float, call_timeout: float) -> list[JobResult]:
        results: list[Optional[JobResult]] = [None] * len(jobs)
        todo: queue.Queue = queue.Queue()
        for k in range(len(jobs)):
            todo.put(k)

        def drive(worker: Worker) -> None:
            while True:
                try:
                    k = todo.get_nowait()
                except queue.Empty:
                    return
                results[k] = worker.run(jobs[k], load_timeout, call_timeout)

        threads = [threading.Thread(target=drive, args=(w,)) for w in self.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    def close(self) -> None:
        for w in self.workers:
            w.close()
