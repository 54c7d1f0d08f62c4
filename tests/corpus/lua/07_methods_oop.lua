-- Method definitions and calls, classes with inheritance.
local Animal = {}
Animal.__index = Animal

function Animal.new(name, sound)
  local self = setmetatable({}, Animal)
  self.name = name
  self.sound = sound
  return self
end

function Animal:speak()
  return self.name .. " says " .. self.sound
end

function Animal:rename(newname) self.name = newname; return self end

local Dog = setmetatable({}, { __index = Animal })
Dog.__index = Dog

function Dog.new(name)
  local self = Animal.new(name, "woof")
  return setmetatable(self, Dog)
end

function Dog:fetch(thing) return self.name .. " fetches the " .. thing end
function Dog:speak()
  return Animal.speak(self) .. "!"
end

local a = Animal.new("cat", "meow")
local d = Dog.new("rex")
print(a:speak())
print(d:speak())
print(d:fetch("ball"), d.fetch(d, "stick"))
print(d:rename("max"):speak(), d.name)
print(getmetatable(d) == Dog, getmetatable(Dog).__index == Animal, rawget(Dog, "rename"))

-- nested tables with method definitions: a.b.c:m()
local app = { ui = { widgets = {} } }
app.ui.widgets.count = 0
function app.ui.widgets:add(n) self.count = self.count + (n or 1); return self.count end
function app.ui.widgets.reset(w) w.count = 0 end
print(app.ui.widgets:add(), app.ui.widgets:add(5))
app.ui.widgets.reset(app.ui.widgets)
print(app.ui.widgets.count)

-- method call on index expressions and call results
local registry = { items = { Dog.new("a1"), Dog.new("b2") } }
print(registry.items[2]:speak(), registry["items"][1]:fetch("x"))
local function getdog() return Dog.new("ret") end
print(getdog():speak(), (getdog()):fetch("y"))

-- method with string and table call syntax
local S = {}
function S:say(x) return "say:" .. (type(x) == "table" and table.concat(x, ",") or x) end
print(S:say"hello", S:say[[long]], S:say{ 1, 2, 3 })

-- self is just the first parameter
local t = { v = 10 }
function t.get(self) return self.v end
function t:get2() return self.v * 2 end
print(t:get(), t.get(t), t:get2(), t.get2({ v = 1 }))

-- class with a counter shared via upvalue and tostring metamethod
local Point
do
  local created = 0
  Point = setmetatable({}, { __call = function(cls, x, y)
    created = created + 1
    return setmetatable({ x = x, y = y, id = created }, cls)
  end })
  Point.__index = Point
  Point.__tostring = function(p) return "Point#" .. p.id .. "(" .. p.x .. "," .. p.y .. ")" end
  function Point:moved(dx, dy) return Point(self.x + dx, self.y + dy) end
  function Point.count() return created end
end
local p = Point(1, 2)
local q = p:moved(3, 4):moved(1, 1)
print(tostring(p), tostring(q), Point.count())

-- multiple levels of inheritance with super calls
local Base = {}; Base.__index = Base
function Base:describe() return "base" end
local Mid = setmetatable({}, Base); Mid.__index = Mid
function Mid:describe() return "mid>" .. Base.describe(self) end
local Leaf = setmetatable({}, Mid); Leaf.__index = Leaf
function Leaf:describe() return "leaf>" .. Mid.describe(self) end
print(setmetatable({}, Leaf):describe(), setmetatable({}, Mid):describe())
