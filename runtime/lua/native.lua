-- Native @aot functions: a module's compiled library, bound behind the host
-- boundary.  Loaded by prelude.lua with the boundary as `...`.
--
-- native.load(path, cdef, errors, devices) loads a module's library once its
-- prototypes are declared (native.cpu_tier asks a tiered one which tier this
-- CPU runs), with the symbols in `devices` run by the host's device kernels
-- (spirv mode) instead of the library; native.bind(...) returns the function Nupp code
-- calls: the boundary checks and converts the arguments (spans arrive as
-- pointer and length), the C function runs, and a nonzero status raises the
-- same text the interpreter raises (errors[status]).  No Python frame is on
-- this path: LuaJIT calls the library through its FFI.
--
-- Threads: a library whose span loops may run on threads exports SET_THREADS
-- (emit_c/lane_threads.py); a bound function of it calls that first, with
-- native.threads and native.thread_min (the host sets them: runtime/threads.py),
-- so one library serves every count, each LuaJIT state with its own.
local boundary = ...
local ffi = require("ffi")

local native = {}
native.threads, native.thread_min = 1, 0
local SET_THREADS = "nu_set_threads"
local declared = {} -- cdef text -> true: ffi.cdef refuses a second declaration
-- path -> library.  LuaJIT unloads a library when its handle is collected,
-- which would leave every bound function pointing into unmapped code: the
-- handles live as long as the state.
local libraries = {}

local function declare(cdef)
    if not declared[cdef] then
        ffi.cdef(cdef)
        declared[cdef] = true
    end
end

-- native.refused(path, why): set by the host (runtime/host.py), which raises
-- the fault of a library the loader refused (`why`, its words): the C
-- compiler's, not the program's.  A built program has none: the loader's words.
local function library(path)
    if libraries[path] == nil then
        local ok, lib = pcall(ffi.load, path)
        if not ok then
            if native.refused then native.refused(path, lib) end
            error(lib, 2)
        end
        libraries[path] = lib
    end
    return libraries[path]
end

-- native.run_device(symbol, ...): set by the host (runtime/host.py
-- Host._run_device).  Runs a device kernel on the arguments of its C
-- function: each span as its pointer's address and its length, a 64-bit
-- integer as its digits, -0 as "-0".  Returns the status; -1 and why the device failed;
-- or RUN_ON_HOST: the device cannot take this call (a span beyond its buffer
-- limit), which the library's C function then runs.
local RUN_ON_HOST = -2
local uintptr_t, int64_t, uint64_t = ffi.typeof("uintptr_t"), ffi.typeof("int64_t"), ffi.typeof("uint64_t")

local function device_function(symbol, c_function)
    return function(...)
        local args, n = { ... }, select("#", ...)
        for i = 1, n do
            local a = args[i]
            if ffi.istype(int64_t, a) or ffi.istype(uint64_t, a) then
                args[i] = (tostring(a):gsub("U?LL$", ""))
            elseif type(a) == "cdata" then
                args[i] = tonumber(ffi.cast(uintptr_t, a))
            elseif a == 0 and 1 / a < 0 then
                args[i] = "-0" -- lupa would hand Python the integer 0
            end
        end
        local status, why = native.run_device(symbol, unpack(args, 1, n))
        if status == RUN_ON_HOST then return c_function(...) end
        if status < 0 then error("nupp: " .. why, 0) end
        return status
    end
end

-- The library's functions, with the device symbols' kernels in front
-- (devices: device symbol -> the C symbol of the same function).
local function with_devices(lib, devices)
    local functions = {}
    for symbol, c_symbol in pairs(devices) do functions[symbol] = device_function(symbol, lib[c_symbol]) end
    return setmetatable(functions, { __index = function(_, symbol) return lib[symbol] end })
end

-- The library's thread-count setter, or nil when no loop of it runs on threads.
local setters = {} -- path -> setter, or false
local function threads_setter(path, lib)
    if setters[path] == nil then
        declare("void " .. SET_THREADS .. "(int32_t count, int64_t min_iterations);")
        local ok, setter = pcall(function() return lib[SET_THREADS] end)
        setters[path] = ok and setter or false
    end
    return setters[path] or nil
end

function native.load(path, cdef, errors, devices)
    declare(cdef)
    local lib = library(path)
    local set_threads = threads_setter(path, lib)
    devices = devices or {}
    if next(devices) ~= nil then lib = with_devices(lib, devices) end
    return { lib = lib, errors = errors, path = path, cdef = cdef, devices = devices, set_threads = set_threads }
end

-- native.cpu_tier(path, cdef, symbol): a tiered lane library's own answer to
-- which feature tier this CPU runs (an index into targets/tiers.py's TIERS;
-- `symbol` is its dispatcher, `cdef` that function's prototype), asked once
-- per library.  The host binds the chosen tier's functions (native.bind).
local cpu_tiers = {}

function native.cpu_tier(path, cdef, symbol)
    if cpu_tiers[path] == nil then
        declare(cdef)
        cpu_tiers[path] = tonumber(library(path)[symbol]())
    end
    return cpu_tiers[path]
end

-- The call of a C function of `arity` arguments plus the result pointer,
-- written out so that no vararg (and no table) sits on the hot path; first
-- the library's thread count, where it has loops that run on threads.
local function caller(arity, has_result, threaded)
    local args = {}
    for i = 1, arity do args[i] = "a" .. i end
    local list = table.concat(args, ", ")
    local call_args = has_result and (arity > 0 and list .. ", out" or "out") or list
    local source = table.concat({
        "local fn, out, errors, set_threads, threads, thread_min = ...",
        "return function(" .. list .. ")",
        threaded and "    set_threads(threads, thread_min)" or "",
        "    local status = fn(" .. call_args .. ")",
        "    if status ~= 0 then error(errors[status], 0) end",
        has_result and "    local r = out[0] return r" or "",
        "end",
    }, "\n")
    return assert(loadstring(source, "=nupp native call"))
end

local function abi_arity(params)
    local n = 0
    for _, p in ipairs(params) do
        n = n + (type(p.type) == "table" and 2 or 1) -- a span is its pointer and length
    end
    return n
end

-- A C function of a loaded library behind the boundary, as Nupp code calls it.
local function wrap(module, symbol, fn_info)
    local out = fn_info.result_ctype and ffi.new(fn_info.result_ctype .. "[1]") or nil
    local call = caller(abi_arity(fn_info.params), out ~= nil, module.set_threads ~= nil)(
        module.lib[symbol], out, module.errors, module.set_threads, native.threads, native.thread_min)
    local opts = { spans_as_pointers = true }
    for k, v in pairs(fn_info.options or {}) do opts[k] = v end
    return boundary.wrap(call, fn_info.name, fn_info.params, fn_info.result, opts)
end

-- bound function -> what bound it: its module, its description (name,
-- params, result, options, result_ctype) and its interpreted self and mode.
local bindings = setmetatable({}, { __mode = "k" })

function native.bind(module, symbol, name, params, result, options, result_ctype, interpreted, mode)
    local fn_info = { name = name, params = params, result = result, options = options, result_ctype = result_ctype }
    local bound = wrap(module, symbol, fn_info)
    bindings[bound] = { module = module, symbol = symbol, fn_info = fn_info, interpreted = interpreted,
                        mode = mode or "scalar" }
    return bound
end

-- native.binding_of(f): how the bound function f calls its library, for a
-- host that calls it without LuaJIT (runtime/fast_call.py): the library's
-- path, its cdef, f's C symbol and the error texts its statuses name
-- (errors[status]), and its library's thread-count setter (nil: none); nil
-- for a function a device runs (spirv mode) or one not bound here.
function native.binding_of(f)
    local binding = bindings[f]
    if binding == nil or binding.module.devices[binding.symbol] ~= nil then return nil end
    local module = binding.module
    return module.path, module.cdef, binding.symbol, module.errors, module.set_threads and SET_THREADS or nil
end

-- native.more_executions(hex of a library's path): set by the host
-- (runtime/host.py Host._more_executions).  The other native executions of
-- that library's module, built when first asked:
-- {{name =, library =, cdef =, errors =, functions = {[f] = symbol}}},
-- or nil and why not.
local function hex(c) return string.format("%02x", c:byte()) end

local function more_executions(module)
    if module.more == nil then
        local more, why = native.more_executions((module.path:gsub(".", hex)))
        if more == nil then error("nupp.executions: " .. why, 3) end
        for _, execution in ipairs(more) do
            execution.module = native.load(execution.library, execution.cdef, execution.errors)
        end
        module.more = more
    end
    return module.more
end

-- native.executions_of(f) = {{name = "interp", run = ...}, {name = "lane16-v4", run = ...}, ...}:
-- every way an @aot function can run here, so a host script can run them all
-- and demand identical answers.  The interpreter's comes first, then the
-- bound one (named after its mode: "scalar", or lane<gang>-<tier>,
-- targets/tiers.py), then the module's other native executions (the host
-- builds them at the first call, never otherwise).  Just f itself (as
-- "interp") when it runs as ordinary Nupp.  One list per function.
local interpreted_only = setmetatable({}, { __mode = "k" })

function native.executions_of(f)
    local binding = bindings[f]
    if binding == nil then
        if type(f) ~= "function" then error("nupp.executions: expected a function, got " .. type(f), 2) end
        interpreted_only[f] = interpreted_only[f] or { { name = "interp", run = f } }
        return interpreted_only[f]
    end
    if binding.executions == nil then
        local list = { { name = "interp", run = binding.interpreted }, { name = binding.mode, run = f } }
        for _, execution in ipairs(more_executions(binding.module)) do
            if execution.name ~= binding.mode then
                local symbol = execution.functions[binding.fn_info.name]
                list[#list + 1] = { name = execution.name, run = wrap(execution.module, symbol, binding.fn_info) }
            end
        end
        binding.executions = list
    end
    return binding.executions
end

return native
