-- Numeric literal forms accepted by LuaJIT 2.1 (Lua 5.1 plus hex floats).
print(0, 1, 42, 007, 1234567890)
print(3.0, 3.25, .5, 5., 0.125)
print(1e3, 1E3, 1e-3, 2.5e+2, 6.02E23, 1e0)
print(0xff, 0XFF, 0xDeadBeef, 0x0, 0x10)
print(0x1p4, 0X1p4, 0x1P-2, 0x1.8p1, 0xA.8p0, 0x.8, 0x8.)
print(1e15, 1e14, 2^53, 123456789012345678)
print(1/0, -1/0, 1e309)
print(0.1, 0.1 + 0.2, 1/3)
print(string.format("%.17g", 0.1), string.format("%.17g", 1/3))
print(-0, 0 * -1, 10/2, 7/2, 2^10)

-- integer-valued floats print without a decimal point
local vals = { 1.0, 2.50, 100.000, 1e2, 0x10p0, 3.75e1 }
for i = 1, #vals do
  io.write(tostring(vals[i]), i < #vals and " " or "\n")
end

-- type of numerals and arithmetic on them
print(type(0xff), type(1e3), type(.5))
print(0xff + 1, 0x10 * 0x10, 1e2 - 0x64)

-- numerals adjacent to operators and concatenation
print(1+2, 1-2, 2*3, 7%3, 2^3)
print(1 .. 2, 1.5 .. "", 0x10 .. "x")
print(-2, - 2, -(-2), - - 2)

-- tonumber / tostring round trips
print(tonumber("0x1F"), tonumber("  10  "), tonumber("1e2"), tonumber(".5"))
print(tonumber("z", 36), tonumber("777", 8), tonumber("11", 2), tonumber("ff", 16))
print(tonumber("abc"), tonumber(""), tonumber("1e"), tonumber("0x"))
print(tostring(12) .. "|" .. tostring(12.5) .. "|" .. tostring(-0.25))

-- very small and very large
print(1e-300 * 1e-300, 1e300 * 1e10, 5e-324 > 0)
print(math.huge == 1/0, -math.huge == -1/0)

-- nan is not equal to itself
local nan = 0/0
print(nan ~= nan, nan == nan, not (nan < 0), not (nan > 0))

-- lexer edge cases: in hex numerals 'e' is a digit, only p/P takes a sign
print(0xe, 0xep1, 0x1E+1, 0x1e-1, 0x1p+4, 0x1.p1, 1e+2+1)
print(1 ..2, 3 .. 4 ..5, 3-2, 3--2
)

-- comparisons mixing representations
print(0x10 == 16, 1e1 == 10, .5 == 0.5, 5. == 5, 0x1p4 == 16)
