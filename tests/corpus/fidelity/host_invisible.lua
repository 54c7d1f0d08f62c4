-- Nothing of the host shows: no extra globals, error levels past the main chunk, the stack.
local names = {}
for k in pairs(_G) do if k ~= "nupp" then names[#names + 1] = k end end
table.sort(names)
print(table.concat(names, " "))
print(rawget(_G, "__nupp"), rawget(_G, "python"), package.loaded.python)
for level = 1, 6 do print(level, pcall(function() error("msg", level) end)) end
print(debug.getinfo(1, "S").what, debug.getinfo(2, "S").what, debug.getinfo(3))
local tb = debug.traceback("here", 1)
print((tb:gsub("\n[^\n]*$", "")))  -- the last frame names an address
print(getfenv(1) == _G, getfenv(0) == _G, coroutine.running())
local co = coroutine.create(function(...) return debug.getinfo(2), ... end)
print(coroutine.resume(co, "in a coroutine"))
