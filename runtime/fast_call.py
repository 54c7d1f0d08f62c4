"""Python calls of native @aot functions without LuaJIT on the way (runtime/fast_call.c).

A call through the host boundary (NuppModule's Lua path) costs microseconds:
each span crosses into Lua as a cdata that lupa wraps, the call crosses
again, and its result comes back through lupa.  NuppModule binds each
native function a Caller instead: C that takes the plain arguments (NumPy
arrays of the struct's dtype, Python numbers in range: fast_call.c lists
them) as they are and calls the library's function through a trampoline,
and hands every other call to the Lua path, whose boundary alone refuses
arguments and words the refusal.  So both paths give the same results and
the same errors (tests/test_python_api_calls.py holds them to it).

Two libraries, built by targets/toolchain.py and kept in its cache:

  * the extension, fast_call.c, once per Python, NumPy and C compiler.  It
    needs Python's and NumPy's C headers; without them every call takes the
    Lua path (`extension` answers None).
  * trampolines: per function a C function taking the arguments as an array
    of `nu_arg` and calling the library's function with the prototype the
    library declares (its cdef line), one library per set of prototypes: a
    module rebuilt with the same signatures reuses it.

What it calls comes from the binding itself (native.lua `binding_of`): the
library, its cdef, the symbol, the error texts its statuses name and the
library's thread-count setter, which a Caller calls first with its module's
setting (runtime/threads.py), as the Lua binding does; a
function a device runs (spirv mode) has none and keeps the Lua path, as
does every function in interp mode.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from nupp.runtime.threads import ThreadSetting
from nupp.targets.toolchain import build_library, find_toolchain

# The argument array's element and the trampoline's type: fast_call.c fills
# the member of each argument's kind, a trampoline passes it on.
ABI = """#include <stdint.h>
typedef union { void *p; int32_t i32; uint32_t u32; int64_t i64; uint64_t u64; float f32; double f64; _Bool b; } nu_arg;
typedef int32_t (*nu_trampoline)(void *function, const nu_arg *args, void *result);
typedef void (*nu_set_threads_fn)(int32_t count, int64_t min_iterations);
"""

# a parameter's type in the boundary's signatures -> its kind in fast_call.c, and the members it fills
SCALAR_KINDS = {"float": ("float", ("f32",)), "number": ("double", ("f64",)), "double": ("double", ("f64",)),
                "int32": ("int32", ("i32",)), "uint32": ("uint32", ("u32",)), "int64": ("int64", ("i64",)),
                "uint64": ("uint64", ("u64",)), "boolean": ("boolean", ("b",))}
SPAN_MEMBERS = ("p", "i32")  # its elements' pointer and its length
RESULT_KINDS = {**{t: kind for t, (kind, _) in SCALAR_KINDS.items()}, "nil": "nil"}

EXTENSION_SOURCE = Path(__file__).resolve().parent / "fast_call.c"
PROTOTYPE_NAME = "NU_FUNCTION"  # a function's name in its shape
EXTENSION_NAME = "nupp_fast_call"


@dataclass(frozen=True)
class Binding:
    """How a bound @aot function calls its library (native.lua `binding_of`)."""

    library: str
    cdef: str
    symbol: str
    errors: tuple[str, ...]  # status k names errors[k - 1]
    threads_setter: str | None = None  # the library's (emit_c/lane_threads.py), None: it has none


@dataclass(frozen=True)
class Param:
    """A parameter as fast_call.c takes it: its kind, and a span's struct dtype."""

    kind: str
    dtype: np.dtype | None = None

    @property
    def members(self) -> tuple[str, ...]:
        """The members of nu_arg it fills, in order."""
        return SPAN_MEMBERS if self.dtype is not None else next(m for k, m in SCALAR_KINDS.values() if k == self.kind)


@dataclass(frozen=True)
class NativeCall:
    """One bound @aot function as fast_call.c calls it: its binding, its parameters and result type."""

    binding: Binding
    params: tuple[Param, ...]
    result: str  # a type of RESULT_KINDS; "nil": the C function takes no result pointer


def callers(cc: str, calls: dict, fallbacks: dict, error: type, nan: float, threads: ThreadSetting) -> dict:
    """A Caller (fast_call.c) for each of `calls` (name -> NativeCall), falling back to
    fallbacks[name] (the Lua path); a nonzero status raises error(its text).  {} where the
    extension cannot be built.  `nan` is the float a NaN result reaches Python as through LuaJIT;
    `threads` the setting each call gives a library that has threaded loops."""
    fast = extension(cc)
    if fast is None or not calls:
        return {}
    names = list(calls)
    addresses = trampolines(cc, tuple(_shape(calls[name]) for name in names))
    out = {}
    for name, address in zip(names, addresses):
        call = calls[name]
        library = _library(call.binding.library)
        function = ctypes.cast(getattr(library, call.binding.symbol), ctypes.c_void_p).value
        setter = call.binding.threads_setter
        set_threads = ctypes.cast(getattr(library, setter), ctypes.c_void_p).value if setter else 0
        spec = [(p.kind, p.dtype, p.dtype.itemsize if p.dtype is not None else 0) for p in call.params]
        out[name] = fast.caller(address, function, spec, RESULT_KINDS[call.result], nan, fallbacks[name],
                                _raiser(call.binding.errors, error), np.ndarray, set_threads, threads.count,
                                threads.min_iterations)
    return out


def _shape(call: NativeCall) -> tuple:
    """What a function's trampoline depends on: its prototype (the library's cdef line, its
    name left out), the members its arguments fill, whether it takes a result pointer.  Not
    the library: a module recompiled with the same signatures reuses its trampolines."""
    symbol = call.binding.symbol
    prototype = next(line for line in call.binding.cdef.splitlines() if f" {symbol}(" in line)
    members = tuple(m for p in call.params for m in p.members)
    return prototype.replace(f" {symbol}(", f" {PROTOTYPE_NAME}(", 1), members, call.result != "nil"


def _raiser(errors: tuple[str, ...], error: type):
    def raise_status(status: int):
        raise error(errors[status - 1])
    return raise_status


@lru_cache(maxsize=None)
def extension(cc: str):
    """fast_call.c built and imported (once per process and compiler), or None without the headers it needs."""
    python_include, numpy_include = Path(sysconfig.get_paths()["include"]), Path(np.get_include())
    if not ((python_include / "Python.h").is_file() and (numpy_include / "numpy" / "ndarraytypes.h").is_file()):
        return None
    flags = (f"-I{python_include}", f"-I{numpy_include}",
             # in the cache key: another Python or NumPy is another build
             f"-DNUPP_BUILT_FOR=\"{sys.implementation.cache_tag} numpy {np.__version__}\"")
    source = EXTENSION_SOURCE.read_text().replace("/* NU_ABI:", ABI + "/* NU_ABI:", 1)
    path = build_library(source, find_toolchain(cc, flags), "fast_call.c")
    loader = importlib.machinery.ExtensionFileLoader(EXTENSION_NAME, str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(EXTENSION_NAME, path,
                                                                                   loader=loader))
    loader.exec_module(module)
    return module


@lru_cache(maxsize=None)
def trampolines(cc: str, shapes: tuple) -> tuple[int, ...]:
    """The address of a trampoline for each of `shapes` (_shape), built once (or from the cache)."""
    lib = _library(str(build_library(trampoline_source(shapes), find_toolchain(cc), "trampolines")))
    return tuple(ctypes.cast(getattr(lib, f"nu_call_{k}"), ctypes.c_void_p).value for k in range(len(shapes)))


def trampoline_source(shapes: tuple) -> str:
    """C: per shape `nu_call_<k>`, calling `function` (of the prototype's type) with the
    arguments from the array, then the result pointer if it takes one."""
    lines = ["/* Generated by nupp (runtime/fast_call.py): calls of native functions from an argument array. */",
             ABI]
    for k, (prototype, members, has_result) in enumerate(shapes):
        args = [f"a[{i}].{m}" for i, m in enumerate(members)] + (["result"] if has_result else [])
        lines += ["typedef " + prototype.replace(f" {PROTOTYPE_NAME}(", f" nu_function_{k}(", 1),
                  f"int32_t nu_call_{k}(void *function, const nu_arg *a, void *result);",
                  f"int32_t nu_call_{k}(void *function, const nu_arg *a, void *result)",
                  "{",
                  "    (void)a;" if not members else None,
                  "    (void)result;" if not has_result else None,
                  f"    return ((nu_function_{k} *)function)({', '.join(args)});",
                  "}"]
    return "\n".join(line for line in lines if line is not None) + "\n"


@lru_cache(maxsize=None)
def _library(path: str) -> ctypes.CDLL:
    """A library loaded once per process (kept: callers point into it)."""
    return ctypes.CDLL(path)
