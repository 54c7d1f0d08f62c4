"""The LuaJIT host: one lupa runtime per run, with the Nupp runtime installed.

Everything a Nupp program executes runs inside this LuaJIT state.  Python
sets it up, translates `.nupp` modules when `require` asks for them (once per
module: `require` caches), and turns Lua errors into diagnostics.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from lupa import luajit21

from nupp.frontend.diagnostics import Source
from nupp.frontend.to_lua import NativeModule, translate

LUA_DIR = Path(__file__).resolve().parent / "lua"
MODULE_EXTENSIONS = (".nupp", ".lua")


def new_lua_runtime() -> "luajit21.LuaRuntime":
    """A fresh LuaJIT 2.1 state with the globals `nupp` and `__nupp` installed."""
    lua = luajit21.LuaRuntime(unpack_returned_tuples=True)
    prelude = lua.eval("function(path, dir) return assert(loadfile(path))(dir) end")
    prelude(str(LUA_DIR / "prelude.lua"), str(LUA_DIR))
    return lua


@dataclass
class LuaRunError(Exception):
    """A Lua error raised while running a program: message plus Nupp frames."""

    message: str
    traceback: str

    def __str__(self) -> str:
        return self.message


# Runs a chunk under xpcall so the traceback is taken where the error happened.
_RUN_CHUNK = """
function(source, chunkname, ...)
    local chunk, err = loadstring(source, chunkname)
    if not chunk then return false, err, "" end
    local function handler(e)
        return {tostring(e), debug.traceback("", 2)}
    end
    local ok, result = xpcall(chunk, handler, ...)
    if ok then return true, nil, nil end
    if type(result) == "table" then return false, result[1], result[2] end
    return false, tostring(result), ""
end
"""

_INSTALL_SEARCHER = """
function(find_module)
    -- Second in line, after package.preload: project modules come before
    -- anything on LuaJIT's own package.path.
    table.insert(package.loaders, 2, function(name)
        local source, chunkname = find_module(name)
        if source == nil then return chunkname end
        local chunk, err = loadstring(source, chunkname)
        if not chunk then error(err, 0) end
        return chunk
    end)
end
"""


MODES = ("interp", "scalar", "lane")
NATIVE_MODES = ("scalar", "lane")


class Host:
    """A Nupp program's world: a LuaJIT state, its module search path, and how
    `@aot` functions run: "interp" (their IR as Lua), "scalar" (compiled C) or
    "lane" (compiled C with simple span loops in SIMD gangs, emit_c/lane.py, in
    a library carrying every feature tier, emit_c/tiers.py).  In lane mode
    `tier` pins a tier (else the best this CPU runs) and `gang` the gang of
    every tier (else the tier's own); other modes ignore both."""

    def __init__(self, search_path: list[Path] | None = None, mode: str = "interp", cc: str = "gcc",
                 gang: int | None = None, tier: str | None = None):
        if mode not in MODES:
            raise ValueError(f"unknown mode '{mode}' (modes: {', '.join(MODES)})")
        if mode == "lane":
            from nupp.emit_c.tiers import check_pins
            check_pins(gang, tier)
        self.lua = new_lua_runtime()
        self.mode = mode
        self.cc = cc
        self.gang = gang
        self.tier = tier
        self.search_path = [Path(p) for p in (search_path or [])]
        self.module_error: Exception | None = None  # raised in Python once Lua unwinds
        self._run_chunk = self.lua.eval(_RUN_CHUNK)
        self.lua.eval(_INSTALL_SEARCHER)(self._find_module)

    # ---- running
    def run_file(self, path: str | Path, args: tuple = ()) -> None:
        source = Source.from_file(display_path(path))
        self.run_source(source, args)

    def run_source(self, source: Source, args: tuple = ()) -> None:
        self._run(self.translate(source), source.path, args)

    def translate(self, source: Source, native: NativeModule | None = None) -> str:
        """The Lua for a module in this host's mode (compiling its @aot functions if native,
        unless `native` is their library already)."""
        return translate(source, native or self.native_for(source))

    def native_for(self, source: Source) -> NativeModule | None:
        """The library a module's @aot functions run from in this host's mode (None: as Nupp)."""
        return self.native_module(source) if self.mode in NATIVE_MODES else None

    def native_module(self, source: Source) -> NativeModule | None:
        """The compiled library of a module's @aot functions (None if it has none)."""
        from nupp.emit_c.scalar import emit_module
        from nupp.pipeline import compile_module
        from nupp.runtime.native import build_library, find_toolchain

        module = compile_module(source)
        if not module.functions:
            return None
        # a prefix per module: LuaJIT's C namespace is shared by every module of the state
        prefix = "nupp_" + hashlib.sha256(f"{source.path}\0{source.text}".encode()).hexdigest()[:10] + "_"
        if self.mode == "lane":
            library, build = self._lane_library(module, source.path, prefix)
            c_module, mode = build.c_module, build.mode
        else:
            c_module, mode = emit_module(module, source.path, prefix), self.mode
            library = build_library(c_module.source, find_toolchain(self.cc), source.path)
        return NativeModule(str(library), c_module.cdef, c_module.errors,
                            {f.name: (f.symbol, f.result) for f in c_module.functions}, mode)

    def _lane_library(self, module, path: str, prefix: str):
        """A module's tiered lane library and the tier this host runs from it: the
        pinned one, else the best the library's dispatcher says this CPU runs."""
        from nupp.emit_c.tiers import choose_tier, tiered_module
        from nupp.runtime.native import build_units, find_toolchain

        tiered = tiered_module(module, path, prefix, self.gang, self.tier)
        library = build_units(tiered.units, find_toolchain(self.cc), path)
        cpu_tier = self.lua.eval("__nupp.native.cpu_tier")(str(library), tiered.cpu_tier_cdef,
                                                            tiered.cpu_tier_symbol)
        return library, choose_tier(tiered.builds, int(cpu_tier), self.tier)

    def run_lua(self, text: str, chunkname: str = "=lua", args: tuple = ()) -> None:
        """Run plain Lua (no translation), e.g. as an oracle for the translator."""
        self._run(text, chunkname, args, prefix="")

    def _run(self, lua_text: str, path: str, args: tuple, prefix: str = "@") -> None:
        self.module_error = None
        ok, message, traceback = self._run_chunk(lua_text, prefix + path, *args)
        if self.module_error is not None:
            raise self.module_error
        if not ok:
            raise LuaRunError(str(message), str(traceback or ""))

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

    # ---- require
    def _find_module(self, name: str):
        relative = str(name).replace(".", os.sep)
        tried = []
        for folder in self.search_path:
            for ext in MODULE_EXTENSIONS:
                candidate = folder / (relative + ext)
                tried.append(str(candidate))
                if candidate.is_file():
                    return self._load_module(candidate)
        return None, "".join(f"\n\tno file '{t}'" for t in tried)

    def _load_module(self, path: Path):
        chunkname = "@" + display_path(path)
        if path.suffix == ".lua":
            return path.read_text(), chunkname
        try:
            return self.translate(Source.from_file(display_path(path))), chunkname
        except Exception as err:  # noqa: BLE001 - re-raised whole once Lua unwinds
            # Keep the diagnostics whole for the user; Lua only learns that it failed.
            self.module_error = err
            return None, f"\n\t{path}: nupp could not compile this module"


def display_path(path: str | Path) -> str:
    """A path as the user should see it: relative to the working directory when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
