-- Varargs in functions and in the main chunk.
print("main chunk args:", select("#", ...))
local first = ...
print("first main arg is string or nil:", first == nil or type(first) == "string")
local packed = { ... }
print(#packed == select("#", ...))

local function count(...) return select("#", ...) end
print(count(), count(nil), count(nil, nil), count(1, nil, 3, nil))

local function pass(...) return ... end
print(pass(1, 2, 3))
print(pass())
print((pass(1, 2, 3)))
print(pass(1, 2), pass(3, 4))
print(({ pass(1, 2, 3) })[3])
print(#{ pass(1, 2, 3) }, #{ pass(1, 2, 3), 10 }, #{ (pass(1, 2, 3)) })

-- select with positive and negative indices
print(select(2, "a", "b", "c"))
print(select(3, "a", "b", "c"))
print(select(-1, "a", "b", "c"))
print(select(-2, "a", "b", "c"))
print(select(4, "a", "b", "c"))
print(select("#"))
print((pcall(select, 0, "a")))

-- fixed parameters followed by varargs
local function fixed(a, b, ...)
  return a, b, select("#", ...), ...
end
print(fixed(1))
print(fixed(1, 2))
print(fixed(1, 2, 3, 4))

-- varargs forwarded in the middle are truncated to one value
local function mid(...) return 0, ..., 9 end
print(mid(1, 2, 3))
print(mid())

-- varargs in table constructors
local function tail(...) return { "x", ... } end
local function head(...) return { ..., "y" } end
local t1, t2 = tail(1, 2), head(1, 2)
print(#t1, t1[1], t1[2], t1[3])
print(#t2, t2[1], t2[2], t2[3])

-- summing with a numeric loop over select
local function sum(...)
  local s = 0
  for i = 1, select("#", ...) do
    s = s + (select(i, ...))
  end
  return s
end
print(sum(), sum(5), sum(1, 2, 3, 4, 5))

-- unpack with explicit ranges keeps nils
local holes = { 1, nil, 3 }
print(count(unpack(holes, 1, 3)), unpack(holes, 1, 3))
print(unpack({ "a", "b", "c" }, 2))
print(unpack({ "a", "b", "c" }, 2, 2))
print(count(unpack({}, 1, 0)))

-- vararg function used as a method-like callback
local log = {}
local function logger(prefix, ...)
  local parts = { prefix }
  for i = 1, select("#", ...) do parts[#parts + 1] = tostring((select(i, ...))) end
  log[#log + 1] = table.concat(parts, ":")
end
logger("a"); logger("b", 1); logger("c", nil, true, "s")
print(table.concat(log, " "))

-- varargs captured by an inner closure must go through a table
local function capture(...)
  local saved, n = { ... }, select("#", ...)
  return function() return unpack(saved, 1, n) end
end
print(capture(7, nil, 9)())
