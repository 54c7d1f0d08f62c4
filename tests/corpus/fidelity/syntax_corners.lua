-- Syntax corners the translator must keep: call sugar, method definitions,
-- operators' precedence and associativity, numerals, comments, a `return` at
-- the end of the main chunk.
local a = { b = { c = {} } }
function a.b.c:m(x) return self == a.b.c, x end
function a.b.f(...) return select("#", ...) end
print(a.b.c:m(1), a.b.f(nil, nil), a.b["f"](1))
print(type"x", #{ 1, 2; 3 }, (tostring)(12), ("%d"):rep(2, "|"):format(1, 2))
local function id(...) return ... end
print(id{ 1, 2 }[2], id"str", id [[long]], id [==[a]]b]==])
print(2 ^ -3, - -2, not not nil, -2 ^ 2, 2 ^ 3 ^ 2, 1 .. 2 .. 3, "a" .. "b" == "ab")
print(1 < 2 == true, not 1 == 2, 1 + 2 * 3 - 4 / 5, 7 % 3 * 2, -3 % 5, 2 * -3)
print(0x10, 0xA.8p1, 1e+2, 1E-2, .5, 5., 3e0, 0x.1, 0xfffffffff, 1e309, -1e309)
print(true and 1 or 2, false and 1 or 2, nil or false, false or nil, 1 and nil)
--[==[ a long
comment ]==] print("after a long comment") -- trailing
local s = "x" --[[ inline ]] .. "y"
print(s);
return "the main chunk may return"
