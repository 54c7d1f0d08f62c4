"""Scalar IR nodes: small, immutable, typed, each with its source location.

The IR is structured (no basic blocks): a function body is a tuple of
statements, and expressions are trees whose every node has one width.
Widths change only at conversion ops (`promote.f32.f64`, `narrow.f64.f32`,
...), which the lowering writes down wherever the source converts, and at a
Store, which converts to its field's storage (scalar_ir/widths.FieldStorage:
an integer field reduces, a float field narrows a binary64 itself).

Expressions                          Statements
  Const   a literal at a width         Let     declare a local (value optional)
  Var     a local or parameter         Assign  set a local
  Op      an opcode of ops.OPS         Store   s[i].field = value
  Load    s[i].field (i a counter)     If      ordered if/else, optional switch labels
  Len     #s (int32)                   For     counted loop over an int32 counter
  Call    another @aot function        While, Break, Return, Assert, Eval

Element references (`local e = s[i]`) are resolved by the lowering: `e.x`
becomes `Load(s, i, "x")`, sound because a loop counter is never assigned.

Lane IR (lane_rewrite/rewrite.py) is this IR plus one statement, `Gang`:
an outermost span loop rewritten to run G consecutive iterations at once,
naming its varying locals; inside a gang, an If / While / For whose condition
or bounds vary is marked `masked` (its lanes may part ways).  Scalar passes
and the scalar emitter never see either.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import Optional, Union

from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.widths import Width


@dataclass(frozen=True)
class Loc:
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.line}:{self.col}"


NO_LOC = Loc(0, 0)


def _loc():
    return field(default=NO_LOC, compare=False)


# ---- expressions ------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Const:
    """A literal: a Python int for integer widths, a float (exact at the width)
    for f64/f32, a bool for bool.  Two constants are equal when their widths
    and bits are: NaN equals NaN, -0.0 differs from 0.0."""

    value: Union[int, float, bool]
    width: Width
    loc: Loc = _loc()

    def __post_init__(self):
        # an int that a float holds exactly becomes that float; any other
        # stays as it is, for the verifier to refuse
        if (self.width in (Width.F64, Width.F32) and type(self.value) is int
                and float(self.value) == self.value):
            object.__setattr__(self, "value", float(self.value))

    def _key(self):
        if isinstance(self.value, float):
            return self.width, struct.pack("<d", self.value)
        return self.width, type(self.value), self.value

    def __eq__(self, other) -> bool:
        return isinstance(other, Const) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True)
class Var:
    name: str
    width: Width
    loc: Loc = _loc()


@dataclass(frozen=True)
class Op:
    op: str
    args: tuple["Expr", ...]
    loc: Loc = _loc()

    @property
    def width(self) -> Width:
        return OPS[self.op].result


@dataclass(frozen=True)
class Load:
    """`span[index].field`; `width` is the field's load width (a float field loads binary64)."""

    span: str
    index: str
    field: str
    width: Width
    loc: Loc = _loc()


@dataclass(frozen=True)
class Len:
    span: str
    loc: Loc = _loc()

    @property
    def width(self) -> Width:
        return Width.I32


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple["Expr", ...]
    width: Optional[Width]  # None: the callee returns nothing
    loc: Loc = _loc()


Expr = Union[Const, Var, Op, Load, Len, Call]


# ---- statements ---------------------------------------------------------------

@dataclass(frozen=True)
class Let:
    name: str
    width: Width
    value: Optional[Expr]
    loc: Loc = _loc()


@dataclass(frozen=True)
class Assign:
    name: str
    value: Expr
    loc: Loc = _loc()


@dataclass(frozen=True)
class Store:
    """`span[index].field = value`: a float field takes binary32, a number field
    binary64, an integer field any integer width reduced modulo 2^bits."""

    span: str
    index: str
    field: str
    value: Expr
    loc: Loc = _loc()


@dataclass(frozen=True)
class SwitchLabels:
    """Exact-width case labels of a lowered switch initializer: the If chain
    tests `selector == label` for each arm's labels, in order; `default` says
    the last else is the switch's else arm."""

    selector: str
    width: Width
    cases: tuple[tuple[int, ...], ...]
    default: bool


@dataclass(frozen=True)
class If:
    cond: Expr
    then: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...] = ()
    labels: Optional[SwitchLabels] = None
    loc: Loc = _loc()
    masked: bool = False  # lane IR: the condition varies across the gang


@dataclass(frozen=True)
class For:
    """`for var = start, stop, step`: int32 counter, `step` a non-zero literal."""

    var: str
    start: Expr
    stop: Expr
    step: int
    body: tuple["Stmt", ...]
    loc: Loc = _loc()
    masked: bool = False  # lane IR: the bounds vary across the gang


@dataclass(frozen=True)
class While:
    cond: Expr
    body: tuple["Stmt", ...]
    loc: Loc = _loc()
    masked: bool = False  # lane IR: the condition varies across the gang


@dataclass(frozen=True)
class Gang:
    """Lane IR: `for var = start, stop, 1` run as gangs of `size` consecutive
    iterations, lane k of a gang doing iteration base + k, exactly as the
    scalar loop would; the n mod size iterations left over run as the scalar
    loop.  The rewrite leaves `size` None; the sizing step
    (lane_rewrite/gang_size.py) sets it, and `vector_bits`, per loop for a
    target, and emitters read both.  `varying` names the locals holding one
    value per lane (the counter, locals set from loads or under masked
    control); every other local read in the body is uniform, one value for
    the whole gang."""

    var: str
    start: Expr
    stop: Expr
    size: Optional[int]  # None: not sized yet
    varying: tuple[str, ...]  # sorted
    body: tuple["Stmt", ...]
    loc: Loc = _loc()
    # outside locals accumulated with an exact op, (name, op) sorted: each lane
    # accumulates its own, combined into the local after the gangs
    reductions: tuple[tuple[str, str], ...] = ()
    # the widest vector lane C may hold a varying value of this gang in, in bits
    # (one of VECTOR_BITS; None: the target's widest register): a gang whose
    # values need more runs as several vectors of this width
    vector_bits: Optional[int] = None

    def scalar_loop(self) -> "For":
        """The loop this gang came from (its tail runs it), masks dropped."""
        return For(self.var, self.start, self.stop, 1, _unmasked(self.body), self.loc)


@dataclass(frozen=True)
class Break:
    loc: Loc = _loc()


@dataclass(frozen=True)
class Return:
    value: Optional[Expr]
    loc: Loc = _loc()


@dataclass(frozen=True)
class Assert:
    cond: Expr
    message: str
    loc: Loc = _loc()


@dataclass(frozen=True)
class Eval:
    """A call statement whose result (if any) is dropped."""

    expr: Call
    loc: Loc = _loc()


Stmt = Union[Let, Assign, Store, If, For, While, Break, Return, Assert, Eval, Gang]


def _unmasked(stmts) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, If):
            s = replace(s, then=_unmasked(s.then), orelse=_unmasked(s.orelse), masked=False)
        elif isinstance(s, (For, While)):
            s = replace(s, body=_unmasked(s.body), masked=False)
        out.append(s)
    return tuple(out)


# ---- functions and modules -------------------------------------------------------

@dataclass(frozen=True)
class StructDef:
    name: str
    fields: tuple[tuple[str, str], ...]  # (field name, storage type name)

    def field_type(self, name: str) -> Optional[str]:
        return dict(self.fields).get(name)


@dataclass(frozen=True)
class SpanType:
    struct: str
    writable: bool

    def __str__(self) -> str:
        return f"span<{self.struct}> {'write' if self.writable else 'read'}"


@dataclass(frozen=True)
class Param:
    name: str
    type: Union[Width, SpanType]
    qualifier: Optional[str] = None  # "exclusive" | "borrows" for spans


DISJOINT, SHARED_READ = "disjoint", "shared-read"


@dataclass(frozen=True)
class AliasFact:
    """What may be assumed of two span parameters' memory."""

    a: str
    b: str
    fact: str  # DISJOINT | SHARED_READ


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[Param, ...]
    result: Optional[Width]  # None: returns nothing
    body: tuple[Stmt, ...]
    aliases: tuple[AliasFact, ...] = ()
    vectorize: bool = True
    loc: Loc = _loc()

    def span_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if isinstance(p.type, SpanType))


@dataclass(frozen=True)
class Module:
    structs: tuple[StructDef, ...]
    functions: tuple[Function, ...]

    def struct(self, name: str) -> Optional[StructDef]:
        return next((s for s in self.structs if s.name == name), None)

    def function(self, name: str) -> Optional[Function]:
        return next((f for f in self.functions if f.name == name), None)
