-- The global `arg`: the script at 0, its arguments from 1, something at -1.
print(type(arg), arg[0], #arg)
for i = 1, #arg do print(i, arg[i], #arg[i]) end
print(arg[-1] ~= nil, type(arg[-1]))
print(select("#", ...) == #arg, ... == arg[1])
local n = 0
for k in pairs(arg) do if type(k) == "number" and k >= 0 then n = n + 1 end end
print(n)
