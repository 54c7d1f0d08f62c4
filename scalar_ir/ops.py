"""The opcode table: the single source of truth for every scalar IR operation.

Each entry gives an op's operand widths, result width, whether it is exact
(computes the mathematical result with no rounding, so reordering a chain of
it cannot change bits: the lane rewrite's licence to run a dependence chain
across lanes), how it behaves per lane, whether it can raise, and one line of
documentation.  The verifier, the printer and parser, the constant folder
and every emitter read this table; none keeps its own list.

Names are `op.width` (`add.i32`, `lt.f64`), `op.from.to` for conversions
(`promote.f32.f64`, see `widths.CONVERSIONS`) and for comparisons across
signedness (`lt.i64.u64`).  `add.f32` is `nupp.math.f32.add`: ordinary
operators never compute in binary32.
"""

from __future__ import annotations

from dataclasses import dataclass

from nupp.scalar_ir.widths import CONVERSIONS, Width

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)
INT_WIDTHS = (I32, U32, I64, U64)

# How an op runs in a gang: "lanewise" (each lane independently, the same
# instruction sequence as scalar), "short-circuit" (and/or: the right operand
# runs only in lanes that need it).
LANEWISE, SHORT_CIRCUIT = "lanewise", "short-circuit"


@dataclass(frozen=True)
class OpInfo:
    name: str
    operands: tuple[Width, ...]
    result: Width
    exact: bool
    doc: str
    lane: str = LANEWISE
    raises: str | None = None  # the run-time error text it may raise

    @property
    def base(self) -> str:
        """`add` of `add.i32`."""
        return self.name.split(".", 1)[0]


OPS: dict[str, OpInfo] = {}


def _op(name, operands, result, exact, doc, **kw) -> None:
    assert name not in OPS, name
    OPS[name] = OpInfo(name, tuple(operands), result, exact, doc, **kw)


INTEGER_DIVISION_BY_ZERO = "integer division by zero"

# ---- integer arithmetic: wrapping modulo 2^N, floor division ------------------
for _w in INT_WIDTHS:
    _op(f"add.{_w}", (_w, _w), _w, True, f"{_w} addition modulo 2^{_w.bits}")
    _op(f"sub.{_w}", (_w, _w), _w, True, f"{_w} subtraction modulo 2^{_w.bits}")
    _op(f"mul.{_w}", (_w, _w), _w, True, f"{_w} multiplication modulo 2^{_w.bits}")
    _op(f"neg.{_w}", (_w,), _w, True, f"{_w} negation modulo 2^{_w.bits}")
    _signed_note = "; MIN // -1 wraps to MIN" if _w.is_signed else ""
    _op(f"idiv.{_w}", (_w, _w), _w, True, f"{_w} floor division{_signed_note}",
        raises=INTEGER_DIVISION_BY_ZERO)
    _op(f"mod.{_w}", (_w, _w), _w, True,
        f"{_w} floor remainder, sign of the divisor" + ("; MIN % -1 is 0" if _w.is_signed else ""),
        raises=INTEGER_DIVISION_BY_ZERO)

# ---- binary64 arithmetic (LuaJIT's own, one rounding per op) -------------------
_op("add.f64", (F64, F64), F64, False, "binary64 addition")
_op("sub.f64", (F64, F64), F64, False, "binary64 subtraction")
_op("mul.f64", (F64, F64), F64, False, "binary64 multiplication")
_op("div.f64", (F64, F64), F64, False, "binary64 division (also `/` of integers, converted to binary64 first)")
_op("neg.f64", (F64,), F64, True, "binary64 negation (flips the sign, -0 included)")
_op("idiv.f64", (F64, F64), F64, False, "floor(a / b)")
_op("mod.f64", (F64, F64), F64, False, "a - floor(a / b) * b (Lua 5.1; 5 % inf is NaN)")
_op("sqrt.f64", (F64,), F64, False, "math.sqrt: IEEE square root")
_op("abs.f64", (F64,), F64, True, "math.abs")
_op("floor.f64", (F64,), F64, True, "math.floor")
_op("ceil.f64", (F64,), F64, True, "math.ceil")
_op("min.f64", (F64, F64), F64, True, "math.min: NaN if either is NaN; -0 < +0")
_op("max.f64", (F64, F64), F64, True, "math.max: NaN if either is NaN; -0 < +0")

# ---- nupp.math.f32: binary32, canonical NaN results ---------------------------
for _name, _doc in (("add", "addition"), ("sub", "subtraction"), ("mul", "multiplication"),
                    ("div", "division")):
    _op(f"{_name}.f32", (F32, F32), F32, False, f"nupp.math.f32.{_name}: binary32 {_doc}")
_op("sqrt.f32", (F32,), F32, False, "nupp.math.f32.sqrt")
_op("neg.f32", (F32,), F32, True, "nupp.math.f32.neg (a NaN gives the canonical NaN)")
_op("abs.f32", (F32,), F32, True, "nupp.math.f32.abs (a NaN gives the canonical NaN)")
_op("min.f32", (F32, F32), F32, True, "nupp.math.f32.min: canonical NaN if either is NaN; -0 < +0")
_op("max.f32", (F32, F32), F32, True, "nupp.math.f32.max: canonical NaN if either is NaN; -0 < +0")
_op("fma.f32", (F32, F32, F32), F32, False, "nupp.math.f32.fma: correctly rounded a * b + c")
_op("exp.f32", (F32,), F32, False, "nupp.math.f32.exp: the defined clamp / Taylor / squaring sequence")

# ---- bitwise: 32-bit ops take and give int32; 64-bit ones keep their width -----
for _w in (I32, I64, U64):
    _count_bits = 5 if _w.bits == 32 else 6
    _op(f"band.{_w}", (_w, _w), _w, True, f"{_w} bitwise and")
    _op(f"bor.{_w}", (_w, _w), _w, True, f"{_w} bitwise or")
    _op(f"bxor.{_w}", (_w, _w), _w, True, f"{_w} bitwise xor")
    _op(f"bnot.{_w}", (_w,), _w, True, f"{_w} bitwise not")
    _op(f"shl.{_w}", (_w, I32), _w, True, f"{_w} shift left by the count's low {_count_bits} bits")
    _op(f"shr.{_w}", (_w, I32), _w, True, f"{_w} logical shift right by the count's low {_count_bits} bits")

# ---- comparisons, by the width they compare in --------------------------------
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
for _w in (F64,) + INT_WIDTHS:
    for _c in COMPARISONS:
        _op(f"{_c}.{_w}", (_w, _w), BOOL, True, f"{_c} in {_w}" + (" (false with NaN, but ne)" if _w == F64 else ""))
for _a, _b in ((I64, U64), (U64, I64)):
    for _c in COMPARISONS:
        _op(f"{_c}.{_a}.{_b}", (_a, _b), BOOL, True, f"{_c} of {_a} with {_b} by value (sign-checked)")
for _c in ("eq", "ne"):
    _op(f"{_c}.bool", (BOOL, BOOL), BOOL, True, f"{_c} of booleans")

# ---- booleans ------------------------------------------------------------------
_op("and.bool", (BOOL, BOOL), BOOL, True, "a and b: b only when a is true", lane=SHORT_CIRCUIT)
_op("or.bool", (BOOL, BOOL), BOOL, True, "a or b: b only when a is false", lane=SHORT_CIRCUIT)
_op("not.bool", (BOOL,), BOOL, True, "not a")

# ---- conversions (widths.CONVERSIONS) -----------------------------------------
for (_src, _dst), (_kind, _doc) in CONVERSIONS.items():
    _exact = _kind in ("promote", "reinterpret", "widen", "trunc", "bits", "frombits")
    _op(f"{_kind}.{_src}.{_dst}", (_src,), _dst, _exact, _doc)


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
