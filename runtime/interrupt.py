"""Ctrl-C during `nupp run`: the program stops, its C stdio output is flushed,
"nupp: interrupted" goes to standard error and the exit status is 130.

Python cannot do it (its SIGINT handler runs on the main thread, which waits
while the Lua thread holds the GIL), nor LuaJIT (its hooks do not run in
compiled traces, native code or a blocked read): runtime/interrupt.c does it
from a C signal handler and a watcher thread.  Only the command line arms it,
around the program's run, and then hands SIGINT back as it was: a program
loaded through the Python API leaves the user's process's signal handling
alone.  Without a C compiler, SIGINT's default action stops the program
instead (no message, unflushed output lost; the status a shell shows is 130).
A SIGINT that was ignored when nupp started (a shell's background job, nohup)
stays ignored, as in every POSIX tool (interrupt.c's arm says so for built
programs too).

The contract at the run's end: every Ctrl-C during `nupp run` ends it with
status 130 and "nupp: interrupted", whoever takes it.  One that interrupt.c's
handler takes while armed stops the process, and the disarm at the run's end
then never returns (the watcher is flushing and exiting: nothing after the
run races it, and no run reports success after it).  One that comes after the
disarm goes to the handling restored (Python's: KeyboardInterrupt, which the
command line turns into the same message and status, no traceback).
"""

from __future__ import annotations

import ctypes
import signal
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from nupp.paths import NuppEnvironmentError
from nupp.targets.toolchain import build_library, find_toolchain

SOURCE = Path(__file__).resolve().parent / "interrupt.c"


@lru_cache(maxsize=None)
def _library(cc: str) -> ctypes.CDLL | None:
    """interrupt.c built (once, then from the cache) and loaded; None without a usable compiler."""
    try:
        path = build_library(SOURCE.read_text(), find_toolchain(cc), "interrupt.c")
        library = ctypes.CDLL(str(path))
    except (NuppEnvironmentError, OSError):  # no compiler, or one for another machine (--cc)
        return None
    library.nu_interrupt_arm.argtypes = (ctypes.c_char_p, ctypes.c_int, ctypes.c_int)
    library.nu_interrupt_disarm.argtypes = ()
    return library


@contextmanager
def stops_on_interrupt(message: str, status: int, cc: str = "gcc"):
    """Within it, SIGINT ends the process: C stdio flushed, `message` on standard error, exit `status`."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # ignored by who started us: it stays so
        yield
        return
    library = _library(cc)
    armed = library is not None and library.nu_interrupt_arm(message.encode() + b"\n", status, 1) == 0
    previous = None if armed else signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        if armed:
            library.nu_interrupt_disarm()
        else:
            signal.signal(signal.SIGINT, previous)
