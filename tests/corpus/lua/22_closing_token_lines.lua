-- LuaJIT's line for an operation is the line of the last token it read
-- before emitting it: a closing '}', ']' or ')' on a line of its own.
-- Error messages name that line (fidelity/for_do_and_function_name_lines.lua: the
-- tokens nupp's tree keeps no position of).
local function where(ok, message)
  return (tostring(message):gsub("^[^:]*:", ""))
end

print(where(pcall(function()
  return -
  {
  }
end)))

print(where(pcall(function()
  return 1 ..
  {
  }
end)))

print(where(pcall(function()
  local t = {}
  return t[1
  ][2
  ]
end)))

print(where(pcall(function()
  return (nil
  ) + 1
end)))

print(where(pcall(function()
  return ({}) < ({}
  )
end)))
