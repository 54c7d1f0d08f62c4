"""The compile cache (targets/toolchain.py): hits, concurrent builds, corruption, keys.

  * A second build of the same module is a cache hit: the compiler does not
    run (a build would fail the test), the library file is the same
    one (inode and mtime unchanged), and the call takes well under 30 ms.
    The measured times are printed (`pytest -s`) and carried in the
    assertion messages.
  * Several processes building the same new module at once all succeed and
    load a working library; the folder is left with one library and one
    manifest for the key and no temporary files.
  * A corrupted entry -- the library overwritten with garbage, truncated,
    emptied, or its manifest garbled, missing or naming another hash -- is
    detected by the manifest's SHA-256 and rebuilt, and the rebuilt library
    works.
  * The key changes with the C source, the compiler, its version, the flags,
    each unit's name and own flags (a tier's -march) and nupp's version, and
    only with them.

Each test compiles a module of its own (a unique constant in its source), so
its key is new even in a shared cache, and no library is dlopen'ed under a
path that a rebuild later replaces (the loader would hand back the old
mapping for the same path).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import nupp
from nupp.emit_c.scalar import emit_module
from nupp.errors import Source
from nupp.pipeline import compile_module
from nupp.targets import toolchain as native
from nupp.targets.toolchain import Toolchain, Unit, build_library, cache_dir, cache_key, find_toolchain

from .conftest import require_tool

ROOT = Path(__file__).resolve().parent.parent
HIT_LIMIT_S = 0.030


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "nupp-cache"
    monkeypatch.setenv("NUPP_CACHE_DIR", str(folder))
    return folder


def unique_module() -> tuple[str, int]:
    """The text of a fresh module and the constant its function adds."""
    constant = uuid.uuid4().int % 1_000_000
    text = (f"@aot\nlocal function bump(a: int32): int32\n    return a + {constant}\nend\n"
            "return {bump = bump}\n")
    return text, constant


def module_c(text: str, path: str = "cached.nupp"):
    return emit_module(compile_module(Source(path, text)), path)


def call_bump(library: Path, cdef: str, argument: int) -> int:
    import cffi
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    lib = ffi.dlopen(str(library))
    result = ffi.new("int32_t *")
    assert lib.nupp_bump(argument, result) == 0
    return result[0]


class CompilerRuns:
    """Counts the library builds (targets/toolchain.py's _compile: every run of the
    compiler happens under it), or forbids them."""

    def __init__(self, monkeypatch, forbid: bool = False):
        self.count = 0
        real = native._compile

        def compile_(units, *args, **kwargs):
            self.count += 1
            if forbid:
                raise AssertionError(f"the compiler ran on a cache hit: {[u.name for u in units]}")
            return real(units, *args, **kwargs)

        monkeypatch.setattr(native, "_compile", compile_)


# ---- hits ------------------------------------------------------------------------------------

def test_cache_folder_is_the_configured_one(cache):
    assert cache_dir() == cache


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_second_build_hits_the_cache(cc, cache, monkeypatch):
    require_tool(cc)
    toolchain = find_toolchain(cc)  # its own `--version` probe runs before the counting starts
    text, constant = unique_module()
    c = module_c(text)

    t0 = time.perf_counter()
    first = build_library(c.source, toolchain, "cached.nupp")
    first_s = time.perf_counter() - t0
    stat = first.stat()

    with monkeypatch.context() as patch:
        CompilerRuns(patch, forbid=True)
        timings = []
        for _ in range(5):
            t0 = time.perf_counter()
            again = build_library(c.source, toolchain, "cached.nupp")
            timings.append(time.perf_counter() - t0)
    hit_s = min(timings)
    report = (f"{cc}: first build {first_s * 1000:.1f} ms, cache hit {hit_s * 1000:.2f} ms "
              f"(max of 5: {max(timings) * 1000:.2f} ms)")
    print("\n" + report)
    assert again == first
    assert (again.stat().st_ino, again.stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns), report
    assert hit_s < HIT_LIMIT_S, report
    assert hit_s < first_s, report
    assert call_bump(again, c.cdef, 5) == 5 + constant
    manifest = json.loads(first.with_suffix(".json").read_text())
    assert manifest["key"] == first.stem and manifest["cc"] == toolchain.path
    assert manifest["flags"] == list(toolchain.flags)


def test_loading_a_module_twice_compiles_once(cache, tmp_path, monkeypatch):
    """Through the host: the second `nupp.load(..., mode="scalar")` of a module
    (a fresh LuaJIT state) takes its library, and the trampolines of its Python
    calls (runtime/fast_call.py), from the cache."""
    require_tool("gcc")
    from nupp.runtime import fast_call
    from nupp.runtime.api import load

    find_toolchain("gcc")
    fast_call.extension("gcc")  # built once per process and cache, as the compiler's probe runs once
    libraries_before = set(cache.glob("*.so"))
    text, constant = unique_module()
    path = tmp_path / "cached.nupp"
    path.write_text(text)
    counter = CompilerRuns(monkeypatch)
    t0 = time.perf_counter()
    assert load(path, mode="scalar").bump(1) == 1 + constant
    first_s = time.perf_counter() - t0
    runs_first = counter.count
    t0 = time.perf_counter()
    assert load(path, mode="scalar").bump(2) == 2 + constant
    second_s = time.perf_counter() - t0
    report = f"nupp.load: first {first_s * 1000:.1f} ms ({runs_first} compiler run), second {second_s * 1000:.1f} ms"
    print("\n" + report)
    # the module's library, and the trampolines of its calls unless this process built them for another test
    assert runs_first in (1, 2), report
    assert counter.count == runs_first, report
    assert len(set(cache.glob("*.so")) - libraries_before) == runs_first


# ---- concurrent builds -----------------------------------------------------------------------

CHILD = """
import sys, time
from pathlib import Path
from nupp.targets import toolchain as native
from nupp.targets.toolchain import build_library, find_toolchain
from tests.test_compile_cache import call_bump

source, cdef, barrier, ready = Path(sys.argv[1]).read_text(), Path(sys.argv[2]).read_text(), Path(sys.argv[3]), Path(sys.argv[4])
toolchain = find_toolchain("gcc")
runs = []
real = native._compile
def counting(units, *args, **kwargs):
    runs.append(len(units))
    return real(units, *args, **kwargs)
native._compile = counting
ready.write_text("ready")
while not barrier.exists():
    time.sleep(0.0005)
library = build_library(source, toolchain, "concurrent.nupp")
print(library, len(runs), call_bump(library, cdef, 10))
"""


def test_concurrent_builds_of_one_new_module_all_succeed(cache, tmp_path, monkeypatch):
    require_tool("gcc")
    processes = 4
    text, constant = unique_module()
    c = module_c(text, "concurrent.nupp")
    (tmp_path / "module.c").write_text(c.source)
    (tmp_path / "module.cdef").write_text(c.cdef)
    barrier = tmp_path / "go"
    env = dict(os.environ, NUPP_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "module.c"), str(tmp_path / "module.cdef"),
                                  str(barrier), str(tmp_path / f"ready{k}")],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for k in range(processes)]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready{k}").exists() for k in range(processes)):
        assert time.monotonic() < deadline, "the children did not get ready"
        assert all(p.poll() is None for p in children), [p.communicate() for p in children]
        time.sleep(0.01)
    barrier.write_text("go")
    results = [p.communicate(timeout=120) for p in children]
    for p, (out, err) in zip(children, results):
        assert p.returncode == 0, err
    lines = [out.split() for out, _ in results]
    libraries = {line[0] for line in lines}
    compiled = sum(int(line[1]) for line in lines)
    print(f"\n{processes} concurrent builds: {compiled} compiled, {processes - compiled} hit the cache")
    assert len(libraries) == 1
    assert all(int(line[2]) == 10 + constant for line in lines)
    assert compiled >= 1
    # one entry, nothing temporary left behind, and it is intact: a later build is a hit
    assert sorted(p.name for p in cache.iterdir()) == sorted([f"{Path(libraries.pop()).stem}.so",
                                                              f"{Path(lines[0][0]).stem}.json"])
    with monkeypatch.context() as patch:
        CompilerRuns(patch, forbid=True)
        build_library(c.source, find_toolchain("gcc"), "concurrent.nupp")


# ---- corruption --------------------------------------------------------------------------------

def _garbage(library: Path) -> None:
    library.write_bytes(os.urandom(library.stat().st_size))


def _truncate(library: Path) -> None:
    data = library.read_bytes()
    library.write_bytes(data[: len(data) // 2])


def _empty(library: Path) -> None:
    library.write_bytes(b"")


def _flip_one_byte(library: Path) -> None:
    data = bytearray(library.read_bytes())
    data[len(data) // 2] ^= 0x01
    library.write_bytes(bytes(data))


def _garble_manifest(library: Path) -> None:
    library.with_suffix(".json").write_text("{not json")


def _drop_manifest(library: Path) -> None:
    library.with_suffix(".json").unlink()


def _wrong_hash(library: Path) -> None:
    manifest = library.with_suffix(".json")
    data = json.loads(manifest.read_text())
    data["sha256"] = "0" * 64
    manifest.write_text(json.dumps(data))


def _drop_library(library: Path) -> None:
    library.unlink()


CORRUPTIONS = {f.__name__.lstrip("_"): f for f in (_garbage, _truncate, _empty, _flip_one_byte, _garble_manifest,
                                                     _drop_manifest, _wrong_hash, _drop_library)}


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_corrupted_entry_is_detected_and_rebuilt(corruption, cache, monkeypatch):
    require_tool("gcc")
    toolchain = find_toolchain("gcc")
    text, constant = unique_module()
    c = module_c(text)
    library = build_library(c.source, toolchain, "cached.nupp")
    good = library.read_bytes()
    CORRUPTIONS[corruption](library)
    assert not native._intact(library, library.with_suffix(".json"))

    counter = CompilerRuns(monkeypatch)
    rebuilt = build_library(c.source, toolchain, "cached.nupp")
    assert counter.count == 1, "the corrupted entry was not rebuilt"
    assert rebuilt == library
    assert native._intact(rebuilt, rebuilt.with_suffix(".json"))
    manifest = json.loads(rebuilt.with_suffix(".json").read_text())
    assert manifest["sha256"] == native._sha256(rebuilt)
    assert len(rebuilt.read_bytes()) > 0 and rebuilt.read_bytes()[:4] == good[:4] == b"\x7fELF"
    assert call_bump(rebuilt, c.cdef, 1) == 1 + constant
    # and it is a hit again afterwards
    build_library(c.source, toolchain, "cached.nupp")
    assert counter.count == 1


# ---- keys ---------------------------------------------------------------------------------------

def test_key_depends_on_source_compiler_version_flags_units_and_nupp(monkeypatch):
    require_tool("gcc")
    gcc = find_toolchain("gcc")
    source = module_c(unique_module()[0]).source
    units = [Unit("module", source)]
    key = cache_key(units, gcc)
    assert key == cache_key(units, find_toolchain("gcc"))  # stable
    assert key == cache_key([Unit("module", source)], Toolchain(gcc.path, gcc.version, gcc.flags))
    variants = {
        "source": cache_key([Unit("module", source + "\n/* changed */\n")], gcc),
        "flags": cache_key(units, find_toolchain("gcc", extra_flags=("-fsanitize=undefined",))),
        "flag order": cache_key(units, Toolchain(gcc.path, gcc.version, tuple(reversed(gcc.flags)))),
        "compiler version": cache_key(units, Toolchain(gcc.path, gcc.version + " (patched)", gcc.flags)),
        "compiler path": cache_key(units, Toolchain("/opt/other/gcc", gcc.version, gcc.flags)),
        "unit flags": cache_key([Unit("module", source, ("-march=x86-64-v3",))], gcc),
        "unit name": cache_key([Unit("v3", source)], gcc),
        "another unit": cache_key(units + [Unit("cpu_tier", "int x;")], gcc),
    }
    if native.shutil.which("clang"):
        variants["compiler"] = cache_key(units, find_toolchain("clang"))
    monkeypatch.setattr(nupp.version, "__version__", nupp.__version__ + ".dev1")
    variants["nupp version"] = cache_key(units, gcc)
    assert all(v != key for v in variants.values()), variants
    assert len(set(variants.values())) == len(variants), variants


def test_different_flags_give_different_libraries(cache):
    require_tool("gcc")
    source = module_c(unique_module()[0]).source
    plain = build_library(source, find_toolchain("gcc"), "cached.nupp")
    debug = build_library(source, find_toolchain("gcc", extra_flags=("-g",)), "cached.nupp")
    assert plain != debug
    assert json.loads(debug.with_suffix(".json").read_text())["flags"][-1] == "-g"
