-- The scalar IR's operations for ordinary execution of @aot functions.
-- Loaded by prelude.lua with math.lua's table as `...`; returns a table keyed
-- by opcode name (scalar_ir/ops.py), one function per op that the translator
-- does not write as a plain Lua operator (emit_lua/aot_to_lua.py says which).
--
-- Values: int32/uint32 and binary64/binary32 are Lua numbers, int64/uint64
-- are LuaJIT int64_t/uint64_t cdata (whose + - * wrap modulo 2^64).
-- Every function keeps its result in a local before returning it: a tail
-- call would count against LuaJIT's trace unrolling (see math.lua).
local math_rt = ...
local ffi = require("ffi")
local bit = require("bit")

local tobit, floor = bit.tobit, math.floor
local INT64, UINT64 = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
local TWO32 = 4294967296
local DIVISION_BY_ZERO = "integer division by zero"

local ops = {}

local function division_by_zero(where)
    error(where .. ": " .. DIVISION_BY_ZERO, 0)
end

-- ---- int32 / uint32 arithmetic, exact in binary64 --------------------------
-- a * b modulo 2^32 without losing bits: split b into 16-bit halves so every
-- partial product stays below 2^53.
local function mul_mod32(a, b)
    local lo = b % 65536
    local hi = (b - lo) / 65536
    local r = ((a * hi) % 65536) * 65536 + a * lo
    r = r % TWO32
    return r
end

ops["add.i32"] = function(a, b) local r = tobit(a + b) return r end
ops["sub.i32"] = function(a, b) local r = tobit(a - b) return r end
ops["mul.i32"] = function(a, b) local r = tobit(mul_mod32(a % TWO32, b % TWO32)) return r end
ops["neg.i32"] = function(a) local r = tobit(-a) return r end
ops["add.u32"] = function(a, b) local r = (a + b) % TWO32 return r end
ops["sub.u32"] = function(a, b) local r = (a - b) % TWO32 return r end
ops["mul.u32"] = function(a, b) local r = mul_mod32(a, b) return r end
ops["neg.u32"] = function(a) local r = (-a) % TWO32 return r end

-- Floor division of 32-bit integers is exact in binary64: the quotient's
-- distance from an integer (>= 1/|b|) exceeds its rounding error.
ops["idiv.i32"] = function(a, b, where)
    if b == 0 then division_by_zero(where) end
    local r = tobit(floor(a / b)) -- MIN // -1 = 2^31 wraps to MIN
    return r
end
ops["mod.i32"] = function(a, b, where)
    if b == 0 then division_by_zero(where) end
    local r = tobit(a - floor(a / b) * b)
    return r
end
ops["idiv.u32"] = function(a, b, where)
    if b == 0 then division_by_zero(where) end
    local r = floor(a / b)
    return r
end
ops["mod.u32"] = function(a, b, where)
    if b == 0 then division_by_zero(where) end
    local r = a - floor(a / b) * b
    return r
end

-- ---- int64 / uint64: LuaJIT cdata arithmetic wraps; division is C's --------
for _, w in ipairs({ "i64", "u64" }) do
    ops["add." .. w] = function(a, b) local r = a + b return r end
    ops["sub." .. w] = function(a, b) local r = a - b return r end
    ops["mul." .. w] = function(a, b) local r = a * b return r end
    ops["neg." .. w] = function(a) local r = -a return r end
end

ops["idiv.i64"] = function(a, b, where)
    if b == 0 then division_by_zero(where) end
    if b == -1 then local r = -a return r end -- MIN // -1 wraps to MIN
    local q = a / b                            -- truncates toward zero
    if a % b ~= 0 and (a < 0) ~= (b < 0) then q = q - 1 end
    return q
end
ops["mod.i64"] = function(a, b, where)
    if b == 0 then division_by_zero(where) end
    if b == -1 then local r = INT64(0) return r end
    local r = a % b                            -- takes the dividend's sign
    if r ~= 0 and (r < 0) ~= (b < 0) then r = r + b end
    return r
end
ops["idiv.u64"] = function(a, b, where)
    if b == 0 then division_by_zero(where) end
    local r = a / b
    return r
end
ops["mod.u64"] = function(a, b, where)
    if b == 0 then division_by_zero(where) end
    local r = a % b
    return r
end

-- ---- binary64 -------------------------------------------------------------
ops["idiv.f64"] = function(a, b) local r = floor(a / b) return r end
ops["mod.f64"] = function(a, b) local r = a - floor(a / b) * b return r end
ops["sqrt.f64"] = math.sqrt
ops["abs.f64"] = math.abs
ops["floor.f64"] = math.floor
ops["ceil.f64"] = math.ceil
ops["min.f64"] = math_rt.min_raw
ops["max.f64"] = math_rt.max_raw

-- ---- nupp.math.f32 and the entry conversions --------------------------------
for name, fn in pairs(math_rt.f32_raw) do
    if name ~= "narrow" and name ~= "bits" and name ~= "fromBits" then ops[name .. ".f32"] = fn end
end
ops["narrow.f64.f32"] = math_rt.f32_raw.narrow
ops["bits.f32.u32"] = math_rt.f32_raw.bits
ops["frombits.u32.f32"] = math_rt.f32_raw.fromBits
ops["wrap.f64.i32"] = math_rt.i32_raw.wrap
ops["wrap.f64.u32"] = math_rt.u32_raw.wrap
ops["wrap.f64.i64"] = math_rt.i64_raw.wrap
ops["wrap.f64.u64"] = math_rt.u64_raw.wrap

-- ---- integer conversions ------------------------------------------------------
ops["reinterpret.i32.u32"] = function(a) local r = a % TWO32 return r end
ops["reinterpret.u32.i32"] = function(a) local r = tobit(a) return r end
ops["widen.i32.i64"] = math_rt.to_int64
ops["widen.u32.i64"] = math_rt.to_int64
ops["widen.u32.u64"] = math_rt.to_uint64
ops["trunc.i64.i32"] = function(a) local r = tobit(a) return r end  -- the low 32 bits
ops["trunc.u64.i32"] = ops["trunc.i64.i32"]
ops["round.i64.f64"] = math_rt.int64_to_number
ops["round.u64.f64"] = math_rt.int64_to_number

-- ---- comparisons of int64 with uint64, by value --------------------------------
-- LuaJIT would compare them as uint64; a negative int64 is below every uint64.
local function compare_i64_u64(a, b)
    if a < 0 then return -1 end
    local ua = UINT64(a)
    if ua < b then return -1 elseif ua == b then return 0 end
    return 1
end
local COMPARE = {
    eq = function(c) return c == 0 end, ne = function(c) return c ~= 0 end,
    lt = function(c) return c < 0 end, le = function(c) return c <= 0 end,
    gt = function(c) return c > 0 end, ge = function(c) return c >= 0 end,
}
for name, test in pairs(COMPARE) do
    ops[name .. ".i64.u64"] = function(a, b) local r = test(compare_i64_u64(a, b)) return r end
    ops[name .. ".u64.i64"] = function(a, b) local r = test(-compare_i64_u64(b, a)) return r end
end

return ops
