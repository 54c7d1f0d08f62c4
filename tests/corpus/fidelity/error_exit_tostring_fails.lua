-- An uncaught error object whose __tostring fails: luajit's handler fails, and
-- luajit reports "error in error handling" (nupp stopped with an internal error).
print("before")
error(setmetatable({}, { __tostring = function() error("inside __tostring") end }))
