-- Closures, upvalues shared between closures, upvalues in loops.
local function counter()
  local n = 0
  return function() n = n + 1; return n end,
         function() return n end
end

local inc, get = counter()
inc(); inc(); inc()
print(get(), inc(), get())

local inc2 = counter()
print(inc2(), get())

-- each loop iteration gets a fresh local
local fns = {}
for i = 1, 3 do
  fns[i] = function() return i * 10 end
end
print(fns[1](), fns[2](), fns[3]())

local fns2 = {}
local j = 1
while j <= 3 do
  local k = j
  fns2[j] = function() k = k + 100; return k end
  j = j + 1
end
print(fns2[1](), fns2[1](), fns2[2](), fns2[3]())

-- generic-for loop variables are fresh too
local gf = {}
for idx, val in ipairs({ "a", "b", "c" }) do
  gf[#gf + 1] = function() return idx .. val end
end
print(gf[1](), gf[2](), gf[3]())

-- nested closures three levels deep
local function outer(x)
  return function(y)
    return function(z)
      x = x + 1
      return x + y + z
    end
  end
end
local f = outer(1)(10)
print(f(100), f(100), outer(0)(0)(0))

-- recursive local function sees itself as upvalue
local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end
print(fact(10))

-- local x = function ... cannot see itself; the outer one is used
local g = function() return "outer g" end
do
  local g = function() return "inner calls " .. g() end
  print(g())
end

-- upvalue shared after the creating function returns
local function pair()
  local v = "init"
  local function set(x) v = x end
  local function read() return v end
  return set, read
end
local set, read = pair()
set("changed")
print(read())

-- closures capturing parameters and varargs-derived locals
local function bind(fn, ...)
  local bound = { ... }
  local nb = select("#", ...)
  return function(...)
    local args = {}
    for i = 1, nb do args[i] = bound[i] end
    local extra = { ... }
    for i = 1, select("#", ...) do args[nb + i] = extra[i] end
    return fn(unpack(args, 1, nb + select("#", ...)))
  end
end
local add3 = function(a, b, c) return a + b + c end
print(bind(add3, 1)(2, 3), bind(add3, 1, 2)(3), bind(add3, 1, 2, 3)())

-- memoize via closure
local function memo(fn)
  local cache, calls = {}, 0
  return function(n)
    if cache[n] == nil then calls = calls + 1; cache[n] = fn(n) end
    return cache[n], calls
  end
end
local sq = memo(function(n) return n * n end)
sq(4); sq(4); sq(5)
print(sq(4))
print(select(2, sq(6)))
