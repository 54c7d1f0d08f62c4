-- Running a program's chunks as `luajit FILE` runs them.  Loaded by
-- prelude.lua with the runtime's internals as `...`.
--
-- chunks.load(source, chunkname, translated): the chunk, or nil and the
--   syntax error.  A translated chunk (emit_lua/to_lua.py) starts with
--       local __nupp, __nupp_bit, ... = __nupp, __nupp.bit_operators, ...; setfenv(1, _G)
--   so it is loaded into an environment holding only the internals,
--   `setfenv` and the globals: the header takes what it needs into locals and
--   moves the chunk to the globals.  Runtime internals never become globals.
--   The chunk's `__nupp` is a copy of the internals of its own, so that
--   fields the chunk sets are its own: `structs`, its struct types by name,
--   and `compiled`, its native library (to_lua.py).  (A copy, not a table
--   reading the internals through a metatable: that made every lookup of a
--   switch expression a metamethod's, 20% of a switch in the interpreter.)
-- chunks.failure(e): the handler under which the host runs a chunk (xpcall,
--   called straight from Python, so the main chunk's caller is one C frame as
--   under luajit and error levels count as there).  Returns {message,
--   traceback}: the message in lua.c's words, the traceback from the failing
--   function down, both as hex (lupa would decode them as UTF-8 and fail on
--   other bytes).
-- chunks.flush(): flushes standard output, whatever the program did to `io`.
local internals = ...

local G = _G
local loadstring, setfenv, getmetatable, pairs = loadstring, setfenv, debug.getmetatable, pairs
local tostring, type, traceback = tostring, type, debug.traceback
local byte, format = string.byte, string.format
local stdout, io_type = io.stdout, io.type

local chunks = {}

local function chunk_internals()
    local own = { structs = {} }
    for k, v in pairs(internals) do own[k] = v end
    return own
end

function chunks.load(source, chunkname, translated)
    local chunk, err = loadstring(source, chunkname)
    if chunk and translated then
        setfenv(chunk, { __nupp = chunk_internals(), setfenv = setfenv, _G = G })
    end
    return chunk, err
end

-- lua.c's report: strings and numbers as they are, an object with a
-- __tostring metamethod as its string, anything else named by what it is not.
-- (luajit prints nothing at all for a nil error object; nupp says so.)
local function error_text(e)
    local kind = type(e)
    if kind == "string" or kind == "number" then return tostring(e) end
    if e == nil then return "(error object is nil)" end
    local meta = getmetatable(e)
    local text = meta and meta.__tostring and meta.__tostring(e)
    if type(text) == "string" or type(text) == "number" then return tostring(text) end
    return "(error object is not a string)"
end

local function hex(text)
    return (text:gsub(".", function(c) return format("%02x", byte(c)) end))
end

function chunks.failure(e)
    return { hex(error_text(e)), hex(traceback("", 2)) }
end

function chunks.flush()
    if io_type(stdout) == "file" then stdout:flush() end
end

return chunks
