-- Nupp's Lua 5.3 operators in ordinary code (LANGUAGE.md section 1), as
-- emit_lua/to_lua.py writes them: `a & b` is `bit.band(a, b)` (and `|`, `~`,
-- `<<`, `>>`, unary `~` likewise), `a // b` is `math.floor(a / b)`.
-- Returns {bit = {band = ..., ...}, floor_quotient = f}: functions that
-- compute exactly what LuaJIT's `bit` library and math.floor compute, and
-- differ only in their errors, which name the operator the program wrote (not
-- `band` or an internal name) at the program's line (level 2).
local bit = require("bit")
local ffi = require("ffi")

local floor, format, pcall, type = math.floor, string.format, pcall, type
local INT64, UINT64 = ffi.typeof("int64_t"), ffi.typeof("uint64_t")

-- The kind of a value as an operator's error names it.
local function kind(v)
    if ffi.istype(INT64, v) then return "int64" end
    if ffi.istype(UINT64, v) then return "uint64" end
    return type(v)
end

local function bitwise_error(op, culprit)
    return format("attempt to perform bitwise operation '%s' on a %s value", op, kind(culprit))
end

local function binary(op, raw)
    return function(a, b)
        if type(a) == "number" and type(b) == "number" then return raw(a, b) end
        local ok, result = pcall(raw, a, b)  -- strings and 64-bit cdata: whatever `bit` takes
        if ok then return result end
        local culprit = a  -- the first operand `raw` refuses (b may be nil or false: no `and/or` here)
        if pcall(raw, a, 0) then culprit = b end
        error(bitwise_error(op, culprit), 2)
    end
end

local function unary(op, raw)
    return function(a)
        if type(a) == "number" then return raw(a) end
        local ok, result = pcall(raw, a)
        if ok then return result end
        error(bitwise_error(op, a), 2)
    end
end

local operators = {
    bit = {
        band = binary("&", bit.band), bor = binary("|", bit.bor), bxor = binary("~", bit.bxor),
        lshift = binary("<<", bit.lshift), rshift = binary(">>", bit.rshift), bnot = unary("~", bit.bnot),
    },
}

-- `a // b` once `a / b` ran (its own errors are Lua's arithmetic errors).
function operators.floor_quotient(q)
    if type(q) == "number" then return floor(q) end
    local ok, result = pcall(floor, q)  -- a numeric string floors, as math.floor takes it
    if ok then return result end
    local k = kind(q)
    if k == "int64" or k == "uint64" then
        error(format("attempt to perform '//' on %s values (divide them with '/', which truncates)", k), 2)
    end
    error(format("attempt to perform '//' on a %s value (the quotient a / b)", k), 2)
end

return operators
