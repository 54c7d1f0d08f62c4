-- pcall, xpcall, error with values, levels, and nested protection.
local function strip(msg)
  if type(msg) ~= "string" then return msg end
  return (msg:gsub("^.-:%d+: ", ""))
end
-- messages that name variables depend on codegen; keep only the verb
local function kind(msg) return msg:match("attempt to %a+") end

print(pcall(function() return 1, 2, 3 end))
local ok, err = pcall(function() error("boom") end)
print(ok, strip(err))

ok, err = pcall(function() error("no position", 0) end)
print(ok, err)

ok, err = pcall(function() error({ code = 42 }) end)
print(ok, type(err), err.code)

ok, err = pcall(function() error() end)
print(ok, err)

ok, err = pcall(error, "direct")
print(ok, err)

-- runtime errors
ok, err = pcall(function() local t = nil; return t.x end)
print(ok, kind(err))
ok, err = pcall(function() return 1 + {} end)
print(ok, strip(err))
ok, err = pcall(function() return #5 end)
print(ok, strip(err))
ok, err = pcall(function() return ("x") < 1 end)
print(ok, strip(err))
ok, err = pcall(function() return {} .. "" end)
print(ok, strip(err))
ok, err = pcall(function() local undefinedfn; undefinedfn() end)
print(ok, kind(err))

-- error level 2 blames the caller
local function check(x) if type(x) ~= "number" then error("expected number", 2) end return x end
local function caller() return check("s") end
ok, err = pcall(caller)
print(ok, strip(err))

-- xpcall with a traceback-free handler
local function handler(e) return "handled: " .. strip(e) end
print(xpcall(function() error("inner") end, handler))
print(xpcall(function() return "fine" end, handler))

-- nested pcall: inner error does not escape
local log = {}
ok, err = pcall(function()
  local ok2, err2 = pcall(function() error("level2") end)
  log[#log + 1] = tostring(ok2) .. ":" .. strip(err2)
  error("level1")
end)
log[#log + 1] = tostring(ok) .. ":" .. strip(err)
print(table.concat(log, " | "))

-- error objects with __tostring
local E = { __tostring = function(e) return "E(" .. e.msg .. ")" end }
ok, err = pcall(function() error(setmetatable({ msg = "custom" }, E)) end)
print(ok, tostring(err), getmetatable(err) == E)

-- rethrowing keeps the value
ok, err = pcall(function()
  local ok3, e3 = pcall(error, { tag = "orig" })
  error(e3)
end)
print(ok, err.tag)

-- assert
print(pcall(assert, true, "unused"))
print(pcall(assert, 1 == 1))
ok, err = pcall(assert, false, "assert msg")
print(ok, err)
ok, err = pcall(assert, nil)
print(ok, err)
print(select("#", assert(1, 2, 3)), assert("v"))

-- error with numbers and tostring conversion
ok, err = pcall(error, 404)
print(ok, err, type(err))

-- pcall returning values through multiple levels
local function safediv(a, b)
  if b == 0 then error("div by zero") end
  return a / b
end
for _, d in ipairs({ 2, 0, 4 }) do
  local s, v = pcall(safediv, 8, d)
  print(d, s, strip(v))
end
