-- Native @aot functions: a module's compiled library, bound behind the host
-- boundary.  Loaded by prelude.lua with the boundary as `...`.
--
-- native.load(path, cdef, errors) loads a module's library once its
-- prototypes are declared (native.cpu_tier asks a tiered one which tier this
-- CPU runs); native.bind(...) returns the function Nupp code
-- calls: the boundary checks and converts the arguments (spans arrive as
-- pointer and length), the C function runs, and a nonzero status raises the
-- same text the interpreter raises (errors[status]).  No Python frame is on
-- this path: LuaJIT calls the library through its FFI.
local boundary = ...
local ffi = require("ffi")

local native = {}
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

local function library(path)
    libraries[path] = libraries[path] or ffi.load(path)
    return libraries[path]
end

function native.load(path, cdef, errors)
    declare(cdef)
    return { lib = library(path), errors = errors }
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
-- written out so that no vararg (and no table) sits on the hot path.
local function caller(arity, has_result)
    local args = {}
    for i = 1, arity do args[i] = "a" .. i end
    local list = table.concat(args, ", ")
    local call_args = has_result and (arity > 0 and list .. ", out" or "out") or list
    local source = table.concat({
        "local fn, out, errors = ...",
        "return function(" .. list .. ")",
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

-- native.executions[f] = {{name = "interp", run = ...}, {name = "lane16-v4", run = ...}}:
-- every way a bound @aot function can run, first the interpreter's, so a host
-- script can run them all and demand identical answers.  The native one is
-- named after its mode: "scalar", or lane<gang>-<tier> (targets/tiers.py).
native.executions = setmetatable({}, { __mode = "k" })

function native.bind(module, symbol, name, params, result, options, result_ctype, interpreted, mode)
    local fn = module.lib[symbol]
    local out = result_ctype and ffi.new(result_ctype .. "[1]") or nil
    local call = caller(abi_arity(params), out ~= nil)(fn, out, module.errors)
    local opts = { spans_as_pointers = true }
    for k, v in pairs(options or {}) do opts[k] = v end
    local bound = boundary.wrap(call, name, params, result, opts)
    native.executions[bound] = { { name = "interp", run = interpreted }, { name = mode or "scalar", run = bound } }
    return bound
end

-- The executions of an @aot function: just itself (as "interp") when it runs
-- as ordinary Nupp.
function native.executions_of(f)
    return native.executions[f] or { { name = "interp", run = f } }
end

return native
