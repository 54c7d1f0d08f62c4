-- What a run-time error's message says failed, as keys: runtime/error_keys.py's
-- keys_for and raising_function in Lua, driven by the same rule table (its
-- lua_rule, in tree.errors.keys), for a built program's report (boot.lua).
-- A key is its parts joined by rule.separator, as the build wrote the
-- columns of each line's keys (runtime/error_position.py's line_columns).
return function(rule)
    local M = {}

    -- the captures of the rule's rightmost alternative (the first of those at one place)
    local function captures(message, alternatives)
        local best
        for _, pattern in ipairs(alternatives) do
            local found = { message:match(pattern) }
            if found[1] ~= nil and (best == nil or found[1] > best[1]) then best = found end
        end
        return best
    end

    local function message_keys(message, keys)
        for _, r in ipairs(rule.rules) do
            local found = captures(message, r.lua)
            if found then
                for _, template in ipairs(r.keys) do
                    local parts, complete = {}, true -- a key whose capture did not match is left out
                    for i, part in ipairs(template) do
                        if type(part) == "number" then parts[i] = found[part] else parts[i] = part end
                        complete = complete and parts[i] ~= nil
                    end
                    if complete then keys[#keys + 1] = table.concat(parts, rule.separator) end
                end
                return
            end
        end
    end

    local is_event = {}
    for _, event in ipairs(rule.metamethods) do is_event[event] = true end

    function M.keys_for(message, callee)
        local keys = {}
        message_keys(message, keys)
        if callee == "" then callee = nil end
        if callee and is_event[callee] then keys[#keys + 1] = "metamethod" .. rule.separator .. callee end
        keys[#keys + 1] = "callee" .. rule.separator .. (callee or "error")
        keys[#keys + 1] = "calls"
        return keys
    end

    function M.raising_function(traceback, path, line)
        local previous
        for frame in (traceback .. "\n"):gmatch("([^\n]*)\n") do
            local where, rest = frame:match(rule.frame)
            if where then
                if where == path .. ":" .. line then return previous end
                local name
                for _, pattern in ipairs(rule.frame_names) do name = name or rest:match(pattern) end
                previous = name and name:match(rule.short_name)
            end
        end
        return nil
    end

    -- Line k's table of a file's diagnostics `d` (build.py's _diagnostics:
    -- pairs of a key's number in d.keys and its column, 0 for false).
    function M.line_columns(d, k)
        local columns, entries = {}, d.columns[k] or {}
        for i = 1, #entries, 2 do columns[d.keys[entries[i]]] = entries[i + 1] ~= 0 and entries[i + 1] end
        return columns
    end

    -- The column the line's table gives the first of `keys` it holds (a
    -- parameter it does not show read as rule.other), or nil.
    function M.column(columns, keys)
        for _, key in ipairs(keys) do
            local col = columns[key]
            if col == nil then
                local kind, rest = key:match("^([^%z]*)%z[^%z]*(.*)$")
                col = kind and columns[kind .. rule.separator .. rule.other .. rest]
            end
            if col then return col end
        end
        return nil
    end

    return M
end
