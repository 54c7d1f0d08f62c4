-- goto and labels (LuaJIT 2.1): continue, breaking out of nested loops, a backward loop.
for i = 1, 5 do
  if i % 2 == 0 then goto continue end
  io.write(i, " ")
  ::continue::
end
print()

for i = 1, 3 do
  for j = 1, 3 do
    if i * j == 4 then goto done end
    io.write(i, "*", j, " ")
  end
end
::done::
print("out")

local n = 0
::again::
n = n + 1
if n < 4 then goto again end
print(n)

do
  goto skip
  print("never")
  ::skip::
end
print("end")
