"""The Python API: Nupp kernels called from Python with NumPy arrays.

    kernels = nupp.load("kernels.nupp")            # mode "lane" (the default), "scalar", "interp" or "spirv"
    pixels = numpy.zeros(n, dtype=kernels.dtype("Pixel"))
    kernels.mandelbrot(out, pixels, 256)
    kernels.signature("mandelbrot")                # its parameters (a span's struct and dtype) and result

A structured array whose dtype is the struct's (same fields, types and
offsets) is a span: a writable array can be a `span.WriteSpan`, any array a
`span.Span`.  A call checks and converts its arguments as the host boundary
does a call from Nupp code (runtime/lua/boundary.lua), and raises the same
errors, as `NuppRuntimeError`: a compiled function (modes "lane" and
"scalar") takes plain arguments (arrays of the struct's dtype, numbers in
range) in C and calls its library directly, in well under a microsecond;
any other call, and every call in mode "interp" or of a function a device
runs, goes through that boundary in LuaJIT (runtime/fast_call.py).

Numbers cross exactly.  A Python int reaches the boundary as a Lua number up
to 2^53, as int64/uint64 cdata up to the 64-bit ranges, beyond them as a wide
integer (refused by integer parameters with its exact digits, rounded by
number ones); a NumPy scalar counts as the Python number of its value.  A
result comes back by the function's result type: `number`, `double` and
`float` as a Python float (-0.0 keeps its sign), integers as Python ints.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lupa import luajit21

from nupp.errors import Source
from nupp.runtime import fast_call
from nupp.runtime.host import Host, LuaRunError, display_path
from nupp.runtime.threads import check_count, thread_setting

# struct field storage -> NumPy scalar type (native byte order, as the C layout)
FIELD_DTYPES = {"float": np.float32, "number": np.float64, "double": np.float64, "int8": np.int8,
                "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
                "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64}


class NuppRuntimeError(Exception):
    """A Nupp run-time error (a refused argument, a failed assert, ...) raised in a
    call, or while loading the module (its top level raised, or returned no table)."""

# A call's result as lupa can hand it over exactly: a 64-bit integer as its
# digits, -0 as "-0" (lupa turns an integral number into a Python int).
_CALL = """
function(fn, ...)
    local ok, r = pcall(fn, ...)
    if not ok then return false, tostring(r) end
    if type(r) == "cdata" then return true, (tostring(r):gsub("U?LL$", "")) end
    if r == 0 and 1 / r < 0 then return true, "-0" end
    return true, r
end
"""

# result type -> the Python value of what _CALL hands over
RESULTS = {"number": float, "double": float, "float": float, "int32": int, "uint32": int, "int64": int,
           "uint64": int, "boolean": bool, "nil": lambda _: None}

TWO_53, TWO_63, TWO_64 = 2 ** 53, 2 ** 63, 2 ** 64

@dataclass(frozen=True)
class Param:
    """A parameter of an @aot function: its name and type ("span", or a scalar's:
    "int32", "number", "boolean", ...); a span's struct, the struct's dtype, and
    whether the function may write it."""

    name: str
    type: str
    struct: str | None = None
    dtype: np.dtype | None = None
    writable: bool = False


@dataclass(frozen=True)
class Signature:
    """An @aot function as the Python API calls it (NuppModule.signature): its
    declared name, its parameters in order, and its result type ("nil": none)."""

    name: str
    params: tuple[Param, ...]
    result: str


class NuppModule:
    """A loaded .nupp module: its @aot functions as Python callables, its structs as dtypes.

    `execution` names how its @aot functions run ("interp", "scalar" or
    "lane<gang>-<tier>", as `nupp.executions` names them); `executions` maps
    each @aot function to its own, which under mode "spirv" is the device's
    ("spirv-lavapipe") for the functions a device runs."""

    def __init__(self, path: str | Path, mode: str = "lane", cc: str = "gcc", gang: int | None = None,
                 tier: str | None = None, spirv_runner: str = "vulkan", threads: int | None = None,
                 vector_bits: int | None = None):
        path = Path(path)
        self._host = Host(search_path=[path.resolve().parent], mode=mode, cc=cc, gang=gang, tier=tier,
                          spirv_runner=spirv_runner, threads=thread_setting(threads), vector_bits=vector_bits)
        lua = self._host.lua
        source = Source.from_file(display_path(path))
        compiled = self._host.compile(source)
        native = compiled.native
        self.execution = native.mode if native is not None else "interp"
        self.executions = {name: native.devices[name][0] if name in native.devices else self.execution
                           for name in native.functions} if native is not None else {}
        exports = _exports_of(self._host, source, compiled)
        internals = self._host.internals
        self._call = lua.eval(_CALL)
        self._span_for = internals.mem.span_at
        self._signatures = internals.boundary.signatures
        self._int64_cdata = internals.boundary.int64_cdata
        self._wide_integer = internals.boundary.wide_integer
        self._struct_info = internals.mem.struct_info
        self._exports = dict(exports.items())
        self._layouts: dict[tuple, np.dtype] = {}  # a struct's layout -> its one dtype object here
        self._dtypes: dict[str, np.dtype] = {}
        for name, value in self._exports.items():
            info = self._struct_info(value)
            if info is not None:
                self._dtypes[name] = self._dtype_of(info)
        self._functions = self._bind_functions(internals, cc)

    def dtype(self, struct: str) -> np.dtype:
        """The NumPy dtype of a struct the module exports."""
        return self._dtypes[struct]

    def signature(self, function: str) -> "Signature":
        """How the @aot function the module exports as `function` is called: its
        declared name, its parameters and its result type (AttributeError if the
        module exports no @aot function by that name)."""
        signature = self._signatures[self._exports[function]] if function in self._exports else None
        if signature is None:
            raise AttributeError(f"the module exports no @aot function '{function}'")
        params = signature["params"]
        return Signature(signature["name"], tuple(self._param(params[i + 1]) for i in range(len(params))),
                         signature["result"])

    def _param(self, param) -> "Param":
        kind = param["type"]
        if isinstance(kind, str):
            return Param(param["name"], kind)
        info = self._struct_info(kind["span"])
        return Param(param["name"], "span", info["name"], self._dtype_of(info), bool(kind["writable"]))

    def __getattr__(self, name: str):
        call = self.__dict__.get("_functions", {}).get(name)
        if call is None:
            raise AttributeError(f"the module exports no @aot function '{name}'")
        self.__dict__[name] = call  # looked up once: later calls skip __getattr__
        return call

    def _bind_functions(self, internals, cc: str) -> dict:
        """Each exported @aot function as Python calls it: a native one through
        fast_call.py's Caller, which takes the plain arguments itself and hands
        every other call to the Lua path; the others (interp, a device's) by the
        Lua path alone."""
        lua_calls, native_calls = {}, {}
        binding_of = internals.native.binding_of
        for name, fn in self._exports.items():
            signature = self._signatures[fn]
            if signature is None:
                continue
            spans = self._span_params(signature)
            lua_calls[name] = self._lua_call(fn, signature, spans)
            binding = binding_of(fn)
            if binding is not None:
                native_calls[name] = self._native_call(binding, signature, spans)
        # the float a NaN result reaches Python as through the boundary (its narrow's NaN)
        nan = internals.math.f32.narrow(float("nan"))
        self._lua_calls = lua_calls
        return {**lua_calls, **fast_call.callers(cc, native_calls, lua_calls, NuppRuntimeError, nan,
                                                 self._host.threads)}

    def _lua_call(self, fn, signature, spans):
        """The call through LuaJIT's host boundary."""
        result = RESULTS[signature["result"]]
        return lambda *args: self._invoke(fn, signature, spans, result, args)

    def _native_call(self, binding, signature, spans) -> fast_call.NativeCall:
        library, cdef, symbol, errors, threads_setter = binding
        params = signature["params"]
        kinds = []
        for index, span in enumerate(spans):
            if span is None:
                kinds.append(fast_call.Param(fast_call.SCALAR_KINDS[params[index + 1]["type"]][0]))
            else:
                writable = bool(params[index + 1]["type"]["writable"])
                kinds.append(fast_call.Param("write_span" if writable else "span", span[1]))
        texts = tuple(errors[i + 1] for i in range(len(errors)))
        return fast_call.NativeCall(fast_call.Binding(library, cdef, symbol, texts, threads_setter), tuple(kinds),
                                    signature["result"])

    def _span_params(self, signature) -> list:
        """Per parameter: (struct, its dtype) for a span, else None; worked out
        once per function, so a call only compares dtypes."""
        params = signature["params"]
        out = []
        for index in range(len(params)):
            span_type = params[index + 1]["type"]
            if span_type is None or isinstance(span_type, str):
                out.append(None)
            else:
                struct = span_type["span"]
                out.append((struct, self._dtype_of(self._struct_info(struct))))
        return out

    def _dtype_of(self, info) -> np.dtype:
        """A struct's dtype, one object per layout: an array made with `dtype(...)`
        is checked by identity on every call, not compared field by field."""
        layout = struct_layout(info)
        if layout not in self._layouts:
            names, formats, offsets, itemsize = layout
            self._layouts[layout] = np.dtype({"names": list(names), "formats": list(formats),
                                              "offsets": list(offsets), "itemsize": itemsize})
        return self._layouts[layout]

    def _invoke(self, fn, signature, spans, result, args):
        lua_args = [self._argument(signature, spans, i, a) for i, a in enumerate(args)]
        ok, value = self._call(fn, *lua_args)
        if not ok:
            raise NuppRuntimeError(_in_python_words(value, signature["name"], args))
        return result(value)

    def _argument(self, signature, spans, index: int, value):
        if isinstance(value, np.generic):
            value = value.item()  # a NumPy scalar counts by its value, as the Python number
        if isinstance(value, int) and not isinstance(value, bool):
            return self._integer(int(value))
        if not isinstance(value, np.ndarray):
            return value  # the boundary checks it (a float subclass, np.float64, is a Lua number)
        span = spans[index] if index < len(spans) else None
        if span is None:
            return value  # the boundary refuses it with its own words
        struct, want = span
        problem = _span_array_problem(value, want, self._struct_info(struct)["name"])
        if problem is not None:
            raise NuppRuntimeError(f"bad argument #{index + 1} to '{signature['name']}' ({problem})")
        return self._span_for(struct, value.ctypes.data, len(value), bool(value.flags.writeable), value)

    def _integer(self, n: int):
        """A Python integer as the exact Lua value the boundary checks: a number
        up to 2^53, then 64-bit cdata, then a wide integer (boundary.lua)."""
        if -TWO_53 <= n <= TWO_53:
            return n
        if -TWO_63 <= n < TWO_64:
            return self._int64_cdata(n >> 32, n & 0xFFFFFFFF, n >= TWO_63)
        return self._wide_integer(str(n))


# lupa hands Lua None as nil and any other Python object as a userdata, which a refusal names so
_GOT_LUA_NAME = re.compile(r"^(bad argument #([0-9]+) to '([^']*)' \(.* expected, got )(?:userdata|nil)\)$", re.DOTALL)


def _in_python_words(message: str, function: str, args: tuple) -> str:
    """A refusal of a Python argument as Python names it (`got a Python list`,
    `got None`, a missing one `got no value` as LuaJIT's C functions say), not
    as the Lua value lupa made of it."""
    m = _GOT_LUA_NAME.match(message)
    index = int(m[2]) - 1 if m and m[3] == function else -1
    if index >= len(args):
        return f"{m[1]}no value)"
    if index < 0 or luajit21.lua_type(args[index]) is not None:  # a Lua value itself
        return message
    if args[index] is None:
        return f"{m[1]}None)"
    kind = type(args[index])
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return f"{m[1]}a Python {name})"


def _span_array_problem(array: np.ndarray, dtype: np.dtype, struct: str) -> str | None:
    """Why an array cannot be a span of `struct` (whose dtype is `dtype`), or None."""
    if array.dtype != dtype:
        return f"an array of the dtype of {struct} expected, got an array of dtype {array.dtype}"
    if array.ndim != 1:
        return f"a 1-d array expected, got a {array.ndim}-d array of shape {array.shape}"
    if not array.flags.c_contiguous:
        return (f"an array with contiguous elements expected, got a strided one (stride {array.strides[0]} "
                f"bytes, element {array.itemsize}); np.ascontiguousarray makes a contiguous copy, "
                "but a function does not write back through a copy")
    return None


def _exports_of(host: Host, source: Source, compiled):
    """The table a module returns (NuppRuntimeError if it raises or returns something else)."""
    try:
        exports = host.load_module(source, compiled)
    except LuaRunError as err:
        raise NuppRuntimeError(err.message) from None
    if luajit21.lua_type(exports) != "table":
        got = "nothing" if exports is None else f"a {luajit21.lua_type(exports) or LUA_TYPES[type(exports)]}"
        raise NuppRuntimeError(f"{source.path}: the module returned {got}, not a table; nupp.load needs a "
                               "module that ends with `return {name = value, ...}`")
    return exports


# what lupa makes of a Lua value that is not a Lua object
LUA_TYPES = {bool: "boolean", int: "number", float: "number", str: "string", bytes: "string"}


def struct_layout(info) -> tuple:
    """A struct's exact layout (mem.struct_info) as a NumPy dtype spells it: its fields'
    names, scalar types and offsets, and its size."""
    fields = [info["fields"][i + 1] for i in range(len(info["fields"]))]
    return (tuple(f["name"] for f in fields), tuple(FIELD_DTYPES[f["type"]] for f in fields),
            tuple(int(f["offset"]) for f in fields), int(info["size"]))


def load(path: str | Path, mode: str = "lane", cc: str = "gcc", gang: int | None = None,
         tier: str | None = None, spirv_runner: str = "vulkan", threads: int | None = None) -> NuppModule:
    """Load a .nupp module for calls from Python.  Mode "lane" (the default)
    runs span loops in SIMD gangs where the lane rewrite applies, at `tier`
    (else the best this CPU runs; targets/tiers.py) and `gang` (4, 8, 16 or 32 for
    every loop, else each loop's own: targets/gang_choice.py); "scalar" is the plain compiled C, "interp" ordinary Nupp;
    "spirv" runs the functions a Vulkan device can run there, through
    `spirv_runner` ("vulkan", the module as written, or "wgpu"), and the rest
    as lane code.  `threads` (1 to 1024; None: the environment variable
    NUPP_THREADS, else 1) is how many threads lane C may split a span loop
    between, where its iterations are independent (`nupp emit --report` says
    which loops): a setting of this module's calls, which never changes a
    bit of their results, nor what is compiled.  A tier this CPU cannot run
    raises TierError (a ValueError), an option of the wrong type TypeError, a
    thread count out of range ValueError, a missing device DeviceUnavailable."""
    _check_option_types(mode=mode, cc=cc, gang=gang, tier=tier, spirv_runner=spirv_runner, threads=threads)
    if threads is not None:
        check_count(int(threads), "nupp.load: threads")
    return NuppModule(path, mode, cc, None if gang is None else int(gang), tier, spirv_runner,
                      None if threads is None else int(threads))


# option -> (the types it takes, what it is)
OPTION_TYPES = {"mode": ((str,), "a str: 'lane', 'scalar', 'spirv' or 'interp'"),
                "spirv_runner": ((str,), "a str: 'vulkan' or 'wgpu'"),
                "cc": ((str,), "a str: 'gcc', 'clang' or a compiler's path"),
                "gang": ((numbers.Integral, type(None)), "an int: 4, 8, 16 or 32 (or None: each loop's own)"),
                "tier": ((str, type(None)), "a str: 'baseline', 'v2', 'v3' or 'v4' (or None: the best this CPU runs)"),
                "threads": ((numbers.Integral, type(None)), "an int from 1 to 1024 (or None: NUPP_THREADS, else 1)")}


def _check_option_types(**options) -> None:
    for name, value in options.items():
        types, wanted = OPTION_TYPES[name]
        if not isinstance(value, types) or isinstance(value, bool):
            raise TypeError(f"nupp.load: {name} must be {wanted}, not {type(value).__name__} {value!r}")
