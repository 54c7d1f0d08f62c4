"""The `nupp` command line.

    nupp run FILE.nupp|PROJECT_DIR [--aot on|off] [--mode interp|scalar|lane|spirv] [--tier baseline|v2|v3|v4]
                  [--gang 4|8|16|32] [--cc gcc|clang] [--spirv-runner vulkan|wgpu] [--threads N] [ARGS...]
    nupp build [PROJECT_DIR] [--aot on|off] [--out DIR] [--target TRIPLE] [--cc gcc|clang]
                                                  a project's relocatable output tree, bin/NAME its program
    nupp check FILE.nupp                          report diagnostics
    nupp emit --lua FILE.nupp                     print the ordinary translation
    nupp emit --ir [--after STAGE] [--gang G] FILE.nupp   the IR after a pipeline stage (lanes: lane IR)
    nupp emit --c [--gang G] FILE.nupp            the C of the @aot functions (--gang: lane C)
    nupp emit --report [--gang G] FILE.nupp       per span loop: lane-rewritten or why not, on threads
                                                  under --threads N or why not, and per tier its gang and
                                                  vectors and why; per function: whether a device runs
                                                  it (--mode spirv) and nupp.dask.map splits it, or why not
    nupp emit --spirv FILE.nupp                   the SPIR-V kernels, disassembled (spirv-dis)
    nupp emit --spirv-out OUT.spv FILE.nupp       the SPIR-V binary (one kernel: OUT.spv; more: OUT.NAME.spv)
    nupp bench [--size N,..] [--repeats N] [--kernels K,..] [--cc gcc|clang] [--plot FILE.png]
                                                  lane C against scalar C, Numba and hand-written C
    nupp bench --threads N [--size N,..] [--repeats N] [--kernels K,..] [--cc gcc|clang]
                                                  the default lane C on N threads against one thread
    nupp crosscheck [FILES|DIRS] [--cc gcc,clang] [--tier T,..] [--gang 4,8,16,32] [--target x86_64]
                  [--sanitize] [--seed N] [--cases N] [--verbose] [--keep DIR]
                                                  scalar C against lane C (and compilers, tiers against
                                                  each other) in standalone C programs; exit 1 on a mismatch
    nupp --version

Exit status: 0 success, 1 the program or its source is wrong, 2 bad usage or
an environment fault (no usable cache folder or C compiler, an unwritable
output; the message names the fix), 70 an internal error (a bug in nupp),
130 interrupted, 141 the reader of the output went away (as SIGPIPE).  A Python traceback never reaches the
user unless NUPP_DEBUG=1 asks for it.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from nupp.deep_stack import with_deep_stack
from nupp.errors import Diagnostic, InternalError, NuppError, Source
from nupp.paths import NuppEnvironmentError
from nupp.runtime.host import Host, LuaRunError, display_path
from nupp.runtime.project.config import ProjectError, load_project, run_target
from nupp.runtime.run_errors import render_run_error
from nupp.version import __version__

# The compiler is imported by the commands that use it (`nupp run` of cached
# modules needs none of it: runtime/module_cache.py), and so are the names
# options take, from the modules that own them, when argparse first asks.


class _Names(Sequence):
    """The names an option takes, `attribute` of `module` (each through
    `convert`), imported when argparse first checks a value or prints help."""

    def __init__(self, module: str, attribute: str, convert=None):
        self._where, self._convert = (module, attribute), convert

    @cached_property
    def _names(self) -> tuple:
        names = tuple(getattr(importlib.import_module(self._where[0]), self._where[1]))
        return tuple(map(self._convert, names)) if self._convert else names

    def __getitem__(self, index):
        return self._names[index]

    def __len__(self) -> int:
        return len(self._names)


MODES, STAGES = _Names("nupp.pipeline", "MODES"), _Names("nupp.pipeline", "STAGES")
TIER_NAMES = _Names("nupp.targets.tiers", "TIER_NAMES")
GANG_CHOICES = _Names("nupp.scalar_ir.lanes", "GANG_SIZES", str)
RUNNERS = _Names("nupp.targets.device", "RUNNERS")
TARGETS = _Names("nupp.runtime.project.build", "TARGETS")


def _option(parser, *flags: str, names: _Names, **options) -> None:
    """parser.add_argument(*flags, choices=names, **options), except that argparse
    reads the names only when it needs them (add_argument would format them at once)."""
    parser.add_argument(*flags, **options).choices = names
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 70, 130, 141


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nupp", description="Compiler and runner for Nupp, a typed Lua dialect hosted on LuaJIT.")
    parser.add_argument("--version", action="version", version=f"nupp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run a Nupp host script",
                         description="Run a Nupp host script; its folder is on the require path. Ctrl-C "
                         "stops the program within a second, its output flushed, with 'nupp: interrupted' and "
                         "exit status 130: nupp run takes SIGINT over only while the program runs, and "
                         "nupp.load leaves a Python process's own handling alone (KeyboardInterrupt arrives "
                         "once a call returns to Python).")
    run.add_argument("file", help="the .nupp script, or a project folder (its nupp.toml names the script)")
    run.add_argument("--aot", choices=("on", "off"), default=None,
                     help="run @aot functions as native code (on, the default; a project: its nupp.toml's) "
                          "or as ordinary Nupp (off)")
    _option(run, "--mode", names=MODES, default=None,
                     help="how @aot functions run: interp (ordinary Nupp), scalar (compiled C), lane "
                          "(compiled C, span loops in SIMD gangs where the lane rewrite applies) or spirv "
                          "(span loops on a Vulkan device where the SPIR-V backend accepts them, the rest "
                          "as lane); --aot on means lane, --aot off means interp")
    _option(run, "--tier", names=TIER_NAMES, default=None,
                     help="lane code's feature tier (x86-64 level); default: the best this CPU runs")
    _option(run, "--gang", names=GANG_CHOICES, default=None,
                     help="lane code's iterations per gang, every loop's; default: each loop's own, "
                          "by a cost model per tier (nupp emit --report says which)")
    run.add_argument("--cc", default="gcc", help="the C compiler for native code (gcc or clang)")
    _option(run, "--spirv-runner", names=RUNNERS, default="vulkan", dest="spirv_runner",
                     help="with --mode spirv: run kernels through the Vulkan API as written (vulkan, the "
                          "default) or through wgpu, which translates them (naga drops NoContraction)")
    run.add_argument("--threads", type=_thread_count, default=None, metavar="N",
                     help="threads lane code may split a span loop between, where its iterations are "
                          "independent (nupp emit --report says which); the results are the same bits "
                          "(default: NUPP_THREADS, else 1)")
    run.add_argument("args", nargs=argparse.REMAINDER,
                     help="arguments passed to the script as `...` (nupp's own options may come "
                          "first; put script arguments after `--` if they look like options)")

    build = sub.add_parser("build", help="build a project into a relocatable output tree",
                           description="Build the project in PROJECT_DIR (nupp.toml) into an output tree: "
                                       "bin/NAME runs the program without Python, from wherever the tree is copied.")
    build.add_argument("project", nargs="?", default=".", metavar="PROJECT_DIR",
                       help="the project folder (default: the current one)")
    build.add_argument("--aot", choices=("on", "off"), default=None, help="default: nupp.toml's aot")
    build.add_argument("--out", type=Path, default=None, help="the output tree (default: PROJECT_DIR/build)")
    _option(build, "--target", names=TARGETS, default=None, help="the machine (default: this host)")
    build.add_argument("--cc", default="gcc", help="the C compiler (gcc or clang)")

    check = sub.add_parser("check", help="check a module, reporting every diagnostic",
                           description="Parse and check a .nupp module, lower its @aot functions to "
                                       "verified IR; exit 0 only when it is clean.")
    check.add_argument("file", help="the .nupp module")

    emit = sub.add_parser("emit", help="print what nupp makes of a module",
                          description="Print a translation of a .nupp module.")
    what = emit.add_mutually_exclusive_group(required=True)
    what.add_argument("--lua", action="store_true",
                      help="the Lua 5.1 that LuaJIT runs for ordinary execution")
    what.add_argument("--ir", action="store_true", help="the scalar IR of the @aot functions")
    what.add_argument("--c", action="store_true",
                      help="the C generated for the @aot functions (scalar C; lane C with --gang)")
    what.add_argument("--report", action="store_true",
                      help="for each loop over spans: whether it was lane-rewritten and whether it runs on "
                           "threads under --threads N, and if not, why; at each tier, its gang and vectors "
                           "and why; for each function, whether a device runs it (--mode spirv) and whether "
                           "nupp.dask.map splits it, and if not, why")
    what.add_argument("--spirv", action="store_true",
                      help="the SPIR-V compute kernels of the functions a device runs, disassembled")
    what.add_argument("--spirv-out", metavar="OUT.spv", default=None,
                      help="write the SPIR-V binary (one kernel: OUT.spv; several: OUT.FUNCTION.spv)")
    _option(emit, "--after", names=STAGES, default=None,
                      help="with --ir: the IR after this stage (default: the last scalar stage; "
                           "lanes: the lane IR)")
    _option(emit, "--gang", names=GANG_CHOICES, default=None,
                      help="the gang of lane IR and lane C (default 8 for --after lanes; "
                           "--c prints scalar C without it)")
    emit.add_argument("file", help="the .nupp module")

    bench = sub.add_parser("bench", help="measure lane C against scalar C, Numba and hand-written C",
                           description="Throughput of the BENCH kernels at each size, side by side in one run: "
                                       "nupp's scalar C, its lane C at each tier this CPU runs and each gang, "
                                       "its default execution, and the peers: Numba, explicit-SIMD C at gangs "
                                       "8, 16 and 32 under GCC and Clang, scalar C by hand (-O3 -march=native "
                                       "and -O2), with every goal met or missed; the memory roof at 10^7 "
                                       "elements and more; short spans; the cold compile-and-load time of a "
                                       "tiered module.")
    bench.add_argument("--size", type=_size_list, default=None,
                       help="elements per call, comma-separated sizes (default 100000,10000000)")
    bench.add_argument("--repeats", type=_positive, default=5, help="runs per measurement; the median counts")
    bench.add_argument("--kernels", type=_kernel_list, default=None,
                       help="comma-separated subset of mandelbrot,corrected,tecsbits,mixedwidth,simd")
    bench.add_argument("--cc", default="gcc", help="the C compiler for nupp's code (gcc or clang)")
    bench.add_argument("--plot", default=None, metavar="FILE.png",
                       help="also draw throughput against span size (10^2 to 10^7) per kernel (matplotlib)")
    bench.add_argument("--threads", type=_thread_count, default=None, metavar="N",
                       help="instead: the default lane C on N threads against one thread (bench/thread_speed.py)")

    cross = sub.add_parser("crosscheck", help="check lane C against scalar C in standalone C programs",
                           description="For each module with @aot functions, build one C program (its scalar "
                                       "C, its lane C at each gang, a driver generating inputs) per compiler "
                                       "and tier, and compare every output bit for bit; no Python or LuaJIT "
                                       "runs in the checking process.  Exit 1 on any mismatch.")
    cross.add_argument("paths", nargs="+", metavar="FILE|DIR", help=".nupp modules, or folders to search")
    cross.add_argument("--cc", type=_name_list, default=("gcc",), help="compilers, comma-separated (default gcc)")
    cross.add_argument("--tier", type=_name_list, default=None,
                       help="tiers, comma-separated (default: every tier this machine runs)")
    cross.add_argument("--gang", type=_gang_list, default=(4, 8, 16), help="gangs, comma-separated (default 4,8,16)")
    cross.add_argument("--target", default=None, help="the machine to build for (default: this host's)")
    cross.add_argument("--sanitize", action="store_true",
                       help="build with -fsanitize=undefined -fno-sanitize-recover=all")
    cross.add_argument("--seed", type=int, default=1, help="the input generator's seed (default 1)")
    cross.add_argument("--cases", type=_positive, default=None, help="input sets per function and length")
    cross.add_argument("--verbose", action="store_true", help="print each compiler command")
    cross.add_argument("--keep", type=Path, default=None, help="keep each module's C and programs in this folder")
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _size_list(text: str) -> tuple[int, ...]:
    sizes = tuple(_positive(size) for size in _kernel_list(text))
    if not sizes:
        raise argparse.ArgumentTypeError("names no size")
    return sizes


def _thread_count(text: str) -> int:
    from nupp.runtime.threads import parse_count
    try:
        return parse_count(text, "a thread count")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _kernel_list(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _name_list(text: str) -> tuple[str, ...]:
    names = _kernel_list(text)
    if not names:
        raise argparse.ArgumentTypeError("names no value")
    return names


def _gang_list(text: str) -> tuple[int, ...]:
    gangs = _name_list(text)
    if any(g not in GANG_CHOICES for g in gangs):
        raise argparse.ArgumentTypeError(f"gangs are {', '.join(GANG_CHOICES)}, not '{text}'")
    return tuple(map(int, gangs))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # the command line as typed, for a script's `arg` (tests call main with argv: no program name)
    args.command_line = [sys.argv[0], *sys.argv[1:]] if argv is None else ["nupp", *argv]
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    for stream in (sys.stdout, sys.stderr):  # Lua source and messages are bytes: keep them
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")
    try:
        status = COMMANDS[args.command](args)
        _flush_output()
        return status
    except _OutputError as err:
        return _output_failed(args.command, err.__cause__)
    except (_UsageError, _tier_error(), NuppEnvironmentError) as err:
        print(f"nupp {args.command}: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except ProjectError as err:  # nupp.toml, like the command line, is not the program
        print(err, file=sys.stderr)
        return EXIT_USAGE
    except NuppError as err:
        print(err, file=sys.stderr)
        return EXIT_ERROR
    except InternalError as err:
        print(f"nupp: {err}", file=sys.stderr)
        return EXIT_INTERNAL
    except KeyboardInterrupt:
        print("nupp: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("NUPP_DEBUG"):
            raise
        print(f"nupp: {InternalError(args.command, f'{type(err).__name__}: {err}')}\n"
              "(set NUPP_DEBUG=1 to see the Python traceback)", file=sys.stderr)
        return EXIT_INTERNAL


def _tier_error() -> type:
    """TierError (a tier this CPU cannot run), if targets/tiers.py was imported: else none was raised."""
    tiers = sys.modules.get("nupp.targets.tiers")
    return tiers.TierError if tiers is not None else _UsageError


def _read_source(path: str) -> Source:
    try:
        return Source.from_file(display_path(path))
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise NuppError([Diagnostic(Source(path, ""), 1, 1, f"cannot read '{path}': {reason}")]) from None


RUN_OPTIONS = {"--aot": ("on", "off"), "--mode": MODES, "--cc": None, "--tier": TIER_NAMES,
               "--gang": GANG_CHOICES, "--spirv-runner": RUNNERS, "--threads": _thread_count}


def _take_run_options(args) -> None:
    """Accept `nupp run FILE --aot off x y`: nupp's options may follow FILE, before the script's."""
    rest = list(args.args)
    while rest:
        if rest[0] == "--":
            rest.pop(0)
            break
        key, eq, value = rest[0].partition("=")
        if key not in RUN_OPTIONS:
            break
        if not eq:
            if len(rest) < 2:
                raise _UsageError(f"{key} needs a value")
            value = rest.pop(1)
        choices = RUN_OPTIONS[key]
        if callable(choices):  # a parser of the value
            try:
                value = choices(value)
            except argparse.ArgumentTypeError as err:
                raise _UsageError(f"{key}: {err}") from None
        elif choices is not None and value not in choices:
            raise _UsageError(f"{key} takes {' or '.join(choices)}, not '{value}'")
        setattr(args, key[2:].replace("-", "_"), value)
        rest.pop(0)
    args.args = rest


def _run_mode(args) -> str:
    if args.mode is None:
        mode = "lane" if args.aot == "on" else "interp"
    elif args.aot == "off" and args.mode != "interp":
        raise _UsageError(f"--aot off runs ordinary Nupp; it cannot be combined with --mode {args.mode}")
    else:
        mode = args.mode
    pins = [f"--{name} {value}" for name, value in (("tier", args.tier), ("gang", args.gang)) if value]
    if pins and mode not in ("lane", "spirv"):
        running = "--aot off" if mode == "interp" and args.mode is None else f"--mode {mode}"
        are, they = ("are", "they") if len(pins) > 1 else ("is", "it")
        raise _UsageError(f"{' and '.join(pins)} {are} for lane code; {they} cannot be combined with {running}")
    return mode


class _UsageError(Exception):
    """Bad command-line usage found after argparse (exit status 2)."""


class _OutputError(Exception):
    """Writing to standard output failed (its cause: the OSError)."""


def _write_output(text: str) -> None:
    try:
        sys.stdout.write(text)
    except OSError as err:
        raise _OutputError() from err
    _flush_output()


def _flush_output() -> None:
    try:
        sys.stdout.flush()
    except OSError as err:
        raise _OutputError() from err


def _output_failed(command: str, err: OSError) -> int:
    # What is still buffered can never be written: drop it, or Python's own
    # flush at exit would fail again with a traceback-like complaint.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    if err.errno == errno.EPIPE:  # the reader went away (`nupp emit --c m.nupp | head`): nothing to say
        return EXIT_BROKEN_PIPE
    print(f"nupp {command}: error: cannot write the output: {err.strerror or err}; "
          "write it to a file or device with room", file=sys.stderr)
    return EXIT_USAGE


def cmd_run(args) -> int:
    _take_run_options(args)
    script, project_aot = run_target(args.file)
    args.aot = args.aot or project_aot or "on"
    mode = _run_mode(args)
    source = _read_source(script)
    from nupp.runtime.interrupt import stops_on_interrupt
    from nupp.runtime.threads import thread_setting
    host = Host(search_path=[Path(script).resolve().parent], mode=mode, cc=args.cc,
                gang=int(args.gang) if args.gang else None, tier=args.tier, spirv_runner=args.spirv_runner,
                threads=thread_setting(args.threads))
    sys.stdout.flush()
    # As under luajit, writing to a reader that went away ends the program (exit 141).
    python_sigpipe = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        with stops_on_interrupt("nupp: interrupted", EXIT_INTERRUPTED, args.cc):
            host.run_source(source, tuple(args.args), _words_before_script(args))
    except LuaRunError as err:
        host.flush_output()  # the program's output comes before the error, as under luajit
        print(render_run_error(err), file=sys.stderr)
        return EXIT_ERROR
    finally:
        host.flush_output()
        signal.signal(signal.SIGPIPE, python_sigpipe)  # main() may be called in-process (tests)
    return EXIT_OK


def _words_before_script(args) -> list[str]:
    """The command line without the script and its arguments (`arg` holds them
    at negative indices, as luajit holds its own there): nupp, run, options."""
    words = args.command_line[:len(args.command_line) - len(args.args)]
    del words[words.index(args.file, words.index("run") + 1)]
    return words


def cmd_build(args) -> int:
    from nupp.runtime.project.build import BuildOptions, build_project
    project = load_project(Path(args.project))
    out = args.out if args.out is not None else Path(args.project) / "build"
    options = BuildOptions(args.aot or project.aot, out, args.target, args.cc)
    build_project(project, options, lambda line: print(f"nupp build: {line}", file=sys.stderr, flush=True))
    return EXIT_OK


def cmd_check(args) -> int:
    from nupp.pipeline import check
    check(_read_source(args.file))
    return EXIT_OK


@with_deep_stack  # the emitters recurse over trees as deep as the front end admits
def cmd_emit(args) -> int:
    from nupp.pipeline import compile_module, emit, translate
    from nupp.scalar_ir.text import print_module
    source = _read_source(args.file)
    gang = int(args.gang or 8)
    if args.gang and not (args.c or args.report or args.after == "lanes"):
        raise _UsageError("--gang goes with --c, --report or --ir --after lanes")
    if args.ir:
        _write_output(print_module(compile_module(source, after=args.after, gang=gang)))
    elif args.c:
        _write_output(emit(source, "lane-c" if args.gang else "c", gang).source)
    elif args.report:
        from nupp.lane_rewrite.report import render_report
        from nupp.pipeline import tier_shapes
        module = compile_module(source)
        pinned = int(args.gang) if args.gang else None
        from nupp.runtime.chunking import render_chunk_report
        _write_output(render_report(module, source.path, pinned, tier_shapes(module, pinned))
                      + render_device_report(emit(source, "spirv")) + render_chunk_report(module, source.path))
    elif args.spirv:
        _write_output(disassemble_kernels(emit(source, "spirv")))
    elif args.spirv_out:
        for line in write_kernels(emit(source, "spirv"), Path(args.spirv_out)):
            print(line, file=sys.stderr)
    else:
        _write_output(translate(source))
    return EXIT_OK


def render_device_report(device) -> str:
    """One line per function: whether `--mode spirv` runs it on the device, and if not, why."""
    lines = [f"{device.path}: {name}: runs on the device (--mode spirv)"
             + (", with a finish kernel for what follows its loop" if kernel.finish is not None else "") + "\n"
             for name, kernel in device.kernels.items()]
    lines += [f"{device.path}: {name}: runs as lane C under --mode spirv: {why}\n" for name, why in device.refused.items()]
    return "".join(lines)


def disassemble_kernels(device) -> str:
    """Each kernel's disassembly under a `; function NAME` line (spirv-dis, from spirv-tools)."""
    if not device.kernels:
        return "".join(f"; {name}: no kernel: {why}\n" for name, why in device.refused.items())
    spirv_dis = shutil.which("spirv-dis")
    if spirv_dis is None:
        raise NuppEnvironmentError("nupp emit --spirv disassembles with spirv-dis, which is not installed: "
                                   "install spirv-tools (apt-get install spirv-tools), or write the binary "
                                   "with --spirv-out")
    parts = []
    for name, kernel in device.kernels.items():
        for role, binary in kernel.modules():
            text = subprocess.run([spirv_dis, "-", "-o", "-"], input=binary, capture_output=True, check=True).stdout
            parts.append(f"; function {name}{': finish kernel' if role == 'finish' else ''}\n" + text.decode("utf-8"))
    return "".join(parts)


def write_kernels(device, out: Path) -> list[str]:
    """Write each kernel's binary (OUT, or OUT's stem + .NAME.spv for several, .NAME.finish.spv
    for a finish kernel); what was written."""
    if not device.kernels:
        raise _UsageError(f"{device.path} has no function a device runs: "
                          + "; ".join(f"{name}: {why}" for name, why in device.refused.items()))
    binaries = [(name, role, binary) for name, kernel in device.kernels.items() for role, binary in kernel.modules()]
    written = []
    for name, role, binary in binaries:
        label = name if role == "main" else f"{name}.{role}"
        target = out if len(binaries) == 1 else out.with_name(f"{out.stem}.{label}{out.suffix or '.spv'}")
        try:
            target.write_bytes(binary)
        except OSError as err:
            raise NuppEnvironmentError(f"cannot write {target}: {err.strerror or err}") from None
        written.append(f"nupp emit: wrote {target} ({label}, {len(binary)} bytes)")
    return written


def cmd_bench(args) -> int:
    if args.threads:
        return _bench_threads(args)
    bench = _checkout_bench("lane_speed")
    unknown = [k for k in args.kernels or () if k not in bench.BENCH_KERNELS]
    if unknown:
        raise _UsageError(f"no kernel named {', '.join(unknown)} (kernels: {', '.join(bench.BENCH_KERNELS)})")
    bench.run_benchmark(sizes=args.size or bench.DEFAULT_SIZES, repeats=args.repeats,
                        kernels=args.kernels or bench.BENCH_KERNELS, cc=args.cc, plot=args.plot)
    return EXIT_OK


def _bench_threads(args) -> int:
    bench = _checkout_bench("thread_speed")
    unknown = sorted(set(args.kernels or ()) - set(bench.BENCH_KERNELS))
    if unknown:
        raise _UsageError(f"no kernel named {', '.join(unknown)} (kernels: {', '.join(bench.BENCH_KERNELS)})")
    bench.run_benchmark(threads=args.threads, sizes=args.size or bench.DEFAULT_SIZES, repeats=args.repeats,
                        kernels=args.kernels or bench.BENCH_KERNELS, cc=args.cc)
    return EXIT_OK


def _checkout_bench(name: str):
    """The module bench/NAME.py of the source checkout nupp runs from.  bench/ is
    not installed: it sits beside the stage directories (runtime/, ...) in a
    checkout, which the editable install runs in place, and nowhere in a wheel."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "bench" / f"{name}.py").is_file():
        raise NuppEnvironmentError("nupp bench runs from a source checkout of nupp: "
                                   "its benchmark programs are not installed")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(f"bench.{name}")


def cmd_crosscheck(args) -> int:
    from nupp.crosscheck import DEFAULT_CASES, CrosscheckUsageError, Options, crosscheck
    options = Options(compilers=args.cc, tiers=args.tier, gangs=args.gang, target=args.target,
                      sanitize=args.sanitize, seed=args.seed, cases=args.cases or DEFAULT_CASES,
                      verbose=args.verbose, keep=args.keep)
    try:
        return crosscheck(args.paths, options, lambda line: _write_output(line + "\n"))
    except CrosscheckUsageError as err:
        raise _UsageError(str(err)) from None


COMMANDS = {"run": cmd_run, "build": cmd_build, "check": cmd_check, "emit": cmd_emit, "bench": cmd_bench, "crosscheck": cmd_crosscheck}

if __name__ == "__main__":
    raise SystemExit(main())
