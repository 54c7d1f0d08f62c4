"""The IR's text form: print -> parse gives back equal nodes (locations too),
parse errors say where, and no input makes the parser raise anything but
IRSyntaxError."""

from __future__ import annotations

import math
from dataclasses import fields, is_dataclass

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nupp.scalar_ir.nodes import (
    DISJOINT, NO_LOC, SHARED_READ, AliasFact, Assert, Assign, Break, Call, Const, Eval, For,
    Function, If, Len, Let, Load, Loc, Module, Op, Param, Return, SpanType, Store, StructDef,
    SwitchLabels, Var, While,
)
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.text import LOC_COLUMN, IRSyntaxError, parse_module, print_expr, print_function, print_module
from nupp.scalar_ir.widths import Width

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)


def exact(node):
    """Everything equality leaves out: locations, a float's sign and bits, a value's type."""
    if is_dataclass(node):
        return (type(node).__name__,) + tuple(exact(getattr(node, f.name)) for f in fields(node))
    if isinstance(node, tuple):
        return tuple(exact(x) for x in node)
    if isinstance(node, float):
        return ("float", "nan" if math.isnan(node) else node.hex())
    if isinstance(node, (bool, int)):
        return (type(node).__name__, node)
    return node


def assert_round_trip(module: Module) -> str:
    text = print_module(module)
    back = parse_module(text)
    assert back == module
    assert exact(back) == exact(module)
    assert print_module(back) == text
    return text


# ---- hand-built modules ---------------------------------------------------------

PIXEL = StructDef("Pixel", (("cx", "float"), ("cy", "float")))
ESCAPE = StructDef("Escape", (("n", "int32"),))
EDGE_CONSTS = [
    Const(math.nan, F64), Const(math.inf, F64), Const(-math.inf, F64), Const(-0.0, F64), Const(0.0, F64),
    Const(5e-324, F64), Const(1.7976931348623157e308, F64), Const(0.1, F64), Const(1e16, F64),
    Const(math.nan, F32), Const(math.inf, F32), Const(-math.inf, F32), Const(-0.0, F32),
    Const(1.401298464324817e-45, F32), Const(3.4028234663852886e38, F32), Const(16777217.0, F64),
    Const(-2147483648, I32), Const(2147483647, I32), Const(0, U32), Const(4294967295, U32),
    Const(-9223372036854775808, I64), Const(9223372036854775807, I64), Const(18446744073709551615, U64),
    Const(True, BOOL), Const(False, BOOL),
    Const(2, F64), Const(2.0, I32), Const(True, I32), Const(1, BOOL),  # odd but printable: verifier's job
]


def mandelbrot() -> Function:
    params = (Param("out", SpanType("Escape", True), "exclusive"),
              Param("pixels", SpanType("Pixel", False), "borrows"), Param("maxIter", I32))
    zx, zy, n = Var("zx", F32), Var("zy", F32), Var("n", I32)
    mag = Op("add.f32", (Op("mul.f32", (zx, zx)), Op("mul.f32", (zy, zy))))
    cond = Op("and.bool", (Op("lt.i32", (n, Var("maxIter", I32))),
                           Op("le.f64", (Op("promote.f32.f64", (mag,)), Const(4.0, F64)))))
    loop = For("i", Const(1, I32), Len("out"), 1, (
        Let("cx", F32, Op("narrow.f64.f32", (Load("pixels", "i", "cx", F64),)), Loc(20, 9)),
        Let("zx", F32, Const(0.0, F32), Loc(22, 9)),
        Let("zy", F32, Const(-0.0, F32)),
        Let("n", I32, None, Loc(23, 9)),
        Assign("n", Const(0, I32), Loc(24, 9)),
        While(cond, (Assign("n", Op("add.i32", (n, Const(1, I32))), Loc(29, 13)), Break(Loc(30, 13))),
              Loc(25, 9)),
        Store("out", "i", "n", n, Loc(31, 9)),
    ), Loc(19, 5))
    body = (Assert(Op("eq.i32", (Len("out"), Len("pixels"))), "length mismatch", Loc(18, 5)), loop)
    return Function("mandelbrot", params, None, body, (AliasFact("out", "pixels", DISJOINT),), True, Loc(17, 1))


def classify() -> Function:
    """A lowered switch initializer: an If chain with labels, and everything else once."""
    code, result = Var("code", I32), Var("result", I32)

    def eq(v):
        return Op("eq.i32", (code, Const(v, I32)))
    labels = SwitchLabels("code", I32, ((-2147483648,), (1, 2), ()), True)
    chain = If(eq(-2147483648), (Assign("result", Const(10, I32), Loc(9, 9)),),
               (If(Op("or.bool", (eq(1), eq(2))), (Assign("result", Const(20, I32)),),
                   (Assign("result", Const(30, I32), Loc(11, 9)),), None, Loc(10, 9)),),
               labels, Loc(8, 9))
    labelled_inner = If(Const(True, BOOL), (), (If(Const(False, BOOL), (Break(),), (),
                                                    SwitchLabels("code", U32, (), False)),))
    body = (
        Let("code", I32, Load("input", "i", "value", I32)),
        Let("result", I32, None),
        chain,
        While(Const(True, BOOL), (labelled_inner, Break())),
        For("j", Len("input"), Const(1, I32), -2, (Eval(Call("helper", (code, result), None), Loc(3, 4)),)),
        Store("output", "i", "value", Call("twice", (result,), I32)),
        Return(None, Loc(14, 5)),
    )
    loop = For("i", Const(1, I32), Len("output"), 1, body)
    return Function("classify", (Param("output", SpanType("Code", True), "exclusive"),
                                 Param("input", SpanType("Code", False), "borrows")),
                    None, (loop,), (AliasFact("output", "input", SHARED_READ),), False)


def constants() -> Function:
    body = tuple(Let(f"c{k}", c.width, c, Loc(k + 1, 3)) for k, c in enumerate(EDGE_CONSTS))
    messages = ["", 'say "hi"\\ \n\t\r', "\x00\x7f\u2028\ud800", "ünïcödé 🙂", "a;b ; error: x"]
    return Function("constants", (), F64, body + tuple(Assert(Const(True, BOOL), m) for m in messages)
                    + (Return(Const(-0.0, F64)),))


def every_op() -> Function:
    params = tuple(Param(f"p{w}", w) for w in Width)
    body = tuple(Let(f"r{k}", OPS[name].result,
                     Op(name, tuple(Var(f"p{w}", w) for w in OPS[name].operands)))
                 for k, name in enumerate(sorted(OPS)))
    return Function("every_op", params, None, body, (), True, Loc(1, 1))


MODULES = {
    "empty": Module((), ()),
    "struct only": Module((PIXEL, StructDef("Empty", ())), ()),
    "mandelbrot": Module((PIXEL, ESCAPE), (mandelbrot(),)),
    "classify": Module((StructDef("Code", (("value", "int32"),)),), (classify(),)),
    "constants": Module((), (constants(),)),
    "every op": Module((), (every_op(),)),
    "empty function": Module((), (Function("nothing", (), None, ()),)),
}


@pytest.mark.parametrize("name", MODULES)
def test_round_trip(name):
    assert_round_trip(MODULES[name])


def test_printed_form():
    text = print_module(Module((PIXEL, ESCAPE), (mandelbrot(),)))
    assert text.startswith("struct Pixel { cx: float, cy: float }\nstruct Escape { n: int32 }\n\n"
                           "func mandelbrot(%out: span<Escape> write exclusive, %pixels: span<Pixel> "
                           "read borrows, %maxIter: i32) -> nil\n  alias %out %pixels disjoint\n{")
    assert "\n  for %i = 1:i32 to len %out step 1 {" in text
    assert "\n    let %cx: f32 = narrow.f64.f32(load.f64 %pixels[%i].cx)" in text
    assert "\n    let %zy: f32 = -0.0:f32\n" in text       # NO_LOC: nothing printed
    assert "\n" + "      break".ljust(LOC_COLUMN) + "@30:13\n" in text
    assert text.endswith("\n" + "    store %out[%i].n = %n".ljust(LOC_COLUMN) + "@31:9\n  }\n}\n")


def test_print_switch_and_elif():
    text = print_function(classify())
    assert "    } elif or.bool(eq.i32(%code, 1:i32), eq.i32(%code, 2:i32)) {" in text
    assert "    } switch %code: i32 [-2147483648] [1, 2] [] default\n" in text
    assert "      } else {\n        if false {" in text     # a labelled If is never an elif
    assert "        } switch %code: u32\n" in text
    assert "eval call @helper(%code, %result) -> nil" in text
    assert "store %output[%i].value = call @twice(%result) -> i32" in text
    assert "for %j = len %input to 1:i32 step -2 {" in text


@pytest.mark.parametrize("const, text", [
    (Const(math.nan, F64), "nan:f64"), (Const(-math.inf, F32), "-inf:f32"), (Const(-0.0, F64), "-0.0:f64"),
    (Const(1.401298464324817e-45, F32), "1.401298464324817e-45:f32"), (Const(1e16, F64), "1e+16:f64"),
    (Const(-2147483648, I32), "-2147483648:i32"), (Const(18446744073709551615, U64), "18446744073709551615:u64"),
    (Const(True, BOOL), "true"), (Const(False, I32), "false:i32"), (Const(2, F64), "2.0:f64"),  # an exact int at f64 is that float
])
def test_print_const(const, text):
    assert print_expr(const) == text


def test_locations_come_back():
    back = parse_module(print_module(MODULES["mandelbrot"]))
    fn = back.functions[0]
    assert fn.loc == Loc(17, 1)
    assert fn.body[0].loc == Loc(18, 5)
    loop = fn.body[1]
    assert loop.loc == Loc(19, 5)
    assert [s.loc for s in loop.body] == [Loc(20, 9), Loc(22, 9), NO_LOC, Loc(23, 9), Loc(24, 9),
                                          Loc(25, 9), Loc(31, 9)]


def test_parser_is_free_form():
    """Layout, comments and `else { if }` are accepted; printing makes them canonical."""
    text = """
    ; a comment
    func add(%left: f32, %right: f32) -> f32 novectorize { return add.f32(%left, %right) @4:5 }  ; done
    func g(%x: i32) -> nil { if eq.i32(%x, 1:i32) { break } else { if true { break @2:3 } } }
    """
    module = parse_module(text)
    assert module.functions[0] == Function("add", (Param("left", F32), Param("right", F32)), F32,
                                           (Return(Op("add.f32", (Var("left", F32), Var("right", F32)))),),
                                           vectorize=False)
    assert module.functions[0].body[0].loc == Loc(4, 5)
    printed = print_module(module)
    assert "  } elif true {" in printed
    assert parse_module(printed) == module


def test_var_width_comes_from_its_declaration():
    text = """func f(%a: u64) -> nil {
      let %b: f32
      for %i = 1:i32 to 3:i32 step 1 { let %a: bool = not.bool(true) assert %a, "" }
      eval call @g(%a, %b, %i) -> nil
    }"""
    with pytest.raises(IRSyntaxError) as err:   # %i is out of scope after its loop
        parse_module(text)
    assert (err.value.line, err.value.col) == (4, 28)
    module = parse_module(text.replace(", %i)", ")"))
    body = module.functions[0].body
    assert body[1].body[1].cond == Var("a", BOOL)      # the inner %a shadows the parameter
    assert body[2].expr.args == (Var("a", U64), Var("b", F32))
    counter = parse_module("func f() -> nil { for %i = 1:i32 to 2:i32 step 1 { return %i } }")
    assert counter.functions[0].body[0].body[0].value == Var("i", I32)


# ---- parse errors -----------------------------------------------------------------

@pytest.mark.parametrize("text, line, col, words", [
    ("func f() -> i32 {\n  return %x\n}", 2, 10, "undeclared variable %x"),
    ("func f(%a: i32) -> i32 {\n  return add.i33(%a, %a)\n}", 2, 10, "unknown op 'add.i33' (did you mean 'add.i32'?)"),
    ("func f(%a: i32) -> i32 {\n  return add.i32(%a)\n}", 2, 10, "add.i32 takes 2 operands, got 1"),
    ("func f(%a: i32) -> i32 {\n  return neg.i32(%a, %a)\n}", 2, 10, "neg.i32 takes 1 operand, got 2"),
    ("func f() -> nil {\n  while true {\n    break\n", 4, 1, "the '{' at 2:14 is never closed"),
    ("func f() -> nil {\n  let %x: f64 = 1.5\n}", 2, 17, "constant 1.5 needs a width"),
    ("func f() -> nil {\n  let %x: f64 = 1.5:f63\n}", 2, 21, "expected a width"),
    ("func f() -> nil {\n  let %x: f64 = 1.5.2:f64\n}", 2, 17, "constant 1.5 needs a width"),
    ("func f() -> nil {\n  let %x: f64 = 1" + "0" * 5000 + ":i64\n}", 2, 17, "integer literal too long"),
    ("func f() -> nil {\n  let %x: f64 = true:\n}", 3, 1, "expected a width"),
    ("func f() -> nil {\n  let %x: f64 = -:f64\n}", 2, 17, "unexpected character '-'"),
    ("func f() -> nil {\n  assert true, \"abc\n}", 2, 16, "unterminated string"),
    ("func f() -> nil {\n  assert true, \"a\\qc\"\n}", 2, 18, "bad escape '\\q'"),
    ("func f() -> nil {\n  assert true, \"a\\x4\"\n}", 2, 18, "bad escape '\\x4'"),
    ("func f() -> nil {\n  assert true\n}", 3, 1, "expected ',' before the assert's message"),
    ("func f(%s: span<P> read) -> f64 {\n  return %s\n}", 2, 10, "%s is a span, not a value"),
    ("func f() -> nil {\n  for %i = 1:i32 to 2:i32 step 1.0 { }\n}", 2, 32, "expected a step (an integer)"),
    ("func f() -> nil {\n  eval add.i32(1:i32, 2:i32)\n}", 2, 8, "expected 'call' (eval takes a call)"),
    ("func f() -> nil {\n  let %x: i32 = call @g()\n}", 3, 1, "expected '->' and the call's result width"),
    ("func f() -> nil {\n  %x = 1:i32\n}", 2, 3, "expected a statement"),
    ("func f() -> nil {\n  let %x: i32 = let\n}", 2, 17, "expected an expression, found 'let'"),
    ("func f(%a: i32, %b: span<P> read) -> nil\n  alias %a %b maybe\n{ }", 2, 15, "expected an alias fact"),
    ("func f() -> nil {\n  if true { } switch %x: i32 [1]\n}", 2, 22, "undeclared variable %x"),
    ("func f() -> nil {\n  if true { } switch %x: i32 [1.5]\n}", 2, 22, "undeclared variable %x"),
    ("func f(%x: i32) -> nil {\n  if true { } switch %x: i32 [1.5]\n}", 2, 31, "expected a case label"),
    ("struct P { x: float,, }", 1, 21, "expected a field name"),
    ("funk f() -> nil { }", 1, 1, "expected 'struct' or 'func', found 'funk'"),
    ("func f() -> nil { break } }", 1, 27, "expected 'struct' or 'func', found '}'"),
    ("func f() -> nil { break @1: }", 1, 25, "unexpected character '@'"),
    ("func f() -> nil {\n  let %x: i32 = load.i33 %s[%i].x\n}", 2, 17, "expected load.WIDTH"),
])
def test_parse_error(text, line, col, words):
    with pytest.raises(IRSyntaxError) as err:
        parse_module(text)
    assert words in err.value.message
    assert (err.value.line, err.value.col) == (line, col), err.value
    assert str(err.value) == f"{line}:{col}: {err.value.message}"


@pytest.mark.parametrize("text", [
    "func f() -> bool { return " + "not.bool(" * 5000 + "true" + ")" * 5000 + " }",
    "func f() -> nil { " + "while true { " * 3000 + "}" * 3001,
    "func f() -> nil { " + "if true { } else { " * 3000 + "}" * 3001,
])
def test_deep_nesting_is_a_syntax_error(text):
    with pytest.raises(IRSyntaxError, match="nested more than"):
        parse_module(text)


def test_moderate_nesting_parses():
    depth = 100
    text = "func f() -> bool { return " + "not.bool(" * depth + "true" + ")" * depth + " }"
    assert_round_trip(parse_module(text))


# ---- properties -------------------------------------------------------------------

INT_EDGES = {w: (w.int_range[0], w.int_range[1], 0, 1, -1 if w.is_signed else 2)
             for w in (I32, U32, I64, U64)}
PARAM_NAMES = {w: f"p_{w}" for w in Width}


def consts(width: Width):
    if width.is_int:
        values = st.integers(*width.int_range) | st.sampled_from(INT_EDGES[width])
    elif width == BOOL:
        values = st.booleans()
    else:
        values = st.floats(allow_nan=False, width=64 if width == F64 else 32) | st.just(math.nan)
    return values.map(lambda v: Const(v, width))


WIDTHS = st.sampled_from(list(Width))
LEAVES = st.one_of(
    WIDTHS.flatmap(consts),
    WIDTHS.map(lambda w: Var(PARAM_NAMES[w], w)),
    st.just(Len("s")),
    st.builds(Load, st.just("s"), st.just("p_i32"), st.sampled_from(["x", "inf", "load.f64"]), WIDTHS),
)


def _compound(children):
    ops = st.sampled_from(sorted(OPS)).flatmap(
        lambda name: st.lists(children, min_size=len(OPS[name].operands), max_size=len(OPS[name].operands))
        .map(lambda args: Op(name, tuple(args))))
    calls = st.builds(Call, st.sampled_from(["f", "g.h", "_k9"]), st.lists(children, max_size=3).map(tuple),
                      st.none() | WIDTHS)
    return ops | calls


EXPRS = st.recursive(LEAVES, _compound, max_leaves=25)
LOCS = st.just(NO_LOC) | st.builds(Loc, st.integers(0, 10**6), st.integers(0, 999))
NAMES = st.sampled_from(["l", "tmp.1", "_x", "0"])


def _statements(children):
    blocks = st.lists(children, max_size=3).map(tuple)
    labels = st.builds(SwitchLabels, WIDTHS.map(lambda w: PARAM_NAMES[w]), WIDTHS,
                       st.lists(st.lists(st.integers(-2**64, 2**64), max_size=3).map(tuple), max_size=3).map(tuple),
                       st.booleans())
    return st.one_of(
        st.builds(If, EXPRS, blocks, blocks, st.none() | labels, LOCS),
        st.builds(For, st.sampled_from(["k", "k.2"]), EXPRS, EXPRS, st.integers(-5, 5), blocks, LOCS),
        st.builds(While, EXPRS, blocks, LOCS),
    )


SIMPLE = st.one_of(
    st.builds(Let, NAMES, WIDTHS, st.none() | EXPRS, LOCS),
    st.builds(Assign, WIDTHS.map(lambda w: PARAM_NAMES[w]), EXPRS, LOCS),
    st.builds(Store, st.just("s"), st.just("p_i32"), st.just("x"), EXPRS, LOCS),
    st.builds(Break, LOCS),
    st.builds(Return, st.none() | EXPRS, LOCS),
    st.builds(Assert, EXPRS, st.text(max_size=8), LOCS),
    st.builds(Eval, st.builds(Call, st.just("f"), st.lists(EXPRS, max_size=2).map(tuple), st.none() | WIDTHS), LOCS),
)
STMTS = st.recursive(SIMPLE, _statements, max_leaves=12)
PARAMS = tuple(Param(n, w) for w, n in PARAM_NAMES.items()) + (Param("s", SpanType("S", False), "borrows"),)


def _function(body, result, vectorize, loc):
    return Function("f", PARAMS, result, tuple(body), (AliasFact("s", "s", SHARED_READ),), vectorize, loc)


FUNCTIONS = st.builds(_function, st.lists(STMTS, max_size=4), st.none() | WIDTHS, st.booleans(), LOCS)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(EXPRS)
def test_expression_trees_round_trip(expr):
    assert_round_trip(Module((), (_function([Return(expr)], None, True, NO_LOC),)))


@FAST
@given(FUNCTIONS)
def test_statement_trees_round_trip(fn):
    assert_round_trip(Module((StructDef("S", (("x", "float"),)),), (fn,)))


def _parse_or_syntax_error(text: str) -> None:
    try:
        module = parse_module(text)
    except IRSyntaxError as err:
        assert 1 <= err.line <= text.count("\n") + 1 and err.col >= 1
        return
    assert parse_module(print_module(module)) == module


@FAST
@given(st.text())
def test_arbitrary_text_raises_only_syntax_errors(text):
    _parse_or_syntax_error(text)


TOKENS = ["func", "struct", "f", "(", ")", "{", "}", "[", "]", "<", ">", ",", ":", "=", ".", "->",
          "%x", "%s", "@f", "@1:2", "i32", "f64", "bool", "nil", "span", "read", "write", "exclusive",
          "alias", "disjoint", "let", "assign", "store", "if", "elif", "else", "switch", "default", "for",
          "to", "step", "while", "break", "return", "assert", "eval", "call", "len", "load.f64",
          "add.i32", "not.bool", "1", "-1", "1.5", "nan", "inf", '"m"', "true", "false", "novectorize", "\n"]


@FAST
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_token_soup_raises_only_syntax_errors(tokens):
    _parse_or_syntax_error("func f(%x: i32, %s: span<S> read) -> nil { " + " ".join(tokens))


@FAST
@given(st.data())
def test_mutated_ir_raises_only_syntax_errors(data):
    text = print_module(MODULES["classify"])
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 20)))
    insert = data.draw(st.sampled_from(TOKENS) | st.text(max_size=3))
    _parse_or_syntax_error(text[:start] + insert + text[end:])


def test_const_equality_is_by_width_and_bits():
    nan = float("nan")
    assert Const(nan, F64) == Const(nan, F64)
    assert Const(-0.0, F64) != Const(0.0, F64)
    assert Const(2, F64) == Const(2.0, F64)
    assert Const(True, BOOL) != Const(1, I32)
    assert len({Const(nan, F64), Const(float("nan"), F64), Const(-0.0, F64), Const(0.0, F64)}) == 3
