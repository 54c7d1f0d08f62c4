"""Nupp's type names: the one place that says which names mean what.

LANGUAGE.md section 2: `number`/`double` are binary64, `float` is binary32;
`int8`..`uint16` exist only as struct field storage.  The checker's widths
(a later stage) build on these tables.
"""

from __future__ import annotations

# Parameter, local and result types of @aot functions.
SCALAR_TYPES = frozenset({"number", "double", "float", "int32", "uint32", "int64", "uint64", "boolean"})

# Struct field types (storage): the scalar number types plus the narrow integers.
STORAGE_TYPES = frozenset({"number", "double", "float", "int8", "uint8", "int16", "uint16",
                           "int32", "uint32", "int64", "uint64"})

# Span kinds and the ownership qualifier each requires (LANGUAGE.md section 6).
SPAN_KINDS = {"Span": "borrows", "WriteSpan": "exclusive"}

# Attributes and the keys each accepts.
ATTRIBUTE_KEYS = {"aot": ("vectorize",)}

# Identifiers the translator uses for itself.
RESERVED_PREFIX = "__nupp"

# `case is T` tests decidable on an ordinary value: Lua's own types (by
# `type()`), `double` as a synonym of number, and LuaJIT's 64-bit integers.
LUA_TYPE_NAMES = ("nil", "boolean", "number", "string", "table", "function", "thread",
                  "userdata", "cdata")
CTYPE_PATTERNS = {"int64": "int64_t", "uint64": "uint64_t"}


def lua_type_pattern_names() -> frozenset[str]:
    return frozenset(LUA_TYPE_NAMES) | {"double"} | frozenset(CTYPE_PATTERNS)
