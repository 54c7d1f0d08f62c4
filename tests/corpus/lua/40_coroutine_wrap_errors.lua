-- coroutine.wrap raises a coroutine's error again at its caller: a string gains
-- the caller's position unless the wrap function was called by a C function
-- (pcall, gsub, sort) or by a tail call; nupp's wrap is a Lua function
-- (runtime/lua/coroutines.lua) and must give the same positions.
-- Positions are kept in these messages on purpose: they are what is tested.
local function failing() return coroutine.wrap(function() error("boom") end) end
local function once() return coroutine.wrap(function() coroutine.yield(1) end) end

local function tail() return failing()() end
print(pcall(tail))
local obj = { gen = failing() }
print(pcall(function() return obj:gen() end))
print(pcall(function() return obj.gen(1) end))
print(pcall(function() local x = select(2, failing()()) return x end))
print(xpcall(failing(), function(m) return "handled: " .. m end))
print(pcall(function()
  local g = once()
  g()
  g()
  return g()
end))
print(pcall(function() for _ in once() do end for x in once() do return x end end))
print(pcall(function()
  local t = setmetatable({}, { __index = function() return failing()() end })
  return t.x
end))
print(pcall(function() local t = setmetatable({}, { __add = failing() }) return t + 1 end))
print(pcall(function() return ("abc"):gsub(".", failing()) end))
print(pcall(function() return tostring(setmetatable({}, { __tostring = failing() })) end))
print(pcall(function() table.sort({ 3, 2, 1 }, failing()) end))

-- what the coroutine raised, whatever it is
print(pcall(coroutine.wrap(function() local a = nil; return a.b end)))
print(pcall(coroutine.wrap(function() return #nil end)))
print(pcall(coroutine.wrap(function() error() end)))
print(pcall(coroutine.wrap(function() error("level 1", 1) end)))
print(pcall(coroutine.wrap(function() local function f() error("level 2", 2) end f() end)))
print(pcall(coroutine.wrap(function() error("level 0", 0) end)))
local ok, e = pcall(coroutine.wrap(function() error({ code = 5 }) end))
print(ok, type(e), e.code)

-- resuming what cannot be resumed
print(select("#", coroutine.running()), coroutine.isyieldable())
print(pcall(coroutine.resume, coroutine.running()))
local again
again = coroutine.wrap(function() coroutine.yield(1) print(pcall(again)) again() end)
print(again())
print(pcall(again))
local me
me = coroutine.create(function()
  local child = coroutine.create(function() return coroutine.status(me), coroutine.resume(me) end)
  print("child", coroutine.resume(child))
end)
print(coroutine.resume(me))
print(coroutine.resume(me))

-- an error crossing generators nested eight deep gains a position at each level
local function walk(n)
  return coroutine.wrap(function()
    if n == 0 then error("bottom") end
    for v in walk(n - 1) do coroutine.yield(v) end
    coroutine.yield(n)
  end)
end
print(pcall(function() for _ in walk(8) do end end))
