-- if/elseif/else, while, repeat-until scoping, numeric and generic for, break.
local function classify(n)
  if n < 0 then return "neg"
  elseif n == 0 then return "zero"
  elseif n < 10 then return "small"
  else return "big" end
end
print(classify(-5), classify(0), classify(3), classify(42))

-- while with break
local i, acc = 0, {}
while true do
  i = i + 1
  if i > 5 then break end
  if i % 2 == 0 then acc[#acc + 1] = i end
end
print(i, table.concat(acc, ","))

-- repeat-until: the condition sees locals declared in the body
local n = 0
repeat
  local done = n >= 3
  n = n + 1
until done
print("repeat ran to", n)

local r = 10
repeat r = r - 3 until r < 0
print(r)

-- numeric for: steps, negative steps, float steps, empty ranges
local out = {}
for k = 1, 10, 3 do out[#out + 1] = k end
for k = 5, 1, -2 do out[#out + 1] = k end
for k = 0, 1, 0.25 do out[#out + 1] = k end
for k = 1, 0 do out[#out + 1] = "never" end
for k = 3, 3 do out[#out + 1] = "once" end
print(table.concat(out, " "))

-- the loop bounds are evaluated once; modifying the loop var is local
local limit = 3
local seen = {}
for k = 1, limit do
  limit = 10
  seen[#seen + 1] = k
  k = k * 100 -- does not affect iteration
end
print(table.concat(seen, ","), limit)

-- nested loops with break only leaving the inner loop
local pairs_found = {}
for a = 1, 4 do
  for b = 1, 4 do
    if b > a then break end
    if (a + b) % 3 == 0 then pairs_found[#pairs_found + 1] = a .. b end
  end
end
print(table.concat(pairs_found, " "))

-- generic for with ipairs, pairs (sorted), and a custom stateless iterator
local words = { "alpha", "beta", "gamma" }
for idx, w in ipairs(words) do io.write(idx, "=", w, idx < #words and ";" or "\n") end

local function range(n, step)
  step = step or 1
  return function(s, c)
    c = c + step
    if c <= s then return c end
  end, n, 0
end
local rs = {}
for v in range(10, 4) do rs[#rs + 1] = v end
print(table.concat(rs, ","))

-- stateful iterator via closure
local function chars(s)
  local p = 0
  return function()
    p = p + 1
    if p <= #s then return p, s:sub(p, p) end
  end
end
for pos, ch in chars("hey") do io.write(pos, ch, " ") end
print()

-- break inside repeat and in a loop with a trailing statement
local x = 0
repeat
  x = x + 1
  if x == 4 then break end
until false
print("x", x)

-- while with complex condition and nested if
local a, b = 1, 20
while a < b and not (a * 2 == b) do
  if a % 2 == 1 then a = a + 3 else b = b - 1 end
end
print(a, b)

-- for loop over string.gmatch
local total = 0
for num in ("10 20 30"):gmatch("%d+") do total = total + tonumber(num) end
print(total)

-- if with non-boolean conditions
if 0 then print("0 is true") end
if "" then print("empty string is true") end
if not nil and not false then print("nil and false are false") end
