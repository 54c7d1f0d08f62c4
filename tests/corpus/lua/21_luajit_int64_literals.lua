-- LuaJIT-specific 64-bit integer (LL/ULL) and imaginary (i) numeric literals.
-- These are boxed cdata values; tostring gives a stable textual form.
print(tostring(1LL), tostring(1ll), tostring(0x10ULL), tostring(0x10ull))
print(tostring(-1LL), tostring(0LL), tostring(42ULL), type(1LL))
print(tostring(0x7fffffffffffffffLL), tostring(0xffffffffffffffffULL))
print(tostring(9007199254740993LL), tostring(2^53 + 1))

-- arithmetic stays 64-bit and mixes with plain numbers
print(tostring(1LL + 1), tostring(2LL * 3), tostring(2LL ^ 10), tostring(7LL / 2))
print(tostring(-7LL % 3), tostring(7LL % -3), tostring(-(5LL)))
print(tostring(1ULL - 2), tostring(0ULL - 1 == 0xffffffffffffffffULL))
print(tostring(0x100000000LL * 0x100000000LL), tostring(0x7fffffffffffffffLL + 1))

-- comparisons between int64 values and with numbers
print(1LL == 1LL, 1LL == 1, 2LL > 1LL, 1LL < 2, 3ULL >= 3ULL)
print(tostring(1LL) == "1LL", tostring(1LL):sub(1, -3) + 0 == 1)

-- conversion back to a Lua number
print(tonumber(42LL), tonumber(0x10ULL) + 0.5, tonumber(2LL ^ 40))

-- as table keys int64 cdata are distinct objects, so use tostring for lookups
local byName = {}
for _, v in ipairs({ 1LL, 2LL, 3LL }) do byName[tostring(v)] = tonumber(v) * 10 end
print(byName["1LL"], byName["2LL"], byName["3LL"])

-- accumulation in a loop
local acc = 0LL
for i = 1, 20 do acc = acc * 3 + i end
print(tostring(acc))
local fact = 1ULL
for i = 1, 20 do fact = fact * i end
print(tostring(fact))

-- imaginary literals (complex cdata)
print(tostring(1i), tostring(2.5i), tostring(0i), tostring(1e2i), type(1i))
-- (no arithmetic operators are defined for complex cdata)
print(pcall(function() return 1 + 1i end) == false)

-- string formatting of int64 via tostring and string.format("%s")
print(string.format("%s|%s", tostring(123LL), tostring(456ULL)))
print(("value=" .. tostring(0xffULL)):upper())

-- bit operations accept int64 in LuaJIT 2.1
print(bit.tohex(0xff00ff00ff00ff00ULL), tostring(bit.band(0xffLL, 0x0fLL)))
print(tostring(bit.lshift(1LL, 40)), tostring(bit.rshift(0x8000000000000000ULL, 63)))
