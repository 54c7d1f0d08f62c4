-- The boot script of a Nupp program built by `nupp build` (runtime/project/):
-- what runtime/host.py does for `nupp run`, without Python.  The launcher
-- (bin/NAME, launcher.c) runs it with the output tree's root folder, the
-- program's path as invoked and the program's arguments; it returns what
-- the launcher runs (see its end), whose exit status is 0, or 1 for an
-- uncaught error of the program (reported as `nupp run` reports it: see
-- report), or an exit status itself where nothing is to run.  An error of
-- its own (a damaged tree, a bad NUPP_CPU_TIER_MAX) the launcher reports,
-- status 2; a bad NUPP_THREADS or NUPP_THREADS_MIN it reports itself, as
-- `nupp run` words it, status 2.
--
-- It installs the runtime library (lib/nupp/runtime, as host.py's
-- new_lua_runtime), puts the tree's modules (lib/nupp/tree.lua, written by
-- the build) before LuaJIT's own path in `require`, loads native libraries
-- from the tree, asks each tiered library which tier this CPU runs and loads
-- the Lua binding that tier, and runs main as `luajit FILE ARGS` runs a script.
local root, program = ...
local args, nargs = { select(3, ...) }, select("#", ...) - 2

local function at(path) return root .. "/" .. path end

local function unhex(text) return (text:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)) end

local function read(path)
    local file, why = io.open(at(path), "rb")
    if file == nil then error(why .. " (the built tree is damaged: build it again)", 0) end
    local text = file:read("*a")
    file:close()
    return text
end

local function run_lua(path, ...)
    return assert(loadstring(read(path), "@" .. at(path)))(...)
end

local tree = run_lua("lib/nupp/tree.lua")
local internals = run_lua("lib/nupp/runtime/prelude.lua", at("lib/nupp/runtime"))
local chunks, native = internals.chunks, internals.native

-- The threads lane C's span loops may run on (native.lua): NUPP_THREADS and
-- NUPP_THREADS_MIN, read by the rule of `nupp run` (runtime/threads.py's
-- environment_rule, in tree.threads); nil and the error's text for a variable
-- that breaks it.
local function at_most(a, b) return #a < #b or (#a == #b and a <= b) end -- digits, no leading zeros

local function thread_setting(rule)
    local setting = {}
    for field, variable in pairs(rule.variables) do
        local text = os.getenv(variable.name)
        local digits = text ~= nil and text:match(rule.whole)
        digits = digits and digits:match("^0*(%d.*)$")
        if text == nil or text == "" then
            setting[field] = variable.default
        elseif digits and at_most(variable.low, digits) and at_most(digits, variable.high) then
            setting[field] = tonumber(digits)
        else
            return nil, (rule.message:gsub("{(%w+)}", { name = variable.name, wanted = variable.wanted, text = text }))
        end
    end
    return setting
end

-- Native libraries are named relative to the tree.
local load_library = native.load
function native.load(path, ...) return load_library(at(path), ...) end

-- nupp.executions(f) of a bound function: the other executions of its module
-- at the tier bound (the build compiled them into the tree), by the path of
-- the library as native.load was given it.
local executions = {}
function native.more_executions(hex_path) return executions[unhex(hex_path)] or {} end

-- The highest tier NUPP_CPU_TIER_MAX lets this CPU run (targets/tiers.py's choose_tier).
local function tier_cap()
    local cap = os.getenv("NUPP_CPU_TIER_MAX")
    if cap == nil or cap == "" then return #tree.tiers - 1 end
    for i, name in ipairs(tree.tiers) do
        if name == cap then return i - 1 end
    end
    error("NUPP_CPU_TIER_MAX=" .. cap .. " names no tier (tiers: " .. table.concat(tree.tiers, ", ") .. ")", 0)
end
local cap = tier_cap()

-- The Lua of a module file: its one translation, or the one binding the best
-- tier built that this CPU runs (its library's dispatcher says which).
local function lua_of(file)
    if file.tiers == nil then return file.lua end
    local runs = math.min(native.cpu_tier(at(file.library), file.cpu_tier.cdef, file.cpu_tier.symbol), cap)
    local chosen
    for i, name in ipairs(tree.tiers) do
        if i - 1 <= runs and file.tiers[name] ~= nil then chosen = name end
    end
    executions[at(file.library)] = file.executions[chosen]
    return file.tiers[chosen]
end

local function load_file(file)
    return chunks.load(read(lua_of(file)), file.chunkname, file.translated)
end

-- Second in line, after package.preload, as host.py's searcher.  LuaJIT's own
-- path stays after it, without the working directory's entries.
table.insert(package.loaders, 2, function(name)
    local file = tree.files[tree.modules[name] or false]
    if file == nil then return "\n\tno module '" .. name .. "' in this build of " .. tree.name end
    local chunk, err = load_file(file)
    if not chunk then error(err, 0) end
    return chunk
end)
local function without_working_directory(path)
    local kept = {}
    for entry in path:gmatch("[^;]+") do
        if entry:sub(1, 2) ~= "./" then kept[#kept + 1] = entry end
    end
    return table.concat(kept, ";")
end
package.path, package.cpath = without_working_directory(package.path), without_working_directory(package.cpath)

-- An uncaught error's message as Diagnostic.render shows it (nupp/errors.py's
-- displayable): each byte that is not part of well-formed UTF-8, as Python
-- decodes it, as U+FFFD.  Each row: a leading byte's range, its second byte's
-- range (the rest are 80..BF) and the sequence's length.
local UTF8 = { { 0xC2, 0xDF, 0x80, 0xBF, 2 }, { 0xE0, 0xE0, 0xA0, 0xBF, 3 }, { 0xE1, 0xEC, 0x80, 0xBF, 3 },
    { 0xED, 0xED, 0x80, 0x9F, 3 }, { 0xEE, 0xEF, 0x80, 0xBF, 3 }, { 0xF0, 0xF0, 0x90, 0xBF, 4 },
    { 0xF1, 0xF3, 0x80, 0xBF, 4 }, { 0xF4, 0xF4, 0x80, 0x8F, 4 } }

local function utf8_length(text, i) -- of the well-formed sequence at i, else nil
    local lead, second = text:byte(i, i + 1)
    if lead < 0x80 then return 1 end
    for _, row in ipairs(UTF8) do
        if lead >= row[1] and lead <= row[2] then
            if not (second and second >= row[3] and second <= row[4]) then return nil end
            local rest = text:sub(i + 2, i + row[5] - 1)
            return #rest == row[5] - 2 and not rest:find("[^\128-\191]") and row[5] or nil
        end
    end
end

local function displayable(text)
    if not text:find("[\128-\255]") then return text end
    local shown, i = {}, 1
    while i <= #text do
        local length = utf8_length(text, i)
        shown[#shown + 1] = length and text:sub(i, i + length - 1) or "\239\191\189"
        i = i + (length or 1)
    end
    return table.concat(shown)
end

-- The diagnostics the build rendered for the lines of a program file (nil for
-- another path): run_errors.py's LineReports, and each line's columns by key.
local function diagnostics_of(path)
    local file = tree.files[path]
    return file and file.diagnostics and run_lua(file.diagnostics)
end

-- The diagnostic at line k of a file's diagnostics `d`, its caret under the
-- construct that failed: the first of the message's keys (error_keys.lua, by
-- runtime/error_keys.py's rules) the line's columns hold, else the line's
-- first non-blank column; laid out as LineReports.render lays it out.
local function diagnostic(d, k, message, traceback, path)
    local keys = run_lua("lib/nupp/error_keys.lua")(tree.errors.keys)
    local callee = keys.raising_function(traceback, path, k)
    local col = keys.column(keys.line_columns(d, k), keys.keys_for(message, callee)) or d.firsts[k]
    local excerpt = d.excerpts[k]
    local caret = excerpt ~= "" and (" "):rep(col - 1) .. d.caret or ""
    return d.heads[k] .. col .. d.middle .. displayable(message) .. excerpt .. caret
end

-- The program's uncaught error as `nupp run` reports it (runtime/run_errors.py's
-- render_run_error, by the rule report_rule renders into tree.errors):
-- the diagnostic at the message's position in a program file, else
-- "error: " and the message; then, when there are several, the traceback's
-- frames in program files (and "..." where LuaJIT left levels out).  A
-- position past the lines of the file's chunks (only a message made up to
-- look like one has it) is reported as no position.
local function report(message, traceback)
    local rule = tree.errors
    local path, line, text = message:match(rule.position)
    local lines = path and diagnostics_of(path)
    local k = lines and tonumber(line)
    local shown = rule.unpositioned .. message
    if lines and lines.heads[k] then shown = diagnostic(lines, k, text, traceback, path) end
    local frames, listed = {}, 0
    for entry in traceback:gmatch("[^\n]+") do
        local at, number, rest = entry:match(rule.frame)
        if entry == rule.left_out and listed > 0 then
            frames[#frames + 1] = rule.frames_left_out
        elseif at and tree.files[at] and tree.files[at].diagnostics then
            frames[#frames + 1] = rule.frame_format:format(at, number, rest)
            listed = listed + 1
        end
    end
    if listed > 1 then shown = shown .. rule.frames_heading .. table.concat(frames, "\n") end
    io.stderr:write(shown, "\n")
    return 1
end

local threads, problem = thread_setting(tree.threads)
if threads == nil then
    io.stderr:write(tree.name, ": error: ", problem, "\n")
    return 2
end
native.threads, native.thread_min = threads.count, threads.min_iterations

arg = { [0] = program }
for i = 1, nargs do arg[i] = args[i] end
local chunk, err = load_file(tree.files[tree.main])
if not chunk then return report(err, "") end

-- The program's end: the exit status for what its main chunk did (ok, or the
-- handler's failure).
local function finish(ok, failure)
    chunks.flush()
    if ok then return 0 end
    -- not the handler's report: it ran out of stack (a stack overflow), as host.py says
    if type(failure) ~= "table" then failure = chunks.unreported(failure) end
    return report(unhex(failure[1]), unhex(failure[2]))
end

-- The launcher calls the main chunk (under the handler) from a C function of
-- its own, and then finish: below the program is one C frame, as under
-- `luajit FILE` (lua.c's pmain) and `nupp run` (xpcall), and not this file's
-- frame (an error level past the main chunk named a line of boot.lua, and a
-- traceback's last levels differed).
return finish, chunks.failure, chunk, unpack(args, 1, nargs)
