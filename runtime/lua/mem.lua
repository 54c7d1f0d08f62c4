-- Struct types and spans: the memory half of the Nupp runtime (LANGUAGE.md
-- sections 2, 4 and 5).  Loaded by prelude.lua with math.lua's table as `...`.
--
-- Structs.  mem.struct(name, fields) declares an FFI struct whose layout is
-- the natural C layout of the declared field types, in order, so native code
-- and NumPy structured arrays can share the memory.  Each C struct gets a
-- fresh name (nupp_<counter>_<Name>): several modules may declare `Pixel`,
-- and one module may be loaded twice into a state.  The struct type (the
-- ctype mem.struct returns) is not a constructor: calling it is refused with
-- a message pointing at span.new and span.fromTable, because a struct value
-- made by FFI conversion would skip the store rules below; a value of a
-- struct is an element of a span.
--
-- Raw C field names are hidden names (__nf<i>, ...), never the declared ones,
-- and only mem.lua ever holds a raw FFI reference to a struct; scripts reach
-- the fields through elements, whose accessors enforce the store rules:
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
--     { const double length, address, bytes; }
-- with a metatype, one span ctype per (struct, writability), so that `#s`
-- works (Lua 5.1 ignores __len on tables) and a read-only span is a property
-- of the type, not a run-time flag.  The three fields are all a span holds
-- and all a script can read of it besides its methods: plain numbers, const
-- so code cannot retarget a span, and no pointer, so nothing reachable from
-- a script indexes memory unchecked.  The length is a double so a span over
-- foreign memory may be longer than 2^31 - 1 (the host boundary refuses
-- those); address and bytes (the extent, exact as doubles below 2^53) make
-- the boundary's overlap test plain arithmetic, and the accessors turn the
-- address back into a pointer (a no-op conversion in compiled traces).
--
-- Elements.  `s[i]` is a table { [true] = s, [false] = i } (its span and
-- index, under keys that are no field's name, so `e[1] = v` is refused like
-- any unknown field and `#e` is 0) with the (struct, writability) element
-- metatable, whose __index/__newindex run the field accessors on the
-- element's memory.  Holding its span, an element keeps its storage alive
-- like any view.  The table costs an allocation per `s[i]` in the
-- interpreter; in a compiled trace LuaJIT sinks it whenever the element
-- does not escape (the `s[i].f = s[i].f + 1` loops and element locals of
-- ordinary code), so the common path allocates nothing.  Lua code can
-- rawset the two slots, so every access checks that the span slot holds a
-- span of the element's kind and the index slot an index within it: a
-- modified element can only name another element of such a span.  The
-- metatable is protected (getmetatable gives false).  type(e) is "table",
-- so in a switch `case is table` matches an element too: test `case is T`
-- first.  Operators on spans and elements, and pairs/ipairs on spans, are
-- refused naming them as declared.
--
-- Lifetime: a weak-keyed table maps every span cdata to the allocation it
-- views; sub and read-only views map to the same allocation, and elements
-- hold their span, so any live view or element keeps the memory.
local math_rt = ...
local ffi = require("ffi")
local bit = require("bit")

local band = bit.band
local floor = math.floor
local format = string.format
local istype = ffi.istype
local cast = ffi.cast
local setmetatable = setmetatable
local raw_getmetatable = debug.getmetatable
local describe = math_rt.describe
-- the globals the element path uses, as they were when the runtime loaded
-- (a program may replace its globals)
local type, tonumber, rawget, error = type, tonumber, rawget, error
local loadstring, dump = loadstring, string.dump

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
    too_many_fields = "struct %s: %d fields, more than the %d a struct may have",
    bad_struct_name = "struct name must be a string, got %s",
    struct_call = "cannot call struct type %s: its values are elements of spans, made with " ..
        "span.new(%s, n) or span.fromTable(%s, {{field = value, ...}, ...})",
    struct_member = "struct type %s has no member '%s': fields belong to its elements (s[i].field)",
    not_struct_pattern = "case is <struct>: the name is bound to %s here, not to a struct type " ..
        "(a local or parameter named like the struct hides it; rename one)",
    no_field = "%s has no field '%s'",
    modified_element = "%s no longer names an element of a span (its table was modified)",
    store_bad_value = "cannot store %s in %s field '%s' of %s",
    store_not_integral = "cannot store %s in %s field '%s' of %s (use %s)",
    store_read_only = "cannot store to field '%s' of %s: the span is read-only",
    index_range = "span index %s out of range 1..%s",
    index_empty = "span index %s out of range (the span is empty)",
    index_not_integer = "span index %s is not an integer",
    index_type = "span index must be an integer, got %s",
    no_member = "span has no member '%s'",
    assign_element = "cannot assign to span element %s: assign its fields instead",
    op_arithmetic = "attempt to perform arithmetic on %s",
    op_concat = "attempt to concatenate %s",
    op_compare = "attempt to compare %s",
    op_call = "attempt to call %s",
    op_iterate = "cannot iterate over %s with %s: index it, for i = 1, #s do ... s[i] ... end",
    not_struct_type = "%s: struct type expected, got %s",
    bad_count = "span.new: element count must be a non-negative integer, got %s",
    no_memory = "span.new: cannot allocate %s elements of %s",
    not_table = "span.fromTable: table expected, got %s",
    bad_row = "span.fromTable: element %d must be a table of field values, got %s",
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
    local got = mem.describe(v)
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
local struct_by_ctype_id = {} -- tonumber(ctype) -> info
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
    if type(decls) ~= "table" then error(format(ERR.bad_struct_decl, name), 3) end
    if #decls > MAX_STRUCT_FIELDS then error(format(ERR.too_many_fields, name, #decls, MAX_STRUCT_FIELDS), 3) end
    local fields, seen = {}, {}
    for i = 1, #decls do
        local fname, ftype = check_field_decl(name, decls[i], seen)
        fields[i] = { name = fname, type = ftype, kind = FIELD_KINDS[ftype], raw = raw_names(i), struct_name = name }
    end
    return fields
end

-- The struct type itself: calling it or indexing it is refused (see the
-- header).  Raw references of the struct never index a missing field.
local function struct_type_mt(info)
    local name = info.name
    local function no_member(_, k) error(format(ERR.struct_member, name, tostring(k)), 2) end
    return {
        __new = function() error(format(ERR.struct_call, name, name, name), 2) end,
        __index = no_member,
        __newindex = no_member,
    }
end

local define_kinds -- forward: elements and spans section

-- mem.struct(name, fields) -> T (an FFI ctype; see the header).
function mem.struct(name, decls)
    if type(name) ~= "string" then error(format(ERR.bad_struct_name, describe(name)), 2) end
    local fields = parse_fields(name, decls)
    local getters, setters, body = {}, {}, {}
    for i, field in ipairs(fields) do
        getters[field.name] = compile_accessor(getter_source(field), field)
        setters[field.name] = compile_accessor(setter_source(field), field)
        body[i] = field_c_decl(field)
    end
    local T, c_name = declare_c_struct(name, table.concat(body, " "))
    local info = {
        name = name, c_name = c_name, fields = {}, size = ffi.sizeof(T), align = ffi.alignof(T),
        ctype = T, pointer_ctype = ffi.typeof("$ *", T), vla_ctype = ffi.typeof("$[?]", T),
    }
    for i, field in ipairs(fields) do
        info.fields[i] = { name = field.name, type = field.type, offset = ffi.offsetof(T, field.raw.value) }
    end
    ffi.metatype(T, struct_type_mt(info))
    struct_by_ctype_id[ctype_id(T)] = info
    define_kinds(info, getters, setters)
    return T
end

-- mem.struct_info(T) -> { name=, fields={{name=, type=, offset=}...}, size=,
-- align=, c_name= } for a type from mem.struct.  Shared: treat as read-only.
function mem.struct_info(T)
    local id = ctype_id(T)
    return id and struct_by_ctype_id[id]
end

-------------------------------------------------------------------------------
-- Elements and spans: one kind per (struct, writability)
-------------------------------------------------------------------------------
-- kind = { struct = info, element = T, writable =, ctype = the span ctype,
--          element_mt =, type_text = "span.WriteSpan<T>" or "span.Span<T>",
--          value_text = "span.WriteSpan<T>" or "read-only span.Span<T>" (a
--          value's exact type: a WriteSpan parameter takes only the first),
--          element_text = "T element" or "read-only T element",
--          reference = function(e) }
local anchors = setmetatable({}, { __mode = "k" }) -- span cdata -> memory owner
local span_kind_by_ctype_id = {} -- tonumber(span ctype) -> kind
local element_kind_by_mt = {} -- element metatable -> kind

local function span_kind_of(v)
    if type(v) ~= "cdata" then return nil end
    return span_kind_by_ctype_id[tonumber(ffi.typeof(v))]
end

local function element_kind_of(v)
    if type(v) ~= "table" then return nil end
    return element_kind_by_mt[raw_getmetatable(v)]
end

-- How a value reads in an error text: a span, element or struct type as
-- declared, anything else as math_rt.describe shows it.
local function describe_any(v)
    local kind = span_kind_of(v)
    if kind then return kind.value_text end
    kind = element_kind_of(v)
    if kind then return kind.element_text end
    local info = mem.struct_info(v)
    if info then return "struct type " .. info.name end
    return describe(v)
end

-- Operators a span or element does not have, refused naming it (LuaJIT's own
-- texts would name the internal C type).
local function refuse_operators(mt, text)
    local function refusal(message)
        return function() error(format(message, text), 2) end
    end
    local arithmetic = refusal(ERR.op_arithmetic)
    for _, event in ipairs({ "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm" }) do
        mt[event] = arithmetic
    end
    mt.__concat = refusal(ERR.op_concat)
    mt.__lt = refusal(ERR.op_compare)
    mt.__le = mt.__lt
    mt.__call = refusal(ERR.op_call)
    return mt
end

-- LuaJIT compiles a call of a closure as a call of its prototype once three
-- closures of that prototype exist, and then loads the closure's upvalues at
-- run time, with guards that every side trace repeats.  Each struct has two
-- kinds, so the functions of a kind get a prototype of their own:
-- instance(factory, ...) calls a fresh copy of `factory` (which has no
-- upvalues: what it uses comes as arguments), so the closures it returns see
-- constants.
local function instance(factory, ...)
    return loadstring(dump(factory))(...)
end

-- The raw reference to the memory an element names, after checking its two
-- slots (see the header); rawget: a deleted slot would recurse into
-- __index.  Raises at: this (1), __index/__newindex (2), the code that used
-- the element (3).
local function element_reference(SPAN, POINTER, stale, istype, cast, rawget, type, error)
    return function(e)
        local s, i = rawget(e, true), rawget(e, false)
        if istype(SPAN, s) and type(i) == "number" and i >= 1 and i <= s.length then
            return cast(POINTER, s.address)[i - 1]
        end
        error(stale, 3)
    end
end

local function no_field(info, key)
    error(format(ERR.no_field, info.name, tostring(key)), 3)
end

local function element_index(getters, reference, no_field, info)
    return function(e, k)
        local get = getters[k]
        if get == nil then no_field(info, k) end
        return get(reference(e))
    end
end

local function element_newindex(setters, reference, no_field, info)
    return function(e, k, v)
        local set = setters[k]
        if set == nil then no_field(info, k) end
        set(reference(e), v)
    end
end

local function element_mt(kind, getters, setters)
    local info, reference = kind.struct, kind.reference
    local mt = {
        __index = instance(element_index, getters, reference, no_field, info),
        __tostring = function(e)
            local ref, parts = reference(e), {}
            for i, field in ipairs(info.fields) do
                parts[i] = field.name .. " = " .. tostring(getters[field.name](ref))
            end
            return info.name .. " { " .. table.concat(parts, ", ") .. " }"
        end,
        __eq = info.element_eq,
        __metatable = false,
    }
    if kind.writable then
        mt.__newindex = instance(element_newindex, setters, reference, no_field, info)
    else
        mt.__newindex = function(_, k)
            if getters[k] == nil then no_field(info, k) end
            error(format(ERR.store_read_only, tostring(k), info.name), 2)
        end
    end
    return refuse_operators(mt, kind.element_text)
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

-- A key of a span that is neither a number nor a method name: a 64-bit
-- integer index as a number, else an error.  Raises at: this (1), __index
-- (2), the code that indexed the span (3).
local function other_index(k)
    if is_int64_cdata(k) then return tonumber(k) end
    if type(k) == "string" then error(format(ERR.no_member, k), 3) end
    error(format(ERR.index_type, describe(k)), 3)
end

-- `s[k]`: an element (see the header) or a method.
local function span_index(element, span_methods, other_index, index_error, type, floor, setmetatable)
    return function(s, k)
        local i = k
        if type(k) ~= "number" then
            local method = span_methods[k]
            if method ~= nil then return method end
            i = other_index(k)
        end
        if i >= 1 and i <= s.length and floor(i) == i then return setmetatable({ [true] = s, [false] = i }, element) end
        index_error(s, i)
    end
end

local function span_mt(kind)
    return refuse_operators({
        __index = instance(span_index, kind.element_mt, span_methods, other_index, index_error,
            type, floor, setmetatable),
        __newindex = function(_, k)
            if type(k) == "string" then error(format(ERR.no_member, k), 2) end
            error(format(ERR.assign_element, describe(k)), 2)
        end,
        __len = function(s) return s.length end,
        -- LuaJIT's pairs and ipairs consult a cdata's metatype (tail-calling
        -- it: level 2 is the iterating code)
        __pairs = function() error(format(ERR.op_iterate, kind.value_text, "pairs"), 2) end,
        __ipairs = function() error(format(ERR.op_iterate, kind.value_text, "ipairs"), 2) end,
        __tostring = function(s) return format("%s (%s elements)", kind.value_text, describe(s.length)) end,
    }, kind.value_text)
end

local function span_type_text(info, writable)
    return format(writable and "span.WriteSpan<%s>" or "span.Span<%s>", info.name)
end

function define_kinds(info, getters, setters)
    -- one __eq for both kinds, so a read-only element equals its writable twin
    info.element_eq = function(a, b)
        return element_kind_of(a).reference(a) == element_kind_of(b).reference(b)
    end
    for _, writable in ipairs({ true, false }) do
        local prefix = writable and "" or "read-only "
        local kind = {
            struct = info, element = info.ctype, writable = writable,
            ctype = ffi.typeof("struct { const double length, address, bytes; }"),
            type_text = span_type_text(info, writable),
            value_text = prefix .. span_type_text(info, writable),
            element_text = prefix .. info.name .. " element",
        }
        kind.reference = instance(element_reference, kind.ctype, info.pointer_ctype,
            format(ERR.modified_element, kind.element_text), istype, cast, rawget, type, error)
        kind.element_mt = element_mt(kind, getters, setters)
        ffi.metatype(kind.ctype, span_mt(kind))
        span_kind_by_ctype_id[ctype_id(kind.ctype)] = kind
        element_kind_by_mt[kind.element_mt] = kind
        info[writable and "span_ctype" or "read_only_span_ctype"] = kind.ctype
        info[writable and "span_kind" or "read_only_span_kind"] = kind
    end
end

local function make_span(kind, address, length, owner)
    local s = kind.ctype(length, address, length * kind.struct.size)
    anchors[s] = owner
    return s
end

local function struct_arg(fname, T)
    local info = mem.struct_info(T)
    if info == nil then error(format(ERR.not_struct_type, fname, describe_any(T)), 3) end
    return info
end

local function span_arg(fname, s)
    local kind = span_kind_of(s)
    if kind == nil then error(format(ERR.not_span, fname, describe_any(s)), 3) end
    return kind
end

-- A count as a span length, or nil: a non-negative integer below 2^53, with
-- -0 read as 0 (a length is an integer, and -0 would show as "-0 elements").
local function as_count(n)
    if type(n) == "number" and n >= 0 and floor(n) == n and n < 2 ^ 53 then
        return n == 0 and 0 or n
    end
    return nil
end

-- ffi.new takes a VLA count modulo 2^32 (2^32 elements silently allocate
-- none), so sizes are checked before and after allocating.
local MAX_ALLOCATION_BYTES = 2 ^ 31

local function allocate_zeroed(info, n)
    local ok, block = pcall(info.vla_ctype, n) -- ffi.new zero-fills
    return ok and ffi.sizeof(block) == n * info.size and block
end

local function address_of(pointer)
    return tonumber(cast("uintptr_t", pointer))
end

-- span.new(T, n): n zeroed elements.
function span.new(T, n)
    local info = struct_arg("span.new", T)
    local count = as_count(n)
    if count == nil then error(format(ERR.bad_count, describe_any(n)), 2) end
    local block = count * info.size < MAX_ALLOCATION_BYTES and allocate_zeroed(info, count)
    if not block then error(format(ERR.no_memory, describe(count), info.name), 2) end
    return make_span(info.span_kind, address_of(block), count, block)
end

-- Strips the "chunk:line: " position from a store error for re-raising.
local function bare_message(err)
    return (tostring(err):gsub("^.-:%d+: ", "", 1))
end

-- Each field of a row stored as `elem[k] = v` stores it, whatever the key.
local function store_row(elem, row)
    local store = element_kind_of(elem).element_mt.__newindex
    for k, v in pairs(row) do store(elem, k, v) end
end

-- span.fromTable(T, rows): rows[i] is a table of field values, stored with
-- the store rules; absent fields stay zero.
function span.fromTable(T, rows)
    local info = struct_arg("span.fromTable", T)
    if type(rows) ~= "table" then error(format(ERR.not_table, describe_any(rows)), 2) end
    local n = #rows
    local s = span.new(info.ctype, n)
    for i = 1, n do
        local row = rows[i]
        if type(row) ~= "table" or element_kind_of(row) then error(format(ERR.bad_row, i, describe_any(row)), 2) end
        local ok, err = pcall(store_row, s[i], row)
        if not ok then error(format(ERR.row_store, i, bare_message(err)), 2) end
    end
    return s
end

-- span.readonly(s): a read-only view of the same memory.
function span.readonly(s)
    local kind = span_arg("span.readonly", s)
    if not kind.writable then return s end
    return make_span(kind.struct.read_only_span_kind, s.address, s.length, anchors[s])
end

function span.isSpan(v)
    return span_kind_of(v) ~= nil
end

local function is_integral_number(v)
    return type(v) == "number" and floor(v) == v and v - v == 0
end

-- Raises at: this (1), span_methods.sub (2), the caller (3).
local function sub_index(v)
    if not is_integral_number(v) then error(format(ERR.sub_not_integer, describe_any(v)), 3) end
end

-- s:sub(first, last): elements first..last (1-based, inclusive) as a view;
-- first = last + 1 gives an empty view.  last defaults to #s.
function span_methods.sub(s, first, last)
    local kind = span_arg("span:sub", s)
    local n = s.length
    if last == nil then last = n end
    sub_index(first)
    sub_index(last)
    if first < 1 or last > n or first > last + 1 then
        error(format(ERR.sub_range, describe(first), describe(last), describe(n)), 2)
    end
    local address = s.address + (first - 1) * kind.struct.size
    return make_span(kind, address, last - first + 1, anchors[s])
end

-------------------------------------------------------------------------------
-- For the host boundary, host code and translated code
-------------------------------------------------------------------------------
-- mem.span_kind(v) -> nil, or the kind of span v (see above).
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
-- `T *`, for native calls whose C signatures name T.  The caller has checked
-- that s is a span of T.
function mem.span_pointer_getter(T)
    local pointer = struct_arg("mem.span_pointer_getter", T).pointer_ctype
    return function(s) return cast(pointer, s.address) end
end

-- mem.span_at(T, pointer_or_address, n, writable, owner): a span over
-- memory the runtime did not allocate (a NumPy array, say); `owner` is kept
-- alive as long as the span or any view or element of it.  No bounds are
-- known here: the caller vouches for n elements.
function mem.span_at(T, where, n, writable, owner)
    local info = struct_arg("mem.span_at", T)
    local count = as_count(n)
    if count == nil then error(format(ERR.bad_count, describe_any(n)), 2) end
    local kind = writable and info.span_kind or info.read_only_span_kind
    local address
    if type(where) == "number" then
        address = where
    elseif type(where) == "cdata" then
        address = address_of(where)
    else
        error(format(ERR.bad_address, describe_any(where)), 2)
    end
    return make_span(kind, address, count, owner)
end

-- mem.is_struct(T, v): is v an element of a span of struct T (writable or
-- read-only)?  Backs `case is T` in a switch, called straight from the
-- switch: a T that is not a struct type means the pattern's name is bound
-- to something else there, which would silently never match.
function mem.is_struct(T, v)
    local info = mem.struct_info(T)
    if info == nil then error(format(ERR.not_struct_pattern, describe_any(T)), 2) end
    local kind = element_kind_of(v)
    return kind ~= nil and kind.struct == info
end

return mem
