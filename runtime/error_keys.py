"""What a run-time error's message says failed, as query keys: the one rule
table that both `nupp run` (runtime/error_position.py, in Python) and a built
program (runtime/project/error_keys.lua, by the table rendered into its
tree.lua) classify messages by.

A key is a tuple of strings: a kind, then its parameters (the name the
message gives, an argument's number, ...):

    ("index", NAME) ("index",)       attempt to index the value named / any
    ("call" | "arith" | "concat" | "len", NAME) and unnamed, alike
    ("order",) ("division",)         a comparison's / a division's operator
    ("bitwise", OP)                  the operator OP
    ("arg", N, CALLEE)               argument #N (0: a method's object) of a call of CALLEE ('?': any)
    ("for", PART)                    the numeric for's "initial value", "limit" or "step"
    ("table_key",) ("switch",)       a key set to nil/NaN; a switch
    ("span", KEY) ("index_key",)     a span index written KEY (or not a number) / any index
    ("member", NAME)                 `x.NAME`, `x:NAME()`
    ("metamethod", EVENT)            the operation whose metamethod raised the error
    ("callee", NAME) ("calls",)      a call of NAME ('?': any) / any call

Each rule holds a Python regex and Lua patterns matching the same messages
(Python's `$` is Lua's `\\n?$`; classes are spelled out as Lua's), and the
keys its captures make (an int: that capture; a key whose capture did not
match is left out).  The first rule that matches wins.  A rule's Lua side is
a list of alternatives, each led by a position capture `()`: the one
matching furthest right wins (as a regex led by a greedy `.*` does), the
first of those at one place.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

Key = tuple[str, ...]
KeyTemplate = tuple[str | int, ...]


@dataclass(frozen=True)
class Rule:
    regex: str
    lua: tuple[str, ...]
    keys: tuple[KeyTemplate, ...]


# LuaJIT names the value an operation refused by its slot (lj_debug_slotname)
_SLOTS = ("local", "global", "field", "upvalue", "method", "constant")
_OPERATIONS = (("call", "call"), ("index", "index"), ("perform arithmetic on", "arith"),
               ("concatenate", "concat"), ("get length of", "len"))


def _operation(words: str, kind: str) -> Rule:
    """`attempt to WORDS SLOT 'NAME' (a TYPE value)`, or with no slot named."""
    slot = "(?:" + "|".join(_SLOTS) + ")"
    return Rule(rf"^attempt to {words} (?:{slot} '([^\n]*)' \(a [A-Za-z0-9_ ]+ value\)$)?",
                (*(f"^()attempt to {words} {s} '([^\n]*)' %(a [%w_ ]+ value%)\n?$" for s in _SLOTS),
                 f"^()attempt to {words} "),
                ((kind, 1), (kind,)))


def _prefix(text: str, *key: str) -> Rule:
    """A message starting with `text` (no pattern characters in it)."""
    return Rule("^" + re.escape(text), ("^()" + text,), (key,))


_SPACE_LESS = "[^ \t\n\r\f\v]*"  # Lua's %S, spelled out (Python's \S is Unicode's)

RULES: tuple[Rule, ...] = (
    *(_operation(words, kind) for words, kind in _OPERATIONS),
    _prefix("attempt to compare", "order"),
    Rule(r"^attempt to perform (?:bitwise operation )?'([^']*)'",
         ("^()attempt to perform bitwise operation '([^']*)'", "^()attempt to perform '([^']*)'"),
         (("bitwise", 1),)),
    _prefix("integer division by zero", "division"),
    # the number without its leading zeros, as Python's int() reads it
    Rule(r"^bad argument #0*([0-9]+) to '([^']*)'", ("^()bad argument #0*(%d+) to '([^']*)'",), (("arg", 1, 2),)),
    Rule(r"^calling '([^']*)' on bad self", ("^()calling '([^']*)' on bad self",), (("arg", "0", 1),)),
    *(_prefix(f"'for' {part} must be a number", "for", part) for part in ("initial value", "limit", "step")),
    _prefix("table index is nil", "table_key"),
    _prefix("table index is NaN", "table_key"),
    Rule("no case of this switch matches", ("()no case of this switch matches",), (("switch",),)),
    # a key written as a number other than the one the message names is not it
    Rule(f"^(?:span index|cannot assign to span element) ({_SPACE_LESS})",
         (f"^()span index ({_SPACE_LESS})", f"^()cannot assign to span element ({_SPACE_LESS})"),
         (("span", 1), ("index_key",))),
    # the last of these phrases in the message ("has no field" ends in "field")
    Rule(r"^.*(?:has no member|has no member named|field) '([^']*)'",
         ("^[^\n]*()has no member '([^']*)'", "^[^\n]*()has no member named '([^']*)'", "^[^\n]*()field '([^']*)'"),
         (("member", 1),)),
    _prefix("assertion failed!", "callee", "assert"),
)
_COMPILED = tuple((re.compile(rule.regex), rule) for rule in RULES)

# LuaJIT names a metamethod's frame by its event (`in function '__index'`):
# each event, with the operators whose operation calls it (binary ones, unary
# ones; None: an indexing, `x.k`, `x[k]`, `x:m()`), which error_position looks for
ORDER_OPERATORS = ("<", ">", "<=", ">=")
METAMETHODS: dict[str, tuple[tuple[str, ...], tuple[str, ...]] | None] = {
    "__index": None, "__newindex": None, "__concat": (("..",), ()), "__len": ((), ("#",)),
    "__unm": ((), ("-",)), "__add": (("+",), ()), "__sub": (("-",), ()), "__mul": (("*",), ()),
    "__div": (("/",), ()), "__mod": (("%",), ()), "__pow": (("^",), ()), "__eq": (("==", "~="), ()),
    "__lt": (ORDER_OPERATORS, ()), "__le": (ORDER_OPERATORS, ()),
}


def keys_for(message: str, callee: str | None) -> list[Key]:
    """What to look for, most specific first: what the message names; then,
    for an error raised by a function (`callee`, from the traceback), the
    operation whose metamethod it is, else its call (an error that no
    operation on the line raised came from a call on it), else any call."""
    by_metamethod = [("metamethod", callee)] if callee in METAMETHODS else []
    return [*_message_keys(message), *by_metamethod, ("callee", callee or "error"), ("calls",)]


def _message_keys(message: str) -> Iterator[Key]:
    for regex, rule in _COMPILED:
        if (m := regex.search(message)) is not None:
            for template in rule.keys:
                parts = [m[part] if isinstance(part, int) else part for part in template]
                if None not in parts:
                    yield tuple(parts)
            return


@lru_cache(maxsize=4096)
def successor(key: Key) -> Key | None | bool:
    """The key that follows `key` in every list keys_for makes that holds it
    (None: none, the line's first non-blank column follows), or False where
    that depends on the message or the callee."""
    found = [*_successors_in_rules(key), *_successors_in_tail(key)]
    return found[0] if found and all(s == found[0] for s in found) else False


def _successors_in_rules(key: Key) -> Iterator[Key | bool]:
    for rule in RULES:
        for template, following in zip(rule.keys, (*rule.keys[1:], None)):
            bound = _bind(template, key)
            if bound is not None:
                known = following is not None and all(not isinstance(p, int) or p in bound for p in following)
                yield tuple(bound.get(p, p) if isinstance(p, int) else p for p in following) if known else False


def _successors_in_tail(key: Key) -> Iterator[Key | None]:
    if key[0] == "metamethod":
        yield ("callee", key[1])
    elif key[0] == "callee":
        yield ("calls",)
    elif key == ("calls",):
        yield None


def _bind(template: KeyTemplate, key: Key) -> dict[int, str] | None:
    """The captures that make `template` into `key`, or None if it cannot."""
    if len(template) != len(key):
        return None
    bound: dict[int, str] = {}
    for part, value in zip(template, key):
        if isinstance(part, int):
            bound[part] = value
        elif part != value:
            return None
    return bound


# A traceback's frame, as LuaJIT writes one: "\tPLACE: in WHAT", PLACE being
# "path:line" in a Lua function ("[C]" in a C function), WHAT naming the
# function when it is one of the forms below whole.  Python's regex: the
# path and line (a Lua function's), the rest after PLACE and the function's
# name.  Lua's patterns: PLACE and WHAT (error_keys.lua); a Lua function's
# path, line and the rest (boot.lua's, by run_errors.report_rule).
_FRAME_KINDS = ("function", "local", "upvalue", "field", "method", "global")
FRAME = re.compile(r"^[ \t\n\r\f\v]*(?:(?P<path>[^\n:]+):(?P<line>[0-9]+)|.*?):(?P<rest> in "
                   rf"(?:(?:{'|'.join(_FRAME_KINDS)}) '(?P<name>[^']*)'$|.*))")
FRAME_LUA = "^%s*(.-): in (.*)$"
PLACED_FRAME_LUA = "^%s*([^\n:]+):(%d+):(.*)$"
FRAME_NAME_LUA = tuple(f"^{kind} '([^']*)'\n?$" for kind in _FRAME_KINDS)
SHORT_NAME = re.compile(r"[^.:]*$")  # `string.rep` is called as `rep`
SHORT_NAME_LUA = "([^.:]*)$"


def raising_function(traceback: str, path: str, line: int) -> str | None:
    """The name of the function the frame at `path:line` was calling when the
    error was raised: the traceback's frame just before it (LuaJIT's
    `in function 'name'`, `in local 'name'`, ...), or None."""
    previous = None
    for frame in traceback.split("\n"):
        m = FRAME.match(frame)
        if m is None:
            continue
        if (m["path"], m["line"]) == (path, str(line)):
            return previous
        previous = m["name"] and SHORT_NAME.search(m["name"])[0]
    return None


def lua_rule() -> dict:
    """The table for runtime/project/error_keys.lua: the rules (a capture's
    number one past Python's, for the position capture), the metamethods'
    events and the frame's patterns."""
    return {"rules": [{"lua": list(rule.lua),
                       "keys": [[part + 1 if isinstance(part, int) else part for part in key] for key in rule.keys]}
                      for rule in RULES],
            "metamethods": list(METAMETHODS), "frame": FRAME_LUA, "frame_names": list(FRAME_NAME_LUA),
            "short_name": SHORT_NAME_LUA, "separator": KEY_SEPARATOR, "other": OTHER}


# How a key is written in a built program's tables: its parts joined by NUL.
KEY_SEPARATOR = "\0"
# A parameter the line does not show: the value every such one reads as.
OTHER = "\0\0"


def key_text(key: Key) -> str:
    return KEY_SEPARATOR.join(key)


def other_key(key: Key) -> Key:
    """The key read for `key` when the line does not show its first parameter."""
    return (key[0], OTHER, *key[2:])
