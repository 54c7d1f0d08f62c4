-- Coroutines: create/resume/yield/status/wrap, passing values both ways.
local co = coroutine.create(function(a, b)
  print("start", a, b)
  local c = coroutine.yield(a + b)
  print("got", c)
  local d, e = coroutine.yield(c * 2)
  print("got", d, e)
  return "done", d + e
end)

print(coroutine.status(co))
print(coroutine.resume(co, 1, 2))
print(coroutine.status(co))
print(coroutine.resume(co, 10))
print(coroutine.resume(co, 3, 4))
print(coroutine.status(co))
print(coroutine.resume(co))

-- generator with wrap
local function gen(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i, i * i) end
    return nil
  end)
end
for i, sq in gen(4) do io.write(i, ":", sq, " ") end
print()

-- errors inside coroutines
local bad = coroutine.create(function() error("oops", 0) end)
print(coroutine.resume(bad))
print(coroutine.status(bad))

local wbad = coroutine.wrap(function() error({ tag = "tbl" }) end)
local ok, e = pcall(wbad)
print(ok, type(e), e.tag)

-- running and isyieldable-free checks
local main = coroutine.running()
print(main == nil or type(main) == "thread")
local inner = coroutine.create(function()
  local me = coroutine.running()
  coroutine.yield(type(me), coroutine.status(me))
end)
print(coroutine.resume(inner))

-- producer / consumer pipeline
local function producer(items)
  return coroutine.create(function()
    for _, it in ipairs(items) do coroutine.yield(it) end
  end)
end
local function filter(src, pred)
  return coroutine.create(function()
    while true do
      local okr, v = coroutine.resume(src)
      if not okr or v == nil then return end
      if pred(v) then coroutine.yield(v) end
    end
  end)
end
local p = filter(producer({ 1, 2, 3, 4, 5, 6, 7, 8 }), function(v) return v % 2 == 0 end)
local collected = {}
while true do
  local okr, v = coroutine.resume(p)
  if not okr or v == nil then break end
  collected[#collected + 1] = v
end
print(table.concat(collected, ","))

-- yield across nested function calls (not across pcall boundaries needed)
local function deep(n)
  if n == 0 then return coroutine.yield("bottom") end
  return deep(n - 1) .. "<" .. n
end
local dc = coroutine.wrap(function() return deep(3) end)
print(dc())
print(dc("up"))

-- resuming a dead coroutine
local once = coroutine.create(function() return 1 end)
coroutine.resume(once)
print(coroutine.resume(once))

-- varargs through yield/resume
local vc = coroutine.wrap(function(...)
  local n = select("#", ...)
  local r = { coroutine.yield(n, ...) }
  return #r, unpack(r)
end)
print(vc("a", nil, "c"))
print(vc(1, 2, 3, 4))

-- yield inside pcall inside a coroutine (LuaJIT allows this)
local pc = coroutine.wrap(function()
  local okp, v = pcall(function() return coroutine.yield("in pcall") + 1 end)
  return okp, v
end)
print(pc())
print(pc(41))
