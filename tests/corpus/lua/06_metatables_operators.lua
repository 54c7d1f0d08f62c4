-- Metatables: arithmetic, comparison, concat, call, index, newindex, tostring.
local V = {}
V.__index = V

local function vec(x, y) return setmetatable({ x = x, y = y }, V) end

V.__add = function(a, b) return vec(a.x + b.x, a.y + b.y) end
V.__sub = function(a, b) return vec(a.x - b.x, a.y - b.y) end
V.__mul = function(a, b)
  if type(a) == "number" then return vec(a * b.x, a * b.y) end
  if type(b) == "number" then return vec(a.x * b, a.y * b) end
  return a.x * b.x + a.y * b.y
end
V.__div = function(a, b) return vec(a.x / b, a.y / b) end
V.__mod = function(a, b) return vec(a.x % b, a.y % b) end
V.__pow = function(a, b) return vec(a.x ^ b, a.y ^ b) end
V.__unm = function(a) return vec(-a.x, -a.y) end
V.__eq = function(a, b) return a.x == b.x and a.y == b.y end
V.__lt = function(a, b) return a.x * a.x + a.y * a.y < b.x * b.x + b.y * b.y end
V.__le = function(a, b) return not (b < a) end
V.__concat = function(a, b)
  local sa = type(a) == "table" and tostring(a) or a
  local sb = type(b) == "table" and tostring(b) or b
  return sa .. sb
end
V.__tostring = function(v) return "(" .. v.x .. "," .. v.y .. ")" end
V.__call = function(v, k) return v[k] end
V.__len = function(v) return 2 end   -- ignored for tables in Lua 5.1 / LuaJIT
function V:len2() return self.x * self.x + self.y * self.y end

local a, b = vec(1, 2), vec(3, 4)
print(tostring(a + b), tostring(a - b), a * b, tostring(2 * a), tostring(a * 3))
print(tostring(b / 2), tostring(b % 3), tostring(a ^ 2), tostring(-a))
print(a == vec(1, 2), a ~= b, a == b, rawequal(a, vec(1, 2)))
print(a < b, a <= b, a > b, a >= b, b <= b)
print(a .. "!", "v=" .. b, a .. b, "x" .. a .. "y")
print(a("x"), b("y"), a:len2(), #a)

-- __index as a function and as a table chain
local defaults = setmetatable({ color = "red" }, { __index = function(_, k) return "dflt_" .. k end })
local obj = setmetatable({ size = 3 }, { __index = defaults })
print(obj.size, obj.color, obj.shape, rawget(obj, "color"))

-- __newindex redirect and rawset bypass
local store = {}
local proxy = setmetatable({}, {
  __newindex = function(t, k, v) store[k] = v and v * 2 end,
  __index = store,
})
proxy.a = 5
rawset(proxy, "b", 7)
print(proxy.a, store.a, proxy.b, store.b, rawget(proxy, "a"))

-- read-only table
local ro = setmetatable({}, { __index = { k = 1 }, __newindex = function() error("read-only", 2) end })
local ok, err = pcall(function() ro.k = 2 end)
print(ok, (string.gsub(err, "^.-:%d+: ", "")), ro.k)

-- getmetatable with __metatable field
local hidden = setmetatable({}, { __metatable = "locked" })
print(getmetatable(hidden), pcall(setmetatable, hidden, {}))
print(getmetatable("abc").__index == string)

-- __eq only called for two tables; different types are never equal
print(a == 1, a == "(1,2)")

-- __lt fallback for __le is used by Lua 5.1 when __le is missing
local W = { __lt = function(p, q) return p.n < q.n end }
local w1, w2 = setmetatable({ n = 1 }, W), setmetatable({ n = 2 }, W)
print(w1 < w2, w2 < w1, w1 > w2)
print(pcall(function() return w1 <= w2 end))

-- string metatable: methods on literals
print(("abc"):upper(), ("%d"):rep(2), #("xyz"):sub(2))
