"""Building native code: the C compiler, its flags, and the compile cache.

A module's C is compiled once per (source, compiler, compiler version,
flags, nupp version) and kept under the cache folder (`NUPP_CACHE_DIR`, else
`$XDG_CACHE_HOME/nupp`, else `~/.cache/nupp`):

    <key>.so     the shared library
    <key>.json   its manifest: the key's parts and the library's SHA-256

Writes go to a temporary file in the same folder and are renamed into place,
so two processes building the same module concurrently both succeed and
neither ever loads a torn library.  A library whose hash does not match its
manifest is corrupt: it is rebuilt.  When the compiler fails (nupp's bug, not
the user's), the generated C is kept and its path reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import nupp
from nupp.frontend.diagnostics import InternalError
from nupp.paths import cache_dir

# -ffp-contract=off: every binary64 operation rounds once, as LuaJIT computes it.
# Never fast math.
BASE_FLAGS = ("-std=c11", "-O2", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared")
COMPILERS = ("gcc", "clang")


@dataclass(frozen=True)
class Toolchain:
    """A C compiler and the flags nupp gives it."""

    path: str
    version: str
    flags: tuple[str, ...] = BASE_FLAGS

    @property
    def name(self) -> str:
        return Path(self.path).name


@lru_cache(maxsize=None)
def find_toolchain(cc: str = "gcc", extra_flags: tuple[str, ...] = ()) -> Toolchain:
    """The compiler named `cc` (gcc, clang, or a path), with its version."""
    path = shutil.which(cc)
    if path is None:
        raise InternalError("native", f"the C compiler '{cc}' was not found on PATH; "
                            "install it or pick another with --cc")
    probe = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    version = probe.stdout.splitlines()[0] if probe.stdout else "unknown"
    return Toolchain(os.path.realpath(path), version, BASE_FLAGS + tuple(extra_flags))


def cache_key(c_source: str, toolchain: Toolchain) -> str:
    parts = json.dumps({"source": c_source, "cc": toolchain.path, "version": toolchain.version,
                        "flags": toolchain.flags, "nupp": nupp.__version__}, sort_keys=True)
    return hashlib.sha256(parts.encode()).hexdigest()[:32]


def build_library(c_source: str, toolchain: Toolchain, label: str = "module") -> Path:
    """The shared library of `c_source`, from the cache or freshly compiled."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    key = cache_key(c_source, toolchain)
    library = folder / f"{key}.so"
    manifest = folder / f"{key}.json"
    if _intact(library, manifest):
        return library
    _compile(c_source, toolchain, folder, library, label)
    _write_atomically(manifest, json.dumps({
        "key": key, "label": label, "cc": toolchain.path, "version": toolchain.version,
        "flags": list(toolchain.flags), "nupp": nupp.__version__, "sha256": _sha256(library),
    }, indent=1).encode())
    return library


def _intact(library: Path, manifest: Path) -> bool:
    try:
        recorded = json.loads(manifest.read_text())["sha256"]
        return _sha256(library) == recorded
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _compile(c_source: str, toolchain: Toolchain, folder: Path, library: Path, label: str) -> None:
    with tempfile.TemporaryDirectory(dir=folder, prefix="build-") as tmp:
        c_file = Path(tmp) / "module.c"
        c_file.write_text(c_source)
        out = Path(tmp) / "module.so"
        proc = subprocess.run([toolchain.path, *toolchain.flags, "-o", str(out), str(c_file), "-lm"],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            kept = _keep_failed_source(c_source, folder, label)
            raise InternalError("emit_c", f"{toolchain.name} could not compile the C generated for {label}; "
                                f"the C is kept at {kept}\n{proc.stderr.strip()[:4000]}")
        # rename within one folder: atomic, so no process ever loads a torn library
        os.replace(out, library)


def _keep_failed_source(c_source: str, folder: Path, label: str) -> Path:
    failed = folder / "failed"
    failed.mkdir(exist_ok=True)
    path = failed / f"{hashlib.sha256(c_source.encode()).hexdigest()[:16]}-{Path(label).stem}.c"
    path.write_text(c_source)
    return path


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
