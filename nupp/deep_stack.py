"""Running the compiler on deep trees.

Every stage walks trees recursively, and a legal program can nest deeply: a
left-associative chain of thousands of `+` is one LuaJIT accepts, and the
front end admits trees up to `frontend.nesting.MAX_TREE_DEPTH` deep.  The
pipeline's entry points (nupp/pipeline.py) therefore run `with_deep_stack`:
in a thread with a deep stack, a raised recursion limit and the cyclic
garbage collector paused.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import sys
import threading
from typing import Callable

# The recursion limit admits a tree of MAX_TREE_DEPTH with a dozen Python frames
# per level; the stack holds that many frames at 2 KiB each (a frame called from
# C costs well under 1 KiB of C stack; one called from Python almost none).
DEEP_RECURSION_LIMIT = 250_000
DEEP_STACK_BYTES = 512 * 1024 * 1024

_deep = threading.local()     # marks the threads that _run_deep starts
_settings_lock = threading.Lock()
_settings_users = 0
_saved_settings: tuple[int, bool] = (0, False)


def with_deep_stack(fn):
    """Run `fn` in a thread with a deep stack and a raised recursion limit,
    the cyclic garbage collector paused (the compiler's trees are acyclic;
    collecting while a large program's million nodes are built costs a third
    of the front end's time).  The caller waits; what `fn` returns or raises
    comes back.  A call from inside such a thread runs directly."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if getattr(_deep, "active", False):
            return fn(*args, **kwargs)
        return _run_deep(functools.partial(fn, *args, **kwargs))

    return run


def _run_deep(work: Callable):
    outcome: dict = {}

    def body():
        _deep.active = True
        try:
            outcome["value"] = work()
        except BaseException as err:  # noqa: BLE001 - handed to the waiting caller
            outcome["error"] = err

    with compiling():
        thread = _start_thread(body)
        if thread is None:  # no thread to be had: the caller's own stack will have to do
            body()
        else:
            thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _start_thread(body: Callable) -> threading.Thread | None:
    try:
        previous = threading.stack_size(DEEP_STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform that cannot size stacks
        return None
    try:
        # a daemon: an interrupted caller (Ctrl-C) does not wait for it
        thread = threading.Thread(target=body, name="nupp-compiler", daemon=True)
        thread.start()
        return thread
    except RuntimeError:
        return None
    finally:
        threading.stack_size(previous)


@contextlib.contextmanager
def compiling():
    """While compiling: the recursion limit raised and the cyclic garbage
    collector paused.  A caller that runs several steps on one module (compile
    its @aot functions, then translate it) holds this around all of them, so
    the collector does not walk the module's tree between the steps."""
    _enter_deep_settings()
    try:
        yield
    finally:
        _leave_deep_settings()


def _enter_deep_settings() -> None:
    global _settings_users, _saved_settings
    with _settings_lock:
        if _settings_users == 0:
            _saved_settings = (sys.getrecursionlimit(), gc.isenabled())
            sys.setrecursionlimit(max(_saved_settings[0], DEEP_RECURSION_LIMIT))
            gc.disable()
        _settings_users += 1


def _leave_deep_settings() -> None:
    global _settings_users
    with _settings_lock:
        _settings_users -= 1
        if _settings_users == 0:
            limit, collecting = _saved_settings
            sys.setrecursionlimit(limit)
            if collecting:
                gc.enable()


