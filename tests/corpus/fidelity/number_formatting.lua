-- How numbers print: tostring, concatenation, string.format, tonumber.
local values = { 0, -0.0, 1, -1, 0.5, 1 / 3, 2 / 3, 0.1, 100, 1e15, 1e16, 12345678901234,
  1234567890123456789, 2 ^ 53, 2 ^ 53 + 1, 2 ^ 63, 2 ^ 64, -2 ^ 63, 1e100, 1e-100, 5e-324,
  1.7976931348623157e308, 1 / 0, -1 / 0, 3.14159265358979, 1e300 * 1e10, 255 / 256, 1e-5, 123.456 }
for _, v in ipairs(values) do io.write(tostring(v), " ", v .. "", "\n") end
print(0 / 0 ~= 0 / 0, tostring(-(0 / 0)) == tostring(0 / 0) or "sign")
for _, f in ipairs({ "%d", "%5d", "%-5d|", "%05d", "%x", "%X", "%o", "%e", "%.3e", "%g", "%.3g",
  "%10.4f", "%-10.2f|", "%+d", "% d", "%.0f", "%.14g", "%.17g", "%a" }) do
  io.write(f, " -> ", string.format(f, 255.5), " ", string.format(f, -3), "\n")
end
print(string.format("%5.1s|%.2s|%s", "abc", "xyz", 12.5))
print(string.format("%c%c%c", 76, 117, 97), string.format("%%"))
print(string.format("%d", 2 ^ 31), string.format("%d", -2 ^ 31), string.format("%x", 2 ^ 32 + 5))
print(pcall(string.format, "%d", "x"), pcall(string.format, "%z", 1))
print(tonumber("0x10"), tonumber("  12  "), tonumber("1e2"), tonumber("1e"), tonumber(""), tonumber("0x"),
  tonumber("10", 2), tonumber("ff", 16), tonumber("zz", 36), tonumber("8", 8), tonumber(" -7 "), tonumber("inf"))
print(1e15, 1e15 + 0.5, 12345678901234567890, 0x7fffffff, 0xffffffff, 0x1p4, 0x.8)
print(math.huge, -math.huge, math.pi, math.floor(-3.5), math.ceil(-3.5), math.fmod(-7, 3), -7 % 3, 7 % -3)
print(10 / 2, 3 * 1.0, 2 ^ 10, 2 ^ 0.5)
print(1LL, -1LL, 2LL ^ 40, 0xffULL, 12345678901234567ULL, 3LL / 2, -7LL % 3, tostring(1LL) .. "")
