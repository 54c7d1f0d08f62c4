"""A hypothesis generator of whole, well-typed AOT modules, and edge inputs.

`kernels()` draws a module (`GeneratedKernel.text`) of this shape:

    local span = nupp.mem.span
    local struct In   a: int32, b: uint32, x: number, y: float, w: int64, z: uint64   end
    local struct Out  r: <one of R_TYPES>, f: float, d: number, k: int32             end

    @aot local function h(s: int32, t: number, u: float): number   -- a scalar helper
        <locals>  return <number>
    end

    @aot local function k(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<In>,
                          p: int32, q: number): nil
        assert(#out == #inp, "length mismatch")
        [assert(p ~= <int>, "p refused")]
        for i = 1, #out do
            <random typed statements>
            out[i].r = ...; out[i].f = ...; out[i].d = ...; out[i].k = ...
        end
    end
    return {In = In, Out = Out, k = k, h = h}

The statements are locals (typed or not) initialized from random expression
trees, assignments to them, `if`/`elseif`/`else` on generated booleans, a
`while` with a bounded counter (`local c: int32 = 0; while c < 5 and <cond>
do ... c = c + 1 end`, now and then with a `break`), a numeric `for` over at
most 8 values with generated bounds (`for j = (e & 3), (f & 7) do`, step 1,
2 or -1, now and then a `break`), element references
(`local e = inp[i]`, `local o = out[i]`) and stores to every field of Out.
Expressions are typed by construction over the established widths of
LANGUAGE.md section 2: loads, parameters, locals, the loop counter, `#s`,
exact literals only beside an established operand (where they take its
width), every operator of section 3 at the widths it admits (mixed
int32/int64 and uint32/uint64 arithmetic, 32-bit bitwise mixes, shifts,
`^` with a literal exponent), mixed-width comparisons, the conversions of
section 4, `math.*` on binary64, the whole `nupp.math.f32` surface and calls
of the helper `h`.  An integer `//` or `%` gets a divisor made non-zero with
`| 1` (reinterpreted back for uint32), or, now and then, a raw one that may
be zero, so the run-time error `integer division by zero` is exercised too
(also under `and`/`or` short circuits and inside `while` conditions).

`edge_array(dtype, n)` fills any struct dtype with boundary values per field
type: integer extremes, -1, 0; binary64 zeros of both signs, subnormals,
infinities, NaNs with payloads, 0.1, 1e300, 2^53 + 1, values around the
32- and 64-bit wrap points; binary32 bit patterns (subnormals, max finite,
NaNs with payloads and sign, ulp neighbours of 1) for `float` fields and as
extra uint32 values (they are the bits kernels like `corrected` decode).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
UINT32_MAX = 2**32 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
UINT64_MAX = 2**64 - 1

# ---- edge values ----------------------------------------------------------------------------

# the edge sets the crosscheck driver generates from (one list of values for both)
from nupp.emit_c.driver import F32_EDGE_BITS, INT_EDGES  # noqa: E402


def _f64_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


F64_EDGES = (
    0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -2.225073858507201e-308,
    math.inf, -math.inf, math.nan, _f64_bits(0xFFF8000000000000), _f64_bits(0x7FF0000000000001),
    _f64_bits(0xFFF4000000001234),
    0.1, -0.1, 1e300, -1e300, 1.7976931348623157e308, 1.0, -1.0, 0.5, -0.5, 3.5, -3.5, 1.5, -2.5,
    2.0**53 + 2, 2.0**53, 2.0**31, -2.0**31, -2.0**31 - 1, 2.0**32, 2.0**32 + 0.5, 4294967295.0,
    2.0**63, -2.0**63, 2.0**64, 1e20, -1e20, 2147483647.5, 3.4028235677973366e38, 1e-46, 0.25,
)

_NUMPY_TYPE_NAMES = {np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8", np.dtype(np.int16): "int16",
                     np.dtype(np.uint16): "uint16", np.dtype(np.int32): "int32", np.dtype(np.uint32): "uint32",
                     np.dtype(np.int64): "int64", np.dtype(np.uint64): "uint64"}


def field_edges(field_dtype: np.dtype) -> np.ndarray:
    """The edge values of one field type, as a 1-d array of that type (floats by their bits)."""
    if field_dtype == np.float32:
        return np.array(F32_EDGE_BITS, dtype=np.uint32).view(np.float32)
    if field_dtype == np.float64:
        return np.array([struct.unpack("<Q", struct.pack("<d", v))[0] for v in F64_EDGES],
                        dtype=np.uint64).view(np.float64)
    return np.array(INT_EDGES[_NUMPY_TYPE_NAMES[np.dtype(field_dtype)]], dtype=field_dtype)


def edge_array(dtype: np.dtype, n: int, offset: int = 0, random_rows: int = 0, seed: int = 1) -> np.ndarray:
    """n rows of struct `dtype` made of edge values: field j of row r is edge
    number (r // L^(j mod 2) ... ) mixed so the first two fields meet in every
    combination for the first L*L rows; then `random_rows` rows of random
    bits.  `offset` shifts the pattern (so two spans of one call differ)."""
    out = np.zeros(n + random_rows, dtype=dtype)
    for j, name in enumerate(dtype.names):
        edges = field_edges(dtype.fields[name][0])
        size = len(edges)
        rows = np.arange(n, dtype=np.int64) + offset
        if j % 2 == 0:
            index = rows + j * 3
        else:
            index = rows // size + rows * (j // 2) + j
        out[name][:n] = edges[index % size]
    if random_rows:
        rng = np.random.default_rng(seed)
        raw = rng.integers(0, 256, size=random_rows * dtype.itemsize, dtype=np.uint8)
        out[n:] = raw.view(dtype)
    return out


def garbage_array(dtype: np.dtype, n: int, seed: int = 7) -> np.ndarray:
    """n rows of random bits: the initial contents of an output span."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8).view(dtype).copy()


# ---- the program generator ------------------------------------------------------------------

NUMERIC = ("i32", "u32", "i64", "u64", "f64", "f32")
TYPE_NAME = {"i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64", "f64": "number",
             "f32": "float", "bool": "boolean"}
R_TYPES = ("int32", "uint32", "int64", "uint64", "number", "float", "int8", "uint16")
IN_FIELDS = {"a": "i32", "b": "u32", "x": "f64", "y": "f64", "w": "i64", "z": "u64"}  # load widths

# literals that take the width of the established operand beside them
INT_LITERALS = {
    "i32": ("0", "1", "2", "3", "7", "31", "255", "65535", "(-1)", "(-7)", "2147483647", "(-2147483648)"),
    "u32": ("0", "1", "2", "7", "255", "65535", "2147483648", "4294967295"),
    "f64": ("0.5", "0.1", "1e300", "(-0.0)", "3.0", "(-2.5)", "1e-310", "4294967296.0"),
}
# suffixed literals: established by themselves
CONST_64 = {
    "i64": ("0LL", "1LL", "(-1LL)", "9223372036854775807LL", "(-9223372036854775807LL)", "4294967296LL",
            "9007199254740993LL"),
    "u64": ("0ULL", "1ULL", "18446744073709551615ULL", "9223372036854775808ULL", "9007199254740993ULL",
            "4294967295ULL"),
}
COMPARE = ("<", "<=", ">", ">=", "==", "~=")
# integer widths a store to each integer field takes (any: reduced modulo 2^N)
STORE_WIDTHS = {"number": NUMERIC, "float": ("f64", "f32")}
ASSIGNABLE = {  # a local of width W takes these widths (LANGUAGE.md sections 2 and 4)
    "f64": NUMERIC, "f32": ("f64", "f32"), "i64": ("i32", "u32", "i64"), "u64": ("u32", "u64"),
    "i32": ("i32",), "u32": ("u32",), "bool": ("bool",),
}


@dataclass(frozen=True)
class GeneratedKernel:
    text: str
    r_type: str
    raw_divisions: int   # integer // or % whose divisor may be zero


class _Writer:
    """Draws one module; keeps the names in scope with their widths."""

    def __init__(self, draw, max_depth: int, max_statements: int, zero_divisors: bool,
                 lane_friendly: bool = False):
        self.draw = draw
        self.max_depth = max_depth
        self.max_statements = max_statements
        self.zero_divisors = zero_divisors and not lane_friendly
        self.lane_friendly = lane_friendly  # nothing that keeps the loop scalar
        self.scopes: list[dict[str, str]] = [{}]
        self.readonly: set[str] = set()
        self.next_name = 0
        self.in_loop = False
        self.helper = False       # True while writing h (no spans there)
        self.inp_element = None   # name of `local e = inp[i]`
        self.out_element = None
        self.raw_divisions = 0
        self.lines: list[str] = []
        self.indent = 0

    # ---- helpers
    def choice(self, seq):
        return self.draw(st.sampled_from(seq))

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 999)) < p * 1000

    def fresh(self, stem: str) -> str:
        self.next_name += 1
        return f"{stem}{self.next_name}"

    def locals_of(self, width: str) -> list[str]:
        found = {}
        for scope in self.scopes:
            for name, w in scope.items():
                found[name] = w
        return [n for n, w in found.items() if w == width]

    def declare(self, name: str, width: str) -> None:
        self.scopes[-1][name] = width

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    # ---- expressions
    def leaf(self, width: str, literal_ok: bool) -> str:
        options = list(self.locals_of(width))
        if self.helper:
            options += {"i32": ["s"], "f64": ["t"], "f32": ["u"]}.get(width, [])
        else:
            if width == "i32":
                options += ["p"]
                if self.in_loop:
                    options += ["i"]
                options += ["#out", "#inp"] if self.chance(0.3) else []
            if width == "f64":
                options += ["q"]
            if self.in_loop:
                for field, w in IN_FIELDS.items():
                    if w == width:
                        options.append(f"{self.inp_element}.{field}" if self.inp_element and self.chance(0.5)
                                       else f"inp[i].{field}")
        if width in CONST_64:
            options += list(CONST_64[width]) if self.chance(0.3) or not options else []
        if literal_ok and width in INT_LITERALS and (self.chance(0.35) or not options):
            return self.choice(INT_LITERALS[width])
        if width == "f32":
            # no f32 leaves but locals: narrow a binary64 leaf, or view uint32 bits
            extra = [f"nupp.math.f32.narrow({self.leaf('f64', False)})"]
            if not self.helper and self.in_loop:
                extra.append("nupp.math.f32.fromBits(inp[i].b)")
            if not options or self.chance(0.5):
                return self.choice(extra)
        if not options:
            # an established value of `width` from what there always is
            return {"i32": "nupp.math.i32.wrap(q)" if not self.helper else "s",
                    "u32": "nupp.math.u32.fromI32(p)" if not self.helper else "nupp.math.u32.fromI32(s)",
                    "f64": "t", "i64": "0LL", "u64": "0ULL"}[width]
        return self.choice(options)

    def expr(self, width: str, depth: int, literal_ok: bool = False) -> str:
        if width == "bool":
            return self.boolean(depth)
        if depth <= 0 or self.chance(0.25):
            return self.leaf(width, literal_ok)
        return getattr(self, "expr_" + width)(depth - 1)

    def pair(self, lw: str, rw: str, depth: int) -> tuple[str, str]:
        """Two operands; at most one of them may be a bare literal."""
        left_lit = self.chance(0.5)
        return self.expr(lw, depth, literal_ok=left_lit), self.expr(rw, depth, literal_ok=not left_lit)

    def divisor(self, width: str, depth: int) -> str:
        """An integer divisor: a non-zero literal, a `| 1`-made non-zero value, or (sometimes) raw."""
        roll = self.draw(st.integers(0, 9))
        if roll < 2:
            return {"i32": self.choice(("3", "(-1)", "7", "(-2147483648)")),
                    "u32": self.choice(("3", "4294967295")),
                    "i64": self.choice(("3LL", "(-1LL)")), "u64": self.choice(("3ULL", "18446744073709551615ULL"))}[width]
        if roll < 4 and self.zero_divisors:
            self.raw_divisions += 1
            return self.expr(width, depth)
        inner = self.expr(width, depth)
        if width == "i32":
            return f"({inner} | 1)"
        if width == "u32":
            return f"nupp.math.u32.fromI32({inner} | 1)"
        return f"({inner} | 1{'LL' if width == 'i64' else 'ULL'})"

    def arith(self, width: str, depth: int, others: tuple[str, ...] = ()) -> str:
        op = self.choice(("+", "-", "*", "//", "%", "+", "-", "*"))
        if op in ("//", "%"):
            return f"({self.expr(width, depth)} {op} {self.divisor(width, depth)})"
        lw, rw = width, width
        if others and self.chance(0.4):
            if self.chance(0.5):
                lw = self.choice(others)
            else:
                rw = self.choice(others)
        left, right = self.pair(lw, rw, depth)
        return f"({left} {op} {right})"

    def expr_i32(self, d: int) -> str:
        roll = self.draw(st.integers(0, 9))
        if roll <= 2:
            return self.arith("i32", d)
        if roll == 3:
            op = self.choice(("&", "|", "~"))
            left, right = self.pair(self.choice(("i32", "u32")), self.choice(("i32", "u32")), d)
            return f"({left} {op} {right})"
        if roll == 4:
            op = self.choice(("<<", ">>"))
            count = self.choice(("0", "1", "13", "31", "32", "33")) if self.chance(0.5) else self.expr("i32", d)
            return f"({self.expr(self.choice(('i32', 'u32')), d)} {op} {count})"
        if roll == 5:
            return self.choice(("-({})", "~({})")).format(self.expr("i32", d))
        if roll == 6:
            return f"nupp.math.i32.wrap({self.expr('f64', d, literal_ok=True)})"
        if roll == 7:
            return f"nupp.math.{self.choice(('i32.fromU32', 'u32.toI32'))}({self.expr('u32', d)})"
        if roll == 8:
            return f"nupp.math.i32.wrap({self.expr(self.choice(('i32', 'u32')), d)})"
        return f"({self.expr('u32', d)} {self.choice(('&', '|', '~'))} {self.expr('i32', d)})"

    def expr_u32(self, d: int) -> str:
        roll = self.draw(st.integers(0, 6))
        if roll <= 2:
            return self.arith("u32", d)
        if roll == 3:
            return f"nupp.math.u32.wrap({self.expr('f64', d, literal_ok=True)})"
        if roll == 4:
            return f"nupp.math.u32.fromI32({self.expr('i32', d)})"
        if roll == 5:
            return f"nupp.math.f32.bits({self.expr('f32', d)})"
        return f"(-({self.expr('u32', d)}))"

    def expr_i64(self, d: int) -> str:
        roll = self.draw(st.integers(0, 6))
        if roll <= 2:
            return self.arith("i64", d, others=("i32",))
        if roll == 3:
            op = self.choice(("&", "|", "~"))
            return f"({self.expr('i64', d)} {op} {self.expr('i64', d)})"
        if roll == 4:
            op = self.choice(("<<", ">>"))
            count = self.choice(("0", "1", "31", "32", "63", "64", "65")) if self.chance(0.5) else self.expr("i32", d)
            return f"({self.expr('i64', d)} {op} {count})"
        if roll == 5:
            return f"nupp.math.i64.wrap({self.expr('f64', d, literal_ok=True)})"
        return self.choice(("-({})", "~({})")).format(self.expr("i64", d))

    def expr_u64(self, d: int) -> str:
        roll = self.draw(st.integers(0, 5))
        if roll <= 2:
            return self.arith("u64", d, others=("u32",))
        if roll == 3:
            op = self.choice(("&", "|", "~", "<<", ">>"))
            if op in ("<<", ">>"):
                return f"({self.expr('u64', d)} {op} {self.choice(('1', '31', '32', '63', '64'))})"
            return f"({self.expr('u64', d)} {op} {self.expr('u64', d)})"
        if roll == 4:
            return f"nupp.math.u64.wrap({self.expr('f64', d, literal_ok=True)})"
        return self.choice(("(-({}))", "(~({}))")).format(self.expr("u64", d))

    def expr_f64(self, d: int) -> str:
        roll = self.draw(st.integers(0, 11))
        if roll <= 3:
            op = self.choice(("+", "-", "*", "/", "//", "%"))
            other = self.choice(NUMERIC)
            lw, rw = ("f64", other) if self.chance(0.5) else (other, "f64")
            left, right = self.pair(lw, rw, d)
            return f"({left} {op} {right})"
        if roll == 4:
            left, right = self.pair(self.choice(("i32", "u32", "i64", "u64")), self.choice(("i32", "u32", "i64", "u64")), d)
            return f"({left} / {right})"
        if roll == 5:
            fn = self.choice(("sqrt", "abs", "floor", "ceil"))
            return f"math.{fn}({self.expr(self.choice(('f64', 'f64', 'i32', 'u32', 'f32')), d, literal_ok=True)})"
        if roll == 6:
            fn = self.choice(("min", "max"))
            left, right = self.pair("f64", "f64", d)
            return f"math.{fn}({left}, {right})"
        if roll == 7:
            return f"({self.expr(self.choice(('f64', 'f32')), d)} ^ {self.choice(('0', '1', '2', '3', '7', '16'))})"
        if roll == 8:
            return f"(-({self.expr(self.choice(('f64', 'f32')), d)}))"
        if roll == 9 and not self.helper and not (self.lane_friendly and self.in_loop):
            return f"h({self.expr('i32', d)}, {self.expr('f64', d)}, {self.expr('f32', d)})"
        if roll == 10:
            # a promotion: an established value of another width used as binary64
            return f"({self.expr(self.choice(('i64', 'u64', 'f32')), d)} + {self.choice(('0.5', '(-0.0)', '1e300'))})"
        return f"({self.expr('f64', d)} * {self.expr('f64', d)})"

    def expr_f32(self, d: int) -> str:
        roll = self.draw(st.integers(0, 5))
        f32 = "nupp.math.f32."
        if roll <= 1:
            fn = self.choice(("add", "sub", "mul", "div", "min", "max"))
            return f"{f32}{fn}({self.expr('f32', d)}, {self.expr('f32', d)})"
        if roll == 2:
            fn = self.choice(("sqrt", "neg", "abs", "exp"))
            return f"{f32}{fn}({self.expr('f32', d)})"
        if roll == 3:
            return f"{f32}fma({self.expr('f32', d)}, {self.expr('f32', d)}, {self.expr('f32', d)})"
        if roll == 4:
            return f"{f32}narrow({self.expr(self.choice(('f64', 'i32', 'u32')), d, literal_ok=True)})"
        return f"{f32}fromBits({self.expr('u32', d)})"

    def boolean(self, depth: int) -> str:
        bools = self.locals_of("bool")
        if depth <= 0 or self.chance(0.15):
            if bools and self.chance(0.6):
                return self.choice(bools)
            return self.comparison(0)
        roll = self.draw(st.integers(0, 6))
        if roll <= 2:
            return self.comparison(depth - 1)
        if roll == 3:
            return f"(not {self.boolean(depth - 1)})"
        if roll == 4:
            return f"({self.boolean(depth - 1)} {self.choice(('==', '~='))} {self.boolean(depth - 1)})"
        return f"({self.boolean(depth - 1)} {self.choice(('and', 'or'))} {self.boolean(depth - 1)})"

    def comparison(self, depth: int) -> str:
        left, right = self.pair(self.choice(NUMERIC), self.choice(NUMERIC), depth)
        return f"({left} {self.choice(COMPARE)} {right})"

    # ---- statements
    def block(self, depth: int, count: int | None = None) -> None:
        self.scopes.append({})
        n = count if count is not None else self.draw(st.integers(1, self.max_statements))
        for _ in range(n):
            self.statement(depth)
        self.scopes.pop()

    def statement(self, depth: int) -> None:
        roll = self.draw(st.integers(0, 9))
        if roll <= 2 or depth <= 0 and roll <= 5:
            return self.local()
        if roll <= 4:
            if self.assignment():
                return
            return self.local()
        if roll == 5 and not self.helper:
            return self.store()
        if roll <= 7 and depth > 0:
            return self.if_statement(depth)
        if depth > 0:
            return self.for_statement(depth) if roll == 8 else self.while_statement(depth)
        return self.local()

    def local(self) -> None:
        width = self.choice(NUMERIC + ("bool",))
        name = self.fresh("b" if width == "bool" else "v")
        depth = self.draw(st.integers(0, self.max_depth))
        if width == "bool":
            self.emit(f"local {name} = {self.boolean(depth)}")
        elif self.chance(0.5):
            source = self.choice(ASSIGNABLE[width])
            self.emit(f"local {name}: {TYPE_NAME[width]} = {self.expr(source, depth, literal_ok=source != 'f64')}")
        else:
            self.emit(f"local {name} = {self.expr(width, depth)}")
        self.declare(name, width)

    def assignment(self) -> bool:
        names = [(n, w) for scope in self.scopes for n, w in scope.items() if n not in self.readonly]
        if not names:
            return False
        name, width = self.choice(names)
        source = self.choice(ASSIGNABLE[width])
        depth = self.draw(st.integers(0, self.max_depth))
        self.emit(f"{name} = {self.expr(source, depth, literal_ok=source not in ('f64', 'f32'))}")
        return True

    def store(self, field: str | None = None, r_type: str | None = None) -> None:
        field = field or self.choice(("r", "f", "d", "k"))
        ftype = {"r": self.r_type, "f": "float", "d": "number", "k": "int32"}[field]
        widths = STORE_WIDTHS.get(ftype, ("i32", "u32", "i64", "u64"))
        target = f"{self.out_element}.{field}" if self.out_element and self.chance(0.5) else f"out[i].{field}"
        self.emit(f"{target} = {self.expr(self.choice(widths), self.draw(st.integers(0, self.max_depth)))}")

    def if_statement(self, depth: int) -> None:
        self.emit(f"if {self.boolean(self.draw(st.integers(0, 2)))} then")
        self.indent += 1
        self.block(depth - 1)
        self.indent -= 1
        for _ in range(self.draw(st.integers(0, 2))):
            self.emit(f"elseif {self.boolean(self.draw(st.integers(0, 2)))} then")
            self.indent += 1
            self.block(depth - 1)
            self.indent -= 1
        if self.chance(0.5):
            self.emit("else")
            self.indent += 1
            self.block(depth - 1)
            self.indent -= 1
        self.emit("end")

    def for_statement(self, depth: int) -> None:
        """A numeric for over at most 8 values, bounds from generated int32s
        (varying ones in a loop over spans), step 1, 2 or -1, now and then a break."""
        counter = self.fresh("j")
        low = f"({self.expr('i32', self.draw(st.integers(0, 2)))} & 3)"
        high = f"({self.expr('i32', self.draw(st.integers(0, 2)))} & 7)"
        step = self.choice(("", ", 2", ", -1"))
        first, last = (high, low) if step == ", -1" else (low, high)
        self.emit(f"for {counter} = {first}, {last}{step} do")
        self.indent += 1
        self.scopes.append({counter: "i32"})
        self.readonly.add(counter)
        self.block(depth - 1)
        if self.chance(0.2):
            self.emit(f"if {self.boolean(1)} then")
            self.emit("    break")
            self.emit("end")
        self.scopes.pop()
        self.indent -= 1
        self.emit("end")

    def while_statement(self, depth: int) -> None:
        counter = self.fresh("c")
        self.emit(f"local {counter}: int32 = 0")
        self.declare(counter, "i32")
        self.readonly.add(counter)
        self.emit(f"while {counter} < {self.choice(('1', '3', '5'))} and {self.boolean(self.draw(st.integers(0, 2)))} do")
        self.indent += 1
        self.block(depth - 1)
        if self.chance(0.2):  # a break leaves the while, lane by lane under masks
            self.emit(f"if {self.boolean(1)} then")
            self.emit("    break")
            self.emit("end")
        self.emit(f"{counter} = {counter} + 1")
        self.indent -= 1
        self.emit("end")

    # ---- the module
    def module(self) -> GeneratedKernel:
        self.r_type = self.choice(R_TYPES)
        self.lines = [
            "local span = nupp.mem.span",
            "",
            "local struct In",
            "    a: int32", "    b: uint32", "    x: number", "    y: float", "    w: int64", "    z: uint64",
            "end",
            "",
            "local struct Out",
            f"    r: {self.r_type}", "    f: float", "    d: number", "    k: int32",
            "end",
            "",
            "@aot",
            "local function h(s: int32, t: number, u: float): number",
        ]
        self.indent = 1
        self.helper = True
        self.scopes = [{}]
        self.block(0, self.draw(st.integers(0, 2)))
        self.emit(f"return {self.expr('f64', self.max_depth)}")
        self.helper = False
        self.indent = 0
        self.emit("end")
        self.emit("")
        self.emit("@aot")
        # lane-friendly kernels sometimes reduce into `acc` (an int32 sum or xor,
        # returned) and break out of the loop before any store
        reduce_op = self.choice((None, "+", "~")) if self.lane_friendly else None
        self.emit("local function k(exclusive out: span.WriteSpan<Out>, borrows inp: span.Span<In>, "
                  f"p: int32, q: number): {'int32' if reduce_op else 'nil'}")
        self.indent = 1
        self.scopes = [{}]
        self.emit('assert(#out == #inp, "length mismatch")')
        if self.chance(0.15):
            self.emit(f'assert(p ~= {self.choice(INT_LITERALS["i32"])}, "p refused")')
        if reduce_op:
            self.emit(f"local acc: int32 = {self.expr('i32', 1, literal_ok=True)}")  # never in scope: no other read
        outer = None
        if self.chance(0.3):
            outer = self.fresh("v")
            self.emit(f"local {outer} = {self.expr('f64', 1)}")
            self.declare(outer, "f64")
        self.emit("for i = 1, #out do")
        self.indent += 1
        self.in_loop = True
        self.scopes.append({})
        if self.lane_friendly and self.chance(0.2):
            # a break before anything observable in the iteration (and before
            # `outer` is set, so its condition must not read it: it would carry)
            hidden = self.scopes[0].pop(outer) if outer else None
            self.emit(f"if {self.boolean(1)} then")
            self.emit("    break")
            self.emit("end")
            if outer:
                self.scopes[0][outer] = hidden
        if outer and self.lane_friendly:
            # never carried from one iteration to the next (that keeps a loop
            # scalar): read-only in the loop, or set first thing in each iteration
            if self.chance(0.5):
                self.readonly.add(outer)
            else:
                width = self.scopes[0].pop(outer)  # its old value is not read: not carried
                value = self.expr('f64', 1)
                self.scopes[0][outer] = width
                self.emit(f"{outer} = {value}")
        if self.chance(0.3):
            self.inp_element = "e"
            self.emit("local e = inp[i]")
        if self.chance(0.3):
            self.out_element = "o"
            self.emit("local o = out[i]")
        for _ in range(self.draw(st.integers(1, self.max_statements))):
            self.statement(2)
        if reduce_op:
            self.emit(f"acc = acc {reduce_op} {self.expr('i32', 2)}")
        for field in ("r", "f", "d", "k"):
            self.store(field)
        self.scopes.pop()
        self.in_loop = False
        self.indent -= 1
        self.emit("end")
        if reduce_op:
            self.emit("return acc")
        self.indent = 0
        self.emit("end")
        self.emit("")
        self.emit("return {In = In, Out = Out, k = k, h = h}")
        return GeneratedKernel("\n".join(self.lines) + "\n", self.r_type, self.raw_divisions)


def kernels(max_depth: int = 3, max_statements: int = 4, zero_divisors: bool = True,
            lane_friendly: bool = False) -> st.SearchStrategy:
    """Whole generated modules (GeneratedKernel), well-typed by construction.
    `lane_friendly`: no calls or divisors that may be zero in the loop, so the
    lane rewrite takes it (ifs, whiles and fors with varying conditions stay),
    and now and then an int32 reduction returned and a break out of the loop
    before any store."""

    @st.composite
    def draw_kernel(draw):
        return _Writer(draw, max_depth, max_statements, zero_divisors, lane_friendly).module()

    return draw_kernel()


# the scalar arguments (p, q) every generated kernel is run with
KERNEL_SCALARS = ((7, 0.1), (-1, -0.0), (INT32_MIN, math.nan), (INT32_MAX, math.inf), (0, 1e300))
