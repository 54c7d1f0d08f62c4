"""Faults of the machine, not of the program or of nupp: a clear message naming the fix, exit 2.

  * The cache folder (NUPP_CACHE_DIR) is a file, lies under a file, or is
    read-only: nothing can be built there.
  * The C compiler is not on PATH (gcc by default, `--cc clang` without
    clang), is not executable, or cannot build even a trivial library.  A
    compiler that builds a trivial library but fails on nupp's C is nupp's
    bug (exit 70, the C kept), told apart by that probe.  One that exits 0 having
    written a library the loader refuses is the compiler's fault too.
  * `--cc g++` / `--cc clang++` (C++ drivers) compile nupp's C as C and run.
  * `nupp emit` into a full device (/dev/full) or a pipe nobody reads.

From Python, `nupp.load` raises `nupp.NuppEnvironmentError` with the same
message for the same faults, never a raw OSError or CalledProcessError.

Tests run as root under CI, where permission bits do not stop writes: a
read-only folder is tested in a process whose capability to override them
is dropped (`without_dac_override`).
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nupp
from nupp.paths import NuppEnvironmentError
from nupp.targets.toolchain import find_toolchain

from .conftest import require_tool

ROOT = Path(__file__).resolve().parent.parent
EXIT_ENVIRONMENT = 2

MODULE = """@aot
local function add(a: int32, b: int32): int32
    return a + b
end
return {add = add}
"""
SCRIPT = 'local m = require("calc")\nprint(m.add(40, 2))\n'


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "calc.nupp").write_text(MODULE)
    (folder / "main.nupp").write_text(SCRIPT)
    return folder


def nupp_cli(*args, env: dict | None = None, cwd=None, stdout=subprocess.PIPE, preexec_fn=None):
    """Run `nupp ARGS` (the module, by this Python) with `env` added to the environment."""
    proc = subprocess.run([sys.executable, "-m", "nupp", *map(str, args)], cwd=cwd, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, errors="backslashreplace", timeout=300,
                          preexec_fn=preexec_fn,
                          env={**os.environ, **(env or {})})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def assert_environment_fault(proc, *phrases: str) -> None:
    assert proc.returncode == EXIT_ENVIRONMENT, (proc.returncode, proc.stderr)
    assert "bug in nupp" not in proc.stderr, proc.stderr
    for phrase in phrases:
        assert phrase in proc.stderr, (phrase, proc.stderr)


def load_fault(path: Path, **options) -> str:
    """nupp.load's NuppEnvironmentError text (the test fails on any other outcome)."""
    find_toolchain.cache_clear()  # found once per process: forget the compilers earlier tests found
    try:
        with pytest.raises(NuppEnvironmentError) as caught:
            nupp.load(path, **options)
    finally:
        find_toolchain.cache_clear()
    return str(caught.value)


# ---- the cache folder ------------------------------------------------------------------------

def test_cache_folder_that_is_a_file(project, tmp_path, monkeypatch):
    cache = tmp_path / "a-file"
    cache.write_text("not a folder")
    proc = nupp_cli("run", project / "main.nupp", env={"NUPP_CACHE_DIR": str(cache)})
    assert_environment_fault(proc, f"the cache folder '{cache}' is a file", "NUPP_CACHE_DIR")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache))
    assert "is a file, not a folder" in load_fault(project / "calc.nupp", mode="scalar")


def test_cache_folder_under_a_file(project, tmp_path, monkeypatch):
    cache = tmp_path / "a-file" / "cache"
    cache.parent.write_text("not a folder")
    proc = nupp_cli("run", project / "main.nupp", env={"NUPP_CACHE_DIR": str(cache)})
    assert_environment_fault(proc, f"cannot create the cache folder '{cache}'", "Not a directory", "NUPP_CACHE_DIR")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache))
    assert "cannot create the cache folder" in load_fault(project / "calc.nupp", mode="scalar")


def without_dac_override():
    """In the child (a preexec_fn): give up root's power to ignore permission bits."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for cap in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "cannot drop the capability to override permissions")


LOAD_IN_A_CHILD = """
import sys, nupp
try:
    nupp.load(sys.argv[1], mode="scalar")
except nupp.NuppEnvironmentError as err:
    print("NuppEnvironmentError:", err)
"""


def test_read_only_cache_folder(project, tmp_path):
    cache = tmp_path / "read-only"
    cache.mkdir(mode=0o500)
    env = {"NUPP_CACHE_DIR": str(cache)}
    try:
        proc = nupp_cli("run", project / "main.nupp", env=env, preexec_fn=without_dac_override)
    except subprocess.SubprocessError as err:
        pytest.skip(f"this machine cannot drop root's permission override: {err}")
    assert_environment_fault(proc, f"cannot write to the cache folder '{cache}'", "Permission denied",
                             f"chmod u+w '{cache}'", "NUPP_CACHE_DIR")
    # nothing to build, nothing to write: ordinary execution and `check` still work
    assert nupp_cli("run", project / "main.nupp", "--aot", "off", env=env,
                    preexec_fn=without_dac_override).stdout == "42\n"
    assert nupp_cli("check", project / "calc.nupp", env=env, preexec_fn=without_dac_override).returncode == 0
    child = subprocess.run([sys.executable, "-c", LOAD_IN_A_CHILD, str(project / "calc.nupp")], text=True,
                           capture_output=True, preexec_fn=without_dac_override, timeout=300,
                           env={**os.environ, **env})
    assert child.stdout.startswith(f"NuppEnvironmentError: cannot write to the cache folder '{cache}'"), child


# ---- the C compiler --------------------------------------------------------------------------

def test_gcc_not_on_path(project, tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {"PATH": str(empty), "NUPP_CACHE_DIR": str(tmp_path / "cache")}
    proc = nupp_cli("run", project / "main.nupp", env=env)
    assert_environment_fault(proc, "the C compiler 'gcc' was not found on PATH", "install gcc or clang", "--cc")
    monkeypatch.setenv("PATH", str(empty))
    assert "'gcc' was not found on PATH" in load_fault(project / "calc.nupp")


def test_clang_asked_for_but_absent(project, tmp_path, monkeypatch):
    only_gcc = tmp_path / "only-gcc"
    only_gcc.mkdir()
    (only_gcc / "gcc").symlink_to(require_tool("gcc"))
    env = {"PATH": str(only_gcc), "NUPP_CACHE_DIR": str(tmp_path / "cache")}
    proc = nupp_cli("run", "--cc", "clang", project / "main.nupp", env=env)
    assert_environment_fault(proc, "the C compiler 'clang' was not found on PATH")
    monkeypatch.setenv("PATH", str(only_gcc))
    assert "'clang' was not found on PATH" in load_fault(project / "calc.nupp", cc="clang")


def test_compiler_that_is_not_executable(project, tmp_path):
    text_file = tmp_path / "not-a-compiler"
    text_file.write_text("plain text\n")
    proc = nupp_cli("run", "--cc", text_file, project / "main.nupp", env={"NUPP_CACHE_DIR": str(tmp_path / "c")})
    assert_environment_fault(proc, f"the C compiler '{text_file}' is not an executable file")


def fake_compiler(folder: Path, body: str) -> Path:
    path = folder / "fake-cc"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_compiler_that_cannot_build_anything(project, tmp_path, monkeypatch):
    broken = fake_compiler(tmp_path, 'echo "fake-cc: no license" >&2\nexit 1\n')
    proc = nupp_cli("run", "--cc", broken, project / "main.nupp", env={"NUPP_CACHE_DIR": str(tmp_path / "c")})
    assert_environment_fault(proc, f"the C compiler '{broken}' cannot build a shared library", "fake-cc: no license",
                             "install gcc or clang")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "c"))
    assert "cannot build a shared library" in load_fault(project / "calc.nupp", mode="scalar", cc=str(broken))


@pytest.mark.parametrize("writes", ["nothing", "an empty file"])
def test_compiler_that_exits_0_without_output(project, tmp_path, monkeypatch, writes):
    """Like /usr/bin/true: it "succeeds" and writes nothing, or an empty file.  The compiler is
    at fault, not the cache folder (once blamed: nothing to install there)."""
    body = "exit 0\n" if writes == "nothing" else \
        'while [ $# -gt 0 ]; do [ "$1" = -o ] && : > "$2"; shift; done\nexit 0\n'
    silent = fake_compiler(tmp_path, body)
    cache = tmp_path / "c"
    proc = nupp_cli("run", "--aot", "on", "--cc", silent, project / "main.nupp", env={"NUPP_CACHE_DIR": str(cache)})
    assert_environment_fault(proc, f"the C compiler '{silent}' exited 0 but wrote no object file",
                             "name a working C compiler (--cc, or cc= of nupp.load)")
    assert "cache folder" not in proc.stderr, proc.stderr
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache))
    assert "exited 0 but wrote no object file" in load_fault(project / "calc.nupp", mode="scalar", cc=str(silent))


def test_nupp_build_with_a_compiler_that_exits_0_without_output(project, tmp_path):
    """The launcher (built even with --aot off) is checked too: a tree without it was reported written."""
    silent = fake_compiler(tmp_path, "exit 0\n")
    (project / "nupp.toml").write_text('[project]\nname = "calc"\nmain = "main.nupp"\n')
    for aot in ("on", "off"):
        proc = nupp_cli("build", "--aot", aot, "--cc", silent, project, "--out", tmp_path / f"out-{aot}",
                        env={"NUPP_CACHE_DIR": str(tmp_path / "c")})
        assert_environment_fault(proc, f"the C compiler '{silent}' exited 0 but wrote no")


def test_compiler_that_links_nothing(project, tmp_path):
    """Objects written, the library not: the link step is checked too."""
    require_tool("gcc")
    no_link = fake_compiler(tmp_path, 'case " $* " in *" -shared "*) exit 0 ;; esac\nexec gcc "$@"\n')
    proc = nupp_cli("run", "--mode", "scalar", "--cc", no_link, project / "main.nupp",
                    env={"NUPP_CACHE_DIR": str(tmp_path / "c")})
    assert_environment_fault(proc, f"the C compiler '{no_link}' exited 0 but wrote no library")


@pytest.mark.parametrize("mode", ["scalar", "lane"])
def test_compiler_that_writes_a_library_nupp_cannot_load(project, tmp_path, monkeypatch, mode):
    """It exits 0 having written garbage: LuaJIT's loader refuses the library (lane mode: the
    CPU's tier dispatcher first).  The compiler is at fault, not nupp (it was exit 70), nor the
    program (scalar mode: exit 1 at native.lua's line).  The refused library leaves the cache: the
    same compiler mended in place (the same --version, so the same cache key) then builds anew."""
    require_tool("gcc")
    version = 'case "$1" in --version) echo "fake-cc 1"; exit 0 ;; esac\n'
    garbage = fake_compiler(tmp_path, version + 'while [ $# -gt 0 ]; do [ "$1" = -o ] && echo garbage > "$2"; '
                                                'shift; done\n')
    cache = tmp_path / "c"
    proc = nupp_cli("run", "--mode", mode, "--cc", garbage, project / "main.nupp", env={"NUPP_CACHE_DIR": str(cache)})
    assert_environment_fault(proc, f"the C compiler '{garbage}' wrote a library nupp cannot load (",
                             "file too short); install gcc or clang, or name a working C compiler (--cc, or cc= "
                             "of nupp.load)")
    assert str(cache) in proc.stderr, proc.stderr  # the library refused, by its path
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache))
    assert "wrote a library nupp cannot load" in load_fault(project / "calc.nupp", mode=mode, cc=str(garbage))
    fake_compiler(tmp_path, version + 'exec gcc "$@"\n')
    proc = nupp_cli("run", "--mode", mode, "--cc", garbage, project / "main.nupp", env={"NUPP_CACHE_DIR": str(cache)})
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "42\n", ""), mode


def cross_compiler() -> str:
    if platform.machine() != "x86_64":
        pytest.skip("an x86-64 host's cross compiler for AArch64 is the case tested")
    return require_tool("aarch64-linux-gnu-gcc")


@pytest.mark.parametrize("mode", ["scalar", "lane"])
def test_a_cross_compiler_for_nupp_run_and_load_is_named(project, tmp_path, monkeypatch, mode):
    """A compiler for another machine (its -dumpmachine): nupp run and nupp.load load its library
    here.  It was exit 70 (lane: this machine's tier flags refused, 'a bug in nupp'), or the
    loader's 'cannot open shared object file'."""
    cross = cross_compiler()
    cache = tmp_path / "c"
    proc = nupp_cli("run", "--mode", mode, "--cc", cross, project / "main.nupp", env={"NUPP_CACHE_DIR": str(cache)})
    assert_environment_fault(proc, f"the C compiler '{cross}' builds for aarch64, not for this machine (x86_64)",
                             "nupp build --target aarch64-linux-gnu")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache))
    assert "builds for aarch64, not for this machine" in load_fault(project / "calc.nupp", mode=mode, cc=cross)


def test_nupp_build_for_this_machine_with_a_cross_compiler_is_named(project, tmp_path):
    cross = cross_compiler()
    (project / "nupp.toml").write_text('[project]\nname = "calc"\nmain = "main.nupp"\n')
    proc = nupp_cli("build", "--cc", cross, project, "--out", tmp_path / "out",
                    env={"NUPP_CACHE_DIR": str(tmp_path / "c")})
    assert_environment_fault(proc, f"the C compiler '{cross}' builds for aarch64, not for x86_64",
                             "--target aarch64-linux-gnu")


def test_compiler_failing_only_on_nupps_c_is_nupps_bug(project, tmp_path):
    """The probe builds, the module does not: the C is nupp's, so is the fault (exit 70, C kept)."""
    require_tool("gcc")
    picky = fake_compiler(tmp_path, 'for a; do last=$a; done\n'
                                    'case "$last" in *.c) grep -q nupp_probe "$last" || '
                                    '{ echo "picky: no" >&2; exit 1; } ;; esac\nexec gcc "$@"\n')
    cache = tmp_path / "c"
    proc = nupp_cli("run", "--mode", "scalar", "--cc", picky, project / "main.nupp",
                    env={"NUPP_CACHE_DIR": str(cache)})
    assert proc.returncode == 70, proc.stderr
    assert "could not compile the C generated for" in proc.stderr and "This is a bug in nupp" in proc.stderr
    kept = list((cache / "failed").glob("*.c"))
    assert len(kept) == 1 and str(kept[0]) in proc.stderr
    assert (cache / "failed").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("driver", ["g++", "clang++"])
def test_cxx_drivers_compile_nupps_c_as_c(project, tmp_path, driver):
    """A C++ driver would mangle the names LuaJIT binds; nupp passes `-x c`."""
    require_tool(driver)
    for mode in ("scalar", "lane"):
        proc = nupp_cli("run", "--mode", mode, "--cc", driver, project / "main.nupp",
                        env={"NUPP_CACHE_DIR": str(tmp_path / "cache")})
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "42\n", ""), mode


# ---- the output ------------------------------------------------------------------------------

def test_emit_into_a_full_device(project):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        proc = nupp_cli("emit", "--lua", project / "calc.nupp", stdout=full)
    assert_environment_fault(proc, "nupp emit: error: cannot write the output: No space left on device")
    assert proc.stderr.count("\n") == 1, proc.stderr


def test_emit_into_a_pipe_nobody_reads(project):
    """As a C tool killed by SIGPIPE: no message, status 141."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as pipe:
        proc = nupp_cli("emit", "--c", project / "calc.nupp", stdout=pipe)
    assert (proc.returncode, proc.stderr) == (141, "")


def test_the_machine_is_not_needed_where_nothing_is_built(project, tmp_path):
    """Without gcc and with an unusable cache, `check`, `emit` and `--aot off` still work."""
    env = {"PATH": str(tmp_path), "NUPP_CACHE_DIR": os.devnull}
    assert nupp_cli("check", project / "calc.nupp", env=env).returncode == 0
    assert "add" in nupp_cli("emit", "--c", project / "calc.nupp", env=env).stdout
    assert nupp_cli("run", "--aot", "off", project / "main.nupp", env=env).stdout == "42\n"
    assert shutil.which("gcc", path=str(tmp_path)) is None
