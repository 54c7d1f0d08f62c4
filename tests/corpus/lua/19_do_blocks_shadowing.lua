-- do-blocks, lexical scoping, shadowing of locals, globals and parameters.
local x = "outer"
do
  local x = "inner"
  print(x)
  do
    local x = x .. "-nested"
    print(x)
  end
  print(x)
end
print(x)

-- shadowing within the same block: later local hides earlier
local y = 1
local y = y + 1
local y = y * 10
print(y)

-- a local's initializer sees the previous binding, not itself
local z = 5
do
  local z = z + 1
  print(z)
end
print(z)

-- parameters shadow upvalues and globals
GLOBAL_V = "global"
local function shadowParam(GLOBAL_V, print2)
  return GLOBAL_V, print2
end
print(shadowParam("param", "p2"), GLOBAL_V)
local GLOBAL_V = "local now"
print(GLOBAL_V, _G.GLOBAL_V, rawget(_G, "GLOBAL_V"))
_G.GLOBAL_V = nil

-- shadowing builtins locally
do
  local print = function(...) io.write("[shadowed] ", table.concat({ ... }, " "), "\n") end
  local type = function() return "fake" end
  print("hello", type(1))
end
print("real print", type(1))

do
  local string = { format = function() return "fake format" end }
  print(string.format("%d", 1))
end
print(string.format("%d", 1))

-- loop variables shadow outer locals and disappear after the loop
local i = "before"
for i = 1, 2 do local i = i * 100; io.write(i, " ") end
print(i)
local k, v = "k0", "v0"
for k, v in ipairs({ "a" }) do io.write(k, v, " ") end
print(k, v)

-- closures capture the binding that was visible at creation time
local fns = {}
local n = 1
fns[1] = function() return n end
local n = 2
fns[2] = function() return n end
n = 3
print(fns[1](), fns[2]())

-- do-block used to limit lifetime and to return early
local function early(flag)
  do
    if flag then return "early" end
  end
  return "late"
end
print(early(true), early(false))

-- repeat scope includes the until condition
local tries = 0
repeat
  local finished = tries >= 2
  tries = tries + 1
until finished
print(tries)

-- same name used as local function and later as variable
local function helper() return "fn" end
local first = helper()
local helper = "string now"
print(first, helper)

-- block-local function shadows outer one
local function greet() return "outer greet" end
do
  local function greet() return "inner greet" end
  print(greet())
end
print(greet())

-- underscore and unusual but valid identifiers
local _, __, _a1, A_B = 1, 2, 3, 4
local _ = "last underscore wins"
print(_, __, _a1, A_B)
