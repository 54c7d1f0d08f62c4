-- Metatables: inheritance, operators, __call, __newindex, protection, rawget.
local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
function Vec.__add(a, b) return Vec.new(a.x + b.x, a.y + b.y) end
function Vec.__sub(a, b) return Vec.new(a.x - b.x, a.y - b.y) end
function Vec.__mul(a, b)
  if type(a) == "number" then return Vec.new(a * b.x, a * b.y) end
  return Vec.new(a.x * b, a.y * b)
end
function Vec.__unm(a) return Vec.new(-a.x, -a.y) end
function Vec.__eq(a, b) return a.x == b.x and a.y == b.y end
function Vec.__lt(a, b) return a.x < b.x end
function Vec.__le(a, b) return a.x <= b.x end
function Vec.__tostring(a) return "(" .. a.x .. ", " .. a.y .. ")" end
function Vec.__concat(a, b) return tostring(a) .. tostring(b) end
function Vec:len() return math.sqrt(self.x * self.x + self.y * self.y) end

local a, b = Vec.new(3, 4), Vec.new(1, 2)
print(tostring(a + b), tostring(a - b), tostring(2 * a), tostring(a * 3), tostring(-a))
print(a == Vec.new(3, 4), a ~= b, b < a, a <= b, a:len())
print(a .. b, a .. "!", "?" .. b)

-- inheritance through __index chains
local Base = { kind = "base", greet = function(self) return "hi from " .. self.kind end }
local Mid = setmetatable({ kind = "mid" }, { __index = Base })
local leaf = setmetatable({}, { __index = Mid })
print(leaf.kind, leaf:greet(), rawget(leaf, "kind"))

-- __index and __newindex functions
local log = {}
local proxy = setmetatable({}, {
  __index = function(_, k) return "default:" .. tostring(k) end,
  __newindex = function(t, k, v) log[#log + 1] = k .. "=" .. tostring(v); rawset(t, k, v) end,
})
proxy.a = 1
proxy.a = 2 -- exists now: no __newindex
print(proxy.a, proxy.b, table.concat(log, ","))

-- __call
local callable = setmetatable({}, { __call = function(self, x, y) return x + y, self end })
local r, s = callable(2, 5)
print(r, s == callable)

-- a protected metatable
local locked = setmetatable({}, { __metatable = "locked" })
print(getmetatable(locked), pcall(setmetatable, locked, {}))

-- __len is ignored for tables in Lua 5.1; rawequal skips __eq
local lenny = setmetatable({ 1, 2 }, { __len = function() return 99 end })
print(#lenny, rawequal(a, Vec.new(3, 4)))

-- string methods come through the string metatable
print(("abc"):upper(), ("%d"):format(7), #getmetatable("").__index.rep("ab", 3))
