"""Compiled modules kept between runs (runtime/module_cache.py).

  * A module compiled once is, in a new Host and in a new process, taken from
    the cache: the same Lua, binding and tier as compiled, and no compiler
    runs or is even imported (`nupp run` of a cached two-kernel script
    imports neither nupp.pipeline nor lark).
  * An entry is not taken when anything it was made from changed: the
    source, the mode, a NUPP_ setting (NUPP_CPU_TIER_MAX), nupp's code (the
    fingerprint of its files), or when it no longer holds: a library it names
    corrupted (rebuilt), the dispatcher answering another tier, the entry
    garbled or writable by others.  Each of these compiles the module again.
  * An unusable cache folder costs only the entry: `--aot off` still runs.
  * Spirv mode keeps nothing (its device kernels live in the process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from nupp.errors import Source
from nupp.runtime import module_cache
from nupp.runtime.host import Host
from nupp.targets import toolchain

ROOT = Path(__file__).resolve().parent.parent

KERNELS = """local span = nupp.mem.span

local struct P
    x: float
end

@aot
local function double(exclusive out: span.WriteSpan<P>, borrows inp: span.Span<P>): nil
    assert(#inp == #out, "length mismatch")
    for i = 1, #out do
        out[i].x = inp[i].x * 2
    end
end

@aot
local function bump(n: int32): int32
    return n + CONSTANT
end

return {double = double, bump = bump, P = P}
"""

MAIN = """local k = require("kernels")
local span = nupp.mem.span
local a, b = span.new(k.P, 3), span.new(k.P, 3)
a[1].x = 1.5
k.double(b, a)
print(k.bump(1), b[1].x)
"""

NO_COMPILER = """
import sys
from nupp.runtime.cli import main
status = main(["run", sys.argv[1]])
print("imported:", sorted(m for m in ("nupp.pipeline", "lark", "nupp.frontend.parser") if m in sys.modules))
raise SystemExit(status)
"""


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("NUPP_CACHE_DIR", str(folder))
    monkeypatch.delenv("NUPP_CPU_TIER_MAX", raising=False)
    return folder


@pytest.fixture
def script(tmp_path) -> Path:
    constant = uuid.uuid4().int % 1_000_000
    (tmp_path / "kernels.nupp").write_text(KERNELS.replace("CONSTANT", str(constant)))
    (tmp_path / "main.nupp").write_text(MAIN)
    return tmp_path / "main.nupp"


class Compiles:
    """Counts the pipeline's compiles of a module (pipeline.compile_for_host)."""

    def __init__(self, monkeypatch):
        import nupp.pipeline as pipeline
        self.count = 0
        real = pipeline.compile_for_host

        def counting(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(pipeline, "compile_for_host", counting)


def kernels(script: Path) -> Source:
    return Source.from_file(str(script.parent / "kernels.nupp"))


def entries(cache: Path) -> list[Path]:
    return sorted((cache / module_cache.FOLDER).glob("*.json"))


def test_a_cached_module_is_what_was_compiled(script, monkeypatch):
    compiles = Compiles(monkeypatch)
    first = Host(mode="lane").compile(kernels(script))
    again = Host(mode="lane").compile(kernels(script))
    assert compiles.count == 1
    assert again == first and again.tier is not None and again.tier_check is not None


def test_a_cached_run_imports_no_compiler(script, cache):
    env = dict(os.environ, NUPP_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    runs = [subprocess.run([sys.executable, "-c", NO_COMPILER, str(script)], capture_output=True, text=True,
                           env=env, cwd=script.parent, timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[1].stderr
    output = [r.stdout.splitlines() for r in runs]
    assert output[0][0] == output[1][0] and output[0][0].endswith("\t3")
    assert output[0][1] != "imported: []"  # the first run compiled
    assert output[1][1] == "imported: []"
    assert len(entries(cache)) == 2  # the script and its module


def test_a_change_to_what_made_an_entry_compiles_again(script, cache, monkeypatch):
    Host(mode="lane").compile(kernels(script))
    compiles = Compiles(monkeypatch)
    Host(mode="scalar").compile(kernels(script))
    changed = kernels(script)
    Host(mode="lane").compile(Source(changed.path, changed.text + "\n"))
    monkeypatch.setenv("NUPP_CPU_TIER_MAX", "baseline")
    assert Host(mode="lane").compile(kernels(script)).tier == "baseline"
    assert compiles.count == 3
    monkeypatch.delenv("NUPP_CPU_TIER_MAX")
    monkeypatch.setattr(module_cache, "code_fingerprint", lambda: "another nupp")
    Host(mode="lane").compile(kernels(script))
    assert compiles.count == 4


def test_the_fingerprint_follows_every_source_file(tmp_path):
    code = tmp_path / "code"
    (code / "sub").mkdir(parents=True)
    (code / "sub" / "a.py").write_text("x = 1\n")
    (code / "b.lua").write_text("return 1\n")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "c.lark").write_text("start: NAME\n")
    (code / "linked").symlink_to(tmp_path / "linked")
    before = module_cache.fingerprint(code)
    (code / "__pycache__").mkdir()
    (code / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (code / "notes.txt").write_text("not code")
    assert module_cache.fingerprint(code) == before
    for changed in (code / "sub" / "a.py", code / "b.lua", tmp_path / "linked" / "c.lark"):
        stat = changed.stat()
        os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
        after = module_cache.fingerprint(code)
        assert after != before, changed
        before = after


def _corrupt_library(entry: Path) -> None:
    library = Path(json.loads(entry.read_text())["native"]["library"])
    library.write_bytes(library.read_bytes()[:100])


def _garble(entry: Path) -> None:
    entry.write_text("{not json")


def _open_to_others(entry: Path) -> None:
    entry.chmod(0o666)


def _another_layout(entry: Path) -> None:
    entry.write_text(json.dumps({"lua": "return 1"}))


@pytest.mark.parametrize("spoil", [_corrupt_library, _garble, _open_to_others, _another_layout],
                         ids=lambda f: f.__name__.lstrip("_"))
def test_an_entry_that_no_longer_holds_is_compiled_again(spoil, script, cache, monkeypatch):
    Host(mode="scalar").compile(kernels(script))
    (entry,) = entries(cache)
    spoil(entry)
    compiles = Compiles(monkeypatch)
    compiled = Host(mode="scalar").compile(kernels(script))
    assert compiles.count == 1
    assert toolchain.is_intact(Path(compiled.native.library))
    assert module_cache.is_private_file(entry) and json.loads(entry.read_text())["native"] is not None
    Host(mode="scalar").compile(kernels(script))
    assert compiles.count == 1  # the replaced entry holds


def test_another_cpu_tier_compiles_again(script, monkeypatch):
    cached = module_cache.ModuleCache("lane", "gcc", None, None, "vulkan")
    Host(mode="lane").compile(kernels(script))
    answer = Host(mode="lane").compile(kernels(script)).tier_check.answer
    assert cached.find(kernels(script), lambda *_: answer) is not None
    assert cached.find(kernels(script), lambda *_: answer - 1) is None


def test_an_unusable_cache_folder_costs_only_the_entry(script, monkeypatch):
    monkeypatch.setenv("NUPP_CACHE_DIR", os.devnull)
    host = Host(mode="interp", search_path=[script.parent])
    output = host.capture_output()
    host.run_file(script)
    assert output().splitlines()[0].endswith("\t3")


def test_spirv_mode_keeps_nothing():
    assert not module_cache.ModuleCache("spirv", "gcc", None, None, "vulkan").enabled
