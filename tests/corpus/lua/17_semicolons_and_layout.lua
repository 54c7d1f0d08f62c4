-- Statement separators, call sugar, chained calls, and free-form layout.
local a = 1; local b = 2; print(a + b);
local c = 3 local d = 4 print(c * d)
do local e = 5; print(e); end
if a < b then print("lt"); else print("ge"); end
for i = 1, 2 do io.write(i, ";"); end print()
local function f(...) return select("#", ...), ... end; print(f(1, 2));

-- call sugar with a single string or table argument
local function id(x) return x end
local function keys(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n end
print(id"double", id'single', id[[long]], id[==[lvl2]==])
print(keys{ 1, 2, x = 3 }, keys{}, type{}, tostring"str", #id{ 1, 2, 3 })
print(string.format"plain", ("%s|%s"):format("a", "b"))

-- chained calls and call results indexed
local function curry(x) return function(y) return function(z) return x .. y .. z end end end
print(curry"a""b""c", curry("x")("y")("z"), curry[[p]]{ }=={ } or "q")
local function mk() return { val = "field", get = function(self) return self.val end, t = { 10, 20 } } end
print(mk().val, mk():get(), mk().t[2], mk()["t"][1], #mk().t)

-- a.b.c:d(e) chains
local root = { b = { c = { n = 5 } } }
function root.b.c:d(e) return self.n + e end
function root.b.c.plain(e) return e * 2 end
print(root.b.c:d(10), root.b.c.plain(4), root["b"]["c"]:d(1), root.b["c"].n)
local str = "chain"
print(str:upper():lower():rep(2):sub(1, 7):len())
print(("x"):rep(3):upper(), (("nested")):upper())

-- method calls with sugar arguments
local obj = { tag = "obj" }
function obj:m(arg) return self.tag .. ":" .. (type(arg) == "table" and #arg or arg) end
print(obj:m"s", obj:m{ 1, 2, 3 }, obj:m[[L]])

-- expressions spanning several lines
local total =
  1 +
  2 *
  3
  - 4
print(total)
local cond = a < b
  and "multi"
  or "line"
print(cond)
local longcall = string.format(
  "%s-%s-%s",
  "x",
  "y",
  "z"
)
print(longcall)
local tbl = {
  [
    "k"
  ] = "v"
  ,
  nested = { 1
  , 2 }
}
print(tbl.k, #tbl.nested)

-- odd but valid spacing around punctuation
local   spaced   =   {   1   ,   2   }   ;   print  (  spaced  [  2  ]  )
print(a+b*c-d/2, a  ..  b, -a, not  nil)
local t2={1,2,3}print(#t2)local u=t2[1]+t2[2]print(u)

-- function definitions in one line, returns with semicolons
local function g() return; end
local function h() return 1, 2; end
print(g(), h())
local fn = function(x) return x * 2 end; print(fn(21))

-- parenthesized expression statement ambiguity avoided with a semicolon
local log = {}
local function push(v) log[#log + 1] = v; return push end
push "a" "b" "c"
;(push)("d")
print(table.concat(log, ""))

-- comments between tokens of a statement
local v = -- first
  10 -- second
  + -- third
  5
print(v)
