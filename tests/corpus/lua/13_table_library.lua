-- table library: insert, remove, concat, sort (with comparators), maxn.
local t = {}
table.insert(t, "a")
table.insert(t, "c")
table.insert(t, 2, "b")
table.insert(t, 1, "start")
print(#t, table.concat(t, ","))

print(table.remove(t), #t, table.concat(t, ","))
print(table.remove(t, 1), #t, table.concat(t, ","))
print(table.remove({}), #t)

print(table.concat({ 1, 2, 3 }), table.concat({ 1, 2, 3 }, ", "), table.concat({}, "x"))
print(table.concat({ "a", "b", "c", "d" }, "-", 2, 3), table.concat({ 1.5, 2, "s" }, " "))
print(pcall(table.concat, { 1, {}, 3 }))

-- sort numbers, strings, descending, by key, stable-by-tiebreak
local nums = { 5, 3, 8, 1, 9, 2, 7, 4, 6, 0 }
table.sort(nums)
print(table.concat(nums, " "))
table.sort(nums, function(a, b) return a > b end)
print(table.concat(nums, " "))

local names = { "pear", "Apple", "banana", "apple", "Cherry" }
table.sort(names)
print(table.concat(names, " "))
table.sort(names, function(a, b) return a:lower() < b:lower() or (a:lower() == b:lower() and a < b) end)
print(table.concat(names, " "))

local people = {
  { name = "ann", age = 31 }, { name = "bob", age = 25 },
  { name = "cid", age = 31 }, { name = "dee", age = 19 },
}
table.sort(people, function(p, q)
  if p.age ~= q.age then return p.age > q.age end
  return p.name < q.name
end)
local out = {}
for i, p in ipairs(people) do out[i] = p.name .. p.age end
print(table.concat(out, " "))

-- sort by multiple return values of a key function
local byLen = { "ccc", "a", "bb", "dddd", "e", "ff" }
table.sort(byLen, function(x, y)
  if #x ~= #y then return #x < #y end
  return x < y
end)
print(table.concat(byLen, ","))

-- maxn and length with explicit arrays
local sparse = { [1] = "a", [2] = "b", [10] = "j" }
print(table.maxn(sparse), table.maxn({}), table.maxn({ 1, 2, 3 }))

-- unpack is a global in Lua 5.1 / LuaJIT
print(unpack({ 1, 2, 3 }))

-- building a queue with insert/remove
local q = {}
for i = 1, 5 do table.insert(q, i * 11) end
local drained = {}
while #q > 0 do drained[#drained + 1] = table.remove(q, 1) end
print(table.concat(drained, " "), #q)

-- stack usage
local stack = {}
for _, c in ipairs({ "x", "y", "z" }) do stack[#stack + 1] = c end
local popped = {}
while #stack > 0 do popped[#popped + 1] = table.remove(stack) end
print(table.concat(popped))

-- reverse in place
local arr = { 1, 2, 3, 4, 5, 6, 7 }
local i, j = 1, #arr
while i < j do arr[i], arr[j] = arr[j], arr[i]; i = i + 1; j = j - 1 end
print(table.concat(arr, ""))

-- sort with invalid comparator reported through pcall
local okc = pcall(table.sort, { 3, 1, "x" })
print(okc)

-- sort large array and verify order
local big = {}
local seed = 7
for k = 1, 200 do seed = (seed * 75 + 74) % 65537; big[k] = seed % 1000 end
table.sort(big)
local sorted = true
for k = 2, #big do if big[k - 1] > big[k] then sorted = false end end
print(sorted, big[1], big[200], #big)
