"""A generator of whole, well-typed AOT programs that covers every construct of the subset.

`generate(seed, ident)` draws one `Program` (program.py) from a seeded
`random.Random`, so a seed names a program for good.  Typing is by
construction, from LANGUAGE.md sections 2-6 (independently of the checker):
every expression is drawn at a width, from operands of the widths its
operator admits; an unsuffixed literal appears only where a context gives it
its width (beside an established operand, a typed initializer, a call
argument, a shift count); loops are bounded (for ranges masked small, every
while and repeat has a counter), so a run that hangs is a compiler bug.

A program is helpers (scalar parameters of every width, asserts, early
returns, loops, integer divisions that may raise) then an entry: mostly a
kernel over spans

    @aot local function pN_k(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<In>,
                             [borrows aux: span.Span<In>,] <scalar parameters>): <result>
        assert(#out == #inp, "length mismatch") ...
        <function-level statements: locals, an early return, a non-span loop>
        for i = 1, #out do  <statements; stores to out>  end   (one or two span loops)
        return <expr>
    end

and sometimes a scalar function.  Besides random statements, span loops get
the shapes that once broke lane C (`MOTIFS`): and/or whose right operand
can raise, uniform locals in a body that runs under a mask, masked whiles
with `and false`, empty inner fors and register pressure, masked whiles that
only compute (lane C's vectors go on one by one); and now and then a
program defines one function name twice.

`avoid` names known-bug shapes the generator leaves out (KNOWN_BUG_SHAPES),
to look for other bugs while those are being fixed; by default it avoids none.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Callable, Optional

from .program import (LAYOUTS, STRUCTS, TYPE_NAMES, Call, Do, Expr, For, Function, If, Line, Param, Program, Repeat,
                      SpanArg, SwitchLocal, While, statements)

KNOWN_BUG_SHAPES = {
    "raising-right-operand": "and/or whose right operand can raise (lane C evaluates it in every lane)",
    "uniform-local-in-loop": "a uniform local declared or assigned in a span loop (lane C asserts under a mask)",
    "duplicate-names": "two @aot functions of one name",
    "shift-count-64": "a shift whose count is an int64 or uint64",
}

NUMERIC = ("i32", "u32", "i64", "u64", "f64", "f32")
INTEGER = ("i32", "u32", "i64", "u64")
FIELD_WIDTH = {"int8": "i32", "uint8": "i32", "int16": "i32", "uint16": "i32", "int32": "i32",
               "uint32": "u32", "int64": "i64", "uint64": "u64", "float": "f64", "number": "f64",
               "double": "f64"}
# what a local, parameter or result of width W takes (LANGUAGE.md sections 2 and 4; no narrowing
# for call arguments, so f32 takes f32 only there)
ASSIGNABLE = {"f64": NUMERIC, "f32": ("f64", "f32"), "i64": ("i32", "u32", "i64"), "u64": ("u32", "u64"),
              "i32": ("i32",), "u32": ("u32",), "bool": ("bool",)}
ARGUMENT = dict(ASSIGNABLE, f32=("f32",))
# what each field type takes in a store
STORABLE = {"float": ("f64", "f32"), "number": NUMERIC, "double": NUMERIC}
INT_STORABLE = INTEGER

# unsuffixed literals, by the width their context gives them (they fit it)
LITERALS = {
    "i32": ("0", "1", "2", "3", "7", "31", "32", "255", "0xFF", "65535", "(-1)", "(-7)", "2147483647",
            "(-2147483648)", "0x7FFFFFFF"),
    "u32": ("0", "1", "2", "7", "255", "65536", "2147483648", "4294967295", "0xFFFFFFFF"),
    "i64": ("0", "1", "7", "(-1)", "4294967296", "(-2147483648)"),
    "u64": ("0", "1", "7", "4294967296", "0xFFFFFFFF"),
    "f64": ("0.5", "0.1", "1e300", "(-0.0)", "3.0", "(-2.5)", "1e-310", "4294967296.0", "1.5", "0x1p-3",
            "(-1e300)", "2.0", "1e309"),
    "f32": ("0.5", "(-2.5)", "3.0", "0.25", "1.0", "(-0.0)", "65504.0", "1e10"),
}
# suffixed literals: established by themselves
SUFFIXED = {
    "i64": ("0LL", "1LL", "(-1LL)", "9223372036854775807LL", "(-9223372036854775807LL)", "4294967296LL",
            "9007199254740993LL", "0x7FFFFFFFFFFFFFFFLL"),
    "u64": ("0ULL", "1ULL", "18446744073709551615ULL", "9223372036854775808ULL", "0xFFFFFFFFULL",
            "9007199254740993ULL"),
}
NONZERO_DIVISORS = {"i32": ("3", "(-1)", "7", "(-2147483648)"), "u32": ("3", "4294967295"),
                    "i64": ("3LL", "(-1LL)", "(-9223372036854775807LL)"), "u64": ("3ULL", "18446744073709551615ULL")}
MAX_DEPTH = 3  # of an expression tree
SHIFT_COUNTS = ("0", "1", "13", "31", "32", "33", "63", "64", "65", "(-1)")
COMPARE = ("<", "<=", ">", ">=", "==", "~=")
MESSAGES = ("refused", "out of range", "bad value", "nope")

F32_PREFIXES = ("f32.", "nupp.math.f32.")          # through the module alias, or in full
INT_PREFIXES = ("nmath.", "nupp.math.")
MATH_PREFIXES = ("math.", "mth.")


@dataclass
class Var:
    name: str
    width: str
    varying: bool = False
    writable: bool = True


@dataclass
class Helper:
    function: Function
    params: list[str]     # widths
    result: Optional[str]  # width, None for nil
    raising: bool


@dataclass
class SpanLoop:
    counter: str
    spans: dict[str, str]          # span parameter -> struct, indexable with the counter
    writable: str                  # the WriteSpan parameter
    elements: dict[str, str] = field(default_factory=dict)  # element reference -> span
    unread: frozenset = frozenset()  # spans the loop only stores to


class Writer:
    """Draws programs; keeps the names in scope while it writes one function."""

    def __init__(self, rng: random.Random, avoid: frozenset[str] = frozenset(), ident: str = "p"):
        self.rng = rng
        self.avoid = avoid
        self.ident = ident
        self.raising = True                       # may what is written now raise?
        self.spans: dict[str, str] = {}           # the function's span parameters -> structs
        self.scopes: list[dict[str, Var]] = []
        self.helpers: list[Helper] = []
        self.loop: Optional[SpanLoop] = None      # the span loop being written
        self.loops = 0                            # enclosing loops (for break)
        self.over_spans = 0                       # enclosing loops whose bounds read a length
        self.varying_control = 0                  # enclosing if/while/for with varying control
        self.result: Optional[str] = None         # the current function's result width
        self.names = 0

    # ---- draws
    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(seq)

    def fresh(self, stem: str) -> str:
        self.names += 1
        return f"{stem}{self.names}"

    def declare(self, name: str, width: str, varying: bool, writable: bool = True) -> None:
        self.scopes[-1][name] = Var(name, width, varying or self.varying_control > 0, writable)

    def visible(self, width: str) -> list[Var]:
        found: dict[str, Var] = {}
        for scope in self.scopes:
            found.update(scope)
        return [v for v in found.values() if v.width == width]

    # ---- leaves ----------------------------------------------------------------------------
    def leaf(self, width: str, literal_ok: bool = False) -> Expr:
        options: list[Callable[[], Expr]] = []
        for v in self.visible(width):
            options.append(lambda v=v: Expr(width, v.name, varying=v.varying))
        if self.loop is not None:
            loads = self.loads(width)
            if loads:
                options += [lambda: self.pick(loads)] * 3
            if width == "i32":
                options.append(self.counter)
        if width == "i32" and self.spans:
            options.append(lambda: Expr("i32", f"#{self.pick(list(self.spans))}"))
        if width in SUFFIXED and (self.chance(0.3) or not options):
            options.append(lambda: Expr(width, self.pick(SUFFIXED[width])))
        if width == "bool" and (self.chance(0.3) or not options):
            options.append(lambda: Expr("bool", self.pick(("true", "false"))))
        if literal_ok and width in LITERALS and (self.chance(0.3) or not options):
            return Expr(width, self.pick(LITERALS[width]), literal=True)
        if width == "f32" and (not options or self.chance(0.3)):
            if self.chance(0.5):
                return Expr("f32", self.f32("narrow") + "({0})", [self.leaf("f64", literal_ok=True)])
            return Expr("f32", self.f32("fromBits") + "({0})", [self.leaf("u32", literal_ok=True)])
        if not options:
            return self.established(width)
        return self.pick(options)()

    def established(self, width: str) -> Expr:
        """A value of `width` made from nothing in scope (a conversion of a literal)."""
        return {"i32": lambda: Expr("i32", self.nmath("i32.wrap") + "({0})", [self.literal("f64")]),
                "u32": lambda: Expr("u32", self.nmath("u32.fromI32") + "({0})", [self.literal("i32")]),
                "i64": lambda: Expr("i64", self.pick(SUFFIXED["i64"])),
                "u64": lambda: Expr("u64", self.pick(SUFFIXED["u64"])),
                "f64": lambda: Expr("f64", self.math("abs") + "({0})", [self.literal("f64")]),
                "f32": lambda: Expr("f32", self.f32("narrow") + "({0})", [self.literal("f64")]),
                "bool": lambda: Expr("bool", self.pick(("true", "false")))}[width]()

    def literal(self, width: str) -> Expr:
        return Expr(width, self.pick(LITERALS[width]), literal=True)

    def loads(self, width: str) -> list[Expr]:
        """`s[i].f` and `e.f` of every field loading at `width`."""
        out = []
        for span, struct in self.loop.spans.items():
            if span in self.loop.unread:
                continue
            refs = [e for e, s in self.loop.elements.items() if s == span]
            for fname, ftype in STRUCTS[struct]:
                if FIELD_WIDTH[ftype] == width:
                    base = self.pick(refs) if refs and self.chance(0.5) else f"{span}[{self.loop.counter}]"
                    out.append(Expr(width, f"{base}.{fname}", varying=True))
        return out

    def counter(self) -> Expr:
        """The span loop's counter, as a value."""
        return Expr("i32", self.loop.counter, varying=True)

    # ---- spellings
    def f32(self, name: str) -> str:
        return self.pick(F32_PREFIXES) + name

    def nmath(self, name: str) -> str:
        return self.pick(INT_PREFIXES) + name

    def math(self, name: str) -> str:
        return self.pick(MATH_PREFIXES) + name

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, width: str, depth: Optional[int] = None, literal_ok: bool = False, raising: bool = True) -> Expr:
        """An expression of `width`; `raising=False`: nothing in it may raise (no call, no division
        by a value that may be zero)."""
        depth = self.rng.randint(0, MAX_DEPTH) if depth is None else depth
        if depth <= 0 or self.chance(0.2):
            return self.leaf(width, literal_ok)
        saved, self.raising = self.raising, self.raising and raising
        try:
            return getattr(self, "expr_" + width)(depth - 1)
        finally:
            self.raising = saved

    def operands(self, left: str, right: str, d: int) -> list[Expr]:
        """Two operands.  A bare literal takes the other operand's width, so one may be a literal
        only when both have one width (both may be when that is binary64)."""
        same = left == right
        lit_left = self.chance(0.5)
        return [self.expr(left, d, literal_ok=same and (lit_left or left == "f64")),
                self.expr(right, d, literal_ok=same and (not lit_left or left == "f64"))]

    def nonliteral(self, e: Expr) -> Expr:
        """`e`, or an established value of its width where `e` is a bare literal."""
        return self.established(e.width) if e.literal else e

    def binary(self, width: str, op: str, left: str, right: str, d: int) -> Expr:
        a, b = self.operands(left, right, d)
        if a.literal and b.literal and not left == right == "f64":
            b = self.nonliteral(b)
        return Expr(width, f"({{0}} {op} {{1}})", [a, b])

    def division(self, width: str, op: str, d: int) -> Expr:
        """`a // b` or `a % b` at an integer width; the divisor a non-zero literal, a value made
        non-zero with `| 1`, or (sometimes) a raw one that may be zero: then the node may raise."""
        dividend = self.expr(width, d)
        roll = self.rng.random()
        if roll < 0.2:
            literal = self.pick(NONZERO_DIVISORS[width])
            return Expr(width, f"({{0}} {op} {literal})", [self.nonliteral(dividend)])
        if roll < 0.5 and self.raising:
            # in a span loop mostly a varying divisor (lane C runs those in gangs, some lanes raising)
            loads = self.loads(width) if self.loop is not None and self.chance(0.7) else []
            divisor = self.pick(loads) if loads else self.expr(width, d)
            return Expr(width, f"({{0}} {op} {{1}})", [self.nonliteral(dividend), divisor], fails=True)
        one = {"i32": "1", "u32": "1", "i64": "1LL", "u64": "1ULL"}[width]
        made = f"{self.nmath('u32.fromI32')}({{1}} | 1)" if width == "u32" else f"({{1}} | {one})"
        inner = self.expr("i32" if width == "u32" else width, d)
        return Expr(width, f"({{0}} {op} {made})", [self.nonliteral(dividend), inner])

    def arith(self, width: str, d: int, wider_from: tuple[str, ...] = ()) -> Expr:
        op = self.pick(("+", "-", "*", "//", "%", "+", "-", "*"))
        if op in ("//", "%"):
            return self.division(width, op, d)
        left = right = width
        if wider_from and self.chance(0.4):
            if self.chance(0.5):
                left = self.pick(wider_from)
            else:
                right = self.pick(wider_from)
        return self.binary(width, op, left, right, d)

    def unary(self, width: str, op: str, operand: str, d: int) -> Expr:
        return Expr(width, f"({op}{{0}})", [self.nonliteral(self.expr(operand, d))])

    def shift(self, width: str, values: tuple[str, ...], d: int) -> Expr:
        op = self.pick(("<<", ">>"))
        value = self.nonliteral(self.expr(self.pick(values), d))
        roll = self.rng.random()
        if roll < 0.4:
            count = Expr("i32", self.pick(SHIFT_COUNTS), literal=True)
        else:
            counts = ("i32", "u32") if "shift-count-64" in self.avoid else ("i32", "u32", "i32", "i64", "u64")
            count = self.expr(self.pick(counts), d)
            if count.literal:
                count = Expr("i32", count.form, literal=True)
        return Expr(width, f"({{0}} {op} {{1}})", [value, count])

    def bitwise(self, width: str, others: tuple[str, ...], d: int) -> Expr:
        """`&`, `|`, binary `~`: one operand of `width` (a 32-bit one for int32), the other of
        `others` or a literal, in either order."""
        op = self.pick(("&", "|", "~"))
        main = self.nonliteral(self.expr(self.pick(("i32", "u32")) if width == "i32" else width, d))
        other = self.expr(self.pick(others), d, literal_ok=True)
        pair = [main, other] if self.chance(0.5) else [other, main]
        return Expr(width, f"({{0}} {op} {{1}})", pair)

    def convert(self, width: str, call: str, arg: str, d: int, literal_ok: bool = True) -> Expr:
        return Expr(width, call + "({0})", [self.expr(arg, d, literal_ok=literal_ok)])

    def expr_i32(self, d: int) -> Expr:
        return self.pick_weighted([
            (3, lambda: self.arith("i32", d)),
            (1, lambda: self.unary("i32", "-", "i32", d)),
            (2, lambda: self.bitwise("i32", ("i32", "u32"), d)),
            (1, lambda: self.unary("i32", "~", self.pick(("i32", "u32")), d)),
            (2, lambda: self.shift("i32", ("i32", "u32"), d)),
            (1, lambda: self.convert("i32", self.nmath("i32.wrap"), self.pick(("f64", "i32", "u32")), d)),
            (1, lambda: self.convert("i32", self.nmath(self.pick(("i32.fromU32", "u32.toI32"))), "u32", d)),
            (1, lambda: self.call("i32", d)),
        ])

    def expr_u32(self, d: int) -> Expr:
        return self.pick_weighted([
            (3, lambda: self.arith("u32", d)),
            (1, lambda: self.unary("u32", "-", "u32", d)),
            (1, lambda: self.convert("u32", self.nmath("u32.wrap"), self.pick(("f64", "i32", "u32")), d)),
            (1, lambda: self.convert("u32", self.nmath("u32.fromI32"), "i32", d)),
            (1, lambda: self.convert("u32", self.f32("bits"), "f32", d, literal_ok=False)),
            (1, lambda: self.call("u32", d)),
        ])

    def expr_i64(self, d: int) -> Expr:
        return self.pick_weighted([
            (3, lambda: self.arith("i64", d, wider_from=("i32",))),
            (1, lambda: self.unary("i64", "-", "i64", d)),
            (1, lambda: self.bitwise("i64", ("i64", "i32"), d)),
            (1, lambda: self.unary("i64", "~", "i64", d)),
            (1, lambda: self.shift("i64", ("i64",), d)),
            (1, lambda: self.convert("i64", self.nmath("i64.wrap"), self.pick(("f64", "i32", "u32")), d)),
            (1, lambda: self.call("i64", d)),
        ])

    def expr_u64(self, d: int) -> Expr:
        return self.pick_weighted([
            (3, lambda: self.arith("u64", d, wider_from=("u32",))),
            (1, lambda: self.unary("u64", "-", "u64", d)),
            (1, lambda: self.bitwise("u64", ("u64",), d)),
            (1, lambda: self.unary("u64", "~", "u64", d)),
            (1, lambda: self.shift("u64", ("u64",), d)),
            (1, lambda: self.convert("u64", self.nmath("u64.wrap"), self.pick(("f64", "i32", "u32")), d)),
            (1, lambda: self.call("u64", d)),
        ])

    def expr_f64(self, d: int) -> Expr:
        def mixed():
            op = self.pick(("+", "-", "*", "/", "//", "%"))
            other = self.pick(NUMERIC)
            left, right = ("f64", other) if self.chance(0.5) else (other, "f64")
            return self.binary("f64", op, left, right, d)

        def quotient():  # `/` of two integers (any signedness) is binary64
            return self.binary("f64", "/", self.pick(INTEGER), self.pick(INTEGER), d)

        def power():
            base = self.expr(self.pick(("f64", "f32")), d, literal_ok=True)
            return Expr("f64", "({0} ^ " + self.pick(("0", "1", "2", "3", "7", "16")) + ")", [base])

        return self.pick_weighted([
            (4, mixed), (1, quotient), (1, power),
            (1, lambda: self.unary("f64", "-", self.pick(("f64", "f32")), d)),
            (2, lambda: self.convert("f64", self.math(self.pick(("sqrt", "abs", "floor", "ceil"))),
                                     self.pick(("f64", "f64", "f32", "i32", "u32")), d)),
            (1, lambda: Expr("f64", self.math(self.pick(("min", "max"))) + "({0}, {1})",
                             self.operands("f64", "f64", d))),
            (1, lambda: self.call("f64", d)),
        ])

    def expr_f32(self, d: int) -> Expr:
        def two():
            return Expr("f32", self.f32(self.pick(("add", "sub", "mul", "div", "min", "max"))) + "({0}, {1})",
                        [self.expr("f32", d, literal_ok=True), self.expr("f32", d, literal_ok=True)])

        return self.pick_weighted([
            (3, two),
            (2, lambda: self.convert("f32", self.f32(self.pick(("sqrt", "neg", "abs", "exp"))), "f32", d)),
            (1, lambda: Expr("f32", self.f32("fma") + "({0}, {1}, {2})",
                             [self.expr("f32", d, literal_ok=True) for _ in range(3)])),
            (2, lambda: self.convert("f32", self.f32("narrow"), self.pick(("f64", "i32", "u32")), d)),
            (1, lambda: self.convert("f32", self.f32("fromBits"), "u32", d)),
            (1, lambda: self.call("f32", d)),
        ])

    def expr_bool(self, d: int) -> Expr:
        def logical():
            op = self.pick(("and", "or"))
            right_raises = "raising-right-operand" not in self.avoid
            return Expr("bool", f"({{0}} {op} {{1}})", [self.expr("bool", d), self.expr("bool", d, raising=right_raises)])

        return self.pick_weighted([
            (4, lambda: self.comparison(d)),
            (1, lambda: Expr("bool", "(not {0})", [self.expr("bool", d)])),
            (1, lambda: Expr("bool", "({0} " + self.pick(("==", "~=")) + " {1})",
                             [self.expr("bool", d), self.expr("bool", d)])),
            (3, logical),
            (1, lambda: self.call("bool", d)),
        ])

    def comparison(self, d: int) -> Expr:
        """Operands of one width half the time, else of any two (compared by value; a signed
        operand with a uint64 goes through a sign check, so those pairs come often)."""
        left = self.pick(NUMERIC)
        right = left if self.chance(0.5) else self.pick(NUMERIC)
        if self.chance(0.15):
            left, right = self.pick((("i64", "u64"), ("u64", "i64"), ("i32", "u64"), ("u64", "i32")))
        return self.binary("bool", self.pick(COMPARE), left, right, d)

    def choose(self, options: list[tuple[int, Callable]]) -> Callable:
        """One of the callables, by weight."""
        return self.rng.choices([make for _, make in options], weights=[w for w, _ in options])[0]

    def pick_weighted(self, options: list[tuple[int, Callable[[], Expr]]]) -> Expr:
        return self.choose(options)()

    def call(self, width: str, d: int) -> Expr:
        """A call of an earlier helper returning `width` (else another form of the width)."""
        callees = [h for h in self.helpers if h.result == width]
        if not callees or not self.raising:
            return self.leaf(width)
        return self.call_of(self.pick(callees), max(d - 1, 0))

    def call_of(self, h: Helper, depth: int = 1) -> Call:
        """A call of `h` with arguments of widths its parameters take (a literal takes the parameter's)."""
        args = [self.expr(self.pick(ARGUMENT[w]), depth, literal_ok=True) for w in h.params]
        return Call(h.result or "nil", "", args, callee=h.function)

    # ---- statements ------------------------------------------------------------------------
    def block(self, count: int, depth: int) -> list:
        self.scopes.append({})
        try:
            return self.block_here(count, depth)
        finally:
            self.scopes.pop()

    def statement(self, depth: int) -> list:
        kinds = [(5, self.local), (3, self.assignment)]
        if self.loop is not None:  # (stores close every span loop's body too)
            kinds += [(1, self.store), (2, self.motif)]
        if depth > 0:
            kinds += [(3, self.if_statement), (2, self.for_statement), (1, self.while_statement),
                      (1, self.repeat_statement), (1, self.do_statement)]
        kinds += [(1, self.switch_local), (1, self.call_statement)]
        if self.loops:
            kinds.append((1, self.break_statement))
        if self.result_allowed():
            kinds.append((1, self.early_return))
        return self.choose(kinds)(depth)

    def result_allowed(self) -> bool:
        """A return may go here: not inside a loop over spans (LANGUAGE.md section 6: one whose
        bounds read a span's length)."""
        return self.loop is None and self.over_spans == 0

    def value_for(self, width: str, depth: Optional[int] = None) -> Expr:
        """A value for a local, argument or store of `width`: any width it takes."""
        source = self.pick(ASSIGNABLE[width])
        return self.expr(source, depth, literal_ok=width != "f32" or source == "f32")

    def local(self, depth: int = 0) -> list:
        width = self.pick(NUMERIC + ("bool",))
        name = self.fresh("b" if width == "bool" else "v")
        if self.chance(0.5) or width == "f32":  # a float local: typed (an untyped one would be binary64)
            type_name = self.pick(TYPE_NAMES[width])
            value = self.loop_value(self.value_for(width))
            line = Line("local", f"local {name}: {type_name} = {{0}}", [value])
        else:
            value = self.loop_value(self.expr(width, literal_ok=width == "f64"))
            line = Line("local", f"local {name} = {{0}}", [value])
        self.declare(name, width, value.varies)
        return [line]

    def loop_value(self, value: Expr) -> Expr:
        """With uniform-local-in-loop avoided, a value set in a span loop is made varying (it meets
        the counter in a way that keeps its width)."""
        if self.loop is None or value.varies or "uniform-local-in-loop" not in self.avoid:
            return value
        if value.literal and value.width in ("i64", "u64", "f64"):
            value = self.established(value.width)
        i = self.counter()
        form = {"bool": "({0} == ({1} ~= 0))", "f32": "f32.add({0}, f32.narrow({1}))",
                "u32": "({0} + nmath.u32.fromI32({1} - {1}))", "u64": "({0} + nmath.u32.fromI32({1} - {1}))",
                }.get(value.width, "({0} + ({1} - {1}))")
        return Expr(value.width, form, [value, i])

    def assignment(self, depth: int = 0) -> list:
        names = [v for scope in self.scopes for v in scope.values() if v.writable]
        if not names:
            return self.local(depth)
        var = self.pick(names)
        value = self.loop_value(self.value_for(var.width))
        if value.varies or self.varying_control:
            var.varying = True
        return [Line("assign", f"{var.name} = {{0}}", [value])]

    def store(self, depth: int = 0, fname: Optional[str] = None, value: Optional[Expr] = None) -> list:
        out = self.loop.writable
        struct = self.loop.spans[out]
        if fname is None:
            fname = self.pick([f for f, _ in STRUCTS[struct]])
        ftype = dict(STRUCTS[struct])[fname]
        refs = [e for e, s in self.loop.elements.items() if s == out]
        target = f"{self.pick(refs)}.{fname}" if refs and self.chance(0.5) else f"{out}[{self.loop.counter}].{fname}"
        if value is None:
            # a bare literal takes the field's store width: binary32, binary64, or for an integer
            # field int32 (and an unsigned field refuses a negative one)
            source = self.pick(STORABLE.get(ftype, INT_STORABLE))
            if ftype == "float":
                literal_ok = source == "f32"
            elif ftype in ("number", "double"):
                literal_ok = True
            else:
                literal_ok = source == "i32" and not ftype.startswith("u")
            value = self.expr(source, literal_ok=literal_ok)
        return [Line("store", f"{target} = {{0}}", [value])]

    def condition(self, depth: Optional[int] = None) -> Expr:
        return self.expr("bool", self.rng.randint(0, 2) if depth is None else depth)

    def controlled(self, varying: bool, make: Callable[[], list]) -> list:
        """Write a block under control that varies per lane when `varying` (in a span loop)."""
        varying = varying and self.loop is not None
        self.varying_control += varying
        try:
            return make()
        finally:
            self.varying_control -= varying

    def if_statement(self, depth: int) -> list:
        clauses = []
        for _ in range(1 + (self.rng.randint(0, 2) if self.chance(0.4) else 0)):
            cond = self.condition()
            clauses.append([cond, self.controlled(cond.varies, lambda: self.block(self.rng.randint(1, 3), depth - 1))])
        orelse = None
        if self.chance(0.4):
            orelse = self.controlled(any(c.varies for c, _ in clauses),
                                     lambda: self.block(self.rng.randint(1, 2), depth - 1))
        return [If(clauses, orelse)]

    def loop_body(self, depth: int, varying: bool, count: Optional[int] = None) -> list:
        self.loops += 1
        try:
            return self.controlled(varying, lambda: self.block(self.rng.randint(1, 3) if count is None else count,
                                                               depth - 1))
        finally:
            self.loops -= 1

    def for_statement(self, depth: int) -> list:
        """A numeric for over at most 8 values (bounds masked small, or literals near the extremes)."""
        var = self.fresh("j")
        step = self.pick(("", "", ", 1", ", 2", ", 3", ", -1", ", -2"))
        if self.chance(0.1):
            top = self.pick(("2147483647", "(-2147483646)"))
            low, high = (Expr("i32", "2147483645", literal=True, bounds=True), Expr("i32", "2147483647", literal=True,
                                                                                bounds=True)) \
                if top == "2147483647" else (Expr("i32", "(-2147483648)", literal=True, bounds=True),
                                             Expr("i32", top, literal=True, bounds=True))
        else:
            low = Expr("i32", "({0} & 3)", [self.expr("i32", self.rng.randint(0, 2))], bounds=True)
            high = Expr("i32", "({0} & 7)", [self.expr("i32", self.rng.randint(0, 2))], bounds=True)
        start, stop = (high, low) if step.startswith(", -") else (low, high)
        varying = start.varies or stop.varies
        over_spans = "#" in start.text() + stop.text()
        self.scopes.append({var: Var(var, "i32", varying=varying or self.varying_control > 0, writable=False)})
        self.over_spans += over_spans
        try:
            body = [] if self.chance(0.1) else self.loop_body(depth, varying)
        finally:
            self.over_spans -= over_spans
            self.scopes.pop()
        return [For(var, start, stop, step, body)]

    def counted(self, depth: int, make: Callable[[str, str, list, Expr], list]) -> list:
        """A while or repeat bounded by a counter `cN` (declared before it, stepped last in its body)."""
        counter = self.fresh("c")
        limit = self.pick(("1", "2", "3", "5"))
        start = self.loop_value(Expr("i32", "0", literal=True))
        cond = self.condition()
        self.declare(counter, "i32", start.varies, writable=False)
        body = self.loop_body(depth, cond.varies)
        body.append(Line("step", f"{counter} = {counter} + 1"))
        return [Line("local", f"local {counter}: int32 = {{0}}", [start]), *make(counter, limit, body, cond)]

    def while_statement(self, depth: int) -> list:
        return self.counted(depth, lambda c, limit, body, cond: [
            While(Expr("bool", f"({c} < {limit} and {{0}})", [cond], bounds=True), body)])

    def repeat_statement(self, depth: int) -> list:
        return self.counted(depth, lambda c, limit, body, cond: [
            Repeat(body, Expr("bool", f"({c} >= {limit} or {{0}})", [cond], bounds=True))])

    def do_statement(self, depth: int) -> list:
        return [Do(self.block(self.rng.randint(1, 2), depth - 1))]

    def break_statement(self, depth: int = 0) -> list:
        return [If([[self.condition(1), [Line("break", "break")]]])]

    def early_return(self, depth: int = 0) -> list:
        cond = self.condition(1)
        value = [] if self.result is None else [self.value_for(self.result, 1)]
        form = "return" if self.result is None else "return {0}"
        return [If([[cond, [Line("return", form, value)]]])]

    def switch_local(self, depth: int = 0) -> list:
        """`local s[: T] = switch sel do case 1, 2 -> e ... else -> e end` (LANGUAGE.md section 6:
        selector binary64, int32 or uint32; integer constant cases; one expression per arm)."""
        selector_width = self.pick(("i32", "u32", "f64"))
        selector = self.loop_value(self.nonliteral(self.expr(selector_width, self.rng.randint(0, 2))))
        labels = ["0", "1", "2", "3", "7", "255", "65536", "2147483647"]
        labels += ["4294967295", "2147483648"] if selector_width == "u32" else ["-1", "-7", "-2147483648"]
        self.rng.shuffle(labels)
        arms, used = [], 0
        for _ in range(self.rng.randint(1, 3)):
            take = self.rng.randint(1, 2)
            arms.append(", ".join(labels[used:used + take]))
            used += take
        width = self.pick(NUMERIC)
        name = self.fresh("s")
        values = [self.expr(width, self.rng.randint(0, 2), literal_ok=True) for _ in range(len(arms) + 1)]
        if self.chance(0.6) or width == "f32":
            head = f"local {name}: {self.pick(TYPE_NAMES[width])}"
        else:  # untyped: the arms' common width, so every arm is established
            head = f"local {name}"
            values = [self.nonliteral(v) for v in values]
        self.declare(name, width, selector.varies or any(v.varies for v in values))
        return [SwitchLocal(head, selector, [list(a) for a in zip(arms, values[:-1])], values[-1])]

    def call_statement(self, depth: int = 0) -> list:
        checks = [h for h in self.helpers if h.result is None]
        if not checks:
            return self.local(depth)
        return [Line("call", "{0}", [self.call_of(self.pick(checks))])]

    # ---- motifs: the shapes that once broke lane C ------------------------------------------
    def motif(self, depth: int = 0) -> list:
        motifs = [self.motif_pressure, self.motif_masked_while, self.motif_computing_while]
        if "raising-right-operand" not in self.avoid:
            motifs += [self.motif_guarded_division] * 2
        if "uniform-local-in-loop" not in self.avoid:
            motifs.append(self.motif_uniform_local)
        return self.pick(motifs)(depth)

    def raising_int(self) -> Expr:
        """An int32 or int64 expression that raises for some lanes: a division by a value that may be
        zero, or a call of a helper that asserts."""
        callees = [h for h in self.helpers if h.raising and h.result in ("i32", "i64", "f64")]
        if callees and self.chance(0.3):
            return self.call_of(self.pick(callees))
        width = self.pick(("i32", "i64"))
        divisor = self.pick(self.loads(width) or [self.expr(width, 1)])
        return Expr(width, f"({{0}} {self.pick(('//', '%'))} {{1}})", [self.expr(width, 1, literal_ok=True), divisor],
                    fails=True)

    def motif_guarded_division(self, depth: int) -> list:
        """`if a ~= 0 and 100 // a > 0`, `or`, `not (a or b)`, and `and`/`or` as a value: a right
        operand that raises in lanes where the left one has already decided."""
        guard = self.comparison(1)
        test = Expr("bool", "({0} > 0)", [self.raising_int()])
        shape = self.pick(("and", "or", "not-or", "value"))
        body = self.controlled(True, lambda: self.store())
        if shape == "value":
            name = self.fresh("b")
            cond = Expr("bool", f"({{0}} {self.pick(('and', 'or'))} {{1}})", [guard, test])
            self.declare(name, "bool", True)
            return [Line("local", f"local {name} = {{0}}", [cond]), If([[Expr("bool", name, varying=True), body]])]
        form = {"and": "({0} and {1})", "or": "({0} or {1})", "not-or": "(not ({0} or {1}))"}[shape]
        return [If([[Expr("bool", form, [guard, test]), body]])]

    def motif_uniform_local(self, depth: int) -> list:
        """Something that raises (or a break), then uniform locals (a constant, a parameter copy,
        `false or false`) used in a store: the body runs under a mask from there on."""
        out: list = []
        if self.chance(0.5):
            q = self.fresh("q")
            out.append(Line("local", f"local {q}: int32 = {{0}}", [Expr(
                "i32", "({0} // {1})", [self.literal("i32"), self.pick(self.loads("i32") or [self.counter()])], fails=True)]))
            self.declare(q, "i32", True)
        else:
            out += self.break_statement()
        params = [v for v in self.visible("i32") if not v.varying] + [v for v in self.visible("f64") if not v.varying]
        name = self.fresh("u")
        kind = self.pick(("const", "param", "false-or-false"))
        if kind == "param" and params:
            p = self.pick(params)
            out.append(Line("local", f"local {name}: {TYPE_NAMES[p.width][0]} = {p.name}"))
            self.declare(name, p.width, False)
        elif kind == "false-or-false":
            out.append(Line("local", f"local {name} = false or false"))
            self.declare(name, "bool", False)
        else:
            width = self.pick(("i32", "f64", "i64"))
            out.append(Line("local", f"local {name}: {TYPE_NAMES[width][0]} = {{0}}", [self.literal(width)]))
            self.declare(name, width, False)
        out += self.store()
        return out

    def motif_masked_while(self, depth: int) -> list:
        """A masked while (`w < (k & 3) and false`, or a varying condition), an empty inner for, and
        a store under register pressure."""
        w = self.fresh("w")
        start = self.pick(self.loads("i32") or [self.counter()])
        k = self.pick([v.name for v in self.visible("i32") if not v.varying] or ["7"])
        test = Expr("bool", "false") if self.chance(0.5) else self.condition(1)
        self.declare(w, "i32", True, writable=False)  # stepped below: the loop stays finite
        cond = Expr("bool", f"({w} < ({k} & 3) and {{0}})", [test], bounds=True)
        self.loops += 1
        try:
            body = self.controlled(True, lambda: self.block(self.rng.randint(0, 2), 0))
        finally:
            self.loops -= 1
        body.append(Line("step", f"{w} = {w} + 1"))
        out = [Line("local", f"local {w}: int32 = ({{0}} & 7)", [start]), While(cond, body)]
        j = self.fresh("j")
        out.append(For(j, Expr("i32", "1", literal=True), Expr("i32", "3", literal=True), ", 2", []))
        return out + self.motif_pressure(depth)

    def motif_computing_while(self, depth: int = 0) -> list:
        """A masked while whose condition and body only compute (no load, store, call or error),
        enough that lane C's vectors go on one by one once one vector's lanes have all left
        (emit_c/lane.py vector_by_vector), then a store of what it computed."""
        w, x, y, z = (self.fresh(stem) for stem in "wxyz")
        start = self.pick(self.loads("i32") or [self.counter()])
        seed = self.pick(self.loads("i32") or [self.counter()])
        out = [Line("local", f"local {w}: int32 = ({{0}} & 7)", [start]),
               Line("local", f"local {x}: int32 = {{0}}", [seed]),
               Line("local", f"local {y}: int32 = {w} * 5 + 1"), Line("local", f"local {z}: int32 = 0")]
        self.declare(w, "i32", True, writable=False)  # stepped below: the loop stays finite
        for name in (x, y, z):
            self.declare(name, "i32", True)
        body = [Line("assign", f"{x} = ({x} * 3 + {w}) ~ ({y} - 5)"),
                Line("assign", f"{y} = ({y} ~ {x}) + ({x} & 255) * 7"),
                Line("assign", f"{z} = ({z} + {x}) ~ ({y} * 5)"), Line("step", f"{w} = {w} + 1")]
        out.append(While(Expr("bool", f"({w} < 9)", varying=True, bounds=True), body))
        fields = [f for f, t in STRUCTS[self.loop.spans[self.loop.writable]] if t != "float"]  # takes an int32
        return out + self.store(fname=self.pick(fields), value=Expr("i32", f"(({x} + {y}) ~ {z})", varying=True))

    def motif_pressure(self, depth: int = 0) -> list:
        """A store of a long expression over many fields (twelve int32 fields when the span has them)."""
        terms = self.loads("i32") + self.loads("u32")
        self.rng.shuffle(terms)
        terms = [t if t.width == "i32" else Expr("i32", self.nmath("i32.fromU32") + "({0})", [t])
                 for t in terms[:12]]
        if len(terms) < 2:
            return self.store()
        value = terms[0]
        for t in terms[1:]:
            value = Expr("i32", f"({{0}} {self.pick(('+', '*', '~', '-', '&', '|'))} {{1}})", [value, t])
        fields = [f for f, t in STRUCTS[self.loop.spans[self.loop.writable]] if t != "float"]  # takes an int32
        return self.store(fname=self.pick(fields), value=value)

    # ---- functions -----------------------------------------------------------------------------
    def begin_function(self, params: list[tuple[str, str]], result: Optional[str]) -> None:
        self.scopes = [{name: Var(name, width, writable=True) for name, width in params}]
        self.loops = 0
        self.loop = None
        self.spans = {}
        self.result = result
        self.names = 0
        self.over_spans = 0

    def scalar_params(self, count: int) -> list[tuple[str, str, str]]:
        """(name, width, type name) of `count` scalar parameters."""
        out = []
        for k in range(count):
            width = self.pick(NUMERIC + NUMERIC + ("bool",))
            out.append((f"{'p'}{k + 1}", width, self.pick(TYPE_NAMES[width])))
        return out

    def helper(self, name: str, results: tuple = NUMERIC + ("bool", None)) -> Helper:
        """A function of scalar parameters: asserts first (always when it returns nothing: it
        exists to raise), statements, loops, early returns, a final return."""
        params = self.scalar_params(self.rng.randint(1, 4))
        result = None if None in results and self.chance(0.15) else self.pick([r for r in results if r])
        self.begin_function([(n, w) for n, w, _ in params], result)
        body: list = []
        if self.chance(0.4) or result is None:
            body.append(self.assert_line())
        body += self.block_here(self.rng.randint(1, 4), 2)
        if result is not None:
            body.append(Line("return", "return {0}", [self.value_for(result)]))
        function = Function(name, [Param(n, t) for n, _, t in params], self.type_name(result), body)
        raising = any(e.raises for s in statements(body) for e in s.exprs)
        return Helper(function, [w for _, w, _ in params], result, raising)

    def caller(self, name: str, callees: list[Helper]) -> Helper:
        """`local rK: number = callee(...)` for each callee, `return r1 + r2 ...`."""
        params = self.scalar_params(self.rng.randint(1, 3))
        self.begin_function([(n, w) for n, w, _ in params], "f64")
        body = []
        for k, h in enumerate(callees):
            body.append(Line("local", f"local r{k + 1}: number = {{0}}", [self.call_of(h)]))
        body.append(Line("return", "return " + " + ".join(f"r{k + 1}" for k in range(len(callees)))))
        function = Function(name, [Param(n, t) for n, _, t in params], "number", body)
        return Helper(function, [w for _, w, _ in params], "f64", True)

    def block_here(self, count: int, depth: int) -> list:
        """Statements at the function's own level (its scope, not a nested block)."""
        out = []
        for _ in range(count):
            out += self.statement(depth)
        return out

    def assert_line(self) -> Line:
        cond = self.expr("bool", self.rng.randint(0, 2))
        return Line("assert", f'assert({{0}}, "{self.pick(MESSAGES)}")', [cond])

    def kernel_entry(self, name: str) -> Program:
        """The entry over spans: asserts relating their lengths, locals and statements at function
        level, one or two span loops, a final return."""
        in_struct, out_struct = self.pick(LAYOUTS)
        aux = self.chance(0.25)
        span_params = [("out", SpanArg(out_struct, True)), ("inp", SpanArg(in_struct, False))]
        if aux:
            span_params.append(("aux", SpanArg(in_struct, False)))
        scalars = self.scalar_params(self.rng.randint(0, 4))
        # now and then the shape a SPIR-V device runs (emit_spirv/admit.py): nothing
        # carried from one iteration to the next but reductions, one span loop
        device = self.chance(0.3)
        result = self.pick(NUMERIC + ("bool", None, None, None))
        self.begin_function([(n, w) for n, w, _ in scalars], result)
        self.spans = {n: s.struct for n, s in span_params}
        body: list = [Line("assert", 'assert(#out == #inp, "length mismatch")')]
        if aux:
            body.append(Line("assert", 'assert(#aux == #inp, "aux length mismatch")'))
        if self.chance(0.3):
            body.append(self.assert_line())
        reductions = self.outer_locals(body)
        body += self.block_here(self.rng.randint(0, 2), 2)
        carry = not device and self.chance(0.2)
        for _ in range(1 + (not device and self.chance(0.2))):
            body.append(self.span_loop(dict(self.spans), reductions, carry))
        if result is not None:
            body.append(Line("return", "return {0}", [self.value_for(result)]))
        params = [Param(n, f"span.{'WriteSpan' if s.writable else 'Span'}<{s.struct}>",
                        "exclusive" if s.writable else "borrows") for n, s in span_params]
        params += [Param(n, t) for n, _, t in scalars]
        attribute = "@aot(vectorize = false)" if self.chance(0.05) else "@aot"
        function = Function(name, params, self.type_name(result), body, attribute)
        return Program(self.ident, self.written() + [function], [s for _, s in span_params],
                       [w for _, w, _ in scalars], function.result)

    def outer_locals(self, body: list) -> list[tuple[str, str, str]]:
        """Locals before the span loop: read in it, or reductions (name, width, op) accumulated in it."""
        reductions = []
        for _ in range(self.rng.randint(0, 2)):
            body += self.local()
        if self.chance(0.4):
            width, op = self.pick((("i32", "+"), ("i32", "~"), ("u32", "*"), ("i64", "+"), ("u64", "|"),
                                   ("i32", "&"), ("f64", "max"), ("f64", "min"), ("u32", "-")))
            name = self.fresh("acc")
            body.append(Line("local", f"local {name}: {TYPE_NAMES[width][0]} = {{0}}", [self.literal(width)]
                             if width in ("i32", "u32", "f64") else [Expr(width, self.pick(SUFFIXED[width]))]))
            reductions.append((name, width, op))
        return reductions

    def span_loop(self, spans: dict[str, str], reductions: list, carry: bool) -> For:
        """`for i = 1, #out do ... end`: random statements, motifs, stores, reductions."""
        counter = self.fresh("i")
        outer = [v for scope in self.scopes for v in scope.values()]
        frozen = [v for v in outer if v.writable and not carry]
        for v in frozen:
            v.writable = False
        hidden = {name for name, _, _ in reductions}
        saved = [dict(s) for s in self.scopes]
        for scope in self.scopes:
            for name in hidden:
                scope.pop(name, None)
        # now and then every field of `out` stored once and none read: lane C may
        # write the gang's elements whole (lane_memory.whole_element_stores)
        whole = self.chance(0.3)
        self.loop = SpanLoop(counter, spans, "out", unread=frozenset({"out"} if whole else ()))
        self.loops += 1
        self.scopes.append({})
        try:
            body: list = []
            for span in ("inp", "out"):
                if self.chance(0.3):
                    ref = self.fresh("e")
                    self.loop.elements[ref] = span
                    body.append(Line("local", f"local {ref} = {span}[{counter}]"))
            body += self.block_here(self.rng.randint(2, 6), 2)
            if whole:
                fields = [f for f, _ in STRUCTS[spans["out"]]]
                for fname in self.rng.sample(fields, len(fields)):
                    body += self.store(fname=fname)
            else:
                for _ in range(self.rng.randint(1, 3)):
                    body += self.store()
            for name, width, op in reductions:
                value = self.expr(width, 2)
                if op in ("min", "max"):
                    body.append(Line("assign", f"{name} = {self.math(op)}({name}, {{0}})", [value]))
                else:
                    body.append(Line("assign", f"{name} = {name} {op} {{0}}", [value]))
        finally:
            self.scopes.pop()
            self.loops -= 1
            self.loop = None
            for scope, old in zip(self.scopes, saved):
                scope.update(old)
            for v in frozen:
                v.writable = True
        bound = self.pick(("#out", "#inp"))
        return For(counter, Expr("i32", "1", literal=True), Expr("i32", bound), "", body)

    def scalar_entry(self, name: str) -> Program:
        entry = self.helper(name, results=NUMERIC + ("bool",))
        return Program(self.ident, self.written() + [entry.function], [], entry.params, entry.function.result)

    def redefinition(self) -> Program:
        """A helper defined twice under one name (maybe with different signatures), a function
        calling the first definition, and an entry calling that function and the second."""
        first = self.helper(f"{self.ident}_d", results=NUMERIC)
        user = self.caller(f"{self.ident}_g", [first])
        second = self.helper(f"{self.ident}_d", results=NUMERIC)
        entry = self.caller(f"{self.ident}_k", [user, second])
        functions = self.written() + [first.function, user.function, second.function, entry.function]
        program = Program(self.ident, functions, [], entry.params, "number", isolated=True)
        program.twin = renamed_twin(program)
        return program

    def written(self) -> list[Function]:
        """The helpers written so far."""
        return [h.function for h in self.helpers]

    def type_name(self, width: Optional[str]) -> str:
        return "nil" if width is None else self.pick(TYPE_NAMES[width])


def renamed_twin(program: Program) -> Program:
    """A copy of a program that defines names twice, each earlier definition renamed (its calls
    follow: a Call holds the function itself): under Lua's rules both compute the same."""
    twin = copy.deepcopy(program)
    twin.twin = None
    for k, f in enumerate(twin.functions):
        if any(g.name == f.name for g in twin.functions[k + 1:]):
            f.name = f"{f.name}_{k}"
    return twin


def generate(seed: int, ident: str = "p", avoid: frozenset[str] = frozenset()) -> Program:
    """The program of `seed`; its functions are named `<ident>_...`."""
    rng = random.Random(seed)
    w = Writer(rng, avoid, ident)
    for k in range(rng.randint(0, 3)):
        w.helpers.append(w.helper(f"{ident}_h{k + 1}"))
    if "duplicate-names" not in avoid and rng.random() < 0.04:
        return w.redefinition()
    if rng.random() < 0.15:
        return w.scalar_entry(f"{ident}_k")
    return w.kernel_entry(f"{ident}_k")
