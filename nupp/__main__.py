"""The command line's entry: `nupp` (pyproject.toml's console script) and `python -m nupp`.

It runs runtime/cli.py's main, and answers Ctrl-C as that main does ("nupp: interrupted",
exit 130) where that main cannot: during the imports before its own handler (LuaJIT, NumPy:
a large part of a second) and after it returns (the interpreter's shutdown runs Python code,
threading's and atexit's), where a KeyboardInterrupt printed a traceback (or was swallowed).
The window that remains is the interpreter's start-up until this module's first lines arm
the handler (site and the venv's .pth files, the console script's first line,
nupp/__init__.py's light imports, `import signal`).  SIGINT ignored where nupp starts stays ignored here.
"""

import os
import signal
import sys

EXIT_INTERRUPTED = 130  # runtime/cli.py's, not imported from there: that import is the window
INTERRUPTED = b"nupp: interrupted\n"


def _stop(*_signal) -> None:
    """End the process as interrupted, skipping Python's shutdown (which a second Ctrl-C could
    interrupt): the output flushed, where it can be (not from within a write it interrupted)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, RuntimeError):  # gone, closed, or a reentrant flush
            pass
    os.write(sys.stderr.fileno(), INTERRUPTED)
    os._exit(EXIT_INTERRUPTED)


# Armed as soon as this module runs (both entries import it first thing), not at main's first
# line: the console script's import of it and `python -m`'s run of its top level come before.
# Not KeyboardInterrupt during the imports: importlib can swallow it (raised in one of its weakref
# callbacks: "Exception ignored", a traceback, and the program runs on).
_HANDLING = signal.getsignal(signal.SIGINT)  # Python's KeyboardInterrupt; SIG_IGN if inherited so
_STOPPING = signal.SIG_IGN if _HANDLING == signal.SIG_IGN else _stop
signal.signal(signal.SIGINT, _STOPPING)


def main() -> int:
    from nupp.runtime.cli import main as run_command
    signal.signal(signal.SIGINT, _HANDLING)
    try:
        return run_command()
    except KeyboardInterrupt:  # before cli's main reached its own handler (parsing the arguments)
        _stop()
    finally:
        signal.signal(signal.SIGINT, _STOPPING)  # for whatever Python runs after main: its shutdown


if __name__ == "__main__":
    sys.exit(main())
