"""The stamped launcher, bin/NAME: launcher.c, stamped with the program's name
and compiled at build time, embedding LuaJIT.

LuaJIT is Debian's libluajit-5.1-dev: its headers and its static library,
linked in, so the tree carries no LuaJIT library and needs none installed.
For another machine (--target) the static library is looked for where
Debian's multiarch package puts it (libluajit-5.1-dev:arm64); without one the
launcher is compiled but cannot be linked, and the tree holds its object,
bin/NAME.o.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nupp.paths import NuppEnvironmentError
from nupp.targets.toolchain import PICK_A_COMPILER, find_toolchain, wrote_output
from nupp.version import __version__

LUAJIT_INCLUDE = Path("/usr/include/luajit-2.1")
LUAJIT_PACKAGE = "libluajit-5.1-dev"
TEMPLATE = Path(__file__).with_name("launcher.c")
INTERRUPT = Path(__file__).resolve().parent.parent / "interrupt.c"  # Ctrl-C's handling, as under nupp run
FLAGS = ("-std=c11", "-O2")
LINK = ("-lm", "-ldl", "-lpthread")  # what the static LuaJIT and interrupt.c need


def luajit_library(triple: str) -> Path | None:
    """The static LuaJIT library for the machine `triple` names, if installed."""
    for folder in (Path("/usr/lib") / triple, Path("/usr") / triple / "lib"):
        if (folder / "libluajit-5.1.a").is_file():
            return folder / "libluajit-5.1.a"
    return None


@dataclass(frozen=True)
class Launcher:
    """The launcher of one program for one machine, and how to build it."""

    source: str
    compile_command: tuple[str, ...]  # the compiler for the machine: ("gcc",), ("clang", "--target=...")
    luajit: Path | None               # LuaJIT's static library for it (None: not installed)

    @classmethod
    def stamped(cls, name: str, boot: str, compile_command: tuple[str, ...], luajit: Path | None) -> "Launcher":
        if not (LUAJIT_INCLUDE / "lua.h").is_file():
            raise NuppEnvironmentError(f"nupp build embeds LuaJIT in the program's launcher, and its headers "
                                       f"({LUAJIT_INCLUDE}) are not installed: install {LUAJIT_PACKAGE}")
        source = TEMPLATE.read_text().replace("/* @INTERRUPT@", INTERRUPT.read_text() + "/* @INTERRUPT@", 1)
        source = source.replace("@NAME@", name).replace("@BOOT@", boot)
        return cls(source.replace("@VERSION@", __version__), compile_command, luajit)

    @property
    def file_name(self) -> str:
        """What the build writes: the executable, or its object when it cannot be linked."""
        return "" if self.luajit is not None else ".o"

    def key(self) -> str:
        """What the launcher is built from: its source, the compiler and its version, LuaJIT's library."""
        toolchain = find_toolchain(self.compile_command[0])
        parts = [self.source, *self.compile_command, toolchain.path, toolchain.version, *FLAGS, *LINK]
        if self.luajit is not None:
            parts.append(hashlib.sha256(self.luajit.read_bytes()).hexdigest())
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def build(self, out: Path) -> None:
        """Compile (and link, with LuaJIT) the launcher into `out`."""
        with tempfile.TemporaryDirectory(prefix="nupp-launcher-") as tmp:
            c_file = Path(tmp) / "launcher.c"
            c_file.write_text(self.source)
            command = [*self.compile_command, *FLAGS, "-I", str(LUAJIT_INCLUDE), "-o", str(out), str(c_file)]
            command += [str(self.luajit), *LINK] if self.luajit is not None else ["-c"]
            try:
                done = subprocess.run(command, capture_output=True, text=True)
            except OSError as err:
                raise NuppEnvironmentError(f"cannot run the C compiler '{command[0]}': {err.strerror or err}") from None
        if done.returncode != 0:
            raise NuppEnvironmentError(f"{' '.join(self.compile_command)} could not build the launcher "
                                       f"(is {LUAJIT_PACKAGE} installed for this machine?):\n{done.stderr.strip()}")
        if not wrote_output(out):
            raise NuppEnvironmentError(f"the C compiler '{command[0]}' exited 0 but wrote no launcher; "
                                       f"{PICK_A_COMPILER}")
