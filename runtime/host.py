"""The LuaJIT host: one lupa runtime per run, with the Nupp runtime installed.

Everything a Nupp program executes runs inside this LuaJIT state.  Python
sets it up, translates `.nupp` modules when `require` asks for them (once per
module: `require` caches), and turns Lua errors into diagnostics.

A module compiled before comes from runtime/module_cache.py: the compiler
(nupp/pipeline.py and everything below it) is imported only when a module
must be compiled, so a start whose modules are all cached imports none of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from lupa import luajit21

from nupp.compiled import Compiled
from nupp.errors import Source, source_bytes
from nupp.runtime.deep_stack import on_deep_stack
from nupp.runtime.module_cache import ModuleCache
from nupp.runtime.threads import ThreadSetting, thread_setting
from nupp.targets.toolchain import unloadable

LUA_DIR = Path(__file__).resolve().parent / "lua"
MODULE_EXTENSIONS = (".nupp", ".lua")


INTERNALS = "nupp.internals"  # the runtime's internals in the Lua registry
RUN_ON_HOST = -2  # what Host._run_device answers for a call the device cannot take (native.lua)


def new_lua_runtime() -> "luajit21.LuaRuntime":
    """A fresh LuaJIT 2.1 state with the global `nupp` installed and the
    runtime's internals in its registry (runtime_internals), out of reach of
    the program's globals.

    A script must not reach the Python interpreter: lupa's `python` module
    (eval, builtins, attribute access) is removed, and the Python objects that
    Lua holds (the module searcher, NumPy arrays behind spans), which the
    debug library could reach, have no attributes for Lua."""
    lua = luajit21.LuaRuntime(unpack_returned_tuples=True, register_eval=False, register_builtins=False,
                              attribute_filter=_no_python_attributes)
    lua.execute("python = nil; package.loaded.python = nil")
    prelude = lua.eval("function(path, dir, key) debug.getregistry()[key] = assert(loadfile(path))(dir) end")
    prelude(str(LUA_DIR / "prelude.lua"), str(LUA_DIR), INTERNALS)
    return lua


def runtime_internals(lua: "luajit21.LuaRuntime"):
    """The internals table of a state made by new_lua_runtime (prelude.lua's
    `__nupp`).  Ask before running a program, which may replace `debug`."""
    return lua.eval(f'debug.getregistry()["{INTERNALS}"]')


def _no_python_attributes(obj, name, is_setting):
    raise AttributeError("Lua code has no access to Python objects")


@dataclass
class LuaRunError(Exception):
    """A Lua error raised while running a program: message plus Nupp frames."""

    message: str
    traceback: str

    def __str__(self) -> str:
        return self.message


_INSTALL_SEARCHER = """
function(find_module, load_chunk)
    local function hex(c) return string.format("%02x", c:byte()) end
    -- Second in line, after package.preload: project modules come before
    -- anything on LuaJIT's own package.path.  The name travels as hex: lupa
    -- would decode it as UTF-8 and fail on other bytes.
    table.insert(package.loaders, 2, function(name)
        local source, chunkname, translated = find_module((name:gsub(".", hex)))
        if source == nil then return chunkname end
        local chunk, err = load_chunk(source, chunkname, translated)
        if not chunk then error(err, 0) end
        return chunk
    end)
end
"""


class Host:
    """A Nupp program's world: a LuaJIT state, its module search path, and how
    `@aot` functions run (the pipeline's Request, nupp/pipeline.py): "interp"
    (their IR as Lua), "scalar" (compiled C) or "lane" (compiled C with simple
    span loops in SIMD gangs, emit_c/lane.py, built for the feature tier it
    runs, targets/tiers.py).  In lane mode
    `tier` pins a tier (else the best this CPU runs) and `gang` the gang of
    every tier (else the tier's own); other modes ignore both.  `threads`: the
    threads lane C's span loops may run on (runtime/threads.py; None:
    NUPP_THREADS, else one), a setting of this host's calls, not of what it compiles.
    `vector_bits`: the pipeline Request's cap of lane code's vectors (the bench's)."""

    def __init__(self, search_path: list[Path] | None = None, mode: str = "interp", cc: str = "gcc",
                 gang: int | None = None, tier: str | None = None, spirv_runner: str = "vulkan",
                 threads: ThreadSetting | None = None, vector_bits: int | None = None):
        self.lua = new_lua_runtime()
        self.mode = mode
        self.cc = cc
        self.gang = gang
        self.tier = tier
        self.spirv_runner = spirv_runner
        self.vector_bits = vector_bits
        self._modules = ModuleCache(mode, cc, gang, tier, spirv_runner, vector_bits)
        self.search_path = [Path(p) for p in (search_path or [])]
        self.module_error: Exception | None = None  # raised in Python once Lua unwinds
        self.internals = runtime_internals(self.lua)
        chunks = self.internals.chunks
        self._load_chunk, self._on_error, self._unreported = chunks.load, chunks.failure, chunks.unreported
        self.flush_output = chunks.flush  # standard output, whatever the program did to `io`
        self._xpcall = self.lua.eval("xpcall")
        self.lua.eval(_INSTALL_SEARCHER)(self._find_module, self._load_chunk)
        self._lane_modules: dict[str, tuple[Source, str]] = {}  # lane library -> (its module, bound tier)
        self.internals.native.more_executions = self._more_executions
        self._device_kernels: dict = {}  # device symbol -> (DeviceKernel, status offset, runner)
        self.internals.native.run_device = self._run_device
        self.internals.native.refused = self._refused
        self.threads = threads or thread_setting()
        self.internals.native.threads = self.threads.count
        self.internals.native.thread_min = self.threads.min_iterations

    # ---- running
    def run_file(self, path: str | Path, args: tuple = (), command: tuple = ()) -> None:
        self.run_source(Source.from_file(display_path(path)), args, command)

    def run_source(self, source: Source, args: tuple = (), command: tuple = ()) -> None:
        """Run a script as `luajit SCRIPT ARGS` does: `...` is ARGS, and so is
        the global `arg` from 1, with the script at 0 and the words of the
        command line before it (`command`, e.g. ("nupp", "run")) at -n..-1."""
        words = (*command, source.path, *args)
        self.lua.globals()["arg"] = self.lua.table_from(
            {i - len(command): lua_bytes(word) for i, word in enumerate(words)})
        self._run(self.compile(source).lua, "@" + source.path, args, translated=True)

    @cached_property
    def request(self):
        """The pipeline's Request (nupp/pipeline.py): made, and a bad mode, gang,
        tier or runner refused, when a module is first compiled."""
        from nupp.pipeline import Request
        return Request(self.mode, self.cc, self.gang, self.tier, self.spirv_runner, self.vector_bits)

    def compile(self, source: Source) -> Compiled:
        """A module through the pipeline in this host's mode: its Lua, and its
        @aot functions' library when native (built, or from the cache); or as
        compiled before (runtime/module_cache.py)."""
        compiled = self._modules.find(source, self._cpu_tier)
        if compiled is None:
            from nupp.pipeline import compile_for_host
            compiled = compile_for_host(source, self.request, self._cpu_tier)
            self._modules.keep(source, compiled)
        if compiled.tier is not None:
            self._lane_modules[compiled.native.library] = (source, compiled.tier)
        if compiled.device is not None:
            for symbol, (kernel, offset) in compiled.device.kernels.items():
                self._device_kernels[symbol] = (kernel, offset, compiled.device.runner)
        return compiled

    def _cpu_tier(self, library: Path, cdef: str, symbol: str) -> int:
        """The best tier this CPU runs, as the tiered library's dispatcher says."""
        return int(self.internals.native.cpu_tier(str(library), cdef, symbol))

    def run_lua(self, text: str, chunkname: str = "=lua", args: tuple = ()) -> None:
        """Run plain Lua (no translation), e.g. as an oracle for the translator."""
        self._run(text, chunkname, args, translated=False)

    def load_module(self, source: Source, compiled: Compiled | None = None):
        """Run a module as `require` would (compiled already, or now); the value it returns."""
        lua = (compiled or self.compile(source)).lua
        return self._run(lua, "@" + source.path, (), translated=True)

    def _run(self, lua_text: str, chunkname: str, args: tuple, translated: bool):
        """Run a chunk; its first result.  A Lua error raises LuaRunError, a
        required module that did not compile its own NuppError.  The chunk is
        called by xpcall called from here: its caller is one C frame, as under
        `luajit FILE`, so error levels and tracebacks are those of luajit."""
        self.module_error = None
        chunk, problem = self._load_chunk(source_bytes(lua_text), chunkname, translated)
        if chunk is None:
            raise LuaRunError(str(problem), "")
        # C functions calling back into Lua grow the C stack (runtime/deep_stack.py)
        outcome = on_deep_stack(self._xpcall, chunk, self._on_error, *map(lua_bytes, args))
        if self.module_error is not None:
            raise self.module_error
        ok, *results = outcome if isinstance(outcome, tuple) else (outcome,)
        if not ok:
            failure = results[0]
            # not the handler's report: it ran out of stack (a stack overflow), or was never called
            raise _run_error(failure if luajit21.lua_type(failure) == "table" else self._unreported(failure))
        return results[0] if results else None

    def capture_output(self):
        """Redirect `print` and `io.write` into a buffer; returns a function giving the text so far."""
        return self.lua.execute("""
            local out = {}
            local function write(...)
                for i = 1, select("#", ...) do out[#out + 1] = tostring((select(i, ...))) end
            end
            print = function(...)
                local n = select("#", ...)
                for i = 1, n do
                    out[#out + 1] = tostring((select(i, ...)))
                    if i < n then out[#out + 1] = "\\t" end
                end
                out[#out + 1] = "\\n"
            end
            io.write = function(...) write(...) return io.stdout end
            return function() return table.concat(out) end
        """)

    # ---- spirv mode
    def _run_device(self, symbol: str, *abi_args):
        """A device kernel called as its C function would be (native.lua's
        device_function): the status, offset among the module's errors, or
        (-1, why) when the device failed."""
        from nupp.targets.device import DeviceUnavailable
        from nupp.targets.device_call import call_kernel
        kernel, offset, runner = self._device_kernels[symbol]
        try:
            status = call_kernel(kernel, runner, *_device_arguments(kernel, list(abi_args)))
        except DeviceUnavailable:
            return RUN_ON_HOST  # this call is beyond the device (a span past its buffer limit): the C runs it
        except Exception as err:  # noqa: BLE001 - becomes the call's Lua error, with its text
            return -1, f"the SPIR-V device ({runner.execution_name}) failed running {kernel.function}: {err}"
        return status + offset if status else 0

    # ---- native.lua's loader
    def _refused(self, library: str, why: str):
        """native.lua's loader refused `library` (`why`): the compiler's fault, raised (from a
        chunk once Lua unwinds; lupa re-raises it where Python called Lua: Host._cpu_tier)."""
        self.module_error = unloadable(Path(library), why)
        raise self.module_error

    # ---- nupp.executions
    def _more_executions(self, hex_library: str):
        """The native executions of the module whose library is `hex_library`
        (hex, as the searcher's names) besides the bound one, for native.lua:
        in lane mode its scalar C and lane C at every gang, at the bound tier,
        built now (or from the cache); in scalar mode none (scalar C is the
        bound one: that mode asks for no lane C).  (None, why) if the build failed."""
        lane_module = self._lane_modules.get(bytes.fromhex(hex_library).decode("utf-8", "surrogateescape"))
        if lane_module is None:
            return self.lua.table_from([])
        source, tier = lane_module
        from nupp.pipeline import native_executions
        try:
            executions = native_executions(source, self.request, tier)
        except Exception as err:  # noqa: BLE001 - re-raised whole once Lua unwinds
            self.module_error = err
            return None, f"nupp could not build the executions of {source.path}"
        return self.lua.table_from([self._lua_execution(native) for native in executions])

    def _lua_execution(self, native):
        """A NativeModule as native.lua reads it: {name, library, cdef, errors, functions = {f = symbol}}."""
        table = self.lua.table_from
        return table({
            "name": native.mode, "library": source_bytes(native.library), "cdef": native.cdef,
            "errors": table([source_bytes(e) for e in native.errors]),
            "functions": table({name: symbol for name, (symbol, _) in native.functions.items()}),
        })

    # ---- require
    def _find_module(self, hex_name: str):
        """The source and chunk name of module `name`, or (None, why not: the
        lines `require` adds to "module 'name' not found:")."""
        name, problem = module_name(bytes.fromhex(hex_name))
        if problem is not None:
            return None, f"\n\tno file searched by nupp: {problem}"
        relative = name.replace(".", os.sep)
        tried = []
        for folder in self.search_path:
            for ext in MODULE_EXTENSIONS:
                candidate = folder / (relative + ext)
                try:
                    if candidate.is_file():
                        return self._load_module(candidate)
                    tried.append(f"no file '{candidate}'")
                except OSError as err:  # e.g. a name too long for the file system
                    tried.append(f"no file '{candidate}' ({err.strerror})")
        return None, "".join(f"\n\t{t}" for t in tried)

    def _load_module(self, path: Path):
        """The source of a module file, its chunk name and whether it is a translation."""
        chunkname = "@" + display_path(path)
        if path.suffix == ".lua":
            return path.read_bytes(), chunkname, False  # Lua source is bytes
        try:
            return source_bytes(self.compile(Source.from_file(display_path(path))).lua), chunkname, True
        except Exception as err:  # noqa: BLE001 - re-raised whole once Lua unwinds
            # Keep the diagnostics whole for the user; Lua only learns that it failed.
            self.module_error = err
            return None, f"\n\t{path}: nupp could not compile this module"


def _device_arguments(kernel, abi_args: list) -> tuple[dict, memoryview | None]:
    """A device kernel's arguments from its C function's (spans as address and
    length, a 64-bit integer as its digits, -0 as "-0": native.lua), and the
    memory its result goes to (the C function's last argument, a pointer)."""
    import ctypes

    from nupp.targets.device_call import SpanArgument
    arguments = {}
    strides = {span.name: span.stride for span in kernel.spans}
    for p in kernel.params:
        if p.name in strides:
            address, length = int(abi_args.pop(0)), int(abi_args.pop(0))
            size = length * strides[p.name]
            memory = (ctypes.c_char * size).from_address(address) if size else bytearray()
            arguments[p.name] = SpanArgument(memoryview(memory).cast("B"), length)
        else:
            value = abi_args.pop(0)
            arguments[p.name] = float(value) if p.type.is_float else value if p.type.bits == 1 else int(value)
    if kernel.result is None:
        return arguments, None
    size = max(1, kernel.result.bits // 8)  # the C type's bytes (_Bool: one)
    return arguments, memoryview((ctypes.c_char * size).from_address(int(abi_args.pop(0)))).cast("B")


def _run_error(failure) -> LuaRunError:
    """The error of a failed chunk from what chunks.failure (or chunks.unreported) made of it."""
    message, traceback = (bytes.fromhex(failure[i]).decode("utf-8", "surrogateescape") for i in (1, 2))
    return LuaRunError(message, traceback)


def lua_bytes(value):
    """A command-line word as the bytes it was (Python decodes them with surrogate escapes)."""
    return os.fsencode(value) if isinstance(value, str) else value


def module_name(name: bytes) -> tuple[str, str | None]:
    """A `require` name as text, and why nupp searches no file for it (None:
    it does).  Names are components separated by single dots, so that each
    names a file inside a search folder: no leading, trailing or doubled dot,
    no path separator (`a.b`, not `a/b` or `/abs`), no NUL; and UTF-8 text."""
    try:
        text = name.decode("utf-8")
    except UnicodeDecodeError:
        return "", "a module name must be UTF-8 text"
    if not text:
        return text, "a module name cannot be empty"
    if "\0" in text:
        return text, "a module name cannot hold a NUL byte"
    for separator in ("/", "\\"):
        if separator in text:
            return text, f"a module name cannot hold the path separator '{separator}' (write a.b for the file a/b)"
    if text.startswith(".") or text.endswith(".") or ".." in text:
        return text, "a module name cannot start or end with '.' or hold '..' (its parts are separated by single dots)"
    return text, None


def display_path(path: str | Path) -> str:
    """A path as the user should see it: relative to the working directory when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
