"""The opcode table: the single source of truth for every scalar IR operation.

Each entry gives an op's operand widths, result width, whether it is exact
(computes the mathematical result with no rounding, so reordering a chain of
it cannot change bits: the lane rewrite's licence to run a dependence chain
across lanes), its identity where it is an exact reduction, how it behaves
per lane and how a vector backend runs it, whether it can raise, the library
functions that call it, and one line of documentation.  The verifier, the
printer and parser, the checker, the constant folder and every emitter read
this table; none keeps its own list, and each backend's rendering table is
checked complete against it when the backend is imported.

Names are `op.width` (`add.i32`, `lt.f64`), `op.from.to` for conversions
(`promote.f32.f64`, see `widths.CONVERSIONS`) and for comparisons across
signedness (`lt.i64.u64`).  `add.f32` is `nupp.math.f32.add`: ordinary
operators never compute in binary32.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from nupp.scalar_ir.widths import CONVERSIONS, Width

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)
INT_WIDTHS = (I32, U32, I64, U64)

# How an op runs in a gang: "lanewise" (each lane independently, the same
# instruction sequence as scalar), "short-circuit" (and/or: the right operand
# runs only in lanes that need it).
LANEWISE, SHORT_CIRCUIT = "lanewise", "short-circuit"

# How a vector backend runs an op on a gang (each backend checks at import
# that it renders every op the way its class says):
#   operator  per lane the plain machine operation (binary64 / binary32
#             arithmetic rounded once, modular integer arithmetic, bitwise,
#             a comparison, mask logic): one native vector operator
#   cast      a plain value conversion, defined for every operand (exact,
#             rounded to nearest even, or the low bits): a vector conversion
#   rule      anything else (floor division, NaN canonicalization, clamps,
#             shifts by a masked count): a vector form of the rule, or the
#             scalar rule lane by lane.  (neg of an integer and eq.bool are
#             rules only because no backend runs them natively yet)
OPERATOR, CAST, RULE = "operator", "cast", "rule"
PLAIN_CONVERSIONS = ("promote", "round", "narrow", "reinterpret", "widen", "trunc")

# The ops a reduction may combine partial results with (by base, in the order
# diagnostics list them); an exact one has an `identity`.
REDUCTIONS = ("add", "sub", "mul", "band", "bor", "bxor", "min", "max")


@dataclass(frozen=True)
class OpInfo:
    name: str
    operands: tuple[Width, ...]
    result: Width
    exact: bool
    doc: str
    lane: str = LANEWISE
    vector: str = RULE
    raises: str | None = None  # the run-time error text it may raise
    calls: tuple[str, ...] = ()  # the library functions that are this op (`nupp.math.f32.add`)
    # An exact reduction's x with op(x, y) == y for every y: where each lane's
    # partial result starts (sub's partials are sums of negated terms)
    identity: int | float | None = None

    @property
    def base(self) -> str:
        """`add` of `add.i32`."""
        return self.name.split(".", 1)[0]


OPS: dict[str, OpInfo] = {}


def _op(name, operands, result, exact, doc, **kw) -> None:
    assert name not in OPS, name
    base = name.split(".", 1)[0]
    identity = _identity(base, result) if exact and base in REDUCTIONS else None
    OPS[name] = OpInfo(name, tuple(operands), result, exact, doc, identity=identity, **kw)


def _identity(base: str, width: Width) -> int | float:
    if base in ("add", "sub", "bor", "bxor"):
        return 0
    if base == "mul":
        return 1
    if base == "band":
        return -1 if width.is_signed else (1 << width.bits) - 1
    if width.is_float:
        return math.inf if base == "min" else -math.inf
    low, high = width.int_range
    return high if base == "min" else low


def combining_op(op: str) -> str:
    """The op that combines two partial results of a reduction by `op`: the op
    itself, but sub's partials are sums of negated terms, so they add."""
    return op.replace("sub.", "add.", 1)


INTEGER_DIVISION_BY_ZERO = "integer division by zero"

# ---- integer arithmetic: wrapping modulo 2^N, floor division ------------------
for _w in INT_WIDTHS:
    _op(f"add.{_w}", (_w, _w), _w, True, f"{_w} addition modulo 2^{_w.bits}", vector=OPERATOR)
    _op(f"sub.{_w}", (_w, _w), _w, True, f"{_w} subtraction modulo 2^{_w.bits}", vector=OPERATOR)
    _op(f"mul.{_w}", (_w, _w), _w, True, f"{_w} multiplication modulo 2^{_w.bits}", vector=OPERATOR)
    _op(f"neg.{_w}", (_w,), _w, True, f"{_w} negation modulo 2^{_w.bits}")
    _signed_note = "; MIN // -1 wraps to MIN" if _w.is_signed else ""
    _op(f"idiv.{_w}", (_w, _w), _w, True, f"{_w} floor division{_signed_note}",
        raises=INTEGER_DIVISION_BY_ZERO)
    _op(f"mod.{_w}", (_w, _w), _w, True,
        f"{_w} floor remainder, sign of the divisor" + ("; MIN % -1 is 0" if _w.is_signed else ""),
        raises=INTEGER_DIVISION_BY_ZERO)

# ---- binary64 arithmetic (LuaJIT's own, one rounding per op) -------------------
_op("add.f64", (F64, F64), F64, False, "binary64 addition", vector=OPERATOR)
_op("sub.f64", (F64, F64), F64, False, "binary64 subtraction", vector=OPERATOR)
_op("mul.f64", (F64, F64), F64, False, "binary64 multiplication", vector=OPERATOR)
_op("div.f64", (F64, F64), F64, False, "binary64 division (also `/` of integers, converted to binary64 first)",
    vector=OPERATOR)
_op("neg.f64", (F64,), F64, True, "binary64 negation (flips the sign, -0 included)", vector=OPERATOR)
_op("idiv.f64", (F64, F64), F64, False, "floor(a / b)")
_op("mod.f64", (F64, F64), F64, False, "a - floor(a / b) * b (Lua 5.1; 5 % inf is NaN)")
_op("sqrt.f64", (F64,), F64, False, "math.sqrt: IEEE square root", calls=("math.sqrt",))
_op("abs.f64", (F64,), F64, True, "math.abs", calls=("math.abs",))
_op("floor.f64", (F64,), F64, True, "math.floor", calls=("math.floor",))
_op("ceil.f64", (F64,), F64, True, "math.ceil", calls=("math.ceil",))
_op("min.f64", (F64, F64), F64, True, "math.min: NaN if either is NaN; -0 < +0", calls=("math.min",))
_op("max.f64", (F64, F64), F64, True, "math.max: NaN if either is NaN; -0 < +0", calls=("math.max",))

# ---- nupp.math.f32: binary32, canonical NaN results ---------------------------
def _f32(name, operands, exact, doc, **kw) -> None:
    """`name.f32`, the op of `nupp.math.f32.name`."""
    _op(f"{name}.f32", operands, F32, exact, f"nupp.math.f32.{name}{doc}", calls=(f"nupp.math.f32.{name}",), **kw)


for _name, _doc in (("add", "addition"), ("sub", "subtraction"), ("mul", "multiplication"),
                    ("div", "division")):
    _f32(_name, (F32, F32), False, f": binary32 {_doc}", vector=OPERATOR)
_f32("sqrt", (F32,), False, "")
_f32("neg", (F32,), True, " (a NaN gives the canonical NaN)", vector=OPERATOR)
_f32("abs", (F32,), True, " (a NaN gives the canonical NaN)")
_f32("min", (F32, F32), True, ": canonical NaN if either is NaN; -0 < +0")
_f32("max", (F32, F32), True, ": canonical NaN if either is NaN; -0 < +0")
_f32("fma", (F32, F32, F32), False, ": correctly rounded a * b + c")
_f32("exp", (F32,), False, ": the defined clamp / Taylor / squaring sequence")

# ---- bitwise: 32-bit ops take and give int32; 64-bit ones keep their width -----
for _w in (I32, I64, U64):
    _count_bits = 5 if _w.bits == 32 else 6
    _op(f"band.{_w}", (_w, _w), _w, True, f"{_w} bitwise and", vector=OPERATOR)
    _op(f"bor.{_w}", (_w, _w), _w, True, f"{_w} bitwise or", vector=OPERATOR)
    _op(f"bxor.{_w}", (_w, _w), _w, True, f"{_w} bitwise xor", vector=OPERATOR)
    _op(f"bnot.{_w}", (_w,), _w, True, f"{_w} bitwise not", vector=OPERATOR)
    _op(f"shl.{_w}", (_w, I32), _w, True, f"{_w} shift left by the count's low {_count_bits} bits")
    _op(f"shr.{_w}", (_w, I32), _w, True, f"{_w} logical shift right by the count's low {_count_bits} bits")

# ---- comparisons, by the width they compare in --------------------------------
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
for _w in (F64,) + INT_WIDTHS:
    for _c in COMPARISONS:
        _op(f"{_c}.{_w}", (_w, _w), BOOL, True, f"{_c} in {_w}" + (" (false with NaN, but ne)" if _w == F64 else ""),
            vector=OPERATOR)
for _a, _b in ((I64, U64), (U64, I64)):
    for _c in COMPARISONS:
        _op(f"{_c}.{_a}.{_b}", (_a, _b), BOOL, True, f"{_c} of {_a} with {_b} by value (sign-checked)")
_op("eq.bool", (BOOL, BOOL), BOOL, True, "eq of booleans")
_op("ne.bool", (BOOL, BOOL), BOOL, True, "ne of booleans", vector=OPERATOR)

# ---- booleans ------------------------------------------------------------------
_op("and.bool", (BOOL, BOOL), BOOL, True, "a and b: b only when a is true", lane=SHORT_CIRCUIT, vector=OPERATOR)
_op("or.bool", (BOOL, BOOL), BOOL, True, "a or b: b only when a is false", lane=SHORT_CIRCUIT, vector=OPERATOR)
_op("not.bool", (BOOL,), BOOL, True, "not a", vector=OPERATOR)

# ---- conversions (widths.CONVERSIONS) -----------------------------------------
# the library functions that are conversions
_CONVERSION_CALLS = {
    "narrow.f64.f32": ("nupp.math.f32.narrow",),
    "bits.f32.u32": ("nupp.math.f32.bits",),
    "frombits.u32.f32": ("nupp.math.f32.fromBits",),
    "wrap.f64.i32": ("nupp.math.i32.wrap",),
    "wrap.f64.u32": ("nupp.math.u32.wrap",),
    "wrap.f64.i64": ("nupp.math.i64.wrap",),
    "wrap.f64.u64": ("nupp.math.u64.wrap",),
    "reinterpret.i32.u32": ("nupp.math.u32.fromI32",),
    "reinterpret.u32.i32": ("nupp.math.i32.fromU32", "nupp.math.u32.toI32"),
}
for (_src, _dst), (_kind, _doc) in CONVERSIONS.items():
    _name = f"{_kind}.{_src}.{_dst}"
    _exact = _kind in ("promote", "reinterpret", "widen", "trunc", "bits", "frombits")
    _op(_name, (_src,), _dst, _exact, _doc, calls=_CONVERSION_CALLS.get(_name, ()),
        vector=CAST if _kind in PLAIN_CONVERSIONS else RULE)
assert set(_CONVERSION_CALLS) <= set(OPS), sorted(set(_CONVERSION_CALLS) - set(OPS))


def op_info(name: str) -> OpInfo:
    return OPS[name]


def arith_op(base: str, width: Width) -> str:
    """`add` at i32 -> `add.i32` (checked against the table)."""
    name = f"{base}.{width}"
    if name not in OPS:
        raise KeyError(f"no op {name}")
    return name


def compare_op(base: str, left: Width, right: Width) -> str:
    name = f"{base}.{left}" if left == right else f"{base}.{left}.{right}"
    if name not in OPS:
        raise KeyError(f"no comparison {name}")
    return name


class OpTableMismatch(Exception):
    """A backend's table disagrees with OPS (raised when the backend is imported)."""


def check_rendered(table: str, rendered, expected=None, partial: bool = False) -> None:
    """That `rendered` (op names) covers exactly `expected` (default: every op
    of OPS), or with `partial` only some of them, naming each op missing or
    unexpected."""
    expected = set(OPS) if expected is None else set(expected)
    missing = [] if partial else sorted(expected - set(rendered))
    unexpected = sorted(set(rendered) - expected)
    problems = ([f"no entry for {', '.join(missing)}"] if missing else []) + (
        [f"entries for {', '.join(unexpected)}, which it should not have"] if unexpected else [])
    if problems:
        raise OpTableMismatch(f"{table} does not match scalar_ir/ops.py: {'; '.join(problems)}")
