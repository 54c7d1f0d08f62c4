"""The kernels written by hand in C, compiled and loaded through cffi.

Two sources in bench/handwritten/: kernels.c, plain scalar C (`hw_` functions:
the old peer, which GCC auto-vectorizes where it can at -O3 -march=native), and
simd_kernels.c, explicit SIMD with vector extensions (`hs_` functions), compiled
once per gang and compiler.  Both use nupp's arithmetic: no contraction.  Each
function takes the arrays' data pointers, then the element count, then the
kernel's own arguments (`Library.call`).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import cffi

SOURCES = Path(__file__).resolve().parent.parent / "handwritten"
SIMD_GANGS = (8, 16, 32)
COMPILERS = ("gcc", "clang")
NATIVE = ("-O3", "-march=native")
NO_CONTRACTION = ("-ffp-contract=off",)  # nupp's arithmetic: every operation rounds once

# The kernels' C names without their prefix (the Nupp function's name) and arguments after the pointers and n.
SIGNATURES = {
    "mandelbrot": "void {}mandelbrot(void *out, const void *px, int32_t n, int32_t max_iter);",
    "correct": "void {}correct(void *out, const void *in, int32_t n);",
    "query": "void {}query(void *out, const void *e, int32_t n, int32_t required, int32_t excluded);",
    "mix": "void {}mix(void *out, const void *in, int32_t n);",
    "advance": "void {}advance(void *b, int32_t n, double dt, double damping);",
}


@dataclass(frozen=True)
class Library:
    """A compiled source whose kernels are named PREFIX + the Nupp function's name."""

    ffi: cffi.FFI
    lib: object
    prefix: str

    def call(self, function: str, arrays, extra=()):
        """A call of `function` on NumPy `arrays` (the first one's length is n) and its `extra` arguments."""
        kernel = getattr(self.lib, self.prefix + function)
        pointers = [self.ffi.cast("void *", array.ctypes.data) for array in arrays]

        def run(_library=self, _arrays=arrays):  # kept alive while the call is: the code, the memory
            return kernel(*pointers, n, *extra)
        n = len(arrays[0])
        return run


def compile_library(source: str, cc: str, flags: tuple[str, ...], cdef: str) -> tuple[cffi.FFI, object]:
    """bench/handwritten/SOURCE built as a shared library by `cc` with `flags`, opened by cffi."""
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    out = Path(tempfile.mkdtemp(prefix="nupp-bench-")) / f"{Path(source).stem}.so"
    subprocess.run([cc, "-std=gnu11", *flags, "-fPIC", "-shared", "-o", str(out), str(SOURCES / source), "-lm"],
                   check=True)
    return ffi, ffi.dlopen(str(out))


def _kernels_cdef(prefix: str) -> str:
    return "\n".join(signature.format(prefix) for signature in SIGNATURES.values())


def hand_scalar(flags: tuple[str, ...] = ("-O2",)) -> Library:
    """kernels.c by GCC with `flags`."""
    ffi, lib = compile_library("kernels.c", "gcc", (*flags, *NO_CONTRACTION), _kernels_cdef("hw_"))
    return Library(ffi, lib, "hw_")


def hand_simd(cc: str, gang: int) -> Library:
    """simd_kernels.c at `gang` by `cc`, -O3 -march=native."""
    flags = (*NATIVE, *NO_CONTRACTION, "-fno-math-errno", f"-DGANG={gang}")
    ffi, lib = compile_library("simd_kernels.c", cc, flags, _kernels_cdef("hs_"))
    return Library(ffi, lib, "hs_")


def simd_label(gang: int, cc: str) -> str:
    return f"hand SIMD{gang} {cc}"


def hand_simd_libraries(compilers=COMPILERS) -> dict[str, Library]:
    """The explicit-SIMD kernels at every gang under each compiler found on PATH, by label."""
    return {simd_label(gang, cc): hand_simd(cc, gang)
            for cc in compilers if shutil.which(cc) for gang in SIMD_GANGS}
