"""Running Lua on a C stack deep enough for LuaJIT's own stack limit to fire first.

LuaJIT limits a program's recursion by its Lua stack (LUAI_MAXSTACK slots:
"stack overflow"), not by the C stack, which C functions that call back into
Lua (string.gsub with a function or table, table.sort's comparator,
tostring/print/string.format through __tostring, load's reader, metamethods
reached from C) grow on every level.  string.gsub alone takes some 10 KB of C
stack per level (its luaL_Buffer) and about 11 Lua slots, so its recursion
needs some 60 MB of C stack before LuaJIT's limit: on the main thread's
8 MB it crashed the process.  Lua runs here on a thread with a 256 MB stack:
address space reserved, not memory, until a recursion touches it.  Nested
coroutines each have a Lua stack of their own: coroutines.lua bounds them by
the C stack left: a resume needs one coroutine's worth of this stack free.
"""

from __future__ import annotations

import threading

STACK_BYTES = 256 << 20

_deep = threading.local()  # .inside: this thread is one that on_deep_stack started


def on_deep_stack(call, *args):
    """call(*args) on a thread with a STACK_BYTES C stack; its result, or what it raised.
    Already on such a thread (Lua called back into Python, which runs Lua again),
    directly: the LuaJIT state's lock belongs to this thread."""
    if getattr(_deep, "inside", False):
        return call(*args)
    outcome: list = []
    done = threading.Event()

    def body():
        _deep.inside = True
        try:
            outcome.append((True, call(*args)))
        except BaseException as error:  # re-raised on the caller's thread
            outcome.append((False, error))
        finally:
            done.set()

    previous = threading.stack_size(STACK_BYTES)
    try:
        thread = threading.Thread(target=body, name="nupp-lua", daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous)
    interrupt = _wait(done)
    if interrupt is not None:  # after the run, as when Lua ran on this thread
        raise interrupt
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def _wait(done: threading.Event) -> BaseException | None:
    """Wait for the run to end, even through a KeyboardInterrupt (Ctrl-C while a
    module loads): the run goes on, so the caller sees the interrupt only once
    it has ended, as when Lua ran on the calling thread; that interrupt, if any.
    (Not Thread.join: interrupted, it takes a running thread for stopped.)"""
    interrupt = None
    while True:
        try:
            done.wait()
            return interrupt
        except KeyboardInterrupt as caught:
            interrupt = caught
