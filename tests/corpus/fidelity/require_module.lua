-- require of a .lua module in the script's folder: its value, caching, its argument.
local helper = require("lib.helper")
print(helper.name, helper.double(21), helper.loaded_as)
print(require("lib.helper") == helper, package.loaded["lib.helper"] == helper)
print(helper.counter(), helper.counter())
local again = require("lib.helper")
print(again.counter())
-- a module that returns nothing is `true` in package.loaded
print(require("lib.silent"), package.loaded["lib.silent"])
-- a module that raises, caught
local ok, err = pcall(require, "lib.raises")
-- luajit names the file as its package.path template does ("./?.lua"), nupp
-- as it names every file (relative to the working directory)
print(ok, (err:gsub("^%./", "")))
-- a missing module: only the first line is the same everywhere
local ok2, err2 = pcall(require, "lib.absent")
print(ok2, (err2:match("^[^\n]*")))
