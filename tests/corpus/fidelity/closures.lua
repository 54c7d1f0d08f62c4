-- Closures: fresh locals per iteration, shared upvalues, recursion, counters.
local fns = {}
for i = 1, 3 do fns[i] = function() return i end end
print(fns[1](), fns[2](), fns[3]())

local shared = {}
do
  local n = 0
  shared.inc = function() n = n + 1 return n end
  shared.get = function() return n end
end
shared.inc(); shared.inc()
print(shared.get())

local function counter(start, step)
  local value = start
  return function() value = value + step return value end
end
local c1, c2 = counter(0, 1), counter(10, -2)
print(c1(), c1(), c2(), c2(), c1())

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
print(fib(20))

-- a while loop's body local is fresh each time too
local list, k = {}, 0
while k < 3 do k = k + 1 local v = k * k list[k] = function() return v end end
print(list[1](), list[2](), list[3]())

-- upvalue shared by two closures made in one call
local function pair() local x = 0 return function() x = x + 1 end, function() return x end end
local bump, read = pair()
bump(); bump(); bump()
print(read())

-- a closure over a loop variable of a numeric for with a step
local acc = {}
for i = 10, 1, -4 do acc[#acc + 1] = function() return i end end
for _, f in ipairs(acc) do io.write(f(), " ") end
print()

-- deep closure nesting
local function adder(a) return function(b) return function(c) return a + b + c end end end
print(adder(1)(2)(3))
