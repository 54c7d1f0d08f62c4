"""`nupp build` and `nupp run PROJECT_DIR`, by doing the thing: a project is
built with aot on and off and each tree's program (bin/NAME, no Python)
prints what `nupp run` prints; the tree, copied elsewhere, runs from a third
folder and from /; a rebuild with nothing changed compiles nothing (the tree's
files are the same inodes and an empty compile cache stays empty); touching
one module rebuilds only it; a cross build's objects are AArch64's by
readelf, and its program, run under qemu from /, prints what `nupp run`
prints (but for one -0 that Debian's AArch64 LuaJIT loses); every BENCH host script, built, prints what `nupp run` prints (the
embedded LuaJIT is Debian's, not lupa's: the exact-conversion workarounds
hold in both).  A built program runs span loops on the threads NUPP_THREADS
asks for (counted in /proc/self/status), with one thread's answer, reads the
thread variables by nupp run's rule and refuses a bad one as nupp run does
(exit status 2), on AArch64 too.

tests/projects/demo: main requires stats, which requires lib.scale; both
modules have @aot functions (spans, int32 wrap, int64, binary32, an integer
division by zero).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nupp.scalar_ir.lanes import GANG_SIZES

from .conftest import UNDER_CI, require_tool

ROOT = Path(__file__).resolve().parent.parent
DEMO = Path(__file__).resolve().parent / "projects" / "demo"
BENCH = ROOT / "bench" / "kernel-subset-spike"
LUAJIT_STATIC = Path("/usr/lib/x86_64-linux-gnu/libluajit-5.1.a")


def require_luajit_library() -> None:
    """Debian's libluajit-5.1-dev (the launcher links it): skips locally when missing, fails under CI."""
    require_tool("gcc")
    if not LUAJIT_STATIC.is_file():
        if UNDER_CI:
            pytest.fail(f"{LUAJIT_STATIC} (libluajit-5.1-dev) is required under CI but is not installed")
        pytest.skip("libluajit-5.1-dev is not installed")


def nupp(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "nupp", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def run(exe: Path, *args, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def outcome(proc: subprocess.CompletedProcess) -> tuple[int, str]:
    return proc.returncode, proc.stdout


def files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def built(project: Path, out: Path, *options) -> Path:
    proc = nupp("build", project, "--out", out, *options)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """A copy of tests/projects/demo (nupp run and nupp build write nothing into it but build/)."""
    require_luajit_library()
    project = tmp_path_factory.mktemp("project") / "demo"
    shutil.copytree(DEMO, project)
    return project


@pytest.fixture(scope="module")
def tree_on(demo) -> Path:
    return built(demo, demo / "build")


@pytest.fixture(scope="module")
def tree_off(demo, tmp_path_factory) -> Path:
    return built(demo, tmp_path_factory.mktemp("off") / "tree", "--aot", "off")


# ---- the trees answer as nupp run does -------------------------------------------------------------

@pytest.mark.parametrize("args", [(), ("executions",), ("exit",), ("a", "b")], ids=["plain", "executions", "exit", "args"])
def test_aot_on_tree_prints_what_nupp_run_prints(demo, tree_on, args):
    expected = outcome(nupp("run", ".", *args, cwd=demo))
    assert outcome(run(tree_on / "bin" / "demo", *args)) == expected
    if args == ("executions",):  # lane C at the tier this CPU runs, then scalar C and the other gangs
        names = re.findall(r"^(\S+)\t", expected[1].split("args\t1\texecutions\n")[1], re.M)
        # the interpreter, scalar C and lane C at every gang
        assert names[0] == "interp" and "scalar" in names and len(names) == 2 + len(GANG_SIZES), expected[1]


@pytest.mark.parametrize("args", [(), ("executions",), ("exit",)], ids=["plain", "executions", "exit"])
def test_aot_off_tree_prints_what_nupp_run_prints(demo, tree_off, args):
    expected = outcome(nupp("run", ".", "--aot", "off", *args, cwd=demo))
    assert outcome(run(tree_off / "bin" / "demo", *args)) == expected


def test_aot_on_and_off_trees_agree_and_only_on_has_native_code(tree_on, tree_off):
    on, off = run(tree_on / "bin" / "demo"), run(tree_off / "bin" / "demo")
    assert on.returncode == off.returncode == 0 and on.stdout == off.stdout
    # what the program computes, by hand: floor division, int64 wrapping
    assert "quotient\t-4\t-4\n" in on.stdout
    assert f"big\t{(2**40 + 3) * -5}LL\t0LL\n" in on.stdout
    modules = ("stats.nupp", "lib/scale.nupp")
    assert files(tree_on / "native") == sorted(
        [f"{m}.so" for m in modules] + [f"{m}.executions-{t}.so" for m in modules for t in ("baseline", "v2", "v3", "v4")])
    assert not (tree_off / "native").exists()


def test_nupp_run_of_a_project_takes_aot_from_nupp_toml(demo, tmp_path):
    project = tmp_path / "off"
    shutil.copytree(demo, project, ignore=shutil.ignore_patterns("build"))
    toml = project / "nupp.toml"
    toml.write_text(toml.read_text().replace('aot = "on"', 'aot = "off"'))
    executions = nupp("run", project, "executions").stdout.split("executions\n")[1]
    assert executions.startswith("interp\t") and executions.count("\n") == 1
    assert "lane" in nupp("run", project, "--aot", "on", "executions").stdout


def test_an_uncaught_error_is_reported_as_nupp_run_reports_it_with_status_1(demo, tree_on, tree_off):
    """The same diagnostic and frames, but for the caret's column (tests/test_build_errors.py)."""
    header = r"(stats\.nupp:\d+):\d+: error: (integer division by zero)\n"
    for tree, aot in ((tree_on, "on"), (tree_off, "off")):
        expected = nupp("run", ".", "--aot", aot, "fail", cwd=demo)
        assert expected.returncode == 1
        position = re.match(header, expected.stderr)
        assert position, expected.stderr
        proc = run(tree / "bin" / "demo", "fail")
        assert (proc.returncode, proc.stdout) == (1, expected.stdout)
        got = re.match(header, proc.stderr)
        assert got and got.groups() == position.groups(), proc.stderr
        lines, oracle = proc.stderr.splitlines(), expected.stderr.splitlines()
        assert lines[1] == oracle[1] and lines[3:] == oracle[3:] and "from:" in lines, proc.stderr


def test_arg_holds_the_program_and_its_arguments(tree_on, tmp_path):
    exe = tree_on / "bin" / "demo"
    proc = run(exe, "arg", "x y", "")
    assert proc.returncode == 0
    assert proc.stdout.endswith(f"args\t3\targ\tx y\t\narg\t{exe}\t3\targ\tx y\t\n")


# ---- relocatable --------------------------------------------------------------------------------

def test_a_copied_tree_runs_from_a_third_folder_and_from_root(tree_on, tmp_path):
    copy = shutil.copytree(tree_on, tmp_path / "elsewhere" / "demo-tree", symlinks=True)
    third = tmp_path / "third"
    third.mkdir()
    expected = run(tree_on / "bin" / "demo", "executions")
    assert expected.returncode == 0
    shutil.rmtree(tree_on.parent / "build-moved", ignore_errors=True)
    tree_on.rename(tree_on.parent / "build-moved")  # nothing of the original is where it was built
    try:
        for cwd in (third, Path("/")):
            assert outcome(run(copy / "bin" / "demo", "executions", cwd=cwd)) == outcome(expected)
        relative = os.path.relpath(copy / "bin" / "demo", third)
        assert outcome(run(Path(relative), "executions", cwd=third)) == outcome(expected)
    finally:
        (tree_on.parent / "build-moved").rename(tree_on)


def test_the_launcher_names_no_absolute_path_of_the_build(tree_on, demo):
    launcher = (tree_on / "bin" / "demo").read_bytes()
    assert str(demo).encode() not in launcher and b"nupp-launcher-" not in launcher  # nor its C's folder
    for text in (tree_on / "lib" / "nupp" / "tree.lua", *(tree_on / "lua").rglob("*.lua")):
        assert str(demo) not in text.read_text(errors="replace"), text


# ---- incremental ----------------------------------------------------------------------------------

def inodes(tree: Path) -> dict[str, int]:
    return {str(p.relative_to(tree)): p.stat().st_ino for p in tree.rglob("*") if p.is_file()
            and p.parts[len(tree.parts)] in ("bin", "native", "lua")}


@pytest.fixture
def rebuilt_copy(demo, tree_on, tmp_path) -> Path:
    """A copy of the demo project, built (its native libraries from the compile
    cache, as tree_on built them): what a rebuild starts from."""
    project = shutil.copytree(DEMO, tmp_path / "demo")
    built(project, project / "build")
    return project


def test_a_rebuild_with_nothing_changed_compiles_nothing(rebuilt_copy, tmp_path):
    before = inodes(rebuilt_copy / "build")
    cache = tmp_path / "empty-cache"
    proc = nupp("build", rebuilt_copy, env={**os.environ, "NUPP_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr
    assert "nupp build: nothing changed since the last build: compiled nothing" in proc.stderr
    assert "compiling" not in proc.stderr and "launcher (" not in proc.stderr
    assert inodes(rebuilt_copy / "build") == before  # every file taken over, none written anew
    assert not any(cache.rglob("*.so"))  # no compiler ran through the compile cache
    assert run(rebuilt_copy / "build" / "bin" / "demo").stdout == nupp("run", rebuilt_copy).stdout


def test_changing_one_module_rebuilds_only_it(rebuilt_copy):
    before = inodes(rebuilt_copy / "build")
    scale = rebuilt_copy / "lib" / "scale.nupp"
    scale.write_text(scale.read_text().replace("a * b + 2147483000", "a * b + 2147483001"))
    proc = nupp("build", rebuilt_copy)
    assert proc.returncode == 0, proc.stderr
    assert "nupp build: compiling lib/scale.nupp\n" in proc.stderr
    assert "nupp build: compiled 1 of 3 modules (lib/scale.nupp)\n" in proc.stderr
    after = inodes(rebuilt_copy / "build")
    changed = {path for path in before if after.get(path) != before[path]}
    assert changed and all(path.startswith(("lua/lib/scale.nupp", "native/lib/scale.nupp")) for path in changed)
    expected = nupp("run", rebuilt_copy)
    assert "2147483001" not in expected.stdout and outcome(run(rebuilt_copy / "build" / "bin" / "demo")) == outcome(expected)


def test_a_failed_build_leaves_the_previous_tree(rebuilt_copy):
    before = inodes(rebuilt_copy / "build")
    (rebuilt_copy / "stats.nupp").write_text("local x = = 1\n")
    proc = nupp("build", rebuilt_copy)
    assert proc.returncode == 1 and "stats.nupp:1:11: error:" in proc.stderr, proc.stderr
    assert inodes(rebuilt_copy / "build") == before
    assert run(rebuilt_copy / "build" / "bin" / "demo").returncode == 0
    assert not [p for p in rebuilt_copy.iterdir() if p.name.startswith(".build")]  # no staging folder left


# ---- errors ---------------------------------------------------------------------------------------

TOML_ERRORS = [
    ('[project]\nname = "demo"\nmain = "main.nupp"\n\n[build]\naot = "on"\nfast = true\n',
     "nupp.toml:7:1: error: unknown key 'fast' in [build] of nupp.toml\n    7 | fast = true\n      | ^\n"),
    ('[project]\nname = "demo"\nmain = "main.nupp"\nversion = "1"\n',
     "nupp.toml:4:1: error: unknown key 'version' in [project] of nupp.toml\n"),
    ('[project]\nname = "demo"\nmain = "main.nupp"\n[tool]\nx = 1\n', "nupp.toml:4:1: error: unknown key 'tool' in nupp.toml\n"),
    ('[project]\nname = "demo"\n', "nupp.toml:1:1: error: [project] needs main = ... in nupp.toml\n"),
    ('[project]\nname = "demo"\nmain = "mian.nupp"\n',
     "nupp.toml:3:1: error: main names 'mian.nupp', which is not a file in "),
    ('[project]\nname = "a/b"\nmain = "main.nupp"\n', "nupp.toml:2:1: error: name must be a file name"),
    ('[project]\nname = "demo"\nmain = "main.nupp"\n[build]\naot = "yes"\n',
     "nupp.toml:5:1: error: aot takes \"on\" or \"off\", not 'yes'\n"),
    ('[project\n', "nupp.toml:1:9: error: nupp.toml is not TOML: "),
]


@pytest.mark.parametrize("toml, message", TOML_ERRORS, ids=[m.split(": ", 2)[2][:30] for _, m in TOML_ERRORS])
def test_a_wrong_nupp_toml_is_a_diagnostic_and_status_2(tmp_path, toml, message):
    (tmp_path / "nupp.toml").write_text(toml)
    (tmp_path / "main.nupp").write_text('print("hi")\n')
    for command in ("build", "run"):
        proc = nupp(command, ".", cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.startswith(message), proc.stderr
        assert not (tmp_path / "build").exists()


def test_environment_faults_are_status_2(tmp_path, demo):
    (tmp_path / "not-a-project").mkdir()
    proc = nupp("build", tmp_path / "not-a-project")
    assert proc.returncode == 2 and proc.stderr.startswith(
        f"nupp build: error: cannot read {tmp_path / 'not-a-project' / 'nupp.toml'}: no such file")
    cases = [
        (("--out", tmp_path), "exists and is not a tree nupp build wrote"),  # never replace what is not ours
        (("--out", demo / "main.nupp" / "tree"), "cannot write the output tree"),
        (("--cc", "no-such-cc"), "the C compiler 'no-such-cc' was not found on PATH"),
    ]
    (tmp_path / "keep.txt").write_text("mine")
    for options, message in cases:
        proc = nupp("build", demo, *options)
        assert proc.returncode == 2 and message in proc.stderr and proc.stderr.startswith("nupp build: error: "), proc.stderr
    assert (tmp_path / "keep.txt").read_text() == "mine"
    no_cross = nupp("build", demo, "--target", "aarch64-linux-gnu", "--out", tmp_path / "arm",
                    env={**os.environ, "PATH": str(Path(sys.executable).parent)})
    assert no_cross.returncode == 2 and "install the Debian package gcc-aarch64-linux-gnu" in no_cross.stderr


# ---- threads ----------------------------------------------------------------------------------------

# A span loop that runs on threads (an exact int32 sum), and how many threads the process has after it.
THREADED_KERNEL = """local span = nupp.mem.span
local struct In
    i: int32
end
@aot
local function total(borrows rows: span.Span<In>, acc: int32): int32
    for k = 1, #rows do
        acc = acc + rows[k].i
    end
    return acc
end
return {In = In, total = total}
"""
THREADED_MAIN = """local m = require("kernel")
local rows = nupp.mem.span.new(m.In, 100003)
for i = 1, #rows do rows[i].i = i * 7919 end
print(m.total(rows, 0))
local status = io.open("/proc/self/status"):read("*a")
io.stderr:write("threads ", status:match("Threads:%s*(%d+)"), "\\n")
"""
THREADED_SUM = sum(i * 7919 for i in range(1, 100004)) % 2**32
THREADED_SUM -= 2**32 if THREADED_SUM >= 2**31 else 0  # int32 addition wraps


def thread_environment(**settings) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUPP_THREADS", "NUPP_THREADS_MIN")}
    return {**env, **settings}


@pytest.fixture(scope="module")
def threaded(tmp_path_factory) -> Path:
    """A built project whose one span loop runs on the threads NUPP_THREADS asks for."""
    require_luajit_library()
    project = tmp_path_factory.mktemp("threaded")
    (project / "nupp.toml").write_text('[project]\nname = "threaded"\nmain = "main.nupp"\n')
    (project / "kernel.nupp").write_text(THREADED_KERNEL)
    (project / "main.nupp").write_text(THREADED_MAIN)
    built(project, project / "build")
    return project


@pytest.mark.parametrize("settings, threads", [({}, 1), ({"NUPP_THREADS": "2"}, 2),
                                               ({"NUPP_THREADS": "3", "NUPP_THREADS_MIN": "0"}, 3),
                                               ({"NUPP_THREADS": "2", "NUPP_THREADS_MIN": "200000"}, 1)],
                         ids=["default", "two", "three-min-0", "two-above-min"])
def test_a_built_program_runs_span_loops_on_the_threads_nupp_threads_asks_for(threaded, settings, threads):
    done = run(threaded / "build" / "bin" / "threaded", env=thread_environment(**settings))
    assert outcome(done) == (0, f"{THREADED_SUM}\n"), done.stderr
    assert done.stderr == f"threads {threads}\n"  # the launcher's LuaJIT and OpenMP's threads: no other


BAD_THREAD_SETTINGS = [("NUPP_THREADS", "0", "a whole number from 1 to 1024"),
                       ("NUPP_THREADS", "1025", "a whole number from 1 to 1024"),
                       ("NUPP_THREADS_MIN", "-1", "a whole number of at least 0")]


@pytest.mark.parametrize("variable, value, wanted", BAD_THREAD_SETTINGS, ids=[f"{v}={t}" for v, t, _ in BAD_THREAD_SETTINGS])
def test_a_bad_thread_variable_stops_a_built_program_as_it_stops_nupp_run(threaded, variable, value, wanted):
    env = thread_environment(**{variable: value})
    got = run(threaded / "build" / "bin" / "threaded", env=env)
    expected = nupp("run", ".", cwd=threaded, env=env)
    message = f"the environment variable {variable} must be {wanted}, not '{value}'; set it so or unset it\n"
    assert (expected.returncode, expected.stdout, expected.stderr) == (2, "", f"nupp run: error: {message}")
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"threaded: error: {message}")


# What a whole number is, from the docs (a count from 1 to 1024; a minimum of at least 0, up to 2^62):
# decimal ASCII digits, a + allowed, blanks around; bounds exact however many digits.
THREAD_TEXTS = {"2": 2, " +02\t": 2, "1024": 1024, "\n3 ": 3, "0": None, "1025": None, "x": None, "2.0": None,
                "0x2": None, "1_0": None, "-2": None, "2 2": None, "\uff12": None, "+": None}
MIN_TEXTS = {"0": 0, "000": 0, str(2**62): 2**62, "0" * 30 + "7": 7, str(2**62 + 1): None, "9" * 25: None,
             "-0": None, "1e3": None}


def test_a_built_program_reads_the_thread_variables_by_nupp_runs_rule(threaded, monkeypatch):
    """Each text as NUPP_THREADS and as NUPP_THREADS_MIN: the built program (boot.lua, no Python)
    accepts exactly what the docs call a whole number in range, as nupp.load does (runtime/threads.py)."""
    from nupp.paths import NuppEnvironmentError
    from nupp.runtime.threads import thread_setting

    def python_reads(variable, text):
        monkeypatch.setenv(variable, text)
        try:
            setting = thread_setting()
        except NuppEnvironmentError:
            return None
        finally:
            monkeypatch.delenv(variable)
        return setting.count if variable == "NUPP_THREADS" else setting.min_iterations

    for variable, texts in (("NUPP_THREADS", THREAD_TEXTS), ("NUPP_THREADS_MIN", MIN_TEXTS)):
        for text, value in texts.items():
            done = run(threaded / "build" / "bin" / "threaded", env=thread_environment(**{variable: text}))
            assert (done.returncode == 0) == (value is not None), (variable, text, done.stderr)
            assert python_reads(variable, text) == value, (variable, text)


# ---- cross build ----------------------------------------------------------------------------------

AARCH64_LUAJIT = Path("/usr/lib/aarch64-linux-gnu/libluajit-5.1.a")


def test_a_cross_build_holds_aarch64_objects_and_runs_under_qemu(demo, tmp_path):
    require_tool("aarch64-linux-gnu-gcc")
    readelf = require_tool("readelf")
    proc = nupp("build", demo, "--target", "aarch64-linux-gnu", "--out", tmp_path / "arm")
    assert proc.returncode == 0, proc.stderr
    tree = tmp_path / "arm"
    launcher = "bin/demo" if (tree / "bin" / "demo").exists() else "bin/demo.o"
    objects = [launcher, "native/lib/scale.nupp.so", "native/stats.nupp.so"]  # scalar C: no tiers, no executions
    assert [f for f in files(tree) if f.startswith(("bin/", "native/"))] == objects
    for path in map(tree.joinpath, objects):
        header = subprocess.run([readelf, "-h", str(path)], capture_output=True, text=True, check=True).stdout
        assert re.search(r"Machine:\s+AArch64", header), (path, header)
    assert f"nupp build: checked {len(objects)} ELF objects: each is for aarch64 (e_machine 183)\n" in proc.stderr
    if launcher == "bin/demo.o":  # no AArch64 LuaJIT here: the launcher is compiled, not linked
        assert "bin/demo is not linked: no static LuaJIT library for this machine" in proc.stderr
        if UNDER_CI:
            pytest.fail(f"{AARCH64_LUAJIT} (libluajit-5.1-dev:arm64) is required under CI but is not installed")
        pytest.skip("libluajit-5.1-dev:arm64 is not installed: the AArch64 program is not linked, nor run")
    emulator = [require_tool("qemu-aarch64"), "-L", "/usr/aarch64-linux-gnu"]
    got = subprocess.run([*emulator, str(tree / "bin" / "demo"), "x", "y"], capture_output=True, text=True,
                         cwd="/", timeout=300)
    expected = nupp("run", ".", "x", "y", cwd=demo)
    assert got.returncode == expected.returncode == 0, got.stderr + expected.stderr
    assert without_the_aarch64_luajit_negative_zero(got.stdout) == expected.stdout
    refused = subprocess.run([*emulator, str(tree / "bin" / "demo")], capture_output=True, text=True, cwd="/",
                             timeout=300, env=thread_environment(NUPP_THREADS="many"))
    assert (refused.returncode, refused.stderr) == (2, "demo: error: the environment variable NUPP_THREADS must be "
                                                       "a whole number from 1 to 1024, not 'many'; set it so or unset it\n")


def without_the_aarch64_luajit_negative_zero(stdout: str) -> str:
    """The AArch64 program's output as the x86-64 one prints it.  Debian's AArch64
    LuaJIT (2.1.0-beta3, dual-number mode: integral numbers are held as
    integers) prints main.nupp's `-0.0` as 0; the demo's other numbers, its
    native results and its errors agree."""
    lines = stdout.splitlines(keepends=True)
    for k, line in enumerate(lines):
        fields = line.split("\t")
        if fields[0] == "numbers" and fields[3] == "0":
            fields[3] = "-0"
            lines[k] = "\t".join(fields)
    return "".join(lines)


# ---- the BENCH host scripts -----------------------------------------------------------------------

# small inputs: a few hundred milliseconds each
BENCH_ARGS = {"mandelbrot": ("48x32",), "corrected": ("200",), "tecsbits": ("2000",), "mixedwidth": ("2000",),
              "simd": ("64", "3")}
_THROUGHPUT = re.compile(r"\s+\d+(\s+(?:yes|no))$", re.M)  # elements/s, the column before `agrees`


@pytest.mark.slow
@pytest.mark.parametrize("kernel", sorted(BENCH_ARGS))
def test_every_bench_host_script_built_prints_what_nupp_run_prints(kernel, tmp_path):
    require_luajit_library()
    project = tmp_path / kernel
    project.mkdir()
    for name in (f"{kernel}.nupp", f"{kernel}_main.nupp"):
        shutil.copyfile(BENCH / name, project / name)
    (project / "nupp.toml").write_text(f'[project]\nname = "{kernel}"\nmain = "{kernel}_main.nupp"\n')
    tree = built(project, tmp_path / "tree")
    expected = nupp("run", ".", *BENCH_ARGS[kernel], cwd=project)
    got = run(tree / "bin" / kernel, *BENCH_ARGS[kernel], cwd="/")
    assert expected.returncode == got.returncode == 0, expected.stderr + got.stderr
    assert _THROUGHPUT.sub(r" N\1", got.stdout) == _THROUGHPUT.sub(r" N\1", expected.stdout)
    assert "agrees" in got.stdout and " no\n" not in got.stdout


def test_main_is_nupp_whatever_its_name_and_a_required_lua_module_runs_as_lua(tmp_path):
    """As under nupp run: the script is translated even as app.lua, a required .lua module is not."""
    require_luajit_library()
    (tmp_path / "nupp.toml").write_text('[project]\nname = "app"\nmain = "app.lua"\n')
    (tmp_path / "app.lua").write_text('local helper = require("helper")\nlocal x: number = 41\n'
                                      'print(helper.twice(x + 1), 7 // 2)\n')
    (tmp_path / "helper.lua").write_text("return { twice = function(x) return 2 * x end }\n")
    expected = nupp("run", ".", cwd=tmp_path)
    assert outcome(expected) == (0, "84\t3\n"), expected.stderr
    assert outcome(run(built(tmp_path, tmp_path / "build") / "bin" / "app")) == outcome(expected)


def test_recursion_through_string_gsub_is_a_stack_overflow_not_a_crash(tmp_path):
    """gsub's callback grows the C stack ~10 KB a level: the launcher raises the
    stack's soft limit so that LuaJIT's own limit fires first, as under nupp run
    (runtime/deep_stack.py).  On 8 MB the built program died of SIGSEGV."""
    require_luajit_library()
    (tmp_path / "nupp.toml").write_text('[project]\nname = "deep"\nmain = "main.nupp"\n')
    (tmp_path / "main.nupp").write_text('local function f(s) return (string.gsub(s, "a", f)) end\n'
                                        'print(f("aaa"))\n')
    expected = nupp("run", ".", cwd=tmp_path)
    assert expected.returncode == 1 and "main.nupp:1:" in expected.stderr and "stack overflow" in expected.stderr
    proc = run(built(tmp_path, tmp_path / "build") / "bin" / "deep")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("main.nupp:1:") and "stack overflow" in proc.stderr, proc.stderr
