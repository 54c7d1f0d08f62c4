-- The Nupp runtime math library (LANGUAGE.md sections 4 and 5).
--
-- Value representation shared with the rest of the runtime:
--   binary64        a Lua number
--   binary32        a Lua number exactly representable in binary32; every
--                   binary32 NaN is Lua's own NaN
--   int32, uint32   integral Lua numbers in range
--   int64, uint64   int64_t / uint64_t cdata
--
-- Returns a table M:
--   M.f32, M.i32, M.u32, M.i64, M.u64   the public, argument-checked API
--   M.f32_raw, M.i32_raw, M.u32_raw,    the same functions without checks, for
--   M.i64_raw, M.u64_raw                translated code whose widths are proven
--   M.min, M.max (M.min_raw, M.max_raw) binary64 min/max with Nupp's rules
--   M.describe(v)                       how "bad argument" messages show a value
local ffi = require("ffi")
local bit = require("bit")

local cast, tonumber, type, error = ffi.cast, tonumber, type, error
local band = bit.band
local floor, ceil, sqrt, abs, fmod = math.floor, math.ceil, math.sqrt, math.abs, math.fmod
local min_builtin, max_builtin = math.min, math.max -- only where NaN cannot occur
local format = string.format

local M = {}

-- JIT rule for this file: no function ends in a tail call (`return f(x)`);
-- the result is bound to a local and then returned.  LuaJIT aborts a trace
-- after 15 tail calls (they count toward the loop-unroll limit), so a caller
-- making a few dozen runtime calls per iteration would never compile; and a
-- function ending in a tail call to a builtin cannot end its own trace, gets
-- blacklisted, and then aborts every trace that passes through it.

local NAN = 0 / 0
local HUGE = math.huge
local TWO31, TWO32, TWO53, TWO63, TWO64 = 2 ^ 31, 2 ^ 32, 2 ^ 53, 2 ^ 63, 2 ^ 64

local float_t = ffi.typeof("float")
local int64_t = ffi.typeof("int64_t")
local uint64_t = ffi.typeof("uint64_t")

-- Bit views.  Preallocated so that the hot paths allocate nothing.
local f32view = ffi.new("union { float f; uint32_t u; }")
local f64view = ffi.new("union { double d; int32_t w[2]; }")
-- index of the low word in f64view.w (a constant, so that traces fold it)
local LO = ffi.abi("be") and 1 or 0

---------------------------------------------------------------------------
-- Error messages
---------------------------------------------------------------------------

-- The text a "bad argument" message shows for v: an integral number as an
-- integer, any other number in the shortest form that reads back exactly,
-- anything else as its type name.
local function describe(v)
    if type(v) ~= "number" then
        local type_name = type(v)
        return type_name
    end
    if v ~= v then return "nan" end
    if v == HUGE then return "inf" end
    if v == -HUGE then return "-inf" end
    local text
    if v == floor(v) and abs(v) < TWO53 then
        text = format("%.0f", v)
    else
        for digits = 15, 17 do -- the shortest of these that reads back exactly
            text = format("%." .. digits .. "g", v)
            if tonumber(text) == v then break end
        end
    end
    return text
end
M.describe = describe

-- ---- exact 64-bit conversions --------------------------------------------------
-- Two JIT bugs of the LuaJIT that lupa bundles, seen once a loop is compiled:
-- a number it knows came from a uint32 load is sign-extended when converted
-- to int64/uint64 (LuaJIT issue 1492: an added 0ULL stops the faulty fold),
-- and a uint64 >= 2^63 converted to a number rounds twice.  Every 64-bit
-- conversion of the runtime goes through these.
function M.to_int64(n) local r = int64_t(uint64_t(n) + 0ULL) return r end
function M.to_uint64(n) local r = uint64_t(n) + 0ULL return r end

-- A 64-bit integer as binary64, rounded once: the high and low words are
-- exact and so is their scaled sum's single rounding.
local TWO_32_ULL = 4294967296ULL
function M.int64_to_number(v)
    if ffi.istype(uint64_t, v) then
        local r = tonumber(v / TWO_32_ULL) * 4294967296 + tonumber(v % TWO_32_ULL)
        return r
    end
    local r = tonumber(v)
    return r
end

-- Raises "bad argument #n to 'fname' (<expected> expected, got <v>)", blaming
-- the caller of the public function: error level 1 is this function, 2 the
-- argument check, 3 the public function, 4 its caller.  (So neither this
-- function nor the checks may be tail-called.)
local function bad_argument(n, fname, expected, v)
    error(format("bad argument #%d to '%s' (%s expected, got %s)",
        n, fname, expected, describe(v)), 4)
end

local function number_arg(x, n, fname)
    if type(x) ~= "number" then bad_argument(n, fname, "number", x) end
    return x
end

local function is_binary32(x)
    return type(x) == "number" and (x ~= x or tonumber(cast(float_t, x)) == x)
end

local function binary32_arg(x, n, fname)
    if not is_binary32(x) then bad_argument(n, fname, "binary32", x) end
    return x
end

local function is_integral(x)
    return type(x) == "number" and x == floor(x)
end

local function int32_arg(x, n, fname)
    if not (is_integral(x) and x >= -TWO31 and x < TWO31) then
        bad_argument(n, fname, "int32", x)
    end
    return x
end

local function uint32_arg(x, n, fname)
    if not (is_integral(x) and x >= 0 and x < TWO32) then
        bad_argument(n, fname, "uint32", x)
    end
    return x
end

---------------------------------------------------------------------------
-- binary32
---------------------------------------------------------------------------

-- binary64 -> nearest binary32, ties to even (the FFI conversion is the
-- hardware's cvtsd2ss, in the interpreter and in traces alike).  A NaN is
-- returned as Lua's own NaN rather than converted, so no NaN payload ever
-- travels through a float.
local function round32(x)
    if x ~= x then return NAN end
    local rounded = tonumber(cast(float_t, x))
    return rounded
end

-- add/sub/mul/div/sqrt of binary32 operands, computed in binary64 and rounded
-- once, equal the binary32 operation because 53 >= 2 * 24 + 2.
local function add(a, b)
    local sum = round32(a + b)
    return sum
end

local function sub(a, b)
    local difference = round32(a - b)
    return difference
end

local function mul(a, b)
    local product = round32(a * b)
    return product
end

local function div(a, b)
    local quotient = round32(a / b)
    return quotient
end

local function sqrt32(a)
    local root = round32(sqrt(a))
    return root
end

local function neg(a)
    if a ~= a then return NAN end
    return -a
end

local function abs32(a)
    if a ~= a then return NAN end
    local magnitude = abs(a)
    return magnitude
end

-- min/max with Nupp's rules, shared by binary32 and binary64 (a binary32
-- result is one of the operands).  Two equal operands that are zeros may
-- differ in sign: the IEEE sum of two zeros is -0 only when both are -0,
-- which is exactly max's answer; min is the same thing mirrored.
local function min(a, b)
    if a ~= a or b ~= b then return NAN end
    if a < b then return a end
    if b < a then return b end
    if a == 0 then return -((-a) + (-b)) end
    return a
end

local function max(a, b)
    if a ~= a or b ~= b then return NAN end
    if a > b then return a end
    if b > a then return b end
    if a == 0 then return a + b end
    return a
end

-- A binary64 value that rounds to binary32 exactly as s + e does, where
-- s ~= 0 and e is the exact error of s (|e| at most half an ulp of s).
--
-- That is s rounded to odd instead of to nearest (odd rounding keeps the
-- sticky bit, and 53 >= 24 + 2): s itself when s + e is exact or the last
-- bit of s is 1, otherwise the neighbour of s on the side of e.  The step to
-- the neighbour is |s| * 0.75 * 2^-52, which lies in [0.75, 1.5) ulps of s,
-- so the addition lands on the neighbour (or, below a power of two, two or
-- three half-size ulps down, equally far from every binary32 midpoint).
--
-- Written without branches: the outcome depends on the data, and each
-- data-dependent guard would grow a tree of side traces in a caller like exp
-- (twelve fmas in a row).  The sign of e comes from clamping a scaled e: in
-- fma a nonzero e is a multiple of 2^-298 and below 2^205.
local function round_to_odd(s, e)
    local side = min_builtin(max_builtin(e * 0x1p400, -1), 1) -- -1, 0 or 1
    f64view.d = s
    local even = 1 - band(f64view.w[LO], 1)
    local rounded = s + side * even * abs(s) * 0x3p-54
    return rounded
end

-- The correctly rounded binary32 a * b + c.  The product of two binary32
-- values is exact in binary64 (48 bits, far from overflow and underflow),
-- and so is the sum's error term (Knuth's TwoSum).
local function fma(a, b, c)
    local p = a * b
    local s = p + c
    if s - s ~= 0 or s == 0 then
        -- an infinity or NaN operand: binary64 follows the same IEEE rules;
        -- or an exact zero, whose sign s already has
        local special = round32(s)
        return special
    end
    local z = s - p
    local e = (p - (s - z)) + (c - z)
    local rounded = tonumber(cast(float_t, round_to_odd(s, e))) -- s is finite
    return rounded
end

-- exp's constants: the clamp, t = x * 2^-7, and c[k] = 1/k! rounded to
-- binary32: k! is itself a binary32 value for k <= 12 (its odd part has at
-- most 24 bits), so one binary32 division is exact.  The same numbers as
-- scalar_ir/numerics.py (M.exp_constants; tests/test_op_table.py compares).
local EXP_LOW, EXP_HIGH, EXP_SCALE = -104, 88, 0.0078125
local EXP_COEFFS = {}
do
    local factorial = 1
    for k = 0, 12 do
        if k > 0 then factorial = factorial * k end
        EXP_COEFFS[k] = div(1, factorial)
    end
end
M.exp_constants = { low = EXP_LOW, high = EXP_HIGH, scale = EXP_SCALE, coefficients = EXP_COEFFS }
local C0, C1, C2, C3, C4, C5, C6 = EXP_COEFFS[0], EXP_COEFFS[1], EXP_COEFFS[2],
    EXP_COEFFS[3], EXP_COEFFS[4], EXP_COEFFS[5], EXP_COEFFS[6]
local C7, C8, C9, C10, C11, C12 = EXP_COEFFS[7], EXP_COEFFS[8], EXP_COEFFS[9],
    EXP_COEFFS[10], EXP_COEFFS[11], EXP_COEFFS[12]

-- Nupp's binary32 exp: the exact sequence every backend runs (section 5).
local function exp32(x)
    if x ~= x then return NAN end
    if x < EXP_LOW then x = EXP_LOW elseif x > EXP_HIGH then x = EXP_HIGH end
    local t = mul(x, EXP_SCALE)
    local p = fma(C12, t, C11)
    p = fma(p, t, C10); p = fma(p, t, C9); p = fma(p, t, C8)
    p = fma(p, t, C7); p = fma(p, t, C6); p = fma(p, t, C5)
    p = fma(p, t, C4); p = fma(p, t, C3); p = fma(p, t, C2)
    p = fma(p, t, C1); p = fma(p, t, C0)
    -- seven squarings, written out: a loop here would make every trace that
    -- calls exp unroll or abort
    p = mul(p, p); p = mul(p, p); p = mul(p, p); p = mul(p, p)
    p = mul(p, p); p = mul(p, p); p = mul(p, p)
    return p
end

-- The bit pattern of a binary32 value as a number in [0, 2^32).
local function bits(x)
    if x ~= x then return 0x7FC00000 end
    f32view.f = x
    return f32view.u
end

-- The binary32 value of a bit pattern.  NaN patterns are recognised as
-- integers and never reinterpreted: a negative float NaN with a large payload
-- widens to a double that LuaJIT's value tagging reads as an object.
local function from_bits(u)
    if u % 0x80000000 > 0x7F800000 then return NAN end
    f32view.u = u
    return f32view.f
end

M.f32_raw = {
    add = add, sub = sub, mul = mul, div = div, sqrt = sqrt32,
    neg = neg, abs = abs32, min = min, max = max, fma = fma, exp = exp32,
    narrow = round32, bits = bits, fromBits = from_bits,
}

-- The checked functions are written out one by one rather than made by a
-- factory: closures of one prototype share their traces, so a factory would
-- make every call site of, say, f32.mul exit a trace recorded for f32.add.
M.f32 = {}
local f32 = M.f32

function f32.add(a, b)
    binary32_arg(a, 1, "add")
    binary32_arg(b, 2, "add")
    local result = add(a, b)
    return result
end

function f32.sub(a, b)
    binary32_arg(a, 1, "sub")
    binary32_arg(b, 2, "sub")
    local result = sub(a, b)
    return result
end

function f32.mul(a, b)
    binary32_arg(a, 1, "mul")
    binary32_arg(b, 2, "mul")
    local result = mul(a, b)
    return result
end

function f32.div(a, b)
    binary32_arg(a, 1, "div")
    binary32_arg(b, 2, "div")
    local result = div(a, b)
    return result
end

function f32.min(a, b)
    binary32_arg(a, 1, "min")
    binary32_arg(b, 2, "min")
    local result = min(a, b)
    return result
end

function f32.max(a, b)
    binary32_arg(a, 1, "max")
    binary32_arg(b, 2, "max")
    local result = max(a, b)
    return result
end

function f32.fma(a, b, c)
    binary32_arg(a, 1, "fma")
    binary32_arg(b, 2, "fma")
    binary32_arg(c, 3, "fma")
    local result = fma(a, b, c)
    return result
end

function f32.sqrt(a)
    binary32_arg(a, 1, "sqrt")
    local result = sqrt32(a)
    return result
end

function f32.neg(a)
    binary32_arg(a, 1, "neg")
    local result = neg(a)
    return result
end

function f32.abs(a)
    binary32_arg(a, 1, "abs")
    local result = abs32(a)
    return result
end

function f32.exp(a)
    binary32_arg(a, 1, "exp")
    local result = exp32(a)
    return result
end

function f32.narrow(x)
    number_arg(x, 1, "narrow")
    local result = round32(x)
    return result
end

function f32.bits(x)
    binary32_arg(x, 1, "bits")
    local result = bits(x)
    return result
end

function f32.fromBits(u)
    uint32_arg(u, 1, "fromBits")
    local result = from_bits(u)
    return result
end

---------------------------------------------------------------------------
-- Integer conversions
---------------------------------------------------------------------------

-- x rounded toward zero (x not NaN), without a branch on its sign: for
-- x >= 0 the larger is floor(x), for x < 0 it is ceil(x).
local function trunc(x)
    local integral = max_builtin(floor(x), min_builtin(ceil(x), 0))
    return integral
end

-- ECMAScript ToUint32.  Lua's t % 2^32 is t - floor(t / 2^32) * 2^32, and
-- for an integral t every step is exact (division by a power of two, and a
-- result below 2^32), so the reduction is exact for every finite double,
-- unlike bit.tobit, which rounds non-integral or huge input.  -0 gives +0.
local function wrap_u32(x)
    if x - x ~= 0 then return 0 end -- NaN and the infinities
    local reduced = trunc(x) % TWO32
    return reduced
end

-- The same 32 bits read as int32 / as uint32.  Exact arithmetic on integers
-- below 2^53; the result is never -0.
local function u32_to_i32(x) return (x + TWO31) % TWO32 - TWO31 end
local function i32_to_u32(x) return x % TWO32 end

local function wrap_i32(x)
    local wrapped = u32_to_i32(wrap_u32(x))
    return wrapped
end

-- ECMAScript-style reduction modulo 2^64.  The remainder is brought into
-- [-2^63, 2^63) with exact subtractions so that only the signed conversion
-- (exact there) is needed; uint64 is the same bits.
local function wrap_i64(x)
    local m = 0
    if x - x == 0 then m = trunc(fmod(x, TWO64)) end -- else NaN or infinite
    if m >= TWO63 then
        m = m - TWO64
    elseif m < -TWO63 then
        m = m + TWO64
    end
    local wrapped = int64_t(m)
    return wrapped
end

local function wrap_u64(x)
    local wrapped = cast(uint64_t, wrap_i64(x))
    return wrapped
end

M.i32_raw = { wrap = wrap_i32, fromU32 = u32_to_i32 }
M.u32_raw = { wrap = wrap_u32, fromI32 = i32_to_u32, toI32 = u32_to_i32 }
M.i64_raw = { wrap = wrap_i64 }
M.u64_raw = { wrap = wrap_u64 }

M.i32, M.u32, M.i64, M.u64 = {}, {}, {}, {}

function M.i32.wrap(x)
    number_arg(x, 1, "wrap")
    local result = wrap_i32(x)
    return result
end

function M.u32.wrap(x)
    number_arg(x, 1, "wrap")
    local result = wrap_u32(x)
    return result
end

function M.i64.wrap(x)
    number_arg(x, 1, "wrap")
    local result = wrap_i64(x)
    return result
end

function M.u64.wrap(x)
    number_arg(x, 1, "wrap")
    local result = wrap_u64(x)
    return result
end

function M.i32.fromU32(x)
    uint32_arg(x, 1, "fromU32")
    local result = u32_to_i32(x)
    return result
end

function M.u32.fromI32(x)
    int32_arg(x, 1, "fromI32")
    local result = i32_to_u32(x)
    return result
end

function M.u32.toI32(x)
    uint32_arg(x, 1, "toI32")
    local result = u32_to_i32(x)
    return result
end

---------------------------------------------------------------------------
-- binary64 min/max
---------------------------------------------------------------------------

M.min_raw, M.max_raw = min, max

function M.min(a, b)
    number_arg(a, 1, "min")
    number_arg(b, 2, "min")
    local result = min(a, b)
    return result
end

function M.max(a, b)
    number_arg(a, 1, "max")
    number_arg(b, 2, "max")
    local result = max(a, b)
    return result
end

return M
