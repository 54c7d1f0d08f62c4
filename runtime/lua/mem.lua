-- Struct types and spans: the memory half of the Nupp runtime (LANGUAGE.md
-- sections 2, 4 and 5).  Loaded by prelude.lua with math.lua's table as `...`.
--
-- Structs.  mem.struct(name, fields) declares an FFI struct whose layout is
-- the natural C layout of the declared field types, in order, so native code
-- and NumPy structured arrays can share the memory.  Each C struct gets a
-- fresh name (nupp_<counter>_<Name>): several modules may declare `Pixel`,
-- and one module may be loaded twice into a state.
--
-- Raw C field names are hidden names (__nf<i>, ...), never the declared ones,
-- so every `e.cx` goes through the metatype's guarded accessors:
--   * a float/number field is an anonymous union with its integer bits.  A
--     read looks at the bits first and answers Lua's own NaN (0/0) for any
--     NaN pattern; only a non-NaN is ever turned into a number.  LuaJIT
--     NaN-tags its values, and a negative NaN with a large payload loaded
--     straight from FFI memory comes back as nil or a table, or crashes the
--     process (tests/test_runtime_spans.py records what was seen).
--   * stores follow the storage rules: a float field narrows with round to
--     nearest even (the FPU's double->float conversion, which is exactly
--     nupp.math.f32.narrow) and stores the canonical NaN 0x7FC00000 for a
--     NaN; a number field takes any number (int64/uint64 cdata round to
--     binary64); an integer field takes an integral value (Lua number or
--     int64/uint64 cdata), reduced modulo 2^N and read back with the field's
--     signedness; a non-integral number is refused with a hint naming the
--     wrap function to use.
--
-- Spans.  A span is a cdata struct
--     { T * const data; const double length, address, bytes; }
-- with a metatype, one span ctype per (element type, writability), so that
-- `#s` works (Lua 5.1 ignores __len on tables) and element access compiles
-- to pointer arithmetic.  A read-only span points at a twin struct type with
-- the same layout whose metatype refuses writes: read-only is a property of
-- the type, not a run-time flag.  The length is a double so a span over
-- foreign memory may be longer than 2^31 - 1 (the host boundary refuses
-- those); address and bytes (the extent, exact as doubles below 2^53) make
-- the boundary's overlap test plain arithmetic.  The fields are const, so
-- code cannot retarget a span.
--
-- Lifetime: a weak-keyed table maps every span cdata to the allocation it
-- views; sub and read-only views map to the same allocation, so any live
-- view keeps the memory.  An element reference (`local e = s[i]`) is a bare
-- FFI reference and does not: it is valid while some view of its span is
-- reachable (anchoring each reference would cost an allocation per access).
local math_rt = ...
local ffi = require("ffi")
local bit = require("bit")

local band = bit.band
local floor = math.floor
local format = string.format
local istype = ffi.istype
local describe = math_rt.describe

local mem = {}
local span = {}
mem.span = span

local MAX_STRUCT_FIELDS = 4096

-------------------------------------------------------------------------------
-- Error texts (all of them, so they stay consistent)
-------------------------------------------------------------------------------
local ERR = {
    unknown_field_type = "struct %s: field '%s' has unknown type '%s'",
    bad_field_name = "struct %s: invalid field name %s",
    duplicate_field = "struct %s: duplicate field '%s'",
    bad_struct_decl = "struct %s: fields must be an array of {name, type} pairs",
    bad_struct_name = "struct name must be a string, got %s",
    no_field = "%s has no field '%s'",
    store_bad_value = "cannot store %s in %s field '%s' of %s",
    store_not_integral = "cannot store %s in %s field '%s' of %s (use %s)",
    store_read_only = "cannot store to field '%s' of %s: the span is read-only",
    index_range = "span index %s out of range 1..%s",
    index_empty = "span index %s out of range (the span is empty)",
    index_not_integer = "span index %s is not an integer",
    index_type = "span index must be an integer, got %s",
    no_member = "span has no member '%s'",
    assign_element = "cannot assign to span element %s: assign its fields instead",
    not_struct_type = "%s: struct type expected, got %s",
    bad_count = "span.new: element count must be a non-negative integer, got %s",
    no_memory = "span.new: cannot allocate %s elements of %s",
    not_table = "span.fromTable: table expected, got %s",
    bad_row = "span.fromTable: element %d must be a table, got %s",
    row_store = "span.fromTable: element %d: %s",
    not_span = "%s: span expected, got %s",
    sub_not_integer = "span:sub: integer indices expected, got %s",
    sub_range = "span:sub(%s, %s) out of range for a span of %s elements",
    bad_address = "mem.span_at: pointer or address expected, got %s",
}
mem.ERR = ERR

-- fail_store raises at: fail_store (1), a store helper (2), the setter (3),
-- __newindex (4), the code that wrote the field (5).
local STORE_ERROR_LEVEL = 5

-------------------------------------------------------------------------------
-- Field kinds
-------------------------------------------------------------------------------
local LITTLE_ENDIAN = ffi.abi("le")
local INT64 = ffi.typeof("int64_t")
local UINT64 = ffi.typeof("uint64_t")

local function is_int64_cdata(v)
    return type(v) == "cdata" and (istype(INT64, v) or istype(UINT64, v))
end
mem.is_int64_cdata = is_int64_cdata

-- ctype: the C type of the field's storage; wrap: the conversion the error
-- text suggests for a non-integral value; lo..hi_excl (added below): the
-- range an integer field stores directly (other values are reduced first).
local FIELD_KINDS = {
    float = { storage = "float", ctype = "float", size = 4 },
    number = { storage = "double", ctype = "double", size = 8 },
    double = { storage = "double", ctype = "double", size = 8 },
    int8 = { storage = "int", ctype = "int8_t", bits = 8, signed = true, wrap = "nupp.math.i32.wrap" },
    uint8 = { storage = "int", ctype = "uint8_t", bits = 8, signed = false, wrap = "nupp.math.u32.wrap" },
    int16 = { storage = "int", ctype = "int16_t", bits = 16, signed = true, wrap = "nupp.math.i32.wrap" },
    uint16 = { storage = "int", ctype = "uint16_t", bits = 16, signed = false, wrap = "nupp.math.u32.wrap" },
    int32 = { storage = "int", ctype = "int32_t", bits = 32, signed = true, wrap = "nupp.math.i32.wrap" },
    uint32 = { storage = "int", ctype = "uint32_t", bits = 32, signed = false, wrap = "nupp.math.u32.wrap" },
    int64 = { storage = "int", ctype = "int64_t", bits = 64, signed = true, wrap = "nupp.math.i64.wrap" },
    uint64 = { storage = "int", ctype = "uint64_t", bits = 64, signed = false, wrap = "nupp.math.u64.wrap" },
}
for _, kind in pairs(FIELD_KINDS) do
    if kind.bits then
        local modulus = 2 ^ kind.bits
        kind.lo = kind.signed and -modulus / 2 or 0
        kind.hi_excl = kind.signed and modulus / 2 or modulus
    end
end
mem.FIELD_KINDS = FIELD_KINDS

-------------------------------------------------------------------------------
-- Store helpers (the slow paths; the fast paths are generated per field)
-------------------------------------------------------------------------------
local function fail_store(field, v)
    local kind = field.kind
    local got = describe(v)
    if kind.bits and type(v) == "number" then
        error(format(ERR.store_not_integral, got, field.type, field.name, field.struct_name, kind.wrap),
            STORE_ERROR_LEVEL)
    end
    error(format(ERR.store_bad_value, got, field.type, field.name, field.struct_name), STORE_ERROR_LEVEL)
end

-- A float/number field takes a 64-bit integer rounded to binary64 first.
local function widen_for_store(v, field)
    if is_int64_cdata(v) then return math_rt.int64_to_number(v) end
    fail_store(field, v)
end

local TWO_64 = 2 ^ 64
local TWO_63 = 2 ^ 63

-- An integral binary64 reduced modulo 2^64, as int64/uint64 cdata whose bits
-- the field assignment copies.  `v % 2^64` is exact here: beyond 2^63 every
-- double is a multiple of 2^11, so the remainder is representable.
local function number_to_64_bits(v)
    if v < -TWO_63 or v >= TWO_64 then v = v % TWO_64 end
    if v >= TWO_63 then return math_rt.to_uint64(v) end
    return math_rt.to_int64(v)
end

-- The value to assign to an integer field for anything outside the fast
-- path: a Lua number reduced into the field's range, or 64-bit cdata (an
-- FFI integer assignment keeps the low N bits, i.e. reduces modulo 2^N).
local function reduce_for_int_field(v, field)
    if type(v) == "number" then
        if floor(v) ~= v or v - v ~= 0 then fail_store(field, v) end
        local kind = field.kind
        if kind.bits == 64 then return number_to_64_bits(v) end
        local modulus = 2 ^ kind.bits
        local r = v % modulus -- exact for every integral double
        if r >= kind.hi_excl then r = r - modulus end
        return r
    end
    if is_int64_cdata(v) then return v end
    fail_store(field, v)
end

-------------------------------------------------------------------------------
-- Accessor generation
-------------------------------------------------------------------------------
-- One small getter and setter per field, with the raw C names as literals so
-- the JIT sees constant field offsets.
--
-- A float/number field's memory is only ever loaded and stored as uint32
-- words, never as float/double.  LuaJIT's trace optimizer applies strict
-- aliasing: a float store through one pointer and a uint32 load through
-- another (two views of the same span) "cannot alias", so mixing the types
-- could hand a getter stale bits.  With one access type per field all views
-- stay coherent.  The words travel to and from floating point through a
-- private scratch union (one base, so LuaJIT keeps every access to it).
local function raw_names(i)
    return {
        value = "__nf" .. i, -- the field as declared (layout, offsetof)
        bits = "__nb" .. i, -- float: its uint32 bits
        lo = "__nlo" .. i, -- double: low / high uint32 words
        hi = "__nhi" .. i,
    }
end

local function field_c_decl(field)
    local raw, kind = field.raw, field.kind
    if kind.storage == "float" then
        return format("union { float %s; uint32_t %s; };", raw.value, raw.bits)
    elseif kind.storage == "double" then
        local first, second = raw.lo, raw.hi
        if not LITTLE_ENDIAN then first, second = raw.hi, raw.lo end
        return format("union { double %s; struct { uint32_t %s; uint32_t %s; }; };", raw.value, first, second)
    end
    return format("%s %s;", kind.ctype, raw.value)
end

local F32_SCRATCH = ffi.new("union { float f; uint32_t u; }")
local F64_SCRATCH = ffi.new(LITTLE_ENDIAN and "union { double d; struct { uint32_t lo, hi; }; }"
    or "union { double d; struct { uint32_t hi, lo; }; }")

-- A NaN pattern reads as Lua's NaN without ever being loaded as a float.
local function getter_source(field)
    local raw, storage = field.raw, field.kind.storage
    if storage == "float" then
        return format([[function(e)
    local bits = e.%s
    if band(bits, 0x7FFFFFFF) > 0x7F800000 then return NAN end
    F32.u = bits
    return F32.f
end]], raw.bits)
    elseif storage == "double" then
        return format([[function(e)
    local hi, lo = e.%s, e.%s
    local top = band(hi, 0x7FFFFFFF)
    if top >= 0x7FF00000 and (top > 0x7FF00000 or lo ~= 0) then return NAN end
    F64.hi = hi
    F64.lo = lo
    return F64.d
end]], raw.hi, raw.lo)
    end
    return format("function(e) return e.%s end", raw.value)
end

-- The float conversion in `F32.f = v` rounds to nearest even; a NaN stores
-- the canonical 0x7FC00000.  `%.17g` keeps integer range bounds exact.
local function setter_source(field)
    local raw, kind = field.raw, field.kind
    if kind.storage == "float" then
        return format([[function(e, v)
    if type(v) ~= "number" then v = widen_for_store(v, FIELD) end
    if v == v then
        F32.f = v
        e.%s = F32.u
    else
        e.%s = 0x7FC00000
    end
end]], raw.bits, raw.bits)
    elseif kind.storage == "double" then
        return format([[function(e, v)
    if type(v) ~= "number" then v = widen_for_store(v, FIELD) end
    F64.d = v
    e.%s = F64.lo
    e.%s = F64.hi
end]], raw.lo, raw.hi)
    end
    return format([[function(e, v)
    if type(v) == "number" and v >= %.17g and v < %.17g and floor(v) == v then
        e.%s = v
    else
        e.%s = reduce_for_int_field(v, FIELD)
    end
end]], kind.lo, kind.hi_excl, raw.value, raw.value)
end

-- Helpers reach the generated functions as upvalues (constants to the JIT).
local ACCESSOR_PROLOGUE = "local band, floor, type, NAN, F32, F64, widen_for_store, reduce_for_int_field, FIELD = ...\n"

local function compile_accessor(source, field)
    local chunk = assert(loadstring(ACCESSOR_PROLOGUE .. "return " .. source, "=nupp struct accessor"))
    return chunk(band, floor, type, 0 / 0, F32_SCRATCH, F64_SCRATCH, widen_for_store, reduce_for_int_field, field)
end

-------------------------------------------------------------------------------
-- Struct declaration
-------------------------------------------------------------------------------
local struct_by_ctype_id = {} -- tonumber(ctype) -> info (both twins)
local c_name_counter = 0

-- The type ID of a ctype object (tonumber gives it), nil for anything else.
local function ctype_id(ct)
    if type(ct) ~= "cdata" or tostring(ct):sub(1, 6) ~= "ctype<" then return nil end
    return tonumber(ct)
end

-- Declares `struct <c_name> { ... }` under the first unused counter value:
-- another copy of this runtime in the same state may have used some.
local function declare_c_struct(name, body)
    local base = name:gsub("[^%w_]", "_")
    while true do
        c_name_counter = c_name_counter + 1
        local c_name = format("nupp_%d_%s", c_name_counter, base)
        local ok, err = pcall(ffi.cdef, format("struct %s { %s };", c_name, body))
        if ok then return ffi.typeof("struct " .. c_name), c_name end
        if not tostring(err):find("redefine", 1, true) then error(err, 0) end
    end
end

-- Raises at: this (1), parse_fields (2), mem.struct (3), the declaring code (4).
local function check_field_decl(name, decl, seen)
    if type(decl) ~= "table" then error(format(ERR.bad_struct_decl, name), 4) end
    local fname, ftype = decl[1], decl[2]
    if type(fname) ~= "string" or not fname:match("^[%a_][%w_]*$") or fname:match("^__n%l+%d+$") then
        local shown = type(fname) == "string" and format("%q", fname) or describe(fname)
        error(format(ERR.bad_field_name, name, shown), 4)
    end
    if seen[fname] then error(format(ERR.duplicate_field, name, fname), 4) end
    seen[fname] = true
    if FIELD_KINDS[ftype] == nil then
        error(format(ERR.unknown_field_type, name, fname, tostring(ftype)), 4)
    end
    return fname, ftype
end

local function parse_fields(name, decls)
    if type(decls) ~= "table" or #decls > MAX_STRUCT_FIELDS then error(format(ERR.bad_struct_decl, name), 3) end
    local fields, seen = {}, {}
    for i = 1, #decls do
        local fname, ftype = check_field_decl(name, decls[i], seen)
        fields[i] = { name = fname, type = ftype, kind = FIELD_KINDS[ftype], raw = raw_names(i), struct_name = name }
    end
    return fields
end

local function no_field(info, key)
    error(format(ERR.no_field, info.name, tostring(key)), 3)
end

local function element_tostring(info, getters)
    return function(e)
        local parts = {}
        for i, field in ipairs(info.fields) do
            parts[i] = field.name .. " = " .. tostring(getters[field.name](e))
        end
        return info.name .. " { " .. table.concat(parts, ", ") .. " }"
    end
end

local function element_index(info, getters)
    return function(e, k)
        local get = getters[k]
        if get == nil then no_field(info, k) end
        return get(e)
    end
end

-- The metatype of a writable element (`T` / `T &`).
local function writable_element_mt(info, getters, setters)
    return {
        __index = element_index(info, getters),
        __newindex = function(e, k, v)
            local set = setters[k]
            if set == nil then no_field(info, k) end
            set(e, v)
        end,
        __tostring = element_tostring(info, getters),
    }
end

-- The metatype of the read-only twin: same getters, every store refused.
local function read_only_element_mt(info, getters)
    return {
        __index = element_index(info, getters),
        __newindex = function(_, k)
            if getters[k] == nil then no_field(info, k) end
            error(format(ERR.store_read_only, tostring(k), info.name), 2)
        end,
        __tostring = element_tostring(info, getters),
    }
end

local define_span_types -- forward: spans section

-- mem.struct(name, fields) -> T (an FFI ctype with the guarded metatype).
function mem.struct(name, decls)
    if type(name) ~= "string" then error(format(ERR.bad_struct_name, describe(name)), 2) end
    local fields = parse_fields(name, decls)
    local getters, setters, body = {}, {}, {}
    for i, field in ipairs(fields) do
        getters[field.name] = compile_accessor(getter_source(field), field)
        setters[field.name] = compile_accessor(setter_source(field), field)
        body[i] = field_c_decl(field)
    end
    local c_body = table.concat(body, " ")
    local T, c_name = declare_c_struct(name, c_body)
    local T_ro = declare_c_struct(name .. "_ro", c_body)
    local info = { name = name, c_name = c_name, fields = {}, size = ffi.sizeof(T), align = ffi.alignof(T) }
    for i, field in ipairs(fields) do
        info.fields[i] = { name = field.name, type = field.type, offset = ffi.offsetof(T, field.raw.value) }
    end
    ffi.metatype(T, writable_element_mt(info, getters, setters))
    ffi.metatype(T_ro, read_only_element_mt(info, getters))
    info.ctype, info.read_only_ctype = T, T_ro
    struct_by_ctype_id[ctype_id(T)] = info
    struct_by_ctype_id[ctype_id(T_ro)] = info
    define_span_types(info)
    return T
end

-- mem.struct_info(T) -> { name=, fields={{name=, type=, offset=}...}, size=,
-- align=, c_name= } for a type from mem.struct (or its read-only twin).
-- Shared: treat as read-only.
function mem.struct_info(T)
    local id = ctype_id(T)
    return id and struct_by_ctype_id[id]
end

-------------------------------------------------------------------------------
-- Spans
-------------------------------------------------------------------------------
local anchors = setmetatable({}, { __mode = "k" }) -- span cdata -> memory owner
local span_kind_by_ctype_id = {} -- tonumber(span ctype) -> kind

local function span_kind_of(v)
    if type(v) ~= "cdata" then return nil end
    return span_kind_by_ctype_id[tonumber(ffi.typeof(v))]
end

local function describe_any(v)
    local kind = span_kind_of(v)
    if kind then return kind.value_text end
    return describe(v)
end

local function index_error(s, k)
    local n = s.length
    if type(k) == "number" then
        if floor(k) ~= k then error(format(ERR.index_not_integer, describe(k)), 3) end
        if n == 0 then error(format(ERR.index_empty, describe(k)), 3) end
        error(format(ERR.index_range, describe(k), describe(n)), 3)
    end
    error(format(ERR.index_type, describe(k)), 3)
end

local span_methods = {}

local function span_mt(kind)
    return {
        __index = function(s, k)
            if type(k) == "number" then
                if k >= 1 and k <= s.length and floor(k) == k then return s.data[k - 1] end
                index_error(s, k)
            end
            local method = span_methods[k]
            if method ~= nil then return method end
            if is_int64_cdata(k) then
                local i = tonumber(k)
                if i == k and i >= 1 and i <= s.length then return s.data[i - 1] end
                index_error(s, i)
            end
            if type(k) == "string" then error(format(ERR.no_member, k), 2) end
            error(format(ERR.index_type, describe(k)), 2)
        end,
        __newindex = function(_, k)
            error(format(ERR.assign_element, describe(k)), 2)
        end,
        __len = function(s) return s.length end,
        __tostring = function(s) return format("%s (%s elements)", kind.value_text, describe(s.length)) end,
    }
end

local function span_type_text(info, writable)
    return format(writable and "span.WriteSpan<%s>" or "span.Span<%s>", info.name)
end

function define_span_types(info)
    for _, writable in ipairs({ true, false }) do
        local elem = writable and info.ctype or info.read_only_ctype
        local ct = ffi.typeof("struct { $ * const data; const double length, address, bytes; }", elem)
        local kind = {
            struct = info, element = info.ctype, writable = writable, ctype = ct,
            pointer_ctype = ffi.typeof("$ *", elem),
            type_text = span_type_text(info, writable),
            value_text = (writable and "" or "read-only ") .. span_type_text(info, false),
        }
        ffi.metatype(ct, span_mt(kind))
        span_kind_by_ctype_id[ctype_id(ct)] = kind
        if writable then info.span_ctype = ct else info.read_only_span_ctype = ct end
        info[writable and "span_kind" or "read_only_span_kind"] = kind
    end
    info.vla_ctype = ffi.typeof("$[?]", info.ctype)
end

local function make_span(kind, data, length, owner)
    local address = tonumber(ffi.cast("uintptr_t", data))
    local s = kind.ctype(data, length, address, length * kind.struct.size)
    anchors[s] = owner
    return s
end

local function struct_arg(fname, T)
    local info = mem.struct_info(T)
    if info == nil or info.ctype ~= T then
        error(format(ERR.not_struct_type, fname, describe(T)), 3)
    end
    return info
end

local function span_arg(fname, s)
    local kind = span_kind_of(s)
    if kind == nil then error(format(ERR.not_span, fname, describe(s)), 3) end
    return kind
end

local function is_count(n)
    return type(n) == "number" and n >= 0 and floor(n) == n and n < 2 ^ 53
end

-- ffi.new takes a VLA count modulo 2^32 (2^32 elements silently allocate
-- none), so sizes are checked before and after allocating.
local MAX_ALLOCATION_BYTES = 2 ^ 31

local function allocate_zeroed(info, n)
    local ok, block = pcall(info.vla_ctype, n) -- ffi.new zero-fills
    return ok and ffi.sizeof(block) == n * info.size and block
end

-- span.new(T, n): n zeroed elements.
function span.new(T, n)
    local info = struct_arg("span.new", T)
    if not is_count(n) then error(format(ERR.bad_count, describe(n)), 2) end
    local block = n * info.size < MAX_ALLOCATION_BYTES and allocate_zeroed(info, n)
    if not block then error(format(ERR.no_memory, describe(n), info.name), 2) end
    return make_span(info.span_kind, block, n, block)
end

-- Strips the "chunk:line: " position from a store error for re-raising.
local function bare_message(err)
    return (tostring(err):gsub("^.-:%d+: ", "", 1))
end

local function store_row(elem, row)
    for k, v in pairs(row) do elem[k] = v end
end

-- span.fromTable(T, rows): rows[i] is a table of field values, stored with
-- the store rules; absent fields stay zero.
function span.fromTable(T, rows)
    local info = struct_arg("span.fromTable", T)
    if type(rows) ~= "table" then error(format(ERR.not_table, describe(rows)), 2) end
    local n = #rows
    local s = span.new(T, n)
    for i = 1, n do
        local row = rows[i]
        if type(row) ~= "table" then error(format(ERR.bad_row, i, describe(row)), 2) end
        local ok, err = pcall(store_row, s[i], row)
        if not ok then error(format(ERR.row_store, i, bare_message(err)), 2) end
    end
    return s
end

-- span.readonly(s): a read-only view of the same memory.
function span.readonly(s)
    local kind = span_arg("span.readonly", s)
    if not kind.writable then return s end
    local ro_kind = kind.struct.read_only_span_kind
    return make_span(ro_kind, ffi.cast(ro_kind.pointer_ctype, s.data), s.length, anchors[s])
end

function span.isSpan(v)
    return span_kind_of(v) ~= nil
end

local function is_integral_number(v)
    return type(v) == "number" and floor(v) == v and v - v == 0
end

-- s:sub(first, last): elements first..last (1-based, inclusive) as a view;
-- first = last + 1 gives an empty view.  last defaults to #s.
function span_methods.sub(s, first, last)
    local kind = span_arg("span:sub", s)
    local n = s.length
    if last == nil then last = n end
    for _, v in ipairs({ first, last }) do
        if not is_integral_number(v) then error(format(ERR.sub_not_integer, describe(v)), 2) end
    end
    if first < 1 or last > n or first > last + 1 then
        error(format(ERR.sub_range, describe(first), describe(last), describe(n)), 2)
    end
    return make_span(kind, s.data + (first - 1), last - first + 1, anchors[s])
end

-------------------------------------------------------------------------------
-- For the host boundary and host code
-------------------------------------------------------------------------------
-- mem.span_kind(v) -> nil, or { struct=info, element=T, writable=,
-- ctype=, type_text="span.WriteSpan<T>", value_text="span.Span<T>" or
-- "read-only span.Span<T>" }.
mem.span_kind = span_kind_of

-- mem.span_types(T) -> writable span ctype, read-only span ctype (for
-- ffi.istype checks on a hot path).
function mem.span_types(T)
    local info = struct_arg("mem.span_types", T)
    return info.span_ctype, info.read_only_span_ctype
end

-- "span.WriteSpan<T>" / "span.Span<T>": the parameter type in error texts.
function mem.span_type_text(T, writable)
    return span_type_text(struct_arg("mem.span_type_text", T), writable)
end

-- How a value reads in an error text: "span.Span<T>", "read-only
-- span.Span<T>", or math_rt.describe's text.
mem.describe = describe_any

-- mem.span_info(s) -> { element=T, length=, writable=, address=, bytes= }
-- (address a Lua number, exact below 2^53), or nil for a non-span.
function mem.span_info(s)
    local kind = span_kind_of(s)
    if kind == nil then return nil end
    return {
        element = kind.element, length = s.length, writable = kind.writable,
        address = s.address, bytes = s.bytes,
    }
end

-- Whether two spans share at least one byte (empty spans share none).
function mem.spans_overlap(a, b)
    local a_bytes, b_bytes = a.bytes, b.bytes
    if a_bytes == 0 or b_bytes == 0 then return false end
    local a_start, b_start = a.address, b.address
    return a_start < b_start + b_bytes and b_start < a_start + a_bytes
end

-- mem.span_pointer_getter(T) -> function(s) giving a span's elements as a
-- `T *` (a read-only span's twin pointer cast back), for native calls whose
-- C signatures name T.  The caller has checked that s is a span of T.
function mem.span_pointer_getter(T)
    local info = struct_arg("mem.span_pointer_getter", T)
    local read_only_span, pointer = info.read_only_span_ctype, ffi.typeof("$ *", T)
    return function(s)
        if istype(read_only_span, s) then return ffi.cast(pointer, s.data) end
        return s.data
    end
end

-- mem.span_at(T, pointer_or_address, n, writable, owner): a span over
-- memory the runtime did not allocate (a NumPy array, say); `owner` is kept
-- alive as long as the span or any view of it.  No bounds are known here:
-- the caller vouches for n elements.
function mem.span_at(T, where, n, writable, owner)
    local info = struct_arg("mem.span_at", T)
    if not is_count(n) then error(format(ERR.bad_count, describe(n)), 2) end
    local kind = writable and info.span_kind or info.read_only_span_kind
    local data
    if type(where) == "number" then
        data = ffi.cast(kind.pointer_ctype, ffi.cast("uintptr_t", where))
    elseif type(where) == "cdata" then
        data = ffi.cast(kind.pointer_ctype, where)
    else
        error(format(ERR.bad_address, describe(where)), 2)
    end
    return make_span(kind, data, n, owner)
end

-- mem.is_struct(T, v): is v a value of struct T (an element of any span of T,
-- writable or read-only)?  Backs `case is T` in a switch.
function mem.is_struct(T, v)
    if type(v) ~= "cdata" then return false end
    local info = mem.struct_info(T)
    if info == nil then return false end
    return ffi.istype(info.ctype, v) or ffi.istype(info.read_only_ctype, v)
end

return mem
