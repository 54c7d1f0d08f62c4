-- Short string literals and escape sequences accepted by LuaJIT 2.1.
local function show(s)
  local t = {}
  for i = 1, #s do t[#t + 1] = string.byte(s, i) end
  print(#s, table.concat(t, ","))
end

print("double quoted", 'single quoted')
print("it's", 'say "hi"', "say \"hi\"", 'it\'s')
print("tab:\tend", "back\\slash")
show("\n\t\r\a\b\f\v")
show("\\\"\'")
show("\65\066\0677")          -- decimal escapes, at most three digits
show("\0\1\255")
show("a\0b")                  -- embedded zero byte
print("\72\101\108\108\111")
print("\x41\x42\x7a\x5A")     -- hex escapes (LuaJIT)
show("\x00\xff\xFe")
print("\u{48}\u{49}")         -- unicode escape (LuaJIT 2.1)
show("\u{e9}")                -- encodes as UTF-8
show("\u{20AC}")
print("skip\z
       ped whitespace")
print("line one\
line two")
show("a\
b")
print("x" .. "\z   " .. "y")
print('mixed \'quotes\' and "quotes"')
print("", '', #"", #'')
print(#"\z
      ")
print("percent % and hash # and brackets [[ ]]")
print("--not a comment", '--[[ not a long comment ]]')

-- strings as tables of bytes
local s = "Hello"
print(s:len(), s:upper(), s:lower(), ("abc"):reverse())
print(("%d-%s"):format(5, "x"), #s .. "", s .. 1 .. 2)

-- %q round trip
local tricky = "a\nb\"c\\d\0e\r"
local q = string.format("%q", tricky)
local back = loadstring("return " .. q)()
print(back == tricky, #back)

-- comparisons of strings
print("a" < "b", "abc" < "abd", "Z" < "a", "" < "a", "a" < "aa")
print("10" == 10, "10" + 0 == 10, "3" * "4", "2" ^ 2)
print(10 .. "", "1" .. 0)
