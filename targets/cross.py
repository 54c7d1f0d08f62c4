"""Machines a standalone C program can be built for and run on: this host's
and, where a cross compiler and an emulator are installed, others.

    machine = MACHINES["x86_64"]                      # or host_machine()
    machine.missing("clang")                          # None, or what to install (a Debian package)
    argv = [*machine.compile_command("gcc"), *flags, "-o", exe, *c_files, "-lm"]
    subprocess.run([*machine.run_prefix(), exe])
    machine.tiers()                                   # (("baseline", ("-march=x86-64",)), ...), best last
    machine.runnable_tiers()                          # those this host can execute
    machine.register_bytes("v3")                      # a tier's vector register width (32)

`nupp crosscheck` (nupp/crosscheck.py) builds and runs every program through
a Machine, so a new architecture is one entry in MACHINES.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from nupp.paths import NuppEnvironmentError
from nupp.targets.tiers import TIERS, cpu_tier_source, tier_named

# the Debian package of each compiler nupp drives
COMPILER_PACKAGES = {"gcc": "gcc", "clang": "clang"}


@dataclass(frozen=True)
class Machine:
    """One target architecture: how to compile for it and run what was compiled."""

    name: str  # "x86_64", "aarch64"

    def compile_command(self, cc: str) -> list[str]:
        """The argv prefix of compiler `cc` ("gcc"/"clang") building for this machine."""
        if self.name == "x86_64":
            return [cc]
        raise NuppEnvironmentError(f"no compiler is known for machine {self.name}")

    def run_prefix(self) -> list[str]:
        """What runs a program of this machine here: [] natively."""
        return []

    def tiers(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(tier name, its compiler flags), best last."""
        return tuple((t.name, t.flags) for t in TIERS)

    def runnable_tiers(self) -> tuple[str, ...]:
        """The tiers this host can execute programs of, in order."""
        return _x86_64_runnable_tiers()

    def register_bytes(self, tier: str) -> int:
        """The width of one vector register at `tier` (what the cost model shapes gangs for)."""
        return tier_named(tier).vector_bytes

    def sanitize_flags(self, cc: str) -> tuple[str, ...]:
        """UBSan that stops at the first undefined behaviour, with its report."""
        return ("-fsanitize=undefined", "-fno-sanitize-recover=all")

    def missing(self, cc: str) -> str | None:
        """What must be installed to build and run for this machine with `cc`, or None."""
        if shutil.which(cc) is None:
            package = COMPILER_PACKAGES.get(Path(cc).name)
            fix = f"install the Debian package {package}" if package else "install it or name another (--cc)"
            return f"the C compiler '{cc}' was not found on PATH; {fix}"
        return None


@dataclass(frozen=True)
class CrossMachine(Machine):
    """A machine this host builds for with a cross compiler (GCC's `<triple>-gcc`,
    or Clang with `--target`, which finds Debian's cross sysroot itself) and
    runs under QEMU's user-mode emulator, which `-L` points at the target's
    loader and libraries.  On a host of this machine both are the native ones."""

    triple: str = ""                          # "aarch64-linux-gnu"
    machine_tiers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    emulator: str = ""                        # "qemu-aarch64"
    gcc_package: str = ""       # the Debian package of the cross GCC and the target's C library
    emulator_package: str = "qemu-user"
    vector_bytes: int = 16                    # one vector register, at every tier

    def _native(self) -> bool:
        return _HOST_NAMES.get(platform.machine().lower()) == self.name

    def sysroot(self) -> str:
        return f"/usr/{self.triple}"

    def compile_command(self, cc: str) -> list[str]:
        if self._native():
            return [cc]
        name = Path(cc).name
        if name == "gcc":
            return [f"{self.triple}-gcc"]
        if name.startswith("clang"):
            return [cc, f"--target={self.triple}"]
        raise NuppEnvironmentError(f"no cross compiler for {self.name} is known for '{cc}'; use gcc or clang")

    def run_prefix(self) -> list[str]:
        return [] if self._native() else [self.emulator, "-L", self.sysroot()]

    def tiers(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return self.machine_tiers

    def register_bytes(self, tier: str) -> int:
        return self.vector_bytes

    def sanitize_flags(self, cc: str) -> tuple[str, ...]:
        """Debian's Clang ships no UBSan runtime for cross targets: there a check traps
        (the program dies at the first undefined behaviour, with no report)."""
        if self._native() or Path(cc).name != "clang":
            return super().sanitize_flags(cc)
        return ("-fsanitize=undefined", "-fsanitize-trap=undefined")

    def runnable_tiers(self) -> tuple[str, ...]:
        runs = self._native() or shutil.which(self.emulator) is not None
        return tuple(name for name, _ in self.machine_tiers) if runs else ()

    def missing(self, cc: str) -> str | None:
        if self._native() or Path(cc).name != "gcc" and super().missing(cc):
            return super().missing(cc)
        # Clang links against the cross GCC's C library and start files
        needed = ((f"{self.triple}-gcc", self.gcc_package), (self.emulator, self.emulator_package))
        for tool, package in needed:
            if shutil.which(tool) is None:
                return (f"'{tool}' (to build and run programs for {self.name}) was not found on PATH; "
                        f"install the Debian package {package}")
        return None


# Baseline AArch64 has Advanced SIMD (NEON): 16-byte vectors, as baseline x86-64 has SSE2.
AARCH64 = CrossMachine("aarch64", triple="aarch64-linux-gnu", machine_tiers=(("neon", ("-march=armv8-a",)),),
                       emulator="qemu-aarch64", gcc_package="gcc-aarch64-linux-gnu")

MACHINES: dict[str, Machine] = {"x86_64": Machine("x86_64"), "aarch64": AARCH64}

_HOST_NAMES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def triple_of(machine: Machine) -> str:
    """The machine's name as `nupp build --target` takes it: "aarch64-linux-gnu"."""
    return getattr(machine, "triple", "") or f"{machine.name}-linux-gnu"


def host_machine() -> Machine:
    """The machine this process runs on."""
    name = _HOST_NAMES.get(platform.machine().lower(), platform.machine())
    if name not in MACHINES:
        raise NuppEnvironmentError(f"nupp builds for {', '.join(MACHINES)}, not this host's {name}")
    return MACHINES[name]


def require_compiler_for_host(cc: str) -> None:
    """NuppEnvironmentError if C compiler `cc` builds for another machine:
    nupp run and nupp.load load what it builds into this process."""
    here = host_machine()
    target = foreign_compiler(cc, here)
    if target is not None:
        raise NuppEnvironmentError(
            f"the C compiler '{cc}' builds for {target.name}, not for this machine ({here.name}): nupp run and "
            f"nupp.load load what it builds into this process; name a compiler for {here.name} (--cc, or cc= of "
            f"nupp.load), or build a tree for {target.name} with nupp build --target {triple_of(target)}")


def foreign_compiler(cc: str, machine: Machine) -> Machine | None:
    """The machine C compiler `cc` builds for, where that is one of MACHINES
    and not `machine` (its -dumpmachine's first word); else None.  The flags
    of `machine`'s tiers are not such a compiler's, and another machine's
    library does not load here.  A compiler that does not say is let be: its
    build and its library's load are checked as ever."""
    target = MACHINES.get(_compiler_machine(cc) or machine.name, machine)
    return target if target.name != machine.name else None


@lru_cache(maxsize=None)
def _compiler_machine(cc: str) -> str | None:
    """The machine `cc` builds for (x86_64, aarch64), None if it does not say."""
    try:
        said = subprocess.run([cc, "-dumpmachine"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    word = said.stdout.strip().split("-")[0].lower() if said.returncode == 0 else ""
    return _HOST_NAMES.get(word)


@lru_cache(maxsize=None)
def _x86_64_runnable_tiers() -> tuple[str, ...]:
    """The dispatcher's own answer (targets/tiers.py cpu_tier_source), compiled
    and run once: every tier up to the best one this CPU runs."""
    if _HOST_NAMES.get(platform.machine().lower()) != "x86_64":
        return ()
    cc = next((c for c in ("gcc", "clang", "cc") if shutil.which(c)), None)
    if cc is None:
        raise NuppEnvironmentError("no C compiler found to ask which tiers this CPU runs; install gcc")
    program = cpu_tier_source("nu_cpu_tier") + "\nint main(void) { return nu_cpu_tier(); }\n"
    with tempfile.TemporaryDirectory(prefix="nupp-cpu-tier-") as tmp:
        source, exe = os.path.join(tmp, "cpu_tier.c"), os.path.join(tmp, "cpu_tier")
        Path(source).write_text(program)
        built = subprocess.run([cc, *TIERS[0].flags, "-o", exe, source], capture_output=True, text=True)
        if built.returncode != 0:
            raise NuppEnvironmentError(f"{cc} cannot build the CPU tier probe:\n{built.stderr.strip()}")
        best = subprocess.run([exe]).returncode
    return tuple(t.name for t in TIERS[:best + 1])
