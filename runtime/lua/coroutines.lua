-- Nested coroutines end in a stack overflow, not a crash.
--
-- Resuming a coroutine (coroutine.resume, or calling a coroutine.wrap
-- function) runs it on the resumer's C stack, some 80 bytes deeper, and on a
-- Lua stack of its own, so LuaJIT's stack limit never fires for a recursion
-- through coroutines: it ran until the C stack ended (a segmentation fault).
-- This bounds how deep resumes nest, as Lua 5.1 does ("C stack overflow" at
-- 200 C levels); a resume past the bound raises LuaJIT's "stack overflow" at
-- its caller.  Called by prelude.lua: replaces the two globals.
local create, resume, wrap = coroutine.create, coroutine.resume, coroutine.wrap
local error, type = error, type

-- Far beyond what generators nest (Lua 5.1 stops at 200), 1 MB of C stack,
-- and small enough that an error crossing every level stays cheap: each
-- coroutine.wrap level prefixes a position, as LuaJIT's does (quadratic: 0.5 s
-- at 10000 levels).
local MAX_NESTED = 10000
local nested = 0 -- resumes in progress

local function enter()
    if nested >= MAX_NESTED then error("stack overflow", 3) end -- at the resume's caller
    nested = nested + 1
end

local function left(...)
    nested = nested - 1
    return ...
end

function coroutine.resume(co, ...)
    if type(co) ~= "thread" then return resume(co, ...) end -- its own error, at the caller
    enter()
    return left(resume(co, ...))
end

-- What a coroutine.wrap function returns: as LuaJIT's wrap, the coroutine's
-- error raised again, a message with the position of the wrap function's caller.
local function wrapped(ok, ...)
    if ok then return ... end
    local e = ...
    error(e, type(e) == "string" and 2 or 0) -- level 2: wrapped is its caller's tail call
end

function coroutine.wrap(f)
    if type(f) ~= "function" then return wrap(f) end -- its own error, at the caller
    local co = create(f)
    return function(...)
        enter()
        return wrapped(left(resume(co, ...)))
    end
end
