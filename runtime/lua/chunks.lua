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
--   other bytes).  The traceback is LuaJIT's, but for the frame of an @aot
--   function that does not show where it failed (see aot_frame).
--   A stack overflow is reported at the program's call that overflowed (see
--   overflow_at_call).
-- chunks.unreported(said): after a failure whose handler did not finish, the
--   error it was handling, as chunks.failure reports it but without a
--   traceback; else xpcall's own message `said`.  LuaJIT gives the handler of
--   a stack overflow a few dozen stack slots beyond the limit, and a deep
--   overflow can leave too few for the traceback: the handler records the
--   error before anything else, and the host asks for it once Lua unwound.
-- chunks.flush(): flushes standard output, whatever the program did to `io`.
local internals = ...

local G = _G
local loadstring, setfenv, getmetatable, pairs = loadstring, setfenv, debug.getmetatable, pairs
local tostring, type, traceback, getinfo = tostring, type, debug.traceback, debug.getinfo
local pcall, rawget = pcall, rawget
local byte, format, match, gmatch, sub = string.byte, string.format, string.match, string.gmatch, string.sub
local concat = table.concat
local stdout, io_type = io.stdout, io.type
local signatures = internals.boundary.signatures

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
-- A __tostring that fails fails luajit's handler: its error is LuaJIT's
-- "error in error handling" (LJ_ERR_ERRERR).
local function error_text(e)
    local kind = type(e)
    if kind == "string" or kind == "number" then return tostring(e) end
    if e == nil then return "(error object is nil)" end
    local meta = getmetatable(e)
    local to_string = meta and rawget(meta, "__tostring") -- as luaL_callmeta reads it
    if not to_string then return "(error object is not a string)" end
    local ok, text = pcall(to_string, e)
    if not ok then return "error in error handling" end
    if type(text) == "string" or type(text) == "number" then return tostring(text) end
    if text == nil then return "(error object is nil)" end -- luajit reports what __tostring returned
    return "(error object is not a string)"
end

local function hex(text)
    return (text:gsub(".", function(c) return format("%02x", byte(c)) end))
end

-- The traceback line of the frame at `level` of the caller's stack where an @aot
-- function's boundary called the function (as the field callee[name]: the
-- boundary's own helpers it calls by their names) and the frame does not show
-- the function's own line; nil for any other frame.  Such a frame is native
-- code, which has no Lua frame of its own (the frame is the call into the
-- library, which includes the @aot functions it calls), or a runtime helper
-- that the interpreted function tail-called (`return a // b`) in its place.
-- Either reads at `position`, where the error message says it failed.
local function aot_frame(level, position)
    local caller = getinfo(level + 2, "f")
    local signature = caller and signatures[caller.func]
    if signature == nil then return nil end
    local frame = getinfo(level + 1, "Snf")
    if frame.namewhat ~= "field" or frame.name ~= signature.name then return nil end
    local from_file = sub(frame.source, 1, 1) == "@"
    if (frame.func == signature.fn and from_file) or signatures[frame.func] then
        return nil -- the interpreted function itself, or another @aot function's boundary
    end
    if from_file then return format("\t%s: in function '%s'", position, signature.name) end
    return format("\t%s: in native code of '%s'", position, signature.name)
end

-- The traceback from the failing function down (level 3 here: 1 is this
-- function, 2 chunks.failure), with aot_frame's lines.  A frame line stands
-- for one level until LuaJIT leaves levels out ("\t...").
local function program_traceback(message)
    local text = traceback("", 3)
    local position = match(message, "^(.-:%d+): ")
    if position == nil then return text end
    local lines, level, skipped = {}, 2, false
    for line in gmatch(text .. "\n", "(.-)\n") do
        skipped = skipped or line == "\t..."
        if sub(line, 1, 1) == "\t" and not skipped then
            level = level + 1
            line = aot_frame(level, position) or line
        end
        lines[#lines + 1] = line
    end
    return concat(lines, "\n")
end

-- The runtime's own files ("@.../runtime/lua/"): their frames are not the program's.
local RUNTIME = match(getinfo(1, "S").source, "^@.*/")
local STACK_OVERFLOW = "stack overflow" -- LuaJIT's message (LJ_ERR_STKOV)
local OVERFLOWED = ": " .. STACK_OVERFLOW

local unreported -- the error chunks.failure is handling, until its report is made

function chunks.failure(e)
    unreported = e
    if e == STACK_OVERFLOW or (type(e) == "string" and sub(e, -#OVERFLOWED) == OVERFLOWED) then
        -- LuaJIT positions a stack overflow at the frame whose entry overflowed
        -- (the line of its `function`), or nowhere when it had to drop that
        -- frame, as the stack last grew (interpreted or compiled code): it is
        -- reported at the program's call that overflowed: the innermost frame
        -- of a program file (past C functions and the runtime's frames, its
        -- files' and the chunks it makes), and past the first when it was just
        -- entered (its current line is its first).
        -- Inline: this handler has some 30 stack slots, and getinfo takes 20.
        local level, first = 1, true
        while true do
            level = level + 1
            local frame = getinfo(level, "Sl")
            if frame == nil then break end
            if sub(frame.source, 1, 1) == "@" and sub(frame.source, 1, #RUNTIME) ~= RUNTIME then
                if not (first and frame.currentline == frame.linedefined) then
                    unreported = frame.short_src .. ":" .. frame.currentline .. OVERFLOWED
                    break
                end
                first = false
            end
        end
    end
    local message = error_text(unreported)
    local report = { hex(message), hex(program_traceback(message)) }
    unreported = nil
    return report
end

function chunks.unreported(said)
    local e = unreported
    unreported = nil
    if e == nil then return { hex(tostring(said)), "" } end
    return { hex(error_text(e)), "" }
end

function chunks.flush()
    if io_type(stdout) == "file" then stdout:flush() end
end

return chunks
