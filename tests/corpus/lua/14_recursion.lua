-- Recursion: plain, mutual, tail calls, recursion over tables.
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local fibs = {}
for i = 0, 15 do fibs[#fibs + 1] = fib(i) end
print(table.concat(fibs, " "))

-- mutual recursion through forward-declared locals
local isEven, isOdd
function isEven(n) if n == 0 then return true end return isOdd(n - 1) end
function isOdd(n) if n == 0 then return false end return isEven(n - 1) end
print(isEven(10), isOdd(7), isEven(3))

-- deep tail calls do not grow the stack
local function loop(n, acc)
  if n == 0 then return acc end
  return loop(n - 1, acc + n)
end
print(loop(100000, 0))

-- tail call through a method
local M = {}
function M:count(n) if n == 0 then return "done" end return self:count(n - 1) end
print(M:count(50000))

-- Ackermann (small arguments)
local function ack(m, n)
  if m == 0 then return n + 1 end
  if n == 0 then return ack(m - 1, 1) end
  return ack(m - 1, ack(m, n - 1))
end
print(ack(2, 3), ack(3, 3))

-- Towers of Hanoi move list
local moves = {}
local function hanoi(n, from, to, via)
  if n == 0 then return end
  hanoi(n - 1, from, via, to)
  moves[#moves + 1] = from .. to
  hanoi(n - 1, via, to, from)
end
hanoi(4, "A", "C", "B")
print(#moves, table.concat(moves, " ", 1, 7))

-- recursive tree walk and serialization with sorted keys
local function serialize(v)
  if type(v) ~= "table" then
    return type(v) == "string" and string.format("%q", v) or tostring(v)
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  local parts = {}
  for _, k in ipairs(keys) do
    parts[#parts + 1] = (type(k) == "number" and "" or (k .. "=")) .. serialize(v[k])
  end
  return "{" .. table.concat(parts, ",") .. "}"
end
print(serialize({ 1, 2, { 3, x = "y" }, name = "n", sub = { deep = { true, false } } }))

-- permutations via recursion
local function permute(arr, n, out)
  n = n or #arr
  out = out or {}
  if n <= 1 then
    out[#out + 1] = table.concat(arr)
  else
    for i = 1, n do
      arr[i], arr[n] = arr[n], arr[i]
      permute(arr, n - 1, out)
      arr[i], arr[n] = arr[n], arr[i]
    end
  end
  return out
end
local perms = permute({ "a", "b", "c" })
table.sort(perms)
print(#perms, table.concat(perms, " "))

-- stack overflow is caught by pcall
local function runaway(n) return 1 + runaway(n + 1) end
local ok, err = pcall(runaway, 1)
print(ok, (tostring(err):find("stack overflow", 1, true)) ~= nil)

-- recursive anonymous function via Y-combinator style
local function Y(f) return function(...) return f(Y(f), ...) end end
local fact = Y(function(self, n) if n == 0 then return 1 end return n * self(n - 1) end)
print(fact(12))

-- flatten nested lists
local function flatten(t, acc)
  acc = acc or {}
  for _, v in ipairs(t) do
    if type(v) == "table" then flatten(v, acc) else acc[#acc + 1] = v end
  end
  return acc
end
print(table.concat(flatten({ 1, { 2, { 3, { 4, { 5 } } }, 6 }, { { { 7 } } } }), ","))
