-- LuaJIT's line for an operation is the line of the last token it read
-- before emitting it: a numeric for's `do` on a line of its own, or a
-- function statement's name, or a part of it, on a later line than
-- `function`.  nupp's syntax tree keeps no position of these tokens, so its
-- Lua names the line before (tests/test_lua_fidelity.py's EXPECTED_DIFFERENCES).
local function where(ok, message)
  return (tostring(message):gsub("^[^:]*:", ""))
end

print(where(pcall(function()
  for i = 1, "x"
  do end
end)))

print(where(pcall(function()
  for i = 1, 2, {}
  do end
end)))

-- a function statement's name on a later line than `function`, and its
-- parts on lines of their own
print(where(pcall(function()
  function
  a_global.b.c() end
end)))

print(where(pcall(function()
  function a_global
  .b.c() end
end)))
