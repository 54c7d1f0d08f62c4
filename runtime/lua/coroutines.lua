-- Nested coroutines end in a stack overflow, not a crash.
--
-- Resuming a coroutine (coroutine.resume, or calling a coroutine.wrap
-- function) runs it on the resumer's C stack, some 80 bytes deeper, and on a
-- Lua stack of its own, so LuaJIT's stack limit never fires for a recursion
-- through coroutines: it ran until the C stack ended (a segmentation fault).
-- Worse, each coroutine may recurse through C functions that call back into
-- Lua (string.gsub with a function: ~10 KB of C stack a level) until its own
-- Lua stack is full, up to ~112 MB of C stack each: alternating the two
-- crashed the 256 MB stack of runtime/deep_stack.py after a few coroutines.
-- So a resume is refused with LuaJIT's "stack overflow", at its caller, when
-- the C stack left is less than what one more coroutine may take (C_RESERVE),
-- or when resumes nest MAX_NESTED deep (Lua 5.1 stops at 200 C levels).
-- The C stack itself is measured, not counted: LuaJIT counts no nested C
-- calls (only Lua stack slots), and no count of resumes can see how far each
-- coroutine recursed through C in between; a resume is the one place where a
-- recursion leaves the limit LuaJIT enforces.
-- Called by prelude.lua: replaces the two globals, and returns LuaJIT's own.
local create, resume, wrap, running = coroutine.create, coroutine.resume, coroutine.wrap, coroutine.running
local error, type = error, type

-- Far beyond what generators nest (Lua 5.1 stops at 200), 1 MB of C stack,
-- and small enough that an error crossing every level stays cheap: each
-- coroutine.wrap level prefixes a position, as LuaJIT's does (quadratic: 0.5 s
-- at 10000 levels).
local MAX_NESTED = 10000
local nested = 0 -- resumes in progress

-- The C stack one coroutine may take before its Lua stack overflows: 112 MB
-- measured for string.gsub tail-calling itself through its function argument
-- (about 6 Lua slots a level, of LuaJIT's 65500), the worst found; 51 MB for
-- gsub through a non-tail call, under 5 MB for table.sort, tostring, load.
-- On a stack under twice that, half of it (a built program's is 256 MB too: its
-- launcher starts it again with the stack limit raised, runtime/project/launcher.c).
local C_RESERVE = 120 * 2 ^ 20

-- The word of global_State that is cur_L, the running lua_State (LuaJIT sets
-- it at each entry into the VM, each resume and its return, each return from
-- a C function): the one word among its first GLOBAL_WORDS that holds the
-- running thread's address here, in a coroutine, in one resumed from that,
-- back in the first and back here.  A string buffer's owner and the JIT
-- compiler's thread follow the running thread too, but only where strings or
-- traces are made: the probe makes neither (no string functions; JIT off).
-- nil where no single word does.
local GLOBAL_WORDS = 128 -- some 95 in LuaJIT 2.1; GG_State has kilobytes after it
local function running_state_word(global, main, state_address)
    local function holding(address, words) -- those of words that hold address
        local found = {}
        for _, k in ipairs(words) do
            if global[k] == address then found[#found + 1] = k end
        end
        return found
    end
    local here = running()
    here = here == nil and main or state_address(here)
    local found = {}
    for k = 0, GLOBAL_WORDS - 1 do found[k + 1] = k end
    local inner = create(function(at) found = holding(at, found) end)
    local outer = create(function(at, inner_at)
        found = holding(at, found)
        resume(inner, inner_at)
        found = holding(at, found)
    end)
    local outer_at, inner_at = state_address(outer), state_address(inner)
    found = holding(here, found)
    resume(outer, outer_at, inner_at)
    found = holding(here, found)
    return #found == 1 and global + found[1] or nil
end

-- Where the running thread is on its C stack, read where LuaJIT keeps it:
-- lua_State.cframe, its innermost C frame (set at each entry into the VM from
-- C, so within one C function's frame of the stack pointer).  Layout of
-- LuaJIT 2.1 with 64-bit GC references (lj_obj.h), checked against live
-- states before it is trusted; nil where it does not match (another LuaJIT):
-- then only MAX_NESTED bounds resumes.  The address is read as a double: a
-- user-space address is a positive double, and doubles of one sign order as
-- their bits do.  The running thread is global_State.cur_L where that word is
-- found (running_state_word): two FFI loads, which the JIT compiler compiles
-- into the resume's caller; else coroutine.running, a C function it does not
-- compile (some 100 ns a resume more).
local function c_stack_position_reader(ffi)
    local cast, tonumber, format = ffi.cast, tonumber, string.format
    local WORD, DOUBLE = ffi.typeof("const uint64_t *"), ffi.typeof("const double *")
    local GLREF, BASE, TOP, MAXSTACK, STACK, CFRAME = 2, 4, 5, 6, 7, 10 -- 64-bit words
    local STATE_BYTES = 96 -- the main lua_State sits just before global_State in GG_State
    local function state_address(thread) -- %p: the object's address, whatever __tostring says
        local hex = format("%p", thread):match("^0x(%x+)$")
        return hex and tonumber(hex, 16)
    end
    local function plausible(at) -- a lua_State: stack <= base <= top <= maxstack
        local w = cast(WORD, at)
        local stack, base, top, max = w[STACK], w[BASE], w[TOP], w[MAXSTACK]
        return stack ~= 0 and stack <= base and base <= top and top <= max
    end
    local probe = state_address(create(function() end))
    if probe == nil or not plausible(probe) then return nil end
    local glref = cast(WORD, probe)[GLREF]
    local main = tonumber(glref) - STATE_BYTES
    if cast(WORD, main)[GLREF] ~= glref or not plausible(main) or cast(WORD, main)[CFRAME] == 0 then
        return nil
    end
    require("jit").off(running_state_word, true) -- no trace may start or exit in the probe
    local cur_L = running_state_word(cast(WORD, glref), main, state_address)
    if cur_L ~= nil then
        local running_state = cast("const double * const *", cur_L)
        return function() return running_state[0][CFRAME] end
    end
    main = cast(DOUBLE, main)
    local states = setmetatable({}, { __mode = "k" }) -- thread -> its lua_State, as doubles
    return function()
        local thread = running()
        if thread == nil then return main[CFRAME] end
        local state = states[thread]
        if state == nil then
            local address = state_address(thread)
            if address == nil then return nil end
            state = cast(DOUBLE, address)
            states[thread] = state
        end
        return state[CFRAME]
    end
end

-- May the running thread resume another?  Not when the C stack left below it
-- is under C_RESERVE (bounds of the OS thread's stack queried again when the
-- position leaves them: Python runs each call on a thread of its own).  The
-- outermost resume needs no look on a stack of two reserves: the main thread's
-- own recursion is bounded by its Lua stack, as a coroutine's is.
local function c_stack_guard()
    local ok, ffi = pcall(require, "ffi")
    if not ok or not ffi.abi("64bit") or not pcall(ffi.cdef, [[
        unsigned long pthread_self(void);
        int pthread_getattr_np(unsigned long thread, void *attr);
        int pthread_attr_getstack(const void *attr, void **address, size_t *size);
        int pthread_attr_destroy(void *attr);
    ]]) then
        return nil
    end
    local position = c_stack_position_reader(ffi)
    if position == nil then return nil end
    local C = ffi.C
    local attr, base, size = ffi.new("char[256]"), ffi.new("void *[1]"), ffi.new("size_t[1]")
    local bits = ffi.new("union { uint64_t address; double ordered; }")
    local function ordered(address) bits.address = address; return bits.ordered end
    local low, high, floor, roomy = 1, 0, 0, false -- as ordered doubles; none yet
    local function locate() -- this OS thread's stack; false if unknown
        if C.pthread_getattr_np(C.pthread_self(), attr) ~= 0 then return false end
        local got = C.pthread_attr_getstack(attr, base, size)
        C.pthread_attr_destroy(attr)
        if got ~= 0 then return false end
        local bottom, bytes = ffi.cast("uint64_t", base[0]), size[0]
        low, high = ordered(bottom), ordered(bottom + bytes)
        floor = ordered(bottom + math.min(C_RESERVE, tonumber(bytes) / 2))
        roomy = bytes >= 2 * C_RESERVE
        return true
    end
    return function(outermost)
        if outermost and roomy then return true end
        local here = position()
        if here == nil then return true end
        if here < low or here >= high then
            if not locate() or here < low or here >= high then return true end -- unknown: unguarded
        end
        return here >= floor
    end
end

local c_stack_allows_resume = c_stack_guard() or function() return true end

local function enter()
    if nested >= MAX_NESTED or not c_stack_allows_resume(nested == 0) then
        error("stack overflow", 3) -- at the resume's caller
    end
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
-- It counts the resume's end itself, as left does: a call fewer after each
-- resume, which the JIT compiler leaves to the interpreter (-15% for nested
-- generators).
local function wrapped(ok, ...)
    nested = nested - 1
    if ok then return ... end
    local e = ...
    error(e, type(e) == "string" and 2 or 0) -- level 2: wrapped is its caller's tail call
end

function coroutine.wrap(f)
    if type(f) ~= "function" then return wrap(f) end -- its own error, at the caller
    local co = create(f)
    return function(...)
        enter()
        return wrapped(resume(co, ...))
    end
end

-- LuaJIT's own two, for the runtime's resumes that no program nests
-- (chunks.failure's report)
return { create = create, resume = resume }
