-- Small complete programs: sieve, quicksort, an expression compiler with a stack VM, word counts.
-- Sieve of Eratosthenes
local function sieve(n)
  local composite, primes = {}, {}
  for i = 2, n do
    if not composite[i] then
      primes[#primes + 1] = i
      for j = i * i, n, i do composite[j] = true end
    end
  end
  return primes
end
local ps = sieve(100)
print(#ps, table.concat(ps, " ", 1, 10), ps[#ps])

-- Quicksort (Lomuto partition)
local function quicksort(arr, lo, hi)
  lo, hi = lo or 1, hi or #arr
  if lo >= hi then return arr end
  local pivot, i = arr[hi], lo - 1
  for j = lo, hi - 1 do
    if arr[j] <= pivot then i = i + 1; arr[i], arr[j] = arr[j], arr[i] end
  end
  arr[i + 1], arr[hi] = arr[hi], arr[i + 1]
  quicksort(arr, lo, i)
  quicksort(arr, i + 2, hi)
  return arr
end
print(table.concat(quicksort({ 38, 27, 43, 3, 9, 82, 10, 3, -5, 0 }), " "))

-- Tokenizer for arithmetic expressions
local function tokenize(src)
  local toks, pos = {}, 1
  while pos <= #src do
    local c = src:sub(pos, pos)
    if c:match("%s") then
      pos = pos + 1
    elseif c:match("%d") then
      local num = src:match("^%d+%.?%d*", pos)
      toks[#toks + 1] = { kind = "num", value = tonumber(num) }
      pos = pos + #num
    elseif c:match("[%+%-%*/%^%(%)]") then
      toks[#toks + 1] = { kind = c }
      pos = pos + 1
    else
      error("bad char " .. c, 0)
    end
  end
  toks[#toks + 1] = { kind = "eof" }
  return toks
end

-- Recursive-descent parser compiling to a stack VM program
local function compile(src)
  local toks, p, code = tokenize(src), 1, {}
  local function peek() return toks[p].kind end
  local function take() p = p + 1; return toks[p - 1] end
  local expr
  local function atom()
    local t = take()
    if t.kind == "num" then code[#code + 1] = { "push", t.value }
    elseif t.kind == "(" then expr(); take()
    else error("unexpected " .. t.kind, 0) end
  end
  local unary
  local function power()
    atom() -- ^ is right associative and its right operand may be unary
    if peek() == "^" then take(); unary(); code[#code + 1] = { "^" } end
  end
  function unary()
    if peek() == "-" then take(); unary(); code[#code + 1] = { "neg" } else power() end
  end
  local function term()
    unary()
    while peek() == "*" or peek() == "/" do local op = take().kind; unary(); code[#code + 1] = { op } end
  end
  function expr()
    term()
    while peek() == "+" or peek() == "-" do local op = take().kind; term(); code[#code + 1] = { op } end
  end
  expr()
  return code
end

local ops = {
  ["+"] = function(a, b) return a + b end, ["-"] = function(a, b) return a - b end,
  ["*"] = function(a, b) return a * b end, ["/"] = function(a, b) return a / b end,
  ["^"] = function(a, b) return a ^ b end,
}
local function run(code)
  local stack = {}
  for _, ins in ipairs(code) do
    local op = ins[1]
    if op == "push" then stack[#stack + 1] = ins[2]
    elseif op == "neg" then stack[#stack] = -stack[#stack]
    else local b = table.remove(stack); local a = table.remove(stack); stack[#stack + 1] = ops[op](a, b) end
  end
  return stack[1]
end
for _, src in ipairs({ "1 + 2 * 3", "(1 + 2) * 3", "2 ^ 3 ^ 2", "-2 ^ 2", "2 ^ -1", "- -3 * 2", "10 / 4 - 1.5", "2 * (3 + (4 - 1)) ^ 2" }) do
  print(src, "=", run(compile(src)), loadstring("return " .. src)())
end
print(pcall(compile, "1 + $"))
print(pcall(compile, "1 + )"))

-- Word frequency with sorted output
local text = "the cat and the hat and the bat sat on the mat"
local freq = {}
for w in text:gmatch("%a+") do freq[w] = (freq[w] or 0) + 1 end
local words = {}
for w in pairs(freq) do words[#words + 1] = w end
table.sort(words, function(a, b) if freq[a] ~= freq[b] then return freq[a] > freq[b] end return a < b end)
local parts = {}
for i = 1, 4 do parts[i] = words[i] .. "=" .. freq[words[i]] end
print(table.concat(parts, ", "))

-- GCD / LCM and a Collatz length table
local function gcd(a, b) while b ~= 0 do a, b = b, a % b end return a end
local function collatz(n) local s = 0 while n ~= 1 do n = n % 2 == 0 and n / 2 or 3 * n + 1; s = s + 1 end return s end
print(gcd(48, 18), 48 * 18 / gcd(48, 18), collatz(27), collatz(1))
