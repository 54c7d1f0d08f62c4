"""Generated programs: printing round-trips, translated arithmetic matches an
independent Python oracle, and no input whatever makes the frontend crash."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from nupp.frontend import ast
from nupp.errors import NuppError, Source
from nupp.frontend.parser import parse_text
from nupp.frontend.printer import format_nupp
from nupp.pipeline import translate
from nupp.runtime.host import Host

BINARY = ["or", "and", "<", ">", "<=", ">=", "~=", "==", "|", "~", "&", "<<", ">>", "..",
          "+", "-", "*", "/", "//", "%", "^"]
UNARY = ["not", "#", "-", "~"]


def expressions(leaves):
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(ast.BinOp, st.sampled_from(BINARY), inner, inner),
            st.builds(ast.UnOp, st.sampled_from(UNARY), inner),
            st.builds(ast.Paren, inner),
            st.builds(ast.Call, st.just(ast.Name("f")), st.lists(inner, max_size=2).map(tuple)),
        ),
        max_leaves=12)


NAMES = st.sampled_from(["a", "b", "case", "is", "x1"]).map(ast.Name)
NUMBERS = st.sampled_from(["0", "1", "2.5", "0x10", "1e3"]).map(ast.Number)


def strip_parens(e):
    if isinstance(e, ast.Paren):
        return strip_parens(e.expr)
    if isinstance(e, ast.BinOp):
        return ast.BinOp(e.op, strip_parens(e.left), strip_parens(e.right))
    if isinstance(e, ast.UnOp):
        return ast.UnOp(e.op, strip_parens(e.operand))
    if isinstance(e, ast.Call):
        return ast.Call(e.func, tuple(strip_parens(a) for a in e.args))
    return e


@given(expressions(st.one_of(NAMES, NUMBERS)))
@settings(max_examples=300, deadline=None)
def test_printed_expressions_parse_back_to_the_same_structure(expr):
    chunk = ast.Chunk(ast.Block((ast.Assign((ast.Name("x"),), (expr,)),)))
    reparsed = parse_text(format_nupp(chunk)).body.stats[0].values[0]
    assert strip_parens(reparsed) == strip_parens(expr)


# ---- translated integer arithmetic against Python integers --------------------

def to_int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


INT_OPS = ["+", "-", "&", "|", "~", "<<", ">>", "//"]


def int_expressions():
    leaves = st.integers(-2**20, 2**20).map(lambda v: ast.Paren(ast.Number(str(v))) if v < 0 else ast.Number(str(v)))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(ast.BinOp, st.sampled_from(INT_OPS), inner, inner),
            st.builds(ast.UnOp, st.sampled_from(["-", "~"]), inner)),
        max_leaves=8)


def oracle(e) -> int:
    """Python integers; every value stays below 2^40, where doubles are exact."""
    if isinstance(e, ast.Number):
        return int(e.raw, 0)
    if isinstance(e, ast.Paren):
        return oracle(e.expr)
    if isinstance(e, ast.UnOp):
        v = oracle(e.operand)
        return -v if e.op == "-" else to_int32(~(v & 0xFFFFFFFF))
    a, b = oracle(e.left), oracle(e.right)
    if e.op == "+":
        return a + b
    if e.op == "-":
        return a - b
    if e.op == "//":
        return a // b  # Python's // is floor division, as math.floor(a / b) is for exact quotients
    a32, b32 = a & 0xFFFFFFFF, b & 0xFFFFFFFF
    return to_int32({"&": a32 & b32, "|": a32 | b32, "~": a32 ^ b32,
                     "<<": a32 << (b & 31), ">>": a32 >> (b & 31)}[e.op])


def safe(e):
    """Keep values small and divisors non-zero: clamp every operand with `& 0xFFFFF`."""
    if isinstance(e, ast.BinOp):
        left, right = safe(e.left), safe(e.right)
        clamp = lambda x: ast.Paren(ast.BinOp("&", x, ast.Number("0xFFFFF")))  # noqa: E731
        if e.op == "//":
            right = ast.Paren(ast.BinOp("|", clamp(right), ast.Number("1")))
        return ast.BinOp(e.op, clamp(left), clamp(right) if e.op != "//" else right)
    if isinstance(e, ast.UnOp):
        return ast.UnOp(e.op, safe(e.operand))
    return e


@given(st.lists(int_expressions().map(safe), min_size=1, max_size=10))
@settings(max_examples=40, deadline=None)
def test_translated_integer_expressions_match_python(exprs):
    stats = tuple(ast.CallStat(ast.Call(ast.Name("print"), (ast.Call(
        ast.Field(ast.Name("string"), "format"), (ast.String("'%d'"), e)),))) for e in exprs)
    text = format_nupp(ast.Chunk(ast.Block(stats)))
    host = Host()
    out = host.capture_output()
    host.run_source(Source("gen.nupp", text))
    assert [int(v) for v in out().split()] == [oracle(e) for e in exprs]


# ---- robustness ---------------------------------------------------------------

TOKENS = st.sampled_from(["local", "function", "end", "(", ")", "x", "=", "1", "'s'", "switch", "case",
                          "->", "do", "@aot", "struct", ":", "int32", "<", ">", "~", "~=", "if", "then",
                          "[[", "]]", "--", "\n", ",", "{", "}", "return", "..", "'", "\"", "#", "exclusive"])


@given(st.lists(TOKENS, max_size=25).map(" ".join))
@settings(max_examples=400, deadline=None)
def test_token_soup_gives_lua_or_a_diagnostic(text):
    try:
        translate(Source("soup.nupp", text))
    except NuppError as err:
        for d in err.diagnostics:
            assert d.line >= 1 and d.col >= 1 and d.render()


@given(st.text(max_size=60))
@settings(max_examples=300, deadline=None)
def test_arbitrary_text_gives_lua_or_a_diagnostic(text):
    try:
        translate(Source("any.nupp", text))
    except NuppError as err:
        assert err.diagnostics and all(d.render() for d in err.diagnostics)
