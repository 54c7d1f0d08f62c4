"""Building native code: the C compiler, its flags, and the compile cache.

A library is built from translation units (`Unit`), each compiled with
nupp's flags plus its own (a feature tier's `-march`, targets/tiers.py), all
at once, then linked into one shared library:

    build_library(c_source, toolchain, label)   one unit: a module's scalar C
    build_units(units, toolchain, label)         several: a tiered lane library

It is built once per (every unit's name, source and flags; compiler,
compiler version, nupp's flags, nupp version) and kept under the cache folder
(`NUPP_CACHE_DIR`, else `$XDG_CACHE_HOME/nupp`, else `~/.cache/nupp`):

    <key>.so     the shared library
    <key>.json   its manifest: the key's parts, the units (name and flags:
                 the tiers it carries) and the library's SHA-256

Writes go to a temporary file in the same folder and are renamed into place,
so two processes building the same module concurrently both succeed and
neither ever loads a torn library.  A library whose hash does not match its
manifest is corrupt, and one that is not a private file of the current user
is not trusted: either is rebuilt.  The folder itself is private (0700) and
refused when another user could write to it (nupp/paths.py).

A unit holding OpenMP pragmas (lane C's threaded loops, emit_c/lane_threads.py)
is compiled with OPENMP_FLAGS, and the library is linked with them (GCC's
libgomp, Clang's libomp: Debian's libomp-dev) and never unloaded; the pragmas are guarded by
`#ifdef _OPENMP`, so the flag changes where a loop may run, never its bits.

Units are compiled as C whatever the driver (`-x c`: `g++` or `clang++` would
compile them as C++ and mangle the names LuaJIT binds).  A compile or link
fails when the compiler exits non-zero or when it exits 0 without writing its
output (`--cc /usr/bin/true`).  Then a probe tells whose fault it is: if the
compiler cannot build a trivial library either, the compiler or the machine
is broken (NuppEnvironmentError, naming the fix); otherwise it is nupp's bug,
and the failing unit's C is kept and its path reported (InternalError).  A library
the loader then refuses (the compiler exited 0 having written something else) is
the compiler's fault too (`unloadable`, which the host asks where LuaJIT loads it).
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
from collections.abc import Sequence
from pathlib import Path

from nupp.errors import InternalError
from nupp import version
from nupp.paths import (PRIVATE_MODE, NuppEnvironmentError, cache_dir, is_private_file, private_dir,
                        writing_to_cache)

# -ffp-contract=off: every binary64 operation rounds once, as LuaJIT computes it.
# Never fast math.  These go to every compile and to the link.
BASE_FLAGS = ("-std=c11", "-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-fPIC")
COMPILERS = ("gcc", "clang")
# the fix for every compiler fault
PICK_A_COMPILER = "install gcc or clang, or name a working C compiler (--cc, or cc= of nupp.load)"
OPENMP_FLAGS = ("-fopenmp",)  # GCC and Clang alike
# and to the link: such a library is never unloaded, nor the OpenMP runtime it loads, whose threads
# would otherwise run on in unmapped code once a LuaJIT state closes (a crash at exit)
OPENMP_LINK_FLAGS = OPENMP_FLAGS + ("-Wl,-z,nodelete",)
OPENMP_PRAGMA = "#pragma omp "


@dataclass(frozen=True)
class Toolchain:
    """A C compiler and the flags nupp gives it."""

    path: str
    version: str
    flags: tuple[str, ...] = BASE_FLAGS

    @property
    def name(self) -> str:
        return Path(self.path).name


@dataclass(frozen=True)
class Unit:
    """One translation unit of a library and the flags it alone is compiled with."""

    name: str  # its file's stem, unique in the library: "module", a tier's name, "cpu_tier"
    source: str
    flags: tuple[str, ...] = ()

    @property
    def uses_openmp(self) -> bool:
        return OPENMP_PRAGMA in self.source

    @property
    def all_flags(self) -> tuple[str, ...]:
        """Its own flags, and OPENMP_FLAGS where it holds OpenMP pragmas."""
        return self.flags + (OPENMP_FLAGS if self.uses_openmp else ())


@dataclass(frozen=True)
class BuildFailure:
    """A compile (of `unit`) or the link (`unit` None) that exited non-zero, or exited 0 without its output."""

    unit: Unit | None
    status: int
    words: str  # the compiler's error output

    @property
    def output_kind(self) -> str:
        return "library" if self.unit is None else "object file"


@lru_cache(maxsize=None)
def find_toolchain(cc: str = "gcc", extra_flags: tuple[str, ...] = ()) -> Toolchain:
    """The compiler named `cc` (gcc, clang, or a path), with its version."""
    path = shutil.which(cc)
    if path is None:
        where = "is not an executable file" if os.sep in cc else "was not found on PATH"
        raise NuppEnvironmentError(f"the C compiler '{cc}' {where}; {PICK_A_COMPILER}")
    try:
        probe = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    except OSError as err:
        raise _cannot_run(path, err) from None
    version = probe.stdout.splitlines()[0] if probe.stdout else "unknown"
    return Toolchain(os.path.realpath(path), version, BASE_FLAGS + tuple(extra_flags))


def cache_key(units: Sequence[Unit], toolchain: Toolchain) -> str:
    parts = json.dumps({"units": [[u.name, u.source, list(u.all_flags)] for u in units], "cc": toolchain.path,
                        "version": toolchain.version, "flags": toolchain.flags, "nupp": version.__version__},
                       sort_keys=True)
    return hashlib.sha256(parts.encode()).hexdigest()[:32]


def build_library(c_source: str, toolchain: Toolchain, label: str = "module") -> Path:
    """The shared library of one C translation unit, from the cache or freshly compiled."""
    return build_units((Unit("module", c_source),), toolchain, label)


def build_units(units: Sequence[Unit], toolchain: Toolchain, label: str = "module") -> Path:
    """The shared library of `units`, from the cache or freshly compiled and linked."""
    folder = cache_dir()
    key = cache_key(units, toolchain)
    library = folder / f"{key}.so"
    manifest = folder / f"{key}.json"
    if _intact(library, manifest):
        return library
    with writing_to_cache(folder):
        _compile(units, toolchain, folder, library, label)
        write_atomically(manifest, json.dumps({
            "key": key, "label": label, "cc": toolchain.path, "version": toolchain.version,
            "flags": list(toolchain.flags), "units": [{"name": u.name, "flags": list(u.all_flags)} for u in units],
            "nupp": version.__version__, "sha256": _sha256(library),
        }, indent=1).encode())
    return library


def is_intact(library: Path) -> bool:
    """Whether a library the cache built is still as built, a private file of this user's (else it is rebuilt)."""
    return _intact(library, library.with_suffix(".json"))


def unloadable(library: Path, why: str) -> NuppEnvironmentError:
    """The fault of a library the cache built that this machine's loader refused (`why`, the
    loader's words): its compiler's, which exited 0 having written something else (or is a cross
    compiler).  The library leaves the cache, so that a compiler mended in place rebuilds it."""
    manifest = library.with_suffix(".json")
    try:
        compiler = f"the C compiler '{json.loads(manifest.read_text())['cc']}'"
    except (OSError, ValueError, KeyError, TypeError):
        compiler = "the C compiler"  # its manifest gone: another process refused the library too
    for path in (manifest, library):
        path.unlink(missing_ok=True)
    return NuppEnvironmentError(f"{compiler} wrote a library nupp cannot load ({why}); {PICK_A_COMPILER}")


def _intact(library: Path, manifest: Path) -> bool:
    if not (is_private_file(library) and is_private_file(manifest)):
        return False  # never load what another user could have written
    try:
        recorded = json.loads(manifest.read_text())["sha256"]
        return _sha256(library) == recorded
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _compile(units: Sequence[Unit], toolchain: Toolchain, folder: Path, library: Path, label: str) -> None:
    with tempfile.TemporaryDirectory(dir=folder, prefix="build-") as tmp:
        failure = _build_in(Path(tmp), units, toolchain)
        if failure is not None:
            _check_compiler_works(toolchain, Path(tmp), units)
            raise _nupp_bug(failure, units, toolchain, folder, label)
        out = Path(tmp) / "library.so"
        os.chmod(out, PRIVATE_MODE)
        # rename within one folder: atomic, so no process ever loads a torn library
        os.replace(out, library)


def _build_in(folder: Path, units: Sequence[Unit], toolchain: Toolchain) -> BuildFailure | None:
    """Compile every unit to an object at once (a cold tiered build uses every core) and link them
    into folder/library.so; the first step that failed, or None."""
    objects, compiles = [], []
    for unit in units:
        c_file = folder / f"{unit.name}.c"
        c_file.write_text(unit.source)
        objects.append(str(c_file.with_suffix(".o")))
        compiles.append([toolchain.path, *toolchain.flags, *unit.all_flags, "-c", "-o", objects[-1],
                         "-x", "c", str(c_file)])
    for unit, obj, (returncode, stderr) in zip(units, objects, _run_all(compiles)):
        if returncode != 0 or not wrote_output(Path(obj)):
            return BuildFailure(unit, returncode, stderr)
    openmp = OPENMP_LINK_FLAGS if any(u.uses_openmp for u in units) else ()
    library = folder / "library.so"
    ((returncode, stderr),) = _run_all([[toolchain.path, *toolchain.flags, *openmp, "-shared",
                                         "-o", str(library), *objects, "-lm"]])
    return None if returncode == 0 and wrote_output(library) else BuildFailure(None, returncode, stderr)


def wrote_output(output: Path) -> bool:
    """Whether the compiler wrote `output`: a compiler that exits 0 may still have written nothing."""
    try:
        return output.stat().st_size > 0
    except OSError:
        return False


PROBE = Unit("probe", "int nupp_probe(void) { return 0; }\n")
OPENMP_PROBE = Unit("openmp_probe", "void nupp_probe(int *p, int n)\n{\n"
                                    f"{OPENMP_PRAGMA}parallel for num_threads(2)\n"
                                    "    for (int i = 0; i < n; ++i) p[i] = i;\n}\n")


def _check_compiler_works(toolchain: Toolchain, folder: Path, units: Sequence[Unit]) -> None:
    """NuppEnvironmentError if the compiler cannot build even a trivial library with nupp's
    flags, or, where `units` need OpenMP, a trivial OpenMP one (Clang needs libomp-dev).  Whether
    the library loads is not asked: nupp build's cross compilers build libraries for other machines."""
    for probe in (PROBE, OPENMP_PROBE):
        if probe.uses_openmp and not any(u.uses_openmp for u in units):
            continue
        (folder / probe.name).mkdir()
        failure = _build_in(folder / probe.name, (probe,), toolchain)
        if failure is None:
            continue
        if failure.status == 0:
            raise NuppEnvironmentError(
                f"the C compiler '{toolchain.path}' exited 0 but wrote no {failure.output_kind} for a trivial "
                f"shared library; {PICK_A_COMPILER}" + _quoted(failure.words))
        if probe.uses_openmp:
            raise NuppEnvironmentError(
                f"the C compiler '{toolchain.path}' cannot build OpenMP code ({' '.join(OPENMP_FLAGS)}), which "
                "lane C's threaded loops use: install its OpenMP runtime (Clang's is the Debian package "
                "libomp-dev; GCC's libgomp comes with gcc), or use gcc (--cc gcc, or cc= of nupp.load)"
                + _quoted(failure.words))
        raise NuppEnvironmentError(
            f"the C compiler '{toolchain.path}' cannot build a shared library from C with nupp's flags "
            f"({' '.join(toolchain.flags)}); {PICK_A_COMPILER}" + _quoted(failure.words))


def _nupp_bug(failure: BuildFailure, units: Sequence[Unit], toolchain: Toolchain, folder: Path,
              label: str) -> InternalError:
    unit, stderr = failure.unit, failure.words
    if failure.status == 0:
        stderr = f"(it exited 0 but wrote no {failure.output_kind})\n{stderr}"
    if unit is None:
        return InternalError("native", f"{toolchain.name} could not link the library of {label}" + _quoted(stderr))
    kept = _keep_failed_source(unit.source, folder, label)
    return InternalError("emit_c", f"{toolchain.name} could not compile the C generated for {label}"
                         f"{'' if len(units) == 1 else f' ({unit.name})'}; the C is kept at {kept}" + _quoted(stderr))


def _quoted(compiler_output: str) -> str:
    """The compiler's own words, on the lines after a message (at most 4000 characters)."""
    text = compiler_output.strip()[:4000]
    return "\n" + text if text else ""


def _run_all(commands: list[list[str]]) -> list[tuple[int, str]]:
    """Run the compiler commands concurrently; each one's exit status and error output."""
    try:
        processes = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                     for command in commands]
    except OSError as err:
        raise _cannot_run(commands[0][0], err) from None
    return [_finished(p) for p in processes]


def _cannot_run(path: str, err: OSError) -> NuppEnvironmentError:
    return NuppEnvironmentError(f"cannot run the C compiler '{path}': {err.strerror or err}; {PICK_A_COMPILER}")


def _finished(process: subprocess.Popen) -> tuple[int, str]:
    _, stderr = process.communicate()
    return process.returncode, stderr


def _keep_failed_source(c_source: str, folder: Path, label: str) -> Path:
    failed = private_dir(folder / "failed")
    path = failed / f"{hashlib.sha256(c_source.encode()).hexdigest()[:16]}-{Path(label).stem}.c"
    path.write_text(c_source)
    return path


def write_atomically(path: Path, data: bytes) -> None:
    """Write a file under the cache folder so that no reader ever sees it half written (private: mkstemp's 0600)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
