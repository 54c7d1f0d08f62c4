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
--   A stack overflow is reported at the program's call that overflowed.
-- chunks.unreported(said): after a failure whose handler did not finish, the
--   error it was handling, as chunks.failure reports it but without a
--   traceback; else xpcall's own message `said`.  LuaJIT gives the handler of
--   a stack overflow a few dozen stack slots beyond the limit, and recursion
--   the JIT compiled can leave too few even to call it: the handler records
--   the error before anything else, and the host asks for it once Lua unwound.
-- chunks.flush(): flushes standard output, whatever the program did to `io`.
local internals, raw_coroutine = ...

local G = _G
local loadstring, setfenv, getmetatable, pairs = loadstring, setfenv, debug.getmetatable, pairs
local tostring, type, traceback, getinfo = tostring, type, debug.traceback, debug.getinfo
local pcall, rawget = pcall, rawget
local byte, format, match, gmatch, sub = string.byte, string.format, string.match, string.gmatch, string.sub
local concat = table.concat
local coroutine_create, coroutine_resume = raw_coroutine.create, raw_coroutine.resume
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

-- The traceback line of the frame at `level` of the handler's stack (`frames`,
-- getinfo's "Snf" by level) where an @aot function's boundary called the
-- function (as the field callee[name]: the boundary's own helpers it calls by
-- their names) and the frame does not show the function's own line; nil for
-- any other frame.  Such a frame is native code, which has no Lua frame of its
-- own (the frame is the call into the library, which includes the @aot
-- functions it calls), or a runtime helper that the interpreted function
-- tail-called (`return a // b`) in its place.  Either reads at `position`,
-- where the error message says it failed.
local function aot_frame(frames, level, position)
    local caller, frame = frames[level + 1], frames[level]
    local signature = caller and signatures[caller.func]
    if signature == nil or frame == nil then return nil end
    if frame.namewhat ~= "field" or frame.name ~= signature.name then return nil end
    local from_file = sub(frame.source, 1, 1) == "@"
    if (frame.func == signature.fn and from_file) or signatures[frame.func] then
        return nil -- the interpreted function itself, or another @aot function's boundary
    end
    if from_file then return format("\t%s: in function '%s'", position, signature.name) end
    return format("\t%s: in native code of '%s'", position, signature.name)
end

-- LuaJIT's traceback (`text`, from the failing function down: level 2 of the
-- handler's stack) with aot_frame's lines.  A frame line stands for one level
-- until LuaJIT leaves levels out ("\t...").
local function program_traceback(message, text, frames)
    local position = match(message, "^(.-:%d+): ")
    if position == nil then return text end
    local lines, level, skipped = {}, 1, false
    for line in gmatch(text .. "\n", "(.-)\n") do
        skipped = skipped or line == "\t..."
        if sub(line, 1, 1) == "\t" and not skipped then
            level = level + 1
            line = aot_frame(frames, level, position) or line
        end
        lines[#lines + 1] = line
    end
    return concat(lines, "\n")
end

-- The report chunks.failure returns: message and traceback as hex.  Made on a
-- coroutine's stack of its own (see chunks.failure).
local function report(message, text, frames)
    return { hex(message), hex(program_traceback(message, text, frames)) }
end

-- The runtime's own files ("@.../runtime/lua/"): their frames are not the program's.
local RUNTIME = match(getinfo(1, "S").source, "^@.*/")
local STACK_OVERFLOW = "stack overflow" -- LuaJIT's message (LJ_ERR_STKOV)
local OVERFLOWED = ": " .. STACK_OVERFLOW

local unreported -- the error chunks.failure is handling, until its report is made

-- The most levels a traceback shows before it leaves some out ("\t...":
-- LuaJIT shows them all up to TRACEBACK_LEVELS1 + TRACEBACK_LEVELS2), and one
-- more, the last one's caller, which aot_frame reads.
local SHOWN_LEVELS = 12 + 10 + 1

-- A stack overflow leaves this handler the few dozen stack slots LuaJIT adds
-- to the full stack, and a C function needs 20 (LUA_MINSTACK) above its
-- caller: so it reads the stack in its own frame (kept small: the locals of a
-- block free their slots after it), and makes the report on a fresh
-- coroutine's stack, where nothing depends on how much room was left.  (Made
-- in nested calls, the report ran out of room in about one overflow in ten,
-- and the diagnostic lost its traceback and the callee its caret needs.)
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
    local text, frames = traceback("", 2), {}
    for level = 2, SHOWN_LEVELS + 1 do
        local frame = getinfo(level, "Snf")
        if frame == nil then break end
        frames[level] = frame
    end
    local message = error_text(unreported)
    local ok, made = coroutine_resume(coroutine_create(report), message, text, frames)
    if not ok then error(made, 0) end
    unreported = nil
    return made
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
