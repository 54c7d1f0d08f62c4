-- An uncaught error object whose __tostring returns nil: luajit reports that
-- nil, as it reports a nil error object (it writes no message at all).
print("before")
error(setmetatable({}, { __tostring = function() return nil end }))
