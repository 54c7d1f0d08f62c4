-- The Nupp runtime, assembled once per LuaJIT state by runtime/host.py.
--
-- Called with the folder holding these files.  Builds one global, `nupp`, the
-- public runtime library (LANGUAGE.md section 5), and returns the runtime's
-- internals, `__nupp`: what translated Nupp code calls into (struct types,
-- @aot registration, switch support, operators) and what the host uses.  They
-- never become globals: chunks.lua hands them to each translated chunk, and
-- the host keeps them in the Lua registry.
local dir = ...

local function load_part(name, ...)
    local chunk = assert(loadfile(dir .. "/" .. name .. ".lua"))
    return chunk(...)
end

local math_rt = load_part("math")
local mem = load_part("mem", math_rt)
local boundary = load_part("boundary", math_rt, mem)
local ops = load_part("ops", math_rt)
local native = load_part("native", boundary)
local operators = load_part("operators")
local raw_coroutine = load_part("coroutines")  -- nested coroutines end in a stack overflow

nupp = {
    math = {
        f32 = math_rt.f32, i32 = math_rt.i32, u32 = math_rt.u32,
        i64 = math_rt.i64, u64 = math_rt.u64,
    },
    mem = { span = mem.span },
    -- nupp.executions(f): every way the @aot function f runs in this program
    -- ({name =, run =} in order, the interpreter first)
    executions = native.executions_of,
}

local __nupp = {
    math = math_rt,
    mem = mem,
    boundary = boundary,
    struct = mem.struct,
    ops = ops,   -- the scalar IR's ops, for ordinary execution of @aot functions
    native = native,  -- compiled @aot functions
    -- what the header of a translated chunk binds (emit_lua/to_lua.py)
    bit = require("bit"),  -- for @aot functions' IR (emit_lua/aot_to_lua.py)
    bit_operators = operators.bit,  -- & | ~ << >> of ordinary code
    floor_quotient = operators.floor_quotient,  -- a // b is floor_quotient(a / b)
    type = type,
}

-- ---- support for translated code (emit_lua/to_lua.py) ----------------------
local ffi = require("ffi")
local describe = math_rt.describe

-- `@aot` registration.  Ordinary execution calls the Lua body through the host
-- boundary, which checks and converts arguments exactly as native calls will.
function __nupp.aot(fn, name, params, result, options)
    return boundary.wrap(fn, name, params, result, options)
end

-- A switch expression outside `local x = switch ...`: the subject is
-- evaluated first, then the arms run in a function of it.
function __nupp.switch_call(subject, arms, ...)
    return arms(subject, ...)
end

function __nupp.switch_failed(subject, where)
    error(where .. ": no case of this switch matches " .. describe(subject), 0)
end

-- `case is int64`, `case is uint64`
function __nupp.is_ctype(ctype_name, value)
    return type(value) == "cdata" and ffi.istype(ctype_name, value)
end

-- `case is Pixel`: an element of a span of Pixel (called straight from the
-- switch, so a refused pattern points at it)
__nupp.is_struct = mem.is_struct

-- ---- the host's side (runtime/host.py) ---------------------------------------
__nupp.chunks = load_part("chunks", __nupp, raw_coroutine)

return __nupp
