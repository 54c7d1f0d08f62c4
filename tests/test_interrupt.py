"""Ctrl-C (SIGINT) stops a running program within a second, by doing the thing:
each program runs as a child process, prints "running" (flushed), then spins
-- a loop LuaJIT compiles, the same with the JIT off, a long native @aot call
(scalar and lane C), a span loop on two threads, a read of standard input, a
Python callback (the compile of a required module), a write blocked on a full
pipe -- and gets one SIGINT.  It must exit with status 130, "nupp:
interrupted" (a built program: "NAME: interrupted") on standard error, no
traceback, and what it wrote before the signal on its piped standard output
(C stdio's buffer, flushed).  cli.main run in a Python process hands SIGINT
back: afterwards SIGINT raises KeyboardInterrupt there again.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import require_tool
from .test_build import built, require_luajit_library

STOP_SECONDS = 1.5  # "within ~1 s", with room for a loaded 2-core machine
RUNNING = "running"

# Each program writes an unterminated line (stays in C stdio's buffer when piped)
# after "running", then spins where it is stopped.
SPIN_LOOP = "local x = 0\nwhile true do x = x + 1 end\n"
PRELUDE = f'print("{RUNNING}") io.stdout:flush() io.write("before the interrupt")\n'

SPIN_MODULE = """\
@aot
local function spin(n: int32): number
    local s: number = 0.0
    for i = 1, n do
        for j = 1, n do
            s = s * 0.5 + 1.0
        end
    end
    return s
end

return {spin = spin}
"""

SPAN_MODULE = """\
local span = nupp.mem.span

local struct Cell
    x: number
end

@aot
local function settle(exclusive cells: span.WriteSpan<Cell>, rounds: int32): nil
    for i = 1, #cells do
        local z: number = cells[i].x
        for k = 1, rounds do
            z = z * 0.5 + 1.0
        end
        cells[i].x = z
    end
end

return {Cell = Cell, settle = settle}
"""

PROGRAMS = {
    "jit_loop": PRELUDE + SPIN_LOOP,
    "interpreted_loop": "jit.off()\n" + PRELUDE + SPIN_LOOP,
    "native_call": PRELUDE + 'local m = require("spin")\nprint(m.spin(2000000000))\n',
    "threaded_native_loop": PRELUDE + textwrap.dedent("""\
        local m = require("cells")
        local cells = nupp.mem.span.new(m.Cell, 1048576)
        m.settle(cells, 2000000000)
        """),
    "stdin_read": PRELUDE + "print(io.read('*l'))\n",
}


def write_programs(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in PROGRAMS.items():
        (folder / f"{name}.nupp").write_text(text)
    (folder / "spin.nupp").write_text(SPIN_MODULE)
    # runs for a second, then finishes: SIGINT ignored, it must
    (folder / "ignores.nupp").write_text(f'print("{RUNNING}") io.stdout:flush()\nlocal t = os.clock()\n'
                                         'while os.clock() - t < 1.0 do end\nprint("finished")\n')
    (folder / "cells.nupp").write_text(SPAN_MODULE)
    # a callback into Python: the first require compiles the module (a fresh cache: not cached)
    (folder / "callback.nupp").write_text(PRELUDE + 'local m = require("spin")\n' + SPIN_LOOP)


def interrupted(command: list[str], env: dict | None = None, reading: bool = True) -> tuple[int, str, str, float]:
    """Start `command`, wait for its "running", send SIGINT: (status, stdout, stderr, seconds to stop).
    Not `reading`: its standard output is read only once it has exited (a full pipe blocks its writes)."""
    # PYTHONUNBUFFERED would make C stdio unbuffered too (Python's setvbuf): the flush would go untested
    env = {name: value for name, value in (env or os.environ).items() if name != "PYTHONUNBUFFERED"}
    # unbuffered pipes: readline takes the first line only, communicate reads the rest
    # standard input: a pipe held open (no EOF) until the child is gone
    stdin, held = os.pipe()
    child = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             bufsize=0, env=env)
    os.close(stdin)
    try:
        first = child.stdout.readline()
        assert first == RUNNING.encode() + b"\n", (first, child.stderr.read() if child.poll() is not None else "")
        time.sleep(0.3)  # into the loop, the read, the compile
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        if not reading:
            child.wait(timeout=30)
            stopped = time.monotonic()
        out, err = child.communicate(timeout=30)
        if reading:
            stopped = time.monotonic()
        return child.returncode, out.decode(), err.decode(), stopped - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(held)


def assert_stopped(outcome: tuple[int, str, str, float], message: str, output: str | None = "before the interrupt"):
    """Stopped in time with status 130 and `message`, and what it wrote (None: not checked) on its stdout."""
    status, out, err, seconds = outcome
    assert "Traceback" not in err, err
    assert status == 130, (status, err)
    assert err.endswith(message + "\n"), err
    assert seconds < STOP_SECONDS, seconds
    assert output is None or out == output, out


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("interrupt")
    write_programs(folder)
    return folder


RUNS = [("jit_loop", ("--aot", "off")), ("jit_loop", ()), ("interpreted_loop", ("--aot", "off")),
        ("interpreted_loop", ()), ("native_call", ("--mode", "scalar")), ("native_call", ()),
        ("threaded_native_loop", ("--threads", "2")), ("stdin_read", ()), ("callback", ())]


@pytest.mark.parametrize("program,options", RUNS, ids=[f"{p}{''.join(o)}" for p, o in RUNS])
def test_ctrl_c_stops_nupp_run(programs, program, options, tmp_path):
    require_tool("gcc")
    env = {**os.environ, "NUPP_CACHE_DIR": str(tmp_path / "cache")} if program == "callback" else None
    if program == "callback":  # interrupt.c built now, so the child's compile is the module's
        subprocess.run([sys.executable, "-m", "nupp", "run", programs / "stdin_read.nupp"], input=b"x\n",
                       capture_output=True, env=env, check=True)
    command = [sys.executable, "-m", "nupp", "run", str(programs / f"{program}.nupp"), *options]
    assert_stopped(interrupted(command, env), "nupp: interrupted")


@pytest.mark.parametrize("options", [("--aot", "off"), ("--mode", "scalar")])
def test_an_ignored_sigint_stays_ignored(programs, options):
    """Started with SIGINT ignored (a shell's background job), the program runs to its end."""
    require_tool("gcc")
    script = programs / "ignores.nupp"
    command = ["sh", "-c", 'trap "" INT; exec "$0" -m nupp run "$1" "$2" "$3"', sys.executable, str(script),
               *options]
    status, out, err, _ = interrupted(command)
    assert (status, out, err) == (0, "finished\n", ""), (status, out, err)


def test_a_built_program_started_with_sigint_ignored_runs_to_its_end(programs, tmp_path):
    require_luajit_library()
    (tmp_path / "nupp.toml").write_text('[project]\nname = "patient"\nmain = "main.nupp"\n')
    (tmp_path / "main.nupp").write_text((programs / "ignores.nupp").read_text())
    tree = built(tmp_path, tmp_path / "out")
    status, out, err, _ = interrupted(["sh", "-c", 'trap "" INT; exec "$0"', str(tree / "bin" / "patient")])
    assert (status, out, err) == (0, "finished\n", ""), (status, out, err)


def test_ctrl_c_stops_a_program_blocked_writing_to_a_full_pipe(programs):
    """Its write holds stdout's lock, which the flush cannot take: the message and the exit come anyway."""
    flood = programs / "flood.nupp"
    flood.write_text(f'print("{RUNNING}") io.stdout:flush()\nlocal s = string.rep("x", 4096)\n'
                     "while true do io.write(s) end\n")
    outcome = interrupted([sys.executable, "-m", "nupp", "run", str(flood)], reading=False)
    assert_stopped(outcome, "nupp: interrupted", output=None)


def test_the_threaded_loop_runs_on_threads(programs):
    report = subprocess.run([sys.executable, "-m", "nupp", "emit", "--report", str(programs / "cells.nupp")],
                            capture_output=True, text=True, check=True).stdout
    assert "runs on threads under --threads N" in report, report


@pytest.mark.parametrize("aot", ["on", "off"])
def test_ctrl_c_stops_a_built_program(programs, tmp_path, aot):
    require_luajit_library()
    project = tmp_path / "spinner"
    project.mkdir()
    for name in ("native_call.nupp", "spin.nupp"):
        (project / name).write_bytes((programs / name).read_bytes())
    (project / "nupp.toml").write_text(f'[project]\nname = "spinner"\nmain = "native_call.nupp"\n\n'
                                       f'[build]\naot = "{aot}"\n')
    tree = built(project, tmp_path / "out")
    # no flush: it starts no watcher thread (runtime/interrupt.c), and a handler must not touch stdio
    assert_stopped(interrupted([str(tree / "bin" / "spinner")]), "spinner: interrupted", output="")


def test_ctrl_c_stops_a_built_program_blocked_writing_to_a_full_pipe(tmp_path):
    """Writes of 1,000 bytes go through stdio's buffer: the stop must not wait to flush it
    into a pipe no one reads (a flush from the handler blocked there forever)."""
    require_luajit_library()
    (tmp_path / "nupp.toml").write_text('[project]\nname = "flood"\nmain = "main.nupp"\n')
    (tmp_path / "main.nupp").write_text(f'print("{RUNNING}") io.stdout:flush()\nlocal s = string.rep("x", 1000)\n'
                                        "while true do io.write(s) end\n")
    tree = built(tmp_path, tmp_path / "out")
    outcome = interrupted([str(tree / "bin" / "flood")], reading=False)
    assert_stopped(outcome, "flood: interrupted", output=None)


def test_the_cli_in_process_gives_sigint_back(programs):
    """cli.main in a Python process (the API's situation) leaves Python's SIGINT handling as it was."""
    script = textwrap.dedent(f"""\
        import os, signal
        from nupp.runtime.cli import main
        assert main(["run", {str(programs / "stdin_read.nupp")!r}]) == 0
        try:
            os.kill(os.getpid(), signal.SIGINT)  # Python's handler raises at the next bytecode
            for _ in range(100):
                pass
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
        """)
    proc = subprocess.run([sys.executable, "-c", script], input="line\n", capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("KeyboardInterrupt\n"), (proc.stdout, proc.stderr)


DISARM_AFTER_A_CTRL_C = """
import ctypes, os, signal, sys, time
from nupp.runtime.interrupt import _library
interrupt, libc = _library("gcc"), ctypes.CDLL(None)
stdout = ctypes.c_void_p.in_dll(libc, "stdout")
assert interrupt.nu_interrupt_arm(b"nupp: interrupted\\n", 130, 1) == 0
libc.flockfile(stdout)  # the watcher's flush waits for it (2 x 300 ms): the disarm comes first
os.kill(os.getpid(), signal.SIGINT)
interrupt.nu_interrupt_disarm()
os.write(2, b"disarm returned\\n")
libc.funlockfile(stdout)
time.sleep(3)
"""


def test_a_ctrl_c_taken_before_the_disarm_stops_the_run():
    """The handler took the Ctrl-C; the watcher is still flushing when the run ends and the CLI
    disarms.  The disarm must not return (the CLI would go on, report success, while the watcher
    exits 130 under it): the process ends 130 with the message, as if the run had gone on."""
    require_tool("gcc")
    proc = subprocess.run([sys.executable, "-c", DISARM_AFTER_A_CTRL_C], capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stderr) == (130, "nupp: interrupted\n"), (proc.returncode, proc.stderr)


def test_nupp_run_with_a_compiler_for_another_machine_still_runs_a_plain_program(tmp_path):
    """interrupt.c built by --cc's cross compiler cannot be loaded here: Ctrl-C then takes
    SIGINT's default action, and the program runs (it stopped with an internal error)."""
    require_tool("aarch64-linux-gnu-gcc")
    (tmp_path / "hi.nupp").write_text('print("hi")\n')
    proc = subprocess.run([sys.executable, "-m", "nupp", "run", "--aot", "off", "--cc", "aarch64-linux-gnu-gcc",
                           str(tmp_path / "hi.nupp")], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, NUPP_CACHE_DIR=str(tmp_path / "cache")))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "hi\n", "")


# ---- Ctrl-C at start-up and at exit ----------------------------------------------------------

# From the first moment to the imports' end and past main's return: nupp/__main__.py's window.
EARLY_DELAYS = tuple(round(0.02 + 0.03 * k, 2) for k in range(14))  # 0.02 .. 0.41 s


PYTHON_START_UP = ("Fatal Python error: init_import_site", "Fatal Python error: init_sys_streams")


# What runs before nupp/__main__.py arms its handler: the package's and its own top levels.
BEFORE_THE_HANDLER = {"__init__.py", "version.py", "paths.py", "__main__.py"}
_FRAME = re.compile(r'^  File "(?P<file>[^"]*)", line \d+, in (?P<function>.*)$', re.M)


def before_the_handler(err: str) -> bool:
    """A KeyboardInterrupt raised while the entry imported nupp/__main__.py: every frame of
    nupp's at a module's top level, of the files that run before its handler is armed (Python's
    window: a traceback from the console script's `from nupp.__main__ import main`)."""
    if not err.rstrip().endswith("\nKeyboardInterrupt") or not err.startswith("Traceback"):
        return False
    package = Path(__file__).resolve().parent.parent / "nupp"
    for frame in _FRAME.finditer(err):
        path = Path(frame["file"])
        if path.parent == package and not (frame["function"] == "<module>" and path.name in BEFORE_THE_HANDLER):
            return False
        if package in path.parent.parents:  # a subpackage's file: imported after the handler
            return False
    return True


def entry_points() -> dict[str, list[str]]:
    """The console script the venv installed (pyproject.toml's [project.scripts]) and `python -m nupp`."""
    return {"nupp": [str(Path(sys.executable).parent / "nupp")], "python -m nupp": [sys.executable, "-m", "nupp"]}


def interrupted_after(command: list[str], delay: float) -> tuple[int | None, str, str]:
    """Start `command`, send SIGINT `delay` seconds later (unless it has exited): status, stdout, stderr."""
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(delay)
        child.send_signal(signal.SIGINT)  # Popen does not signal a child it has seen exit
        out, err = child.communicate(timeout=20)  # a SIGINT lost (swallowed at an import): it spins on
        return child.returncode, out.decode(), err.decode()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def assert_interrupted_cleanly(status: int, err: str, what: str) -> None:
    """130 and the message; or, in the interpreter's own start-up, before any of nupp runs, what
    Python does there: SIGINT's default action before it has a handler (killed, silent: a shell
    reports 130), its fatal error importing `site` (the venv's .pth files), or a KeyboardInterrupt
    before nupp/__main__.py's first lines armed its handler."""
    if err.startswith(PYTHON_START_UP):
        assert status == 1 and f"{os.sep}nupp{os.sep}" not in err, (what, status, err)  # no frame of nupp's
        return
    if status == -signal.SIGINT and before_the_handler(err):  # Python ends by SIGINT then
        return
    assert "Traceback" not in err and "Exception ignored" not in err, (what, err)
    assert (status, err) in ((130, "nupp: interrupted\n"), (-signal.SIGINT, "")), (what, status, err)


@pytest.mark.parametrize("entry", ["nupp", "python -m nupp"])
def test_ctrl_c_at_any_moment_of_start_up(programs, entry):
    """A SIGINT during the imports (before cli.main's own handler) printed a KeyboardInterrupt traceback."""
    command = entry_points()[entry]
    if not Path(command[0]).is_file():
        pytest.skip(f"no console script at {command[0]}")
    for delay in EARLY_DELAYS:
        status, _, err = interrupted_after([*command, "run", "--aot", "off", str(programs / "jit_loop.nupp")], delay)
        assert_interrupted_cleanly(status, err, f"{entry}, SIGINT after {delay} s")


def test_the_entry_module_arms_its_handler_as_it_is_imported():
    """The console script's first line imports nupp/__main__.py, then calls main: a SIGINT between
    the two (or during `python -m nupp`'s run of the module's top level) was a KeyboardInterrupt
    traceback."""
    script = "import os, signal, time\nimport nupp.__main__\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "nupp: interrupted\n")


def test_ctrl_c_at_any_moment_of_a_short_run(programs):
    """A run that ends: the SIGINT lands at start-up, in the run, after cli.main returned (Python's
    shutdown), or never: it ended normally.  Never a traceback."""
    (programs / "short.nupp").write_text('print("done")\n')
    for delay in EARLY_DELAYS + tuple(0.45 + 0.05 * k for k in range(12)):
        status, out, err = interrupted_after([*entry_points()["nupp"], "run", "--aot", "off",
                                              str(programs / "short.nupp")], delay)
        if (status, out, err) != (0, "done\n", ""):
            assert_interrupted_cleanly(status, err, f"SIGINT after {delay} s")
