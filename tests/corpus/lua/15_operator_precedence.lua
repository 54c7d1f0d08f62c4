-- Operator precedence and associativity of Lua 5.1.
-- or < and < comparison < .. < + - < * / % < unary (not # -) < ^
print(1 + 2 * 3, (1 + 2) * 3, 2 * 3 + 1, 10 - 4 - 3, 10 - (4 - 3))
print(100 / 10 / 5, 100 / (10 / 5), 2 * 3 % 4, 2 * (3 % 4), 7 % 4 * 3)
print(2 ^ 3 ^ 2, (2 ^ 3) ^ 2, -2 ^ 2, (-2) ^ 2, 2 ^ -1, -2 ^ -2)
print(- - 3, -(-3), - -(-3), not not true, not nil == true)
print(#"abc" + 1, #"abc" .. "x", -#"abcd", #{ 1, 2 } * 2, 2 ^ #"ab")
print(1 .. 2 .. 3, "a" .. "b" .. "c" == "abc", 1 + 2 .. 3 + 4, 2 * 3 .. "")
print(1 < 2 == true, "a" .. "b" == "ab", 1 + 1 == 2, 3 > 2 == (1 < 2))
print(not 1 == 2, not (1 == 2), not nil and 1, not (nil and 1))

-- and/or short circuit and value results
print(nil or "default", false or nil, 0 or "x", "" or "y")
print(nil and 1, false and error("never"), 1 and 2, 1 and nil)
print(1 or error("never"), nil or false, false or false and true)
print(1 and 2 or 3, nil and 2 or 3, false or 1 and 2, 1 or 2 and 3)
print(1 == 1 and "eq" or "ne", 1 == 2 and "eq" or "ne", nil == false)
print(true and false or "fallback", true and (false or "inner"))

-- comparison operators
print(1 < 2, 1 <= 1, 2 > 3, 3 >= 3, 1 ~= 1, "1" ~= 1, 1 == 1.0)
print("a" < "b" and "b" < "c", not ("b" < "a"), 1 < 2 and 2 < 3 and 3 < 4)

-- unary minus binds tighter than binary but looser than ^
local x = 3
print(-x ^ 2, (-x) ^ 2, -x * -x, - x + x, x - -x, x- -x)
print(2 - -2, 2- - -2, -2 + -2, - (2 + 3) * 2)

-- concatenation is right associative; numbers need spaces before ..
local a, b, c = "A", "B", "C"
print(a .. b .. c, (a .. b) .. c, a .. (b .. c), 1 .. "", 1.5 .. 2)

-- mixed arithmetic/comparison/logic in one expression
local n = 7
print(n % 2 == 1 and n > 5 or n < 0, n * 2 + 1 > 14 and n .. "!" or "no")
print(1 + 2 < 4 and 2 ^ 2 == 4 and not (3 == 4) and "all" .. " true")
print(2 ^ 2 * 3, 2 * 2 ^ 3, -2 ^ 2 * 3, 10 - 2 ^ 3 / 4)
print(5 % 3 ^ 2, (5 % 3) ^ 2, 5 % -3, -5 % 3, 5.5 % 2, -5.5 % 2)

-- string coercion in arithmetic
print("10" + 5, "3" * "4", 10 .. 20 + 1, "2" ^ "3", -"2", "0x10" + 0)

-- length of strings and tables in expressions
local t = { 1, 2, 3 }
-- ^ binds tighter than unary #, so #t ^ 2 means #(t ^ 2) and fails
print((pcall(function() return #t ^ 2 end)), (pcall(function() return #"ab" ^ 2 end)))
print(#t + #t * 2, (#t) ^ 2, -#t, #t == 3 and #"xy" == 2, not #t)

-- parentheses around multi-value expressions and calls
local function mr() return 1, 2 end
print(mr(), (mr()), mr() + 10, -mr())

-- comparisons chained with and, equality with different types
print(1 == "1", nil == nil, false == nil, {} == {}, "abc" == "abc")
print(((1 + 2) * (3 + 4)) / ((5 - 3) ^ 2), ((((7)))))
