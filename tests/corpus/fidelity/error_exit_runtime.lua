-- An uncaught run-time error: output so far, then the message, exit status 1.
print("before")
local function inner(t) return t.missing.field end
local function outer() return inner({}) end
outer()
print("never")
