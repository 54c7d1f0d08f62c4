-- print, io.write and the stdout file agree on order and formatting.
print(1, nil, true, "s", 2.5)
io.write("a", 1, 2.5, "\n")
print(io.stdout:write("file write "))  -- true in Lua 5.1 (a file in 5.2)
print(io.write("x") == io.stdout)
print(("%s"):format(io.stdout):match("^file %(") ~= nil, io.type(io.stdout), io.type(42))
local out = io.output()
print(out == io.stdout)
print(select("#", print()))
