"""The Nupp abstract syntax tree.

Every node is a frozen dataclass carrying `span`, its position in the source.
Spans never take part in equality, so a tree parsed from pretty-printed source
compares equal to the original.  Literals keep their source text (`raw`):
LuaJIT reads numerals and escapes exactly as the user wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache
from typing import Optional, Union


@dataclass(frozen=True)
class Span:
    line: int
    col: int
    end_line: int
    end_col: int


NO_SPAN = Span(0, 0, 0, 0)


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# ---- types and declarations -------------------------------------------------

@dataclass(frozen=True)
class TypeRef:
    """`int32`, `span.Span<Pixel>`, or `nil` (path ("nil",))."""

    path: tuple[str, ...]
    args: tuple["TypeRef", ...] = ()
    span: Span = _span()

    @property
    def name(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class Param:
    name: str
    type: Optional[TypeRef] = None
    qualifier: Optional[str] = None  # "exclusive" | "borrows"
    span: Span = _span()


@dataclass(frozen=True)
class Attribute:
    """`@aot` or `@aot(vectorize = false)`."""

    name: str
    args: tuple[tuple[str, "Expr"], ...] = ()
    has_parens: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class FuncBody:
    params: tuple[Param, ...]
    is_vararg: bool
    returns: Optional[TypeRef]
    body: "Block"
    span: Span = _span()


# ---- expressions -------------------------------------------------------------

@dataclass(frozen=True)
class Nil:
    span: Span = _span()


@dataclass(frozen=True)
class Bool:
    value: bool
    span: Span = _span()


@dataclass(frozen=True)
class Number:
    raw: str
    span: Span = _span()


@dataclass(frozen=True)
class String:
    raw: str  # with its quotes or long brackets
    span: Span = _span()


@dataclass(frozen=True)
class Vararg:
    span: Span = _span()


@dataclass(frozen=True)
class Function:
    func: FuncBody
    span: Span = _span()


@dataclass(frozen=True)
class TableField:
    """`[k] = v` (kind "keyed"), `k = v` ("named", key a String-free name) or `v` ("positional")."""

    kind: str
    value: "Expr"
    key: Union["Expr", str, None] = None
    span: Span = _span()


@dataclass(frozen=True)
class Table:
    fields: tuple[TableField, ...]
    span: Span = _span()


# Binding power of the binary operators, loosest first (Lua 5.3's order, which
# the parser applies and the printers respect); unary operators bind tighter
# than every binary operator but `^`, which is right associative like `..`.
BINARY_PRECEDENCE = {
    "or": 1, "and": 2,
    "<": 3, ">": 3, "<=": 3, ">=": 3, "~=": 3, "==": 3,
    "|": 4, "~": 5, "&": 6, "<<": 7, ">>": 7,
    "..": 9, "+": 10, "-": 10,
    "*": 11, "/": 11, "//": 11, "%": 11,
    "^": 14,
}
RIGHT_ASSOCIATIVE = frozenset({"..", "^"})
UNARY_PRECEDENCE = 12


@dataclass(frozen=True)
class BinOp:
    op: str
    left: "Expr"
    right: "Expr"
    span: Span = _span()


@dataclass(frozen=True)
class UnOp:
    op: str  # "not", "#", "-", "~"
    operand: "Expr"
    span: Span = _span()


@dataclass(frozen=True)
class Name:
    id: str
    span: Span = _span()


@dataclass(frozen=True)
class Index:
    obj: "Expr"
    key: "Expr"
    span: Span = _span()


@dataclass(frozen=True)
class Field:
    obj: "Expr"
    name: str
    span: Span = _span()
    name_span: Span = _span()  # where `name` of `.name` is: LuaJIT's line for indexing by it


@dataclass(frozen=True)
class Call:
    func: "Expr"
    args: tuple["Expr", ...]
    span: Span = _span()


@dataclass(frozen=True)
class MethodCall:
    obj: "Expr"
    method: str
    args: tuple["Expr", ...]
    span: Span = _span()
    method_span: Span = _span()  # where `name` of `:name` is: LuaJIT's line for looking it up


@dataclass(frozen=True)
class Paren:
    expr: "Expr"
    span: Span = _span()


@dataclass(frozen=True)
class Pattern:
    """A switch case pattern: kind "number" (raw may start with '-'), "string",
    "true", "false", "nil", or "type" (with `type`)."""

    kind: str
    raw: str = ""
    type: Optional[TypeRef] = None
    span: Span = _span()


@dataclass(frozen=True)
class SwitchArm:
    """`case p1, p2 -> expr` or `case p do block end`; `patterns` is empty for `else`."""

    patterns: tuple[Pattern, ...]
    expr: Optional["Expr"] = None
    block: Optional["Block"] = None
    span: Span = _span()


@dataclass(frozen=True)
class Switch:
    subject: "Expr"
    arms: tuple[SwitchArm, ...]
    otherwise: Optional[SwitchArm] = None
    span: Span = _span()


Expr = Union[Nil, Bool, Number, String, Vararg, Function, Table, BinOp, UnOp,
             Name, Index, Field, Call, MethodCall, Paren, Switch]
LEAVES = frozenset({Nil, Bool, Number, String, Vararg, Name})  # expressions without parts


# ---- statements ---------------------------------------------------------------

@dataclass(frozen=True)
class Local:
    names: tuple[Param, ...]  # a Param without qualifier: name and optional type
    values: tuple[Expr, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Assign:
    targets: tuple[Expr, ...]
    values: tuple[Expr, ...]
    span: Span = _span()


@dataclass(frozen=True)
class CallStat:
    call: Union[Call, MethodCall]
    span: Span = _span()


@dataclass(frozen=True)
class Do:
    body: "Block"
    span: Span = _span()


@dataclass(frozen=True)
class While:
    cond: Expr
    body: "Block"
    span: Span = _span()


@dataclass(frozen=True)
class Repeat:
    body: "Block"
    cond: Expr
    span: Span = _span()


@dataclass(frozen=True)
class If:
    """`if c1 then b1 elseif c2 then b2 ... else orelse end`."""

    clauses: tuple[tuple[Expr, "Block"], ...]
    orelse: Optional["Block"] = None
    span: Span = _span()


@dataclass(frozen=True)
class NumericFor:
    var: str
    start: Expr
    stop: Expr
    step: Optional[Expr]
    body: "Block"
    span: Span = _span()


@dataclass(frozen=True)
class GenericFor:
    names: tuple[str, ...]
    exprs: tuple[Expr, ...]
    body: "Block"
    span: Span = _span()


@dataclass(frozen=True)
class FunctionStat:
    """`function a.b.c:m(...) ... end`: `path` is ("a", "b", "c"), `method` "m"."""

    path: tuple[str, ...]
    method: Optional[str]
    func: FuncBody
    attributes: tuple[Attribute, ...] = ()
    span: Span = _span()


@dataclass(frozen=True)
class LocalFunction:
    name: str
    func: FuncBody
    attributes: tuple[Attribute, ...] = ()
    span: Span = _span()


@dataclass(frozen=True)
class StructField:
    name: str
    type: TypeRef
    span: Span = _span()


@dataclass(frozen=True)
class StructDecl:
    name: str
    fields: tuple[StructField, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Return:
    values: tuple[Expr, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Break:
    span: Span = _span()


@dataclass(frozen=True)
class SwitchStat:
    switch: Switch
    span: Span = _span()


@dataclass(frozen=True)
class Goto:
    label: str
    span: Span = _span()


@dataclass(frozen=True)
class Label:
    """`::name::`"""

    name: str
    span: Span = _span()


Stat = Union[Local, Assign, CallStat, Do, While, Repeat, If, NumericFor, GenericFor,
             FunctionStat, LocalFunction, StructDecl, Return, Break, SwitchStat, Goto, Label]


@dataclass(frozen=True)
class Block:
    stats: tuple[Stat, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Chunk:
    """A whole source file."""

    body: Block
    span: Span = _span()


@cache
def field_names(cls) -> tuple[str, ...]:
    """A node class's fields but its span, in order (`dataclasses.fields` is
    too slow to ask once per node of a large program)."""
    return tuple(f.name for f in fields(cls) if f.name != "span")
