-- Edges of the string and table libraries and of printing, as LuaJIT has them
-- (drawn from tests/luagen_lib.py's families): rep with a separator, find at
-- and past the end, gsub's count and table replacements, %q of control bytes,
-- tonumber's bases, select from the end, concat of numbers, insert/remove at
-- the ends, print under a replaced global tostring, __tostring through print,
-- tostring and %s, error objects through xpcall.
print(("x"):rep(3, 5), ("ab"):rep(0, "sep"), ("ab"):rep(1, "sep"), ("x"):rep(2.9))
print(string.find("abc", "", 10), string.find("abc", "", 4), string.find("", ""))
print(string.match("key=val", "(%w+)=(%w+)", -100), ("THE (quick) fox"):find("%((%a+)%)"))
print(("f(a(b)c)d"):match("%b()"), ("hello world"):gsub("%f[%w]%w+", "<%0>"), ("x1y22"):gsub("()%d", "%1"))
print(string.gsub("hello world", "o", "0", 0), string.gsub("abc", "", "-"), string.gsub("abc", "%w", "%0%0", 2))
print(string.gsub("abc", ".", { a = 1, b = false }), pcall(string.gsub, "abc", ".", { a = {} }))
print(string.gsub("a b c", "%a", function(c) if c ~= "b" then return c:upper() end end))
print(string.format("%q", "\r\n\0\1\127"), string.format("%5.2s|%-5.1s|", "abc", "xyz"), string.format("%c%c", 72, 105))
print(string.format("%d %x %X %o %+d %05d %e %g", 42, 255, 255, 8, 3, -7, 1 / 3, 1e20))
print(tonumber("0x"), tonumber("0x1p4"), tonumber("1e"), tonumber(" 0x10 ", 16), tonumber("10", 36))
print(tonumber("zz", 36), tonumber("-zz", 36), tonumber("1.5", 10), tonumber("8", 8), tonumber("  12\n"))
print(select(-1, "a", "b"), pcall(select, -3, "a", "b"), select(2, "a", "b", "c"))
print(table.concat({ 1, 2.5, "x", 2 ^ 53 }, ", ", 2, 4), pcall(table.concat, { 1, {}, 3 }), table.concat({}, "x", 1, 0))
print(unpack({ 1, 2, 3 }, -1, 1), unpack({ 1, 2, 3 }, 2), unpack({}, 1, 3))
local t = { 1, 2, 3 }
table.insert(t, 1, 0)
table.insert(t, 5, 9)
print(#t, table.remove(t, 1), table.remove(t), #t, table.concat(t, ","))
print(pcall(table.insert, { 1 }, 1, 2, 3), pcall(table.insert, {}))
local records = { { k = 2, n = "b" }, { k = 1, n = "a" }, { k = 3, n = "c" } }
table.sort(records, function(x, y) return x.k < y.k end)
print(records[1].n, records[2].n, records[3].n)
print(pcall(table.sort, { 3, 1, 2 }, function(x) error("cmp " .. x, 0) end))

print(-0.0, 1 / 0, -1 / 0, 2 ^ 53, 1e15, 1e16, 3.0, 123456789012, 0.1, nil, false)
io.write(-0.0, " ", 2 ^ 63, " ", 1e100, " ", 1 / 3, "\n")
local real = tostring
tostring = function(v) return "<" .. real(v) .. ">" end
print(1, "a", nil)
tostring = function() return 7 end
print(pcall(print, "x"))
tostring = real
for _, made in ipairs({ "'made'", "42", "nil", "error('in __tostring')" }) do
  local o = setmetatable({}, { __tostring = loadstring("return " .. made) })
  print(made, pcall(print, o))
  print(pcall(tostring, o))
  print(pcall(string.format, "%s|", o))
end
local function describe(m) return type(m) == "table" and "table " .. tostring(m.code) or tostring(m) end
print(xpcall(function() error({ code = 3 }) end, describe))
print(xpcall(function() error("plain", 0) end, function(m) return "handled: " .. m end))
print(xpcall(function() error("again") end, function() error("in the handler") end))
print(xpcall(function(...) return select("#", ...), ... end, describe, 1, nil, 3))
