"""The column of a run-time error: where on its line the construct that failed is.

LuaJIT reports a run-time error at a line only (`main.nupp:3: attempt to
index local 'x' (a nil value)`).  `column_for` classifies the message (LuaJIT's
texts, lj_errmsg.h, and the runtime's own: runtime/lua/) into query keys
(runtime/error_keys.py: what kind of construct failed and, where the message
names it, which value); `resolve` looks on the line of the parsed source for
what a key names, and the first key that resolves gives the column:

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
is rendered (`nupp run`).  A built program has no parser: `line_columns`
resolves, at build time, every key a message on each line could produce,
and the program looks its message's keys up in them.
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
from nupp.runtime.error_keys import (METAMETHODS, ORDER_OPERATORS, OTHER, Key, keys_for, other_key,
                                     raising_function, successor)

__all__ = ["column_for", "raising_function", "resolve", "line_columns"]

Point = tuple[int, int]  # (line, column), 1-based
Points = list[Point]  # where a candidate may be shown, best first
Candidates = Callable[[object, "_Text"], Iterator[Points]]  # a node's candidate constructs


def column_for(source: Source, line: int, message: str, callee: str | None = None) -> int:
    """The 1-based column on `line` of the construct `message` says failed
    (`callee`: the function the traceback says raised the error, if known)."""
    parsed = _parsed(source)
    if parsed is not None:
        nodes, text = parsed
        on_line = [node for node in nodes if node.span.line <= line <= node.span.end_line
                   and isinstance(node, _CONSTRUCTS)]
        for key in keys_for(message, callee):
            col = resolve(key, on_line, text, line)
            if col is not None:
                return col
    return first_non_blank_column(source.line_text(line))


def resolve(key: Key, nodes: list, text: "_Text", line: int) -> int | None:
    """The column on `line` of what `key` looks for (error_keys.py), if the
    line holds it.  `nodes`: those spanning the line."""
    kind, *parameters = key
    return _best_column(_QUERIES[kind](*parameters), nodes, text, line)


# ---- every key of a line, for a built program ---------------------------------------

def line_columns(source: Source, lines: int, chunk=None) -> list[dict[Key, int | bool]]:
    """For each line 1..`lines`, the column of each key a message there could
    produce that resolves: a built program looks a message's keys up in
    it, as column_for resolves them (runtime/project/error_keys.lua).  A key
    whose parameter the line does not show reads as the key with OTHER there
    (other_key); a shown one that does not resolve, where OTHER's does, is
    stored as False.  A source that does not parse: no keys.  `chunk`: the
    source's tree where the caller has parsed it already (a build has)."""
    parsed = _parsed(source) if chunk is None else _nodes_and_text(chunk, source)
    if parsed is None:
        return [{} for _ in range(lines)]
    nodes, text = parsed
    by_line: list[list] = [[] for _ in range(lines + 1)]
    for node in filter(lambda node: isinstance(node, _CONSTRUCTS), nodes):
        for line in range(node.span.line, min(node.span.end_line, lines) + 1):
            by_line[line].append(node)
    return [_columns(by_line[line], text, line) for line in range(1, lines + 1)]


def _columns(nodes: list, text: "_Text", line: int) -> dict[Key, int | bool]:
    """The line's table: the column of each key that resolves, but for a key
    whose column the keys always after it give anyway (error_keys.successor).
    A line no construct touches (blank, past the source's end) has none."""
    if not nodes:
        return {}
    found = {key: resolve(resolved, among, text, line) for key, resolved, among in _line_keys(nodes)}

    def from_on(key: Key | None | bool) -> int | None:
        """The column the lookup gives from `key` on (None: it depends on the message)."""
        if key is None:
            return text.first_non_blank(line)
        if key is False:
            return None
        col = found.get(key)  # a key not enumerated does not resolve
        return col if col is not None else from_on(successor(key))

    stored: dict[Key, int | bool] = {}
    for key, col in found.items():
        # where `key` is absent boot.lua reads its OTHER key (kept whole), else the keys after it
        other = other_key(key) if key[1:] else key
        read_instead = found.get(other) if other != key else None
        absent = read_instead if read_instead is not None else from_on(successor(key))
        if col is not None and (other == key or col != absent):
            stored[key] = col
        elif col is None and read_instead is not None:
            stored[key] = False
    return stored


def _line_keys(nodes: list) -> Iterator[tuple[Key, Key, list]]:
    """(key, the key resolved for it, the nodes it may find): each key of
    error_keys.py whose parameters the line's nodes show (a superset), and
    OTHER where a parameter the line does not show may still resolve (an
    argument past every call's last, a span index not written as that
    number).  A key naming a value may find only the nodes that show it."""
    showing: dict[str, list] = {}
    calling: dict[str, list] = {"?": []}
    for node in nodes:
        for name in sorted(set(_shown_names(node)) - {None}):  # sorted: the tables are built alike each time
            showing.setdefault(name, []).append(node)
        if isinstance(node, (ast.Call, ast.MethodCall)):
            for callee in sorted({_callee_name(node), "?"} - {None}):
                calling.setdefault(callee, []).append(node)
    arity = max((len(node.args) for node in calling["?"]), default=0)
    for kind in (*_OPERATIONS, "member"):
        yield from (((kind, name),) * 2 + (among,) for name, among in showing.items())
    for kind in (*_OPERATIONS, "order", "division", "table_key", "switch", "index_key", "calls"):
        yield (kind,), (kind,), nodes
    for callee, among in calling.items():
        yield ("callee", callee), ("callee", callee), among
        yield ("arg", OTHER, callee), ("arg", str(arity + 1), callee), among
        yield from ((("arg", str(n), callee),) * 2 + (among,) for n in range(arity + 1))
    for op in sorted({node.op for node in nodes if isinstance(node, (ast.BinOp, ast.UnOp))}):
        yield ("bitwise", op), ("bitwise", op), nodes
    for part in ("initial value", "limit", "step"):
        yield ("for", part), ("for", part), nodes
    for event in _METAMETHODS:
        yield ("metamethod", event), ("metamethod", event), nodes
    yield ("span", OTHER), ("span", ""), nodes  # no number is written as ""
    numbers = {node.key.raw for node in nodes if isinstance(node, ast.Index) and isinstance(node.key, ast.Number)}
    for written in sorted(numbers):
        yield ("span", written), ("span", written), nodes


def _shown_names(node) -> Iterator[str | None]:
    """The names a message could give a value of `node` or of its operands."""
    yield _member_name(node)
    for expr in (node, *(getattr(node, part, None) for part in ("obj", "func", "left", "right", "operand"))):
        yield _value_name(expr)


# ---- the queries of the keys ----------------------------------------------------

@dataclass(frozen=True)
class _Query:
    """Constructs of one kind (`candidates` yields their points), of those only
    the ones `named` accepts, if given (a call of the function the message names)."""

    candidates: Candidates
    named: Callable[[object], bool] | None = None


# every kind of node a query finds (the others are never a candidate)
_CONSTRUCTS = (ast.Assign, ast.BinOp, ast.Call, ast.Field, ast.GenericFor, ast.Index, ast.MethodCall, ast.NumericFor,
               ast.Switch, ast.TableField, ast.UnOp)
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "^", "//"})  # `//` runs as a division in Lua
_ORDER = frozenset(ORDER_OPERATORS)
_DIVISION = frozenset({"/", "//", "%"})


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


_OPERATIONS = {"index": _indexing, "call": _callings, "concat": _operands({".."}, ()),
               "len": _operands((), {"#"}), "arith": _operands(_ARITHMETIC, {"-"})}


# the constructs of each metamethod's operation (runtime/error_keys.py's events)
_METAMETHODS = {event: _indexing(None) if operators is None else _operators(*operators)
                for event, operators in METAMETHODS.items()}


def _operation_query(operation: Callable[[str | None], Candidates]) -> Callable[..., _Query]:
    return lambda name=None: _Query(operation(name))


_QUERIES: dict[str, Callable[..., _Query]] = {
    **{kind: _operation_query(operation) for kind, operation in _OPERATIONS.items()},
    "order": lambda: _Query(_operators(_ORDER)),
    "bitwise": lambda op: _Query(_operators({op}, {op})),
    "division": lambda: _Query(_operators(_DIVISION)),
    "arg": lambda n, callee: _Query(_arguments(int(n)), _named_callee(callee)),
    "for": lambda part: _Query(_for_part(part)),
    "table_key": lambda: _Query(_table_keys),
    "switch": lambda: _Query(_switches),
    "span": lambda written: _Query(_index_keys, _keyed(written)),
    "index_key": lambda: _Query(_index_keys),
    "member": lambda name: _Query(_members, lambda node: _member_name(node) == name),
    "metamethod": lambda event: _Query(_METAMETHODS[event]),
    "callee": lambda name: _Query(_calls, _named_callee(name)),
    "calls": lambda: _Query(_calls),
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
    if name is not None and isinstance(expr, (ast.Field, ast.Index)):
        return _key_point(expr)
    return _start(expr.span)


def _key_point(node) -> Point:
    """An indexing's key: a field's name, an index's key, a method's name."""
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
        if line > len(self.line_starts):  # past the text (its Lua may have a line more): a blank line's
            return 1
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return first_non_blank_column(self.text[self.line_starts[line - 1]:end])


# blanks (Lua's), a long comment (`--[==[ ... ]==]`), a line comment
_TRIVIA = re.compile(r"[ \t\n\v\f\r]+|--\[(?P<eq>=*)\[.*?\](?P=eq)\]|--[^\r\n]*", re.S)


@lru_cache(maxsize=16)
def _parsed(source: Source) -> tuple[list, _Text] | None:
    """Every node of the source's tree, and its text; None if it does not parse."""
    from nupp.frontend.parser import parse  # the compiler is loaded only when an error is shown
    try:
        chunk = parse(source)
    except NuppError:
        return None
    return _nodes_and_text(chunk, source)


def _nodes_and_text(chunk, source: Source) -> tuple[list, _Text]:
    from nupp.frontend.parser import lua_text
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
