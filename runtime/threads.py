"""How many threads lane C's span loops run on: a setting of the run, never part of the compiled code.

    setting = thread_setting(threads)    # threads=None: NUPP_THREADS, else 1
    setting.count, setting.min_iterations

A library with a loop that may run on threads (emit_c/lane_threads.py)
exports `nu_set_threads(count, min_iterations)`, and whoever calls its
functions sets them first, on the calling thread: the Lua binding
(runtime/lua/native.lua, from what the host sets, runtime/host.py) and
Python's fast calls (runtime/fast_call.c).  So the count is not in the C,
the compile cache key or the module cache's (runtime/module_cache.py leaves
RUN_TIME_VARIABLES out), and one library serves every count, even two
`nupp.load`s of one module in one process with different counts.

The count comes from `nupp run --threads N`, `nupp.load(..., threads=N)`,
else NUPP_THREADS, else 1.  A loop whose whole gangs hold fewer than
`min_iterations` iterations stays on the calling thread (NUPP_THREADS_MIN,
else MIN_ITERATIONS): handing a loop to threads and waiting for them costs
more than a short loop saves.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from nupp.paths import NuppEnvironmentError

THREADS_VARIABLE = "NUPP_THREADS"
MIN_VARIABLE = "NUPP_THREADS_MIN"
RUN_TIME_VARIABLES = (THREADS_VARIABLE, MIN_VARIABLE)  # not part of any compiled module's key
MAX_THREADS = 1024

# Measured on this 2-core machine (python -m bench.thread_speed --crossover: every loop on 2 threads
# against 1 by span length, GCC's libgomp): simd, the cheapest iterations (~2 ns each at 1 thread),
# ran 1.7-1.8x faster from 2^14 to 2^16 elements while the other core was free, and lost below 2^13
# (0.3-0.8x at 2^10-2^13: starting the threads and joining them costs microseconds).  2^15 keeps
# the cheapest loops on one thread until two gain.  Where other processes keep the cores busy, a
# parallel region waits up to a scheduler time slice for its second thread: a count above the free
# cores loses then, whatever the length.
MIN_ITERATIONS = 1 << 15


@dataclass(frozen=True)
class ThreadSetting:
    count: int = 1
    min_iterations: int = MIN_ITERATIONS


COUNT_WANTED = f"a whole number from 1 to {MAX_THREADS}"

# A whole number as a variable or --threads writes it: ASCII digits, an optional +, blanks around.
# A built program's boot.lua reads the variables without Python, by the same rule in Lua's
# pattern syntax (environment_rule): the two patterns must say the same.
WHOLE = re.compile(r"[ \t\n\v\f\r]*\+?([0-9]+)[ \t\n\v\f\r]*")
WHOLE_LUA = "^%s*%+?(%d+)%s*$"
BAD_VARIABLE = "the environment variable {name} must be {wanted}, not '{text}'; set it so or unset it"


@dataclass(frozen=True)
class Variable:
    """A setting read from the environment: a whole number in [low, high]; unset or empty: `default`."""

    name: str
    default: int
    low: int
    high: int
    wanted: str

    def read(self) -> int:
        """Its value in this process's environment, else NuppEnvironmentError (BAD_VARIABLE)."""
        text = os.environ.get(self.name)
        if not text:
            return self.default
        value = _whole(text, self.low, self.high)
        if value is None:
            raise NuppEnvironmentError(BAD_VARIABLE.format(name=self.name, wanted=self.wanted, text=text))
        return value


COUNT = Variable(THREADS_VARIABLE, 1, 1, MAX_THREADS, COUNT_WANTED)
MINIMUM = Variable(MIN_VARIABLE, MIN_ITERATIONS, 0, 2**62, "a whole number of at least 0")


def thread_setting(threads: int | None = None) -> ThreadSetting:
    """The setting of a run: `threads` (checked by the caller: check_count), else
    NUPP_THREADS, else 1; NUPP_THREADS_MIN, else MIN_ITERATIONS.  A variable that
    is not a number in range raises NuppEnvironmentError."""
    return ThreadSetting(threads if threads is not None else COUNT.read(), MINIMUM.read())


def environment_rule() -> dict:
    """The rule thread_setting reads the variables by, for a built program's boot.lua
    (runtime/project/boot.lua): the pattern of a whole number (its digits captured),
    the error's text ({name}, {wanted}, {text} in it) and each variable, by the
    ThreadSetting field it sets, its bounds as decimal digits (compared exactly)."""
    return {"whole": WHOLE_LUA, "message": BAD_VARIABLE, "variables": {
        field: {"name": v.name, "default": v.default, "low": str(v.low), "high": str(v.high), "wanted": v.wanted}
        for field, v in (("count", COUNT), ("min_iterations", MINIMUM))}}


def check_count(count: int, where: str) -> int:
    """`count` if it is a thread count in range, else ValueError (naming `where` it came from)."""
    if not 1 <= count <= MAX_THREADS:
        raise ValueError(f"{where} must be {COUNT_WANTED}, not {count}")
    return count


def parse_count(text: str, where: str) -> int:
    """A thread count written as text (`--threads`), else ValueError."""
    value = _whole(text, 1, MAX_THREADS)
    if value is None:
        raise ValueError(f"{where} must be {COUNT_WANTED}, not '{text}'")
    return value


def _whole(text: str, low: int, high: int) -> int | None:
    """The number `text` writes (WHOLE) if it is one in [low, high], else None."""
    written = WHOLE.fullmatch(text)
    if written is None:
        return None
    value = int(written[1])
    return value if low <= value <= high else None
