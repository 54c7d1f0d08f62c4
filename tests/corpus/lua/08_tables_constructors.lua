-- Table constructors: positional, named, bracketed keys, separators, nesting.
local t = { 1, 2, 3; 4; 5, }
print(#t, t[1], t[5])

local u = { x = 1, y = 2; ["z"] = 3, [1 + 1] = "two", "one" }
print(u.x, u.y, u.z, u[1], u[2], #u)

local e = {}
print(#e, next(e))

local nested = { { 1, 2 }, { 3, { 4, { 5 } } }, k = { k = { k = "deep" } } }
print(nested[2][2][2][1], nested.k.k.k, #nested)

-- positional items override earlier bracketed keys at the same index
local ov = { [1] = "bracket", "positional" }
print(ov[1])

-- keys of many types
local f = function() end
local keyt = {}
local mixed = { [true] = "T", [false] = "F", [1.5] = "float", [keyt] = "table", [f] = "fn", ["with space"] = 1 }
print(mixed[true], mixed[false], mixed[1.5], mixed[keyt], mixed[f], mixed["with space"])
print(mixed[3 / 2], mixed[2.0 - 0.5])

-- float keys with integer values normalize
local norm = {}
norm[1.0] = "a"; norm[2] = "b"
print(norm[1], norm[2.0], #norm)

-- expressions as values and keys
local n = 3
local ex = { n * 2, n .. "s", [n] = "three?", [n * 10] = n > 2, n == 3 and "yes" or "no" }
print(ex[1], ex[2], ex[3], ex[30])

-- function calls in constructors: last one expands
local function three() return 1, 2, 3 end
print(#{ three() }, #{ three(), three() }, #{ three(), 0 }, #{ (three()) })

-- trailing separators and newlines in constructors
local multi = {
  "a",
  "b";
  key = "v",

  ["k2"] = "v2",
}
print(#multi, multi.key, multi.k2)

-- a constructor whose field is a function and method
local obj = {
  name = "obj",
  greet = function(self, who) return self.name .. " greets " .. who end,
  list = { "x", "y" },
}
print(obj:greet("you"), obj.list[#obj.list])

-- sorted iteration over hash part for determinism
local h = { b = 2, a = 1, d = 4, c = 3 }
local keys = {}
for k in pairs(h) do keys[#keys + 1] = k end
table.sort(keys)
local parts = {}
for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. h[k] end
print(table.concat(parts, ","))

-- ipairs stops at the first nil
local holes = { 1, 2, nil, 4 }
local c = 0
for _ in ipairs(holes) do c = c + 1 end
print(c, holes[4])

-- next with explicit key traversal on an array
local arr = { "p", "q", "r" }
local k, v = next(arr)
local seen = {}
while k do seen[#seen + 1] = k .. v; k, v = next(arr, k) end
print(table.concat(seen, " "))

-- assigning nil removes a key
local rm = { a = 1 }
rm.a = nil
print(next(rm), rm.a)

-- table as a set and length of a built-up array
local arr2 = {}
for i = 1, 10 do arr2[#arr2 + 1] = i * i end
print(#arr2, arr2[10], table.concat(arr2, " ", 8))
