-- Varargs: counts with nils, forwarding, select, unpack, the main chunk's own.
local function count(...) return select("#", ...) end
print(count(), count(nil), count(nil, nil), count(1, nil, 3, nil))

local function pass(...) return ... end
print(pass(1, nil, 3))
print((pass(1, 2, 3)))

local function tail(...) return select(2, ...) end
print(tail("a", "b", "c"))
print(select(-1, "x", "y", "z"))
print(pcall(select, 0, 1))

local function pack(...) return { n = select("#", ...), ... } end
local p = pack(nil, false, nil)
print(p.n, p[1], p[2], p[3])
print(unpack({ 1, 2, 3 }))
print(unpack({ 1, 2, 3 }, 2))
print(unpack({ 1, 2, 3 }, 2, 5))

local function sum(...)
  local s = 0
  for i = 1, select("#", ...) do s = s + (select(i, ...) or 0) end
  return s
end
print(sum(1, 2, nil, 4))

-- varargs in table constructors and the middle of argument lists
local function three() return 1, 2, 3 end
local t = { three(), three() }
print(#t, t[1], t[2], t[4])
print(three(), "end")
print(string.format("%d-%d-%d", three()))

-- the main chunk's varargs are the script's arguments
print(select("#", ...), ...)
local first = ...
print(first)
