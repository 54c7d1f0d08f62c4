"""The column of a run-time error: where on its line the construct that failed is.

LuaJIT reports a run-time error at a line only (`main.nupp:3: attempt to
index local 'x' (a nil value)`).  `column_for` reads the message (LuaJIT's
texts, lj_errmsg.h, and the runtime's own: runtime/lua/) to learn what kind of
construct failed and, where the message names it, which value; then it looks
on the line of the parsed source for that construct:

    attempt to index X / member errors    the indexed value (the one named)
    attempt to call X                     the callee (a method: its name)
    arithmetic, concatenate, length       the operand named, else the operator
    compare, bitwise, '//', division      the operator
    bad argument #N to 'f'                the Nth argument of the call of f
    'for' initial value/limit/step        that expression of the numeric for
    table index is nil/NaN                the key of an assignment or constructor
    no case of this switch matches        the switch
    anything else (error(), assert, ...)  the operation whose metamethod raised it
                                          (the traceback names the frame), else a call:
                                          of the function the traceback says raised it,
                                          else of `error`, else the first

An expression spanning lines is reported at the line LuaJIT's parser had
reached when it emitted the failing instruction (the operator's line, the
right operand's, the line of a call's '(' or of an index's name): each
construct offers several points (the named value, its operator, its key),
and the first of them on the reported line is taken.  When the line holds
several candidates that the message does not tell apart, the first in source
order wins; when nothing matches, the line's first non-blank column.

Pure and cheap: each source is parsed once (cached), and only when an error
is rendered (`nupp run`, and built programs when they print a diagnostic).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from functools import lru_cache

from nupp.errors import LINE_BREAK, NuppError, Source, first_non_blank_column
from nupp.frontend import ast
from nupp.frontend.literals import decode_string

Point = tuple[int, int]  # (line, column), 1-based
Points = list[Point]  # where a candidate may be shown, best first
Candidates = Callable[[object, "_Text"], Iterator[Points]]  # a node's candidate constructs


def column_for(source: Source, line: int, message: str, callee: str | None = None) -> int:
    """The 1-based column on `line` of the construct `message` says failed
    (`callee`: the function the traceback says raised the error, if known)."""
    parsed = _parsed(source)
    if parsed is not None:
        nodes, text = parsed
        on_line = [node for node in nodes if node.span.line <= line <= node.span.end_line]
        for query in _queries(message, callee):
            col = _best_column(query, on_line, text, line)
            if col is not None:
                return col
    return first_non_blank_column(source.line_text(line))


def raising_function(traceback: str, path: str, line: int) -> str | None:
    """The name of the function the frame at `path:line` was calling when the
    error was raised: the traceback's frame just before it (LuaJIT's
    `in function 'name'`, `in local 'name'`, ...), or None."""
    previous = None
    for frame in traceback.splitlines():
        m = _FRAME.match(frame)
        if m is None:
            continue
        if m["where"] == f"{path}:{line}":
            return previous
        previous = m["name"] and re.split(r"[.:]", m["name"])[-1]  # `string.rep` is called as `rep`
    return None


_FRAME = re.compile(r"^\s*(?P<where>.*?): in (?:(?:function|local|upvalue|field|method|global) '(?P<name>[^']*)'|.*)$")


# ---- what the message says failed ---------------------------------------------

@dataclass(frozen=True)
class _Query:
    """Constructs of one kind (`candidates` yields their points), of those only
    the ones `named` accepts, if given (a call of the function the message names)."""

    candidates: Candidates
    named: Callable[[object], bool] | None = None


# LuaJIT names the value an operation refused by its slot (lj_debug_slotname)
_SLOT = r"(?:local|global|field|upvalue|method|constant) '(?P<name>.*)' \(a [\w ]+ value\)$"
_OPERATION = re.compile(r"attempt to (?P<op>call|index|perform arithmetic on|concatenate|get length of) (?:"
                        + _SLOT + ")?")
_BAD_ARGUMENT = re.compile(r"bad argument #(?P<n>\d+) to '(?P<name>[^']*)'")
_BAD_SELF = re.compile(r"calling '(?P<name>[^']*)' on bad self")
_FOR = re.compile(r"'for' (?P<part>initial value|limit|step) must be a number")
_MEMBER = re.compile(r".*(?:has no (?:member|member named|field)|field) '(?P<name>[^']*)'")
_SPAN_INDEX = re.compile(r"(?:span index|cannot assign to span element) (?P<key>\S*)")
_BITWISE = re.compile(r"attempt to perform (?:bitwise operation )?'(?P<op>[^']*)'")
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "^", "//"})  # `//` runs as a division in Lua
_ORDER = frozenset({"<", ">", "<=", ">="})
_DIVISION = frozenset({"/", "//", "%"})


def _queries(message: str, callee: str | None) -> list[_Query]:
    """What to look for, most specific first; then, for an error raised by a
    function, the operation whose metamethod it is, else its call (an error
    that no operation on the line raised came from a call on it)."""
    by_metamethod = [_Query(_METAMETHODS[callee])] if callee in _METAMETHODS else []
    return [*_message_queries(message), *by_metamethod, _Query(_calls, _named_callee(callee or "error")),
            _Query(_calls)]


def _message_queries(message: str) -> Iterator[_Query]:
    if (m := _OPERATION.match(message)) is not None:
        candidates = _OPERATIONS[m["op"]]
        if m["name"] is not None:
            yield _Query(candidates(m["name"]))
        yield _Query(candidates(None))  # a name the source does not show (the translation's own)
    elif message.startswith("attempt to compare"):
        yield _Query(_operators(_ORDER))
    elif (m := _BITWISE.match(message)) is not None:
        yield _Query(_operators({m["op"]}, {m["op"]}))
    elif message.startswith("integer division by zero"):
        yield _Query(_operators(_DIVISION))
    elif (m := _BAD_ARGUMENT.match(message)) is not None:
        yield _Query(_arguments(int(m["n"])), _named_callee(m["name"]))
    elif (m := _BAD_SELF.match(message)) is not None:
        yield _Query(_arguments(0), _named_callee(m["name"]))
    elif (m := _FOR.match(message)) is not None:
        yield _Query(_for_part(m["part"]))
    elif message.startswith(("table index is nil", "table index is NaN")):
        yield _Query(_table_keys)
    elif "no case of this switch matches" in message:
        yield _Query(_switches)
    elif (m := _SPAN_INDEX.match(message)) is not None:
        # a key written as a number other than the one the message names is not it
        yield _Query(_index_keys, _keyed(m["key"]))
        yield _Query(_index_keys)
    elif (m := _MEMBER.match(message)) is not None:
        yield _Query(_members, lambda node: _member_name(node) == m["name"])
    elif message.startswith("assertion failed!"):
        yield _Query(_calls, _named_callee("assert"))


# ---- candidate constructs: each yields its points, best first --------------------

def _indexing(name: str | None) -> Candidates:
    """`x.y`, `x[k]`, `x:m()`: the value indexed (the named one), the '.', '[' or ':', the key."""
    def candidates(node, text):
        if isinstance(node, (ast.Field, ast.Index, ast.MethodCall)) and _names(node.obj, name):
            yield [_value_point(node.obj, name), text.token_after(node.obj), _key_point(node)]
    return candidates


def _callings(name: str | None) -> Candidates:
    """`f(...)`: the callee, then its '('; `o:m(...)`: the method's name, then ':'; a generic
    for's iterator (LuaJIT names no slot there)."""
    def candidates(node, text):
        if isinstance(node, ast.Call) and _names(node.func, name):
            yield [_value_point(node.func, name), text.token_after(node.func)]
        elif isinstance(node, ast.MethodCall) and name in (None, node.method):
            yield [_start(node.method_span), text.token_after(node.obj)]
        elif isinstance(node, ast.GenericFor) and name is None:
            yield [_start(node.exprs[0].span), _start(node.span)]
    return candidates


def _operands(binary: Collection[str], unary: Collection[str]) -> Callable[[str | None], Candidates]:
    """An operator's operand the message names, then the operator itself (unnamed: the operator)."""
    def with_name(name: str | None) -> Candidates:
        def candidates(node, text):
            if isinstance(node, ast.BinOp) and node.op in binary:
                operands, operator = (node.left, node.right), text.token_after(node.left)
            elif isinstance(node, ast.UnOp) and node.op in unary:
                operands, operator = (node.operand,), _start(node.span)
            else:
                return
            if name is None:
                yield [operator]
                return
            for operand in operands:
                if _names(operand, name):
                    yield [_value_point(operand, name), operator]
        return candidates
    return with_name


def _operators(binary: Collection[str], unary: Collection[str] = ()) -> Candidates:
    """The operators themselves (a message that names no operand)."""
    return _operands(binary, unary)(None)


_OPERATIONS = {"index": _indexing, "call": _callings, "concatenate": _operands({".."}, ()),
               "get length of": _operands((), {"#"}), "perform arithmetic on": _operands(_ARITHMETIC, {"-"})}


# LuaJIT names a metamethod's frame by its event (`in function '__index'`)
_METAMETHODS = {
    "__index": _indexing(None), "__newindex": _indexing(None), "__concat": _operators({".."}),
    "__len": _operators((), {"#"}), "__unm": _operators((), {"-"}),
    **{event: _operators({op}) for event, op in
       [("__add", "+"), ("__sub", "-"), ("__mul", "*"), ("__div", "/"), ("__mod", "%"), ("__pow", "^")]},
    **{event: _operators(ops) for event, ops in [("__eq", {"==", "~="}), ("__lt", _ORDER), ("__le", _ORDER)]},
}


def _calls(node, text):
    if isinstance(node, (ast.Call, ast.MethodCall)):
        yield [_callee_point(node), _start(node.span)]


def _arguments(n: int) -> Candidates:
    """The call's argument #n (0: a method call's object), then its callee.  LuaJIT
    numbers a method call's arguments without the object (lj_err_argmsg)."""
    def candidates(node, text):
        if isinstance(node, (ast.Call, ast.MethodCall)):
            args = (node.obj, *node.args) if isinstance(node, ast.MethodCall) else (None, *node.args)
            argument = args[n] if n < len(args) and args[n] is not None else None
            yield ([_start(argument.span)] if argument is not None else []) + [_callee_point(node)]
    return candidates


def _for_part(part: str) -> Candidates:
    def candidates(node, text):
        if isinstance(node, ast.NumericFor):
            expr = {"initial value": node.start, "limit": node.stop, "step": node.step}[part]
            yield ([_start(expr.span)] if expr is not None else []) + [_start(node.span)]
    return candidates


def _table_keys(node, text):
    """A key set to nil or NaN: in an assignment `t[k] = v` or a constructor `{[k] = v}`."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Index):
                yield [_start(target.key.span), text.token_after(target.obj)]
    elif isinstance(node, ast.TableField) and node.kind == "keyed":
        yield [_start(node.key.span), _start(node.span)]


def _switches(node, text):
    if isinstance(node, ast.Switch):
        yield [_start(node.span)]


def _index_keys(node, text):
    if isinstance(node, ast.Index):  # `named` may test its key
        yield [_start(node.key.span), text.token_after(node.obj)]


def _members(node, text):
    """`x.name` or `x:name()`: the name, then the '.' or ':'."""
    if isinstance(node, ast.Field):
        yield [_start(node.name_span), text.token_after(node.obj)]
    elif isinstance(node, ast.MethodCall):
        yield [_start(node.method_span), text.token_after(node.obj)]


# ---- names and points of expressions -------------------------------------------

def _value_name(expr) -> str | None:
    """The name LuaJIT's message gives `expr`'s value: a variable's, a field's
    (a constant string key too), none for other values."""
    while isinstance(expr, ast.Paren):
        expr = expr.expr
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Field):
        return expr.name
    if isinstance(expr, ast.Index) and isinstance(expr.key, ast.String):
        return decode_string(expr.key.raw).decode("utf-8", errors="surrogateescape")
    return None


def _names(expr, name: str | None) -> bool:
    return name is None or _value_name(expr) == name


def _value_point(expr, name: str | None) -> Point:
    """Where the value the message names is shown: a field's name (`b` of
    `a.b`, `"b"` of `a["b"]`), else the expression's start."""
    while isinstance(expr, ast.Paren):
        expr = expr.expr
    if name is not None and isinstance(expr, ast.Field):
        return _start(expr.name_span)
    if name is not None and isinstance(expr, ast.Index):
        return _start(expr.key.span)
    return _start(expr.span)


def _key_point(node) -> Point:
    if isinstance(node, ast.Field):
        return _start(node.name_span)
    if isinstance(node, ast.Index):
        return _start(node.key.span)
    return _start(node.method_span)


def _callee_point(call) -> Point:
    """A call's callee: where its expression starts (of `o:m()`, the method's name)."""
    if isinstance(call, ast.MethodCall):
        return _start(call.method_span)
    return _start(call.func.span)


def _callee_name(node) -> str | None:
    if isinstance(node, ast.MethodCall):
        return node.method
    return _value_name(node.func) if isinstance(node, ast.Call) else None


def _named_callee(name: str) -> Callable[[object], bool]:
    return lambda node: isinstance(node, (ast.Call, ast.MethodCall)) and name in ("?", _callee_name(node))


def _keyed(value: str) -> Callable[[object], bool]:
    return lambda node: isinstance(node, ast.Index) and (not isinstance(node.key, ast.Number) or node.key.raw == value)


def _member_name(node) -> str | None:
    if isinstance(node, ast.Field):
        return node.name
    return node.method if isinstance(node, ast.MethodCall) else None


def _start(span: ast.Span) -> Point:
    return span.line, span.col


# ---- choosing among candidates ------------------------------------------------------

def _best_column(query: _Query, nodes: list, text: "_Text", line: int) -> int | None:
    """The first candidate on `line` in source order (the leftmost): one with a
    point on the line, else one spanning it (its start there, else the line's
    first non-blank).  `nodes`: those spanning the line."""
    on_line, spanning = [], []
    for node in nodes:
        if query.named is not None and not query.named(node):
            continue
        for points in query.candidates(node, text):
            cols = [col for at_line, col in points if at_line == line]
            if cols:
                on_line.append(cols[0])
            else:
                spanning.append(node.span.col if node.span.line == line else text.first_non_blank(line))
    found = on_line or spanning
    return min(found) if found else None


# ---- the parsed source -----------------------------------------------------------------

@dataclass(frozen=True)
class _Text:
    """The text LuaJIT read, for finding the tokens the tree keeps no position of (operators, '(')."""

    text: str
    line_starts: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> "_Text":
        return cls(text, (0, *(m.end() for m in LINE_BREAK.finditer(text))))

    def token_after(self, node) -> Point:
        """The first token after `node`: past blanks and comments."""
        line, col = node.span.end_line, node.span.end_col
        pos = self.line_starts[line - 1] + col - 1
        while (m := _TRIVIA.match(self.text, pos)) is not None and m.end() > pos:
            pos = m.end()
        return self.position(pos)

    def position(self, offset: int) -> Point:
        line = bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def first_non_blank(self, line: int) -> int:
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return first_non_blank_column(self.text[self.line_starts[line - 1]:end])


# blanks (Lua's), a long comment (`--[==[ ... ]==]`), a line comment
_TRIVIA = re.compile(r"[ \t\n\v\f\r]+|--\[(?P<eq>=*)\[.*?\](?P=eq)\]|--[^\r\n]*", re.S)


@lru_cache(maxsize=16)
def _parsed(source: Source) -> tuple[list, _Text] | None:
    """Every node of the source's tree, and its text; None if it does not parse."""
    from nupp.frontend.parser import lua_text, parse  # the compiler is loaded only when an error is shown
    try:
        chunk = parse(source)
    except NuppError:
        return None
    return list(_walk(chunk)), _Text.of(lua_text(source.text))


def _walk(root) -> Iterator:
    """Every node under `root` that has a position (iteratively: trees nest deep)."""
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        elif hasattr(item, "span") and hasattr(type(item), "__dataclass_fields__"):
            if item.span != ast.NO_SPAN:
                yield item
            stack.extend(getattr(item, name) for name in ast.field_names(type(item)))
