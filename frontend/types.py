"""Names the frontend gives meaning to: attributes, span kinds, reserved names.

Type names and their widths live in `scalar_ir.widths` (the one place for
widths); they are re-exported here for the frontend's checks.
"""

from __future__ import annotations

from nupp.scalar_ir.widths import SCALAR_TYPES, STORAGE_TYPES  # noqa: F401 - re-exported

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
