"""Compiled modules kept between runs: a start that finds its modules here runs no compiler.

What the pipeline makes of a module for the host (nupp/compiled.py's
Compiled: its Lua, its library's binding, the tier bound) depends only on
the module's source (path and text), how it runs (mode, C compiler, gang,
tier), nupp's own code, the C compiler's binary, nupp's environment
variables (NUPP_CPU_TIER_MAX) and, for lane code, the tier this CPU runs.
So the host (runtime/host.py) keeps what it compiled under the cache folder,

    modules/<key>.json    the Compiled, keyed by all of the above but the CPU

and a later `nupp run` or `nupp.load` of the same module takes it from there
without importing the compiler.  An entry counts only if it is a private
regular file of this user's (it holds code that runs, as the libraries do),
every library it names is intact (targets/toolchain.py `is_intact`), and for
lane code the library's dispatcher still answers as when it was built (a
cache folder shared by machines with other CPUs); else the module is
compiled again and the entry replaced.

nupp's code enters the key as each of its source files' path, size and
modification time, so a change to the compiler (in a source checkout, where
the version stays) compiles every module anew.  Spirv mode is not kept: its
device kernels are objects of this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import astuple
from functools import lru_cache
from pathlib import Path
from typing import Callable

import nupp
from nupp import version
from nupp.compiled import Compiled, NativeModule, TierCheck
from nupp.errors import Source, source_bytes
from nupp.paths import cache_dir, is_private_file, private_dir
from nupp.runtime.threads import RUN_TIME_VARIABLES
from nupp.targets.toolchain import is_intact, write_atomically

FOLDER = "modules"
SOURCE_SUFFIXES = (".py", ".lua", ".lark", ".c")
UNKEPT_MODES = ("spirv",)

CpuTier = Callable[[Path, str, str], int]  # pipeline.CpuTier: the host asks a dispatcher


class ModuleCache:
    """The compiled modules of one way of running them (a Host's mode, compiler, gang and tier)."""

    def __init__(self, mode: str, cc: str, gang: int | None, tier: str | None, spirv_runner: str,
                 vector_bits: int | None = None):
        self.request = {"mode": mode, "cc": cc, "gang": gang, "tier": tier, "spirv_runner": spirv_runner,
                        "vector_bits": vector_bits}
        self.enabled = mode not in UNKEPT_MODES

    def find(self, source: Source, cpu_tier: CpuTier) -> Compiled | None:
        """The module as compiled before, if an entry holds it and still holds."""
        if not self.enabled:
            return None
        try:
            path = cache_dir() / FOLDER / f"{self._key(source)}.json"
            if not is_private_file(path):
                return None
            compiled = _decoded(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # no usable cache folder (the compile says why, if it needs one), or an unreadable entry
        if compiled.native is not None and not is_intact(Path(compiled.native.library)):
            return None
        check = compiled.tier_check
        if check is not None and cpu_tier(Path(check.library), check.cdef, check.symbol) != check.answer:
            return None
        return compiled

    def keep(self, source: Source, compiled: Compiled) -> None:
        if not self.enabled or compiled.device is not None:
            return
        try:
            folder = private_dir(cache_dir() / FOLDER)
            write_atomically(folder / f"{self._key(source)}.json", json.dumps(_encoded(compiled)).encode("utf-8"))
        except OSError:  # NuppEnvironmentError too: a cache folder that takes nothing costs the next start a compile
            pass

    def _key(self, source: Source) -> str:
        parts = {"path": source.path, "request": self.request, "cc": _compiler_identity(self.request["cc"]),
                 "settings": _settings(), "code": code_fingerprint(),
                 "nupp": version.__version__}
        digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8"))
        digest.update(source_bytes(source.text))
        return digest.hexdigest()[:32]


def _encoded(compiled: Compiled) -> dict:
    native = compiled.native
    return {"lua": compiled.lua, "tier": compiled.tier,
            "native": None if native is None else {
                "library": native.library, "cdef": native.cdef, "errors": list(native.errors),
                "functions": {name: list(f) for name, f in native.functions.items()}, "mode": native.mode},
            "tier_check": None if compiled.tier_check is None else list(astuple(compiled.tier_check))}


def _decoded(entry: dict) -> Compiled:
    native = entry["native"]
    if native is not None:
        native = NativeModule(native["library"], native["cdef"], tuple(native["errors"]),
                              {name: tuple(f) for name, f in native["functions"].items()}, native["mode"])
    check = entry["tier_check"]
    return Compiled(entry["lua"], native, entry["tier"], None, None if check is None else TierCheck(*check))


def _settings() -> dict:
    """nupp's environment variables but the cache folder's and those of a run's
    calls (NUPP_CPU_TIER_MAX caps the tier taken; NUPP_THREADS changes no code)."""
    return {name: value for name, value in os.environ.items()
            if name.startswith("NUPP_") and name not in ("NUPP_CACHE_DIR", *RUN_TIME_VARIABLES)}


def _compiler_identity(cc: str) -> list | None:
    """The C compiler a name resolves to here, and its binary's size and time (an upgrade is another)."""
    path = shutil.which(cc)
    if path is None:
        return None
    real = os.path.realpath(path)
    info = os.stat(real)
    return [real, info.st_size, info.st_mtime_ns]


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """nupp's own code as this process found it (its subpackages are folders below
    nupp/, links to them in a source checkout)."""
    return fingerprint(Path(nupp.__file__).parent)


def fingerprint(root: Path) -> str:
    """The source files below `root` (links followed): each one's path, size and modification time."""
    lines = []
    for folder, folders, files in os.walk(root, followlinks=True):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                path = os.path.join(folder, name)
                info = os.stat(path)
                lines.append(f"{os.path.relpath(path, root)} {info.st_size} {info.st_mtime_ns}")
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()
