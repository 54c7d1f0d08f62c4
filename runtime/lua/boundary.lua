-- The host boundary of @aot functions (LANGUAGE.md sections 6 and 7).
-- Loaded by prelude.lua with math.lua's and mem.lua's tables as `...`.
--
-- boundary.wrap(fn, name, params, ret[, opts]) returns a function that checks
-- and converts its arguments, calls fn, and converts its result.  Ordinary
-- and native calls go through this same code, so both raise the same errors
-- with the same text (ERR below).  `params` is an array of {name=, type=}:
-- type is a scalar type name or {span=T, writable=bool, qualifier=
-- "exclusive"|"borrows"} (the qualifier defaults to exclusive for a
-- WriteSpan, borrows for a Span).  `ret` is a scalar type name or "nil".
--
-- Arguments, checked in order, then the alias facts:
--   float          a number, narrowed as nupp.math.f32.narrow does (RNE, a
--                  NaN gives the canonical NaN)
--   number/double  any number, unchanged
--   int32/uint32   an integral number in range, or int64/uint64 cdata in
--                  range (passed on as a Lua number)
--   int64/uint64   an integral number in range or int64/uint64 cdata in
--                  range; passed on as int64_t/uint64_t cdata
--   float/number/double also take int64/uint64 cdata: it rounds to binary64
--                  (the storage rule of a number field), then a float
--                  narrows
--   host integers  a host (the Python API) passes an integer a Lua number
--                  cannot hold as int64/uint64 cdata (boundary.int64_cdata),
--                  or beyond 64 bits as a wide integer (boundary.
--                  wide_integer): integer parameters refuse it, described
--                  by its exact digits; float/number/double round it to
--                  binary64 as a Lua numeral of those digits reads (inf
--                  beyond binary64's range), then a float narrows
--   boolean        true or false
--   span           a span of exactly the parameter's struct type; a
--                  WriteSpan needs a writable span, a Span takes either; at
--                  most 2^31 - 1 elements (the loop counter is int32)
--   exclusive      an exclusive span argument sharing a byte with any other
--                  span argument is refused before fn runs
--   count          missing arguments are nil (and so refused as "got nil");
--                  any argument past the last parameter is refused, even an
--                  explicit nil: "no value expected"
-- A refused argument raises "bad argument #<i> to '<name>' (<what>)" at the
-- caller's level, so the message points at the calling line.
--
-- Results come back exactly: a float result is a binary32 value widened to
-- a Lua number (narrowed again, which is the identity for a correct fn);
-- int64/uint64 as cdata; int32/uint32/number as Lua numbers; "nil" returns
-- nothing.  A result of the wrong kind is a compiler bug and raises
-- "bad result from '<name>' (...)".
--
-- opts.spans_as_pointers (for native calls): each span argument reaches fn as
-- two arguments, its element pointer and its length.
--
-- Each signature gets a specialized wrapper generated as Lua source, so the
-- common case is a few inline type and range tests the JIT compiles away;
-- everything unusual goes to a per-parameter slow path.
local math_rt, mem = ...
local ffi = require("ffi")

local floor = math.floor
local format = string.format
local istype = ffi.istype

local boundary = {}

-------------------------------------------------------------------------------
-- Error texts (every one the boundary raises)
-------------------------------------------------------------------------------
local ERR = {
    bad_argument = "bad argument #%d to '%s' (%s)",
    bad_result = "bad result from '%s' (%s)",
    expected = "%s expected, got %s",
    no_value = "no value expected, got %s",
    span_too_long = "%s of at most 2147483647 elements expected, got %s elements",
    overlap = "exclusive span overlaps argument #%d",
    other_declaration = "%s (another declaration of %s)",
    -- wrap-time (compiler bugs)
    bad_signature = "boundary.wrap: %s",
}
boundary.ERR = ERR

local MAX_SPAN_LENGTH = 2147483647
-- Every function that raises is called straight from the wrapper: it (1),
-- the wrapper (2), the caller (3).
local CALLER_LEVEL = 3

-------------------------------------------------------------------------------
-- Values in error texts
-------------------------------------------------------------------------------
local INT64 = ffi.typeof("int64_t")
local UINT64 = ffi.typeof("uint64_t")

-------------------------------------------------------------------------------
-- Integers of a host that no Lua number holds exactly (the Python API's)
-------------------------------------------------------------------------------
-- An integer in the int64 or uint64 range, from its 32-bit halves (hi is
-- signed for int64): a host cannot build cdata itself.
function boundary.int64_cdata(hi, lo, unsigned)
    if unsigned then return UINT64(hi) * 4294967296ULL + lo end
    return INT64(hi) * 4294967296LL + lo
end

-- An integer beyond both 64-bit ranges, as its decimal digits.
local WideInteger = {}
function boundary.wide_integer(digits)
    return setmetatable({ digits = digits }, WideInteger)
end

local function is_wide_integer(v)
    return type(v) == "table" and getmetatable(v) == WideInteger
end

local function describe(v)
    if mem.is_int64_cdata(v) then return tostring(v) end -- e.g. -1LL
    if is_wide_integer(v) then return v.digits end
    return mem.describe(v)
end

-- where = {name=, result=}: an argument of (or the result from) that function.
local function bad_argument(where, index, what)
    if where.result then return format(ERR.bad_result, where.name, what) end
    return format(ERR.bad_argument, index, where.name, what)
end

local function expected(where, index, expected_text, v)
    return bad_argument(where, index, format(ERR.expected, expected_text, describe(v)))
end

-------------------------------------------------------------------------------
-- Scalars: inline fast paths (Lua source; V is the variable, SLOW its slow
-- path) and slow paths (64-bit cdata, then refusal)
-------------------------------------------------------------------------------
local narrow = (math_rt.f32_raw and math_rt.f32_raw.narrow) or math_rt.f32.narrow

-- Inclusive integer ranges; the 64-bit bounds as cdata compare exactly.
local INT_RANGES = {
    int32 = { lo = -2 ^ 31, hi = 2 ^ 31 - 1 },
    uint32 = { lo = 0, hi = 2 ^ 32 - 1 },
    int64 = { lo = -2 ^ 63, hi_excl = 2 ^ 63, lo64 = INT64(-2 ^ 63), hi64 = 0x7FFFFFFFFFFFFFFFULL },
    uint64 = { lo = 0, hi_excl = 2 ^ 64, lo64 = INT64(0), hi64 = UINT64(0) - 1 },
}
INT_RANGES.int32.lo64, INT_RANGES.int32.hi64 = INT64(-2 ^ 31), UINT64(2 ^ 31 - 1)
INT_RANGES.uint32.lo64, INT_RANGES.uint32.hi64 = INT64(0), UINT64(2 ^ 32 - 1)

local function g(x) return format("%.17g", x) end

local FAST = {
    float = 'if type(V) == "number" then V = narrow(V) else V = SLOW(V) end',
    number = 'if type(V) ~= "number" then V = SLOW(V) end',
    boolean = 'if type(V) ~= "boolean" then V = SLOW(V) end',
    -- `V + 0` turns -0 into the integer 0
    int32 = format('if type(V) == "number" and V >= %s and V <= %s and floor(V) == V then V = V + 0 '
        .. 'else V = SLOW(V) end', g(INT_RANGES.int32.lo), g(INT_RANGES.int32.hi)),
    uint32 = format('if type(V) == "number" and V >= %s and V <= %s and floor(V) == V then V = V + 0 '
        .. 'else V = SLOW(V) end', g(INT_RANGES.uint32.lo), g(INT_RANGES.uint32.hi)),
    int64 = format('if type(V) == "number" and V >= %s and V < %s and floor(V) == V then V = to_int64(V) '
        .. 'elseif not istype(INT64, V) then V = SLOW(V) end', g(INT_RANGES.int64.lo), g(INT_RANGES.int64.hi_excl)),
    uint64 = format('if type(V) == "number" and V >= 0 and V < %s and floor(V) == V then V = to_uint64(V) '
        .. 'elseif not istype(UINT64, V) then V = SLOW(V) end', g(INT_RANGES.uint64.hi_excl)),
}
FAST.double = FAST.number

-- A 64-bit cdata integer inside the range?  (Compared in its own
-- signedness: mixing int64 and uint64 in one comparison is unsigned in C.)
local function int64_cdata_in_range(v, range)
    if istype(UINT64, v) then return v <= range.hi64 end
    return v >= range.lo64 and (v < 0 or UINT64(v) <= range.hi64)
end

local TO_INT_TYPE = {
    int32 = tonumber, uint32 = tonumber,
    int64 = function(v) return ffi.cast(INT64, v) end,
    uint64 = function(v) return ffi.cast(UINT64, v) end,
}

local function scalar_slow(type_name, where, index)
    local range = INT_RANGES[type_name]
    if range then
        local to_type = TO_INT_TYPE[type_name]
        return function(v)
            if mem.is_int64_cdata(v) and int64_cdata_in_range(v, range) then return to_type(v) end
            error(expected(where, index, type_name, v), CALLER_LEVEL)
        end
    elseif type_name == "boolean" then
        return function(v) error(expected(where, index, type_name, v), CALLER_LEVEL) end
    end
    local is_float = type_name == "float"
    return function(v) -- float / number / double: the binary64 of a wider integer
        local wide
        if mem.is_int64_cdata(v) then
            wide = math_rt.int64_to_number(v)
        elseif is_wide_integer(v) then
            wide = tonumber(v.digits)
        else
            error(expected(where, index, type_name, v), CALLER_LEVEL)
        end
        if is_float then return narrow(wide) end
        return wide
    end
end

-------------------------------------------------------------------------------
-- Spans
-------------------------------------------------------------------------------
local function span_slow(param, where, index)
    local T, writable = param.span, param.writable
    local expected_text = mem.span_type_text(T, writable)
    return function(v)
        local kind = mem.span_kind(v)
        if kind == nil or (writable and not kind.writable) then
            error(expected(where, index, expected_text, v), CALLER_LEVEL)
        elseif kind.element ~= T then
            local got = describe(v)
            if kind.struct.name == mem.struct_info(T).name then
                got = format(ERR.other_declaration, got, kind.struct.name)
            end
            error(bad_argument(where, index, format(ERR.expected, expected_text, got)), CALLER_LEVEL)
        elseif #v > MAX_SPAN_LENGTH then
            local what = format(ERR.span_too_long, expected_text, describe(#v))
            error(bad_argument(where, index, what), CALLER_LEVEL)
        end
        return v
    end
end

local function span_fast(param)
    local check = 'if not istype(WS, V) or #V > 2147483647 then V = SLOW(V) end'
    if not param.writable then
        check = 'if not (istype(WS, V) or istype(RS, V)) or #V > 2147483647 then V = SLOW(V) end'
    end
    return check
end

local function overlap_failure(where, index, other)
    error(bad_argument(where, index, format(ERR.overlap, other)), CALLER_LEVEL)
end

-------------------------------------------------------------------------------
-- Signatures
-------------------------------------------------------------------------------
local SCALAR_TYPES = {
    float = true, number = true, double = true, boolean = true,
    int32 = true, uint32 = true, int64 = true, uint64 = true,
}

local function signature_error(text, ...)
    error(format(ERR.bad_signature, format(text, ...)), 4)
end

-- A parameter as the generator uses it: {name=, scalar=} or {name=, span=T,
-- writable=, exclusive=}.
local function normalize_param(fname, i, p)
    if type(p) ~= "table" then signature_error("parameter #%d of '%s' must be a table", i, fname) end
    local t = p.type
    if type(t) == "string" then
        if not SCALAR_TYPES[t] then signature_error("parameter '%s' of '%s' has unknown type %s", tostring(p.name), fname, t) end
        return { name = p.name, scalar = t }
    end
    if type(t) ~= "table" or mem.struct_info(t.span) == nil then
        signature_error("parameter '%s' of '%s' has no valid type", tostring(p.name), fname)
    end
    local qualifier = t.qualifier or (t.writable and "exclusive" or "borrows")
    if qualifier ~= "exclusive" and qualifier ~= "borrows" then
        signature_error("parameter '%s' of '%s' has unknown qualifier %s", tostring(p.name), fname, tostring(qualifier))
    end
    local writable = t.writable and true or false
    local WS, RS = mem.span_types(t.span)
    return { name = p.name, span = t.span, writable = writable, exclusive = qualifier == "exclusive", WS = WS, RS = RS }
end

local function check_ret(fname, ret)
    if ret ~= "nil" and not SCALAR_TYPES[ret] then
        signature_error("'%s' has unknown result type %s", fname, tostring(ret))
    end
end

-------------------------------------------------------------------------------
-- Wrapper generation
-------------------------------------------------------------------------------
local HELPERS = {
    type = type, floor = floor, istype = istype, select = select,
    narrow = narrow, INT64 = INT64, UINT64 = UINT64,
    to_int64 = math_rt.to_int64, to_uint64 = math_rt.to_uint64,
    spans_overlap = mem.spans_overlap,
    overlap_failure = overlap_failure,
}

local function substitute(template, var, slow)
    return (template:gsub("SLOW", slow):gsub("%f[%w_]V%f[^%w_]", var))
end

-- Source lines checking argument i (variable a<i>), with its constants in env.
local function argument_check(param, i, where, env)
    local var, slow = "a" .. i, "slow" .. i
    if param.scalar then
        env[slow] = scalar_slow(param.scalar, where, i)
        return substitute(FAST[param.scalar], var, slow)
    end
    env[slow] = span_slow(param, where, i)
    env["WS" .. i], env["RS" .. i] = param.WS, param.RS
    env["pointer" .. i] = mem.span_pointer_getter(param.span)
    local check = span_fast(param):gsub("WS", "WS" .. i):gsub("RS", "RS" .. i)
    return substitute(check, var, slow)
end

local function overlap_checks(params)
    local lines = {}
    for i, p in ipairs(params) do
        if p.exclusive then
            for j, q in ipairs(params) do
                if j ~= i and q.span then
                    lines[#lines + 1] = format("if spans_overlap(a%d, a%d) then overlap_failure(WHERE, %d, %d) end", i, j, i, j)
                end
            end
        end
    end
    return lines
end

local function call_arguments(params, opts)
    local args = {}
    for i, p in ipairs(params) do
        if p.span and opts.spans_as_pointers then
            args[#args + 1] = format("pointer%d(a%d), #a%d", i, i, i)
        else
            args[#args + 1] = "a" .. i
        end
    end
    return table.concat(args, ", ")
end

local function result_lines(ret, call, env)
    if ret == "nil" then return { call, "return" } end
    env.result_slow = scalar_slow(ret, { name = env.WHERE.name, result = true }, 0)
    return { "local r = " .. call, substitute(FAST[ret], "r", "result_slow"), "return r" }
end

local function wrapper_source(params, ret, where, opts, env)
    local names = {}
    for i = 1, #params do names[i] = "a" .. i end
    names[#names + 1] = "..."
    local lines = { format("return function(%s)", table.concat(names, ", ")) }
    lines[#lines + 1] = "if select('#', ...) ~= 0 then too_many(...) end"
    for i, p in ipairs(params) do lines[#lines + 1] = argument_check(p, i, where, env) end
    for _, line in ipairs(overlap_checks(params)) do lines[#lines + 1] = line end
    -- Called as a field named after the function, so that tracebacks and
    -- debug.getinfo name its frame as the program does ('check', not an
    -- internal local's name); a field, unlike a local of that name, cannot
    -- collide with the wrapper's own names.
    local call = format("callee[%q](%s)", where.name, call_arguments(params, opts))
    for _, line in ipairs(result_lines(ret, call, env)) do lines[#lines + 1] = line end
    lines[#lines + 1] = "end"
    return table.concat(lines, "\n")
end

-- The generated function sees its constants as upvalues (constants to the
-- JIT, cheap in the interpreter).  Lua allows 60 upvalues per function, so a
-- very long signature gets them as globals of a private environment instead.
local MAX_UPVALUE_CONSTANTS = 50

local function load_wrapper(source, name, env)
    local names, values = {}, {}
    for k, v in pairs(env) do
        names[#names + 1] = k
        values[#names] = v
    end
    local chunk_name = "=nupp boundary '" .. name .. "'"
    if #names > MAX_UPVALUE_CONSTANTS then
        local chunk = assert(loadstring(source, chunk_name))
        setfenv(chunk, env)
        return chunk()
    end
    local prologue = "local " .. table.concat(names, ", ") .. " = ...\n"
    return assert(loadstring(prologue .. source, chunk_name))(unpack(values, 1, #names))
end

-- boundary.wrap(fn, name, params, ret[, opts]) -> the checking wrapper.
-- boundary.signatures[wrapped] = {name=, params=, result=, fn=}: what a
-- wrapped function takes, for hosts that build arguments (the Python API), and
-- what it calls, for tracebacks (chunks.lua).
boundary.signatures = setmetatable({}, { __mode = "k" })

function boundary.wrap(fn, name, params, ret, opts)
    local wrapped = boundary.wrap_unregistered(fn, name, params, ret, opts)
    boundary.signatures[wrapped] = { name = name, params = params, result = ret, fn = fn }
    return wrapped
end

function boundary.wrap_unregistered(fn, name, params, ret, opts)
    opts = opts or {}
    if type(name) ~= "string" then signature_error("name must be a string") end
    if type(params) ~= "table" then signature_error("params of '%s' must be a table", name) end
    local normalized = {}
    for i, p in ipairs(params) do normalized[i] = normalize_param(name, i, p) end
    check_ret(name, ret)
    local where = { name = name }
    local env = { callee = { [name] = fn }, WHERE = where }
    for k, v in pairs(HELPERS) do env[k] = v end
    env.too_many = function(extra)
        error(bad_argument(where, #normalized + 1, format(ERR.no_value, describe(extra))), CALLER_LEVEL)
    end
    return load_wrapper(wrapper_source(normalized, ret, where, opts, env), name, env)
end

return boundary
