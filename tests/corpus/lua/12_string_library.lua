-- string library: format, find, match, gmatch, gsub, rep, byte, char, sub.
local s = "The quick brown fox jumps over the lazy dog"

print(string.len(s), #s, s:len())
print(s:sub(5, 9), s:sub(-3), s:sub(-8, -5), s:sub(0), s:sub(100), s:sub(3, 2) == "")
print(s:upper():sub(1, 9), s:lower():sub(1, 3))
print(("ab"):rep(3), ("x"):rep(0), ("-"):rep(5))
print(string.byte("ABC"), string.byte("ABC", 2), string.byte("ABC", 1, 3))
print(string.byte("ABC", -1), string.byte("", 1))
print(string.char(72, 105, 33), string.char())
print(("hello"):reverse(), ("") :reverse() == "")

-- format
print(string.format("%d %5d %-5d| %05d %+d", 42, 42, 42, 42, 42))
print(string.format("%s %10s %-10s|", "str", "right", "left"))
print(string.format("%.3f %10.2f %e %.2e %g %g", math.pi, -math.pi, 12345.678, 0.00012, 1e20, 0.5))
print(string.format("%x %X %#x %o %c%c", 255, 255, 255, 8, 76, 74))
print(string.format("%q", 'he said "hi"\n\tand\\left'))
print(string.format("%5.1s|%.2s|", "abc", "xyz"))
print(string.format("100%% sure, %s", tostring(nil)))
print(string.format("%s %s %s", 1, 2.5, true and "t"))
print(string.format("%3d|%-3d|%03d", -5, -5, -5))

-- find with plain and pattern modes
print(s:find("quick"), s:find("o", 15), s:find("o", -5), s:find("cat"))
print(s:find("q.i"), s:find("q.i", 1, true), ("a.b"):find(".", 1, true))
print(s:find("(%a+) (%a+)$"))
print(("[test]"):find("[", 1, true), ("x^y"):find("^", 1, true))

-- match with captures, anchors, position captures
print(s:match("%a+"), s:match("(%a+) (%a+)", 5), s:match("()fox()"))
print(("key = value"):match("^(%w+)%s*=%s*(%w+)$"))
print(("2024-01-15"):match("(%d+)-(%d+)-(%d+)"))
print(("  trim me  "):match("^%s*(.-)%s*$") .. "|")
print(("[[x]]"):match("%[%[(.*)%]%]"), ("f(a(b)c)d"):match("%b()"))
print(("THE (quick) fox"):find("%f[%a]%a+%f[%A]"))

-- gmatch
local words = {}
for w in s:gmatch("%a+") do words[#words + 1] = w end
print(#words, words[1], words[#words])
local kv = {}
for k, v in ("a=1, b=2, c=3"):gmatch("(%w+)=(%w+)") do kv[#kv + 1] = v .. k end
print(table.concat(kv, ";"))

-- gsub with string, table, function replacements and counts
print(s:gsub("o", "0"))
print(s:gsub("o", "0", 2))
print(("hello world"):gsub("(%w+)", "<%1>"))
print(("hello world"):gsub("%w+", "%0 %0", 1))
print(("$name is $age"):gsub("%$(%w+)", { name = "Bob", age = 42 }))
print(("1 2 3"):gsub("%d", function(d) return d * 2 end))
print(("abc"):gsub("", "-"))
print(("a,b,,c"):gsub(",", ";"))
print(("keep"):gsub("%w", function() return nil end))
print(("x%y"):gsub("%%", "%%%%"))

-- character classes
local classes = { "%a", "%d", "%l", "%u", "%s", "%w", "%x", "%p", "%c" }
local sample = "aZ9 _!\t\n.F"
local res = {}
for _, c in ipairs(classes) do
  local _, n = sample:gsub(c, "")
  res[#res + 1] = c .. "=" .. n
end
print(table.concat(res, " "))
print(("x1y22z333"):gsub("%d+", "#"), ("aaa"):match("a-"), ("aaa"):match("a-$"))
print(("abc123"):match("^[%a_][%w_]*$"), ("1abc"):match("^[%a_][%w_]*$"))
print(("[a-c]"):gsub("[%[%]]", ""), ("hello"):gsub("[^aeiou]", "."))

-- tostring/tonumber with strings
print(tostring(123) .. tostring(true), ("5" + 1), #tostring(12.5))
