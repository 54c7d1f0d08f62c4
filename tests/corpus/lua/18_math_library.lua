-- math library with deterministic results only.
print(math.floor(3.7), math.floor(-3.7), math.floor(5), math.floor(-0.5))
print(math.ceil(3.2), math.ceil(-3.2), math.ceil(5), math.ceil(-0.5))
print(math.abs(-4), math.abs(4.5), math.abs(-0))
print(math.max(1, 5, 3), math.min(1, 5, 3), math.max(-1), math.min(2.5, 2))
print(math.fmod(7, 3), math.fmod(-7, 3), math.fmod(7, -3), math.fmod(5.5, 2))
print(7 % 3, -7 % 3, 7 % -3, -7 % -3, 5.5 % 2)
print(math.huge, -math.huge, math.huge > 1e308, math.huge - math.huge ~= math.huge - math.huge)
print(math.pi, string.format("%.10f", math.pi), math.floor(math.pi * 1000))
print(math.sqrt(16), math.sqrt(2) * math.sqrt(2) - 2 < 1e-15, math.sqrt(0))
print(math.pow(2, 10), 2 ^ 10, math.pow(9, 0.5), math.exp(0), math.log(1))
print(math.log10(1000), math.log(math.exp(2)), string.format("%.6f", math.log(2)))
print(math.sin(0), math.cos(0), string.format("%.6f", math.sin(math.pi / 6)))
print(string.format("%.6f %.6f", math.tan(math.pi / 4), math.atan(1) * 4))
print(string.format("%.6f %.6f", math.atan2(1, 1), math.atan2(-1, -1)))
print(string.format("%.6f %.6f %.6f", math.asin(1), math.acos(0), math.acos(1)))
print(string.format("%.6f %.6f", math.sinh(1), math.cosh(1)), math.tanh(0))
print(math.deg(math.pi), math.rad(180) == math.pi, math.deg(0))

-- modf and frexp/ldexp return multiple values
print(math.modf(3.75))
print(math.modf(-3.75))
print(math.modf(5))
print(math.frexp(8))
print(math.frexp(0.5))
print(math.ldexp(0.5, 4), math.ldexp(1, -1))

-- integer-valued float printing
print(1.0, 2.0 * 3, 10 / 2, 7 / 2, 1e3, 2 ^ 31, 2 ^ 32, 2 ^ 52)
print(100000000000000, 1e15, -1e15, 123456789012)
print(0.1 * 3, 1 - 0.9, 1 / 3)
for _, v in ipairs({ 0.1, 1 / 3, 2 ^ 0.5, 1e100, 1e-100 }) do
  io.write(string.format("%.17g", v), " ")
end
print()
print(string.format("%.0f %.1f %.2f", 2.5, 0.05, 1.005))
print(string.format("%d", 3.0), string.format("%5.1f|", 9.96))

-- floor division and integer checks without the // operator
local function idiv(a, b) return math.floor(a / b) end
print(idiv(7, 2), idiv(-7, 2), idiv(7, -2), idiv(9, 3))
local function isint(x) return x == math.floor(x) end
print(isint(3), isint(3.5), isint(-0), isint(1e20))

-- tostring/tonumber round trips for integers
local nums = { 0, 1, -1, 255, 65536, 2 ^ 40, -2 ^ 40 }
local out = {}
for i, v in ipairs(nums) do out[i] = tostring(v) .. "=" .. tostring(tonumber(tostring(v)) == v) end
print(table.concat(out, " "))

-- bit library (LuaJIT) instead of bitwise operators
print(bit.band(0xff, 0x0f), bit.bor(0xf0, 0x0f), bit.bxor(0xff, 0x0f), bit.bnot(0))
print(bit.lshift(1, 10), bit.rshift(1024, 3), bit.arshift(-16, 2), bit.rol(1, 31))
print(bit.tohex(255), bit.tohex(-1), bit.tohex(0xabc, 4), bit.tobit(2 ^ 32 + 5))
print(bit.band(-1, 0x7fffffff), bit.bswap(0x01020304) == 0x04030201)

-- nan behaves consistently
local nan = 0 / 0
print(nan == nan, nan ~= nan, math.max(1, 2) == 2, math.floor(-0.0) == 0)
print(math.abs(-math.huge), math.floor(math.huge) == math.huge)
