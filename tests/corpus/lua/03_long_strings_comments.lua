-- Long brackets: strings and comments of every level.
--[[ a long comment
spanning several lines, containing "quotes" and 'quotes' and -- dashes ]]
--[=[ level one comment with ]] inside ]=]
--[==[
  level two comment, with ]=] and ]] inside
]==]
---[[ this is just a line comment because of the third dash
print("after comments")
--]]

local a = [[plain long string]]
local b = [[
first newline is skipped]]
local c = [==[contains ]] and ]=] but ends here]==]
local d = [=[
line1
line2
]=]
local e = [[]]
local f = [[

two newlines, one skipped]]
local g = [[no \n escapes \t here \\]]
local h = [[ [[ nested-looking opener ]]
local i = [===[]===]

print(a)
print(b)
print(c)
io.write(d)
print(#e, #i, e == "")
print(f)
print(#f, f:sub(1, 1) == "\n")
print(g, #g)
print(h)

-- long strings as call arguments and table fields
local function len(s) return #s end
print(len[[abc]], len[==[a]]b]==])
local t = { [[x]], key = [=[y]=], [ [[k]] ] = "bracket key" }
print(t[1], t.key, t.k)
print(#[[
]])

-- comments in odd places
local sum = 1 --[[ inline ]] + --[==[ another ]==] 2
print(sum)
local list = { 1, --[[ skip ]] 2, -- trailing
  3 --[=[ before close ]=] }
print(#list, list[3])
print( --[[ before arg ]] "arg" --[[ after arg ]] )
local function f2(--[[ no params ]]) return "f2" end
print(f2())
print("a" .. --[[x]] "b")

-- long string with level mismatch inside
local m = [==[
]=] ]===] ]] still inside
]==]
print(m)
print(("[[%s]]"):format("fmt"))
-- comment at end of file without trailing newline
--[[ final long comment, no newline ]] print("statement after a long comment on the last line") -- last