-- Error levels, error objects, handlers and the messages of runtime errors.
local function level(n) error("at level " .. n, n) end
local function via(n) level(n) end
for n = 0, 4 do print(pcall(via, n)) end
print(pcall(error))
print(pcall(error, nil))
print(pcall(error, "plain", 0))
print(pcall(error, 42))
print(select("#", pcall(error)))

local obj = setmetatable({}, { __tostring = function() return "custom object" end })
local ok, e = pcall(error, obj)
print(ok, e == obj, tostring(e))

-- xpcall handlers see the original object; traceback shape without addresses
print(xpcall(function() error({ code = 7 }) end, function(x) return x.code end))
print(xpcall(function() error("boom") end, function(m) return "handled " .. m end))
-- the last frame is the C function below the main chunk: luajit's own (a plain
-- C function, "[C]"), or under nupp the xpcall that lupa calls ("[builtin#21]")
local function strip(tb) return (tb:gsub("\n[^\n]*$", "")) end
print(xpcall(function() local x = nil; return x.field end, function(m) return strip(debug.traceback(m)) end))

-- runtime error messages name what they can
local t = {}
print(pcall(function() return t.a.b end))
print(pcall(function() return undefined_global.x end))
print(pcall(function() undefined_function() end))
print(pcall(function() local up = t; return up.x.y end))
print(pcall(function() return 1 + "x" end))
print(pcall(function() return #nil end))
print(pcall(function() return {} < {} end))
print(pcall(function() return "a" < 1 end))
print(pcall(function() return ("x"):bad() end))
print(pcall(string.rep))
print(pcall(string.sub, "x", "y"))
print(pcall(setmetatable, 1, {}))
print(pcall(function() t.x.y = 1 end))
print(pcall(function() local a = "s" .. {} end))

-- assert
print(pcall(assert, false))
print(pcall(assert, nil, "assert message"))
print(pcall(assert, 1, 2, 3))

-- errors from nested pcall and error in an error handler
print(pcall(pcall, error, "inner"))
print(xpcall(function() error("first") end, function() error("second") end))

-- a deep recursion overflows the stack and is caught
local function deep(n) return 1 + deep(n + 1) end
local okd, ed = pcall(deep, 1)
print(okd, (ed:gsub("^.-:%d+: ", "")))

-- errors carry the line of the raising code
local function where() error("here") end
print(pcall(where))
