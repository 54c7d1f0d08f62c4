"""Generated programs as trees: expressions, statements, functions, programs, batches.

The generator (generator.py) builds these; `render` turns them into Nupp
source; the minimizer (minimize.py) edits them (drops statements, unwraps
blocks, replaces an expression by a part of it) and renders again.  A tree
knows nothing of typing: whether an edited tree is still a program is the
compiler's front end's call (`nupp check`), which the minimizer asks.

    Expr      width, a format (`({0} + {1})`) and its operand trees
    Call      an Expr calling a Function (rendered with that function's name)
    Line      a one-line statement: a format and its expressions
    If / For / While / Repeat / Do / SwitchLocal    the compound statements
    Function  `@aot local function NAME(PARAMS): RESULT  BODY end`
    Program   its functions (helpers first), the entry's signature; one unit of fuzzing
    Batch     many programs in one module (so one C compile serves them all)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

INDENT = "    "

# The widths of LANGUAGE.md section 2, as the generator spells them.
WIDTHS = ("i32", "u32", "i64", "u64", "f64", "f32", "bool")
# type names a parameter, local or result may be written with, per width
TYPE_NAMES = {"i32": ("int32",), "u32": ("uint32",), "i64": ("int64",), "u64": ("uint64",),
              "f64": ("number", "double"), "f32": ("float",), "bool": ("boolean",)}
TYPE_WIDTH = {name: w for w, names in TYPE_NAMES.items() for name in names}


# ---- expressions ------------------------------------------------------------------------------

@dataclass
class Expr:
    """An expression of one width: `form` with `{0}`, `{1}`... for its operands.

    `literal`: an unsuffixed numeral, which takes its context's width (so at
    most one operand of an operator is one).  `fails`: this node itself may
    raise (an integer // or % whose divisor may be zero; calls are `Call`s).
    `varying`: it reads a load or the span loop's counter (differs per lane).
    `bounds`: it keeps a loop finite (a while's counter test, a for's masked
    bound): the minimizer keeps it (it may edit its operands)."""

    width: str
    form: str
    kids: list["Expr"] = field(default_factory=list)
    literal: bool = False
    fails: bool = False
    varying: bool = False
    bounds: bool = False

    def text(self) -> str:
        return self.form.format(*(k.text() for k in self.kids))

    @property
    def raises(self) -> bool:
        return self.fails or any(k.raises for k in self.kids)

    @property
    def varies(self) -> bool:
        return self.varying or any(k.varies for k in self.kids)

    def nodes(self):
        """This node and every node under it, parents first."""
        yield self
        for k in self.kids:
            yield from k.nodes()


@dataclass
class Call(Expr):
    """A call of another @aot function: rendered with the callee's current name."""

    callee: Optional["Function"] = None

    def text(self) -> str:
        return f"{self.callee.name}({', '.join(k.text() for k in self.kids)})"

    @property
    def raises(self) -> bool:
        return True  # the callee may assert or divide by zero


# ---- statements ---------------------------------------------------------------------------------

@dataclass
class Line:
    """A one-line statement (local, assignment, store, break, return, assert, call; "step": a
    while's counter step, which keeps it finite)."""

    kind: str
    form: str
    exprs: list[Expr] = field(default_factory=list)

    def render(self, depth: int) -> list[str]:
        return [INDENT * depth + self.form.format(*(e.text() for e in self.exprs))]

    def blocks(self) -> list[list]:
        return []


@dataclass
class If:
    clauses: list[list]                       # [condition, block] of the if and each elseif
    orelse: Optional[list] = None
    kind: str = "if"

    @property
    def exprs(self) -> list[Expr]:
        return [c for c, _ in self.clauses]

    def render(self, depth: int) -> list[str]:
        out = []
        for k, (cond, body) in enumerate(self.clauses):
            out.append(INDENT * depth + f"{'if' if k == 0 else 'elseif'} {cond.text()} then")
            out += render_block(body, depth + 1)
        if self.orelse is not None:
            out.append(INDENT * depth + "else")
            out += render_block(self.orelse, depth + 1)
        out.append(INDENT * depth + "end")
        return out

    def blocks(self) -> list[list]:
        return [b for _, b in self.clauses] + ([self.orelse] if self.orelse is not None else [])


@dataclass
class For:
    var: str
    start: Expr
    stop: Expr
    step: str          # "" (the default 1) or ", 2", ", -1", ...
    body: list
    kind: str = "for"

    @property
    def exprs(self) -> list[Expr]:
        return [self.start, self.stop]

    def render(self, depth: int) -> list[str]:
        head = f"for {self.var} = {self.start.text()}, {self.stop.text()}{self.step} do"
        return [INDENT * depth + head, *render_block(self.body, depth + 1), INDENT * depth + "end"]

    def blocks(self) -> list[list]:
        return [self.body]


@dataclass
class While:
    cond: Expr
    body: list
    kind: str = "while"

    @property
    def exprs(self) -> list[Expr]:
        return [self.cond]

    def render(self, depth: int) -> list[str]:
        return [INDENT * depth + f"while {self.cond.text()} do", *render_block(self.body, depth + 1),
                INDENT * depth + "end"]

    def blocks(self) -> list[list]:
        return [self.body]


@dataclass
class Repeat:
    body: list
    cond: Expr
    kind: str = "repeat"

    @property
    def exprs(self) -> list[Expr]:
        return [self.cond]

    def render(self, depth: int) -> list[str]:
        return [INDENT * depth + "repeat", *render_block(self.body, depth + 1),
                INDENT * depth + f"until {self.cond.text()}"]

    def blocks(self) -> list[list]:
        return [self.body]


@dataclass
class Do:
    body: list
    kind: str = "do"

    @property
    def exprs(self) -> list[Expr]:
        return []

    def render(self, depth: int) -> list[str]:
        return [INDENT * depth + "do", *render_block(self.body, depth + 1), INDENT * depth + "end"]

    def blocks(self) -> list[list]:
        return [self.body]


@dataclass
class SwitchLocal:
    """`local NAME[: T] = switch SELECTOR do case L, ... -> VALUE ... else -> VALUE end`."""

    head: str                          # "local r: int32" or "local r"
    selector: Expr
    arms: list[list]                   # [labels as written, value]
    otherwise: Expr
    kind: str = "switch"

    @property
    def exprs(self) -> list[Expr]:
        return [self.selector, *(v for _, v in self.arms), self.otherwise]

    def render(self, depth: int) -> list[str]:
        pad = INDENT * (depth + 1)
        return [INDENT * depth + f"{self.head} = switch {self.selector.text()} do",
                *(f"{pad}case {labels} -> {value.text()}" for labels, value in self.arms),
                f"{pad}else -> {self.otherwise.text()}", INDENT * depth + "end"]

    def blocks(self) -> list[list]:
        return []


def render_block(stmts: list, depth: int) -> list[str]:
    return [line for s in stmts for line in s.render(depth)]


def statements(stmts: list):
    """Every statement of a block, nested ones included, in source order."""
    for s in stmts:
        yield s
        for b in s.blocks():
            yield from statements(b)


# ---- functions, programs, batches -----------------------------------------------------------------

@dataclass
class Param:
    name: str
    type: str                      # "int32", "span.WriteSpan<Out>", ...
    qualifier: Optional[str] = None  # "exclusive" | "borrows"

    def render(self) -> str:
        return f"{self.qualifier + ' ' if self.qualifier else ''}{self.name}: {self.type}"


@dataclass(eq=False)
class Function:
    name: str
    params: list[Param]
    result: str          # a type name, or "nil"
    body: list
    attribute: str = "@aot"

    def render(self) -> list[str]:
        head = f"local function {self.name}({', '.join(p.render() for p in self.params)}): {self.result}"
        return [self.attribute, head, *render_block(self.body, 1), "end", ""]


@dataclass
class SpanArg:
    """A span argument of the entry: its struct, and whether it is written."""

    struct: str
    writable: bool


@dataclass
class Program:
    """One generated program: helpers, then the entry function the runner calls.

    `spans` and `scalars` are the entry's parameters in order (spans first).
    A program whose functions repeat a name is `isolated` (it runs alone in its
    module: a compiler may refuse it whole) and carries `twin`, the same
    program with the earlier definitions renamed: under Lua's rules for
    `local function` both compute the same."""

    ident: str
    functions: list[Function]
    spans: list[SpanArg]
    scalars: list[str]            # widths of the scalar parameters after the spans
    result: str                   # the entry's result type name, or "nil"
    isolated: bool = False
    twin: Optional["Program"] = None

    @property
    def entry(self) -> Function:
        return self.functions[-1]

    def render(self) -> list[str]:
        return [line for f in self.functions for line in f.render()]


STRUCTS = {
    # every storage type, under names that say which
    "In": (("i8", "int8"), ("u8", "uint8"), ("i16", "int16"), ("u16", "uint16"), ("i32", "int32"),
           ("u32", "uint32"), ("i64", "int64"), ("u64", "uint64"), ("f32", "float"), ("f64", "number"),
           ("d64", "double")),
    # 4-byte fields only: gangs of 16 at v4, and twelve of them for register pressure
    "Q": tuple((f"a{k}", "int32") for k in range(1, 7)) + tuple((f"b{k}", "uint32") for k in range(1, 4))
    + tuple((f"c{k}", "float") for k in range(1, 4)),
}
STRUCTS["Out"] = STRUCTS["In"]
STRUCTS["R"] = (("r1", "int32"), ("r2", "uint32"), ("r3", "float"), ("r4", "int32"))
# mixed sizes with padding between them, and 8-byte fields only (lane C's loads differ for each)
STRUCTS["P"] = (("b1", "int8"), ("x", "number"), ("h", "uint16"), ("f", "float"), ("q", "int64"), ("c", "uint8"))
STRUCTS["W"] = (("w", "int16"), ("d", "double"), ("g", "float"), ("z", "uint64"))
STRUCTS["E"] = (("l", "int64"), ("m", "uint64"), ("n", "number"), ("o", "double"))
# 4- and 8-byte fields: blocks of 8-byte words, a 4-byte field in either half of
# one (B) or beside padding (H), which lane C merges into its word on a store
STRUCTS["B"] = (("bx", "number"), ("bm", "float"), ("bk", "int32"), ("bq", "int64"))
STRUCTS["H"] = (("hd", "double"), ("hf", "float"))
# (input, output) struct pairs a kernel's spans take
LAYOUTS = (("In", "Out"), ("In", "Out"), ("Q", "R"), ("P", "W"), ("E", "E"), ("H", "B"), ("B", "H"))

HEADER = ["local span = nupp.mem.span", "local f32 = nupp.math.f32", "local nmath = nupp.math",
          "local mth = math", ""]


def module_text(programs: list[Program]) -> str:
    """A module holding `programs`: the structs, their functions, a table of their entries."""
    lines = list(HEADER)
    for name, fields in STRUCTS.items():
        lines += [f"local struct {name}", *(f"{INDENT}{f}: {t}" for f, t in fields), "end", ""]
    for p in programs:
        lines += p.render()
    exports = [f"{n} = {n}" for n in STRUCTS] + [f"{p.entry.name} = {p.entry.name}" for p in programs]
    lines.append("return {" + ", ".join(exports) + "}")
    return "\n".join(lines) + "\n"
