-- Native @aot functions: a module's compiled library, bound behind the host
-- boundary.  Loaded by prelude.lua with the boundary as `...`.
--
-- native.load(path, cdef, errors) loads a module's library once its
-- prototypes are declared; native.bind(...) returns the function Nupp code
-- calls: the boundary checks and converts the arguments (spans arrive as
-- pointer and length), the C function runs, and a nonzero status raises the
-- same text the interpreter raises (errors[status]).  No Python frame is on
-- this path: LuaJIT calls the library through its FFI.
local boundary = ...
local ffi = require("ffi")

local native = {}
local declared = {} -- cdef text -> true: ffi.cdef refuses a second declaration

function native.load(path, cdef, errors)
    if not declared[cdef] then
        ffi.cdef(cdef)
        declared[cdef] = true
    end
    return { lib = ffi.load(path), errors = errors }
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

function native.bind(module, symbol, name, params, result, options, result_ctype)
    local fn = module.lib[symbol]
    local out = result_ctype and ffi.new(result_ctype .. "[1]") or nil
    local call = caller(abi_arity(params), out ~= nil)(fn, out, module.errors)
    local opts = { spans_as_pointers = true }
    for k, v in pairs(options or {}) do opts[k] = v end
    return boundary.wrap(call, name, params, result, opts)
end

return native
