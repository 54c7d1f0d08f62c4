-- A call's '(' may not start a line (Lua 5.1): LuaJIT refuses the chunk with
-- "ambiguous syntax (function call x new statement) near '('".
print("never printed")
local f = print
f
("x")
