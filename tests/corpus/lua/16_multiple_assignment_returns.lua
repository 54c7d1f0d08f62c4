-- Multiple assignment, multiple returns, truncation and adjustment.
local a, b, c = 1, 2
print(a, b, c)
a, b = b, a
print(a, b)
local x, y, z = 1, 2, 3, 4
print(x, y, z)

-- evaluation of all right-hand sides happens before assignment
local i = 1
local arr = { 10, 20, 30 }
i, arr[i] = i + 1, "changed"
print(i, arr[1], arr[2])

local p, q, r = 1, 2, 3
p, q, r = r, p, q
print(p, q, r)

-- function returns adjusted to the number of targets
local function two() return "a", "b" end
local function none() end
local m1, m2, m3 = two()
print(m1, m2, m3)
local n1, n2, n3 = two(), "x"
print(n1, n2, n3)
local o1, o2, o3 = "x", two()
print(o1, o2, o3)
local e1, e2 = none()
print(e1, e2, select("#", none()), select("#", (none())))

-- parentheses truncate to exactly one value
print((two()))
print(select("#", (two())), select("#", two()))
local t = { two(), two() }
print(#t, t[1], t[2], t[3])
local t2 = { (two()), (two()) }
print(#t2)

-- multiple returns in the middle of an argument list are truncated
print(two(), two())
print(two(), (two()))
print(string.format("%s %s %s", two(), two()))

-- returning calls directly passes all values through
local function passthrough() return two() end
local function paren() return (two()) end
print(passthrough())
print(paren())

-- assignment to table fields and globals in one statement
local obj = {}
obj.a, obj.b, obj["c"] = 1, 2, 3
print(obj.a, obj.b, obj.c)
local k1, k2 = "u", "v"
obj[k1], obj[k2] = obj.b, obj.a
print(obj.u, obj.v)

-- swap inside a table
local s = { "first", "second" }
s[1], s[2] = s[2], s[1]
print(s[1], s[2])

-- nested function results used as arguments
local function add(u, v) return u + v end
local function pair() return 3, 4 end
print(add(pair()), add(1, (pair())), add((pair()), 10))

-- returns from varargs in assignments
local function count(...) return select("#", ...), ... end
local cnt, first, second = count("p", "q", "r")
print(cnt, first, second)

-- long assignment lists and extra values discarded
local v1, v2, v3, v4, v5 = 1, 2, 3
print(v1, v2, v3, v4, v5)
v1, v2 = 9, 8, 7, 6
print(v1, v2)

-- global multiple assignment (restored afterwards)
G_ONE, G_TWO = "g1", "g2"
print(G_ONE, G_TWO)
G_ONE, G_TWO = nil, nil
print(G_ONE, rawget(_G, "G_TWO"))

-- function with many returns feeding a numeric for via locals
local function bounds() return 2, 8, 3 end
local visited = {}
local lo, hi, st = bounds()
for k = lo, hi, st do visited[#visited + 1] = k end
print(table.concat(visited, ","))

-- returning a table and unpacking it
local function multi(n)
  local res = {}
  for k = 1, n do res[k] = k * k end
  return unpack(res)
end
print(multi(5))
print(select("#", multi(0)), (multi(3)))
