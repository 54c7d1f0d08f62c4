"""The grammar and AST: every program we ship parses, and printing round-trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from nupp.frontend import ast
from nupp.frontend.parser import parse_text
from nupp.frontend.printer import format_nupp

ROOT = Path(__file__).resolve().parent.parent
NUPP_PROGRAMS = sorted((ROOT / "bench" / "kernel-subset-spike").glob("*.nupp")) + \
    sorted((ROOT / "tests" / "corpus" / "nupp").glob("*.nupp"))
LUA_PROGRAMS = sorted((ROOT / "tests" / "corpus" / "lua").glob("*.lua"))
ALL_PROGRAMS = NUPP_PROGRAMS + LUA_PROGRAMS


def test_corpus_is_present():
    assert len([p for p in NUPP_PROGRAMS if "kernel-subset-spike" in str(p)]) >= 5
    assert len(LUA_PROGRAMS) >= 15


@pytest.mark.parametrize("path", ALL_PROGRAMS, ids=lambda p: p.name)
def test_program_parses_and_round_trips(path):
    tree = parse_text(path.read_text(), str(path))
    printed = format_nupp(tree)
    assert parse_text(printed, "printed") == tree
    # printing is a fixed point after one round
    assert format_nupp(parse_text(printed)) == printed


def first_stat(text: str):
    return parse_text(text).body.stats[0]


def expr_of(text: str):
    return first_stat(f"x = {text}").values[0]


@pytest.mark.parametrize("text, expected", [
    # Lua 5.3 precedence: or < and < comparison < | < ~ < & < shift < .. < +- < */ // % < unary < ^
    ("a or b and c", "a or (b and c)"),
    ("a < b | c", "a < (b | c)"),
    ("a | b ~ c", "a | (b ~ c)"),
    ("a ~ b & c", "a ~ (b & c)"),
    ("a & b << c", "a & (b << c)"),
    ("a << b .. c", "a << (b .. c)"),
    ("a .. b .. c", "a .. (b .. c)"),
    ("a .. b + c", "a .. (b + c)"),
    ("a + b // c", "a + (b // c)"),
    ("a // b * c", "(a // b) * c"),
    ("-a ^ b", "-(a ^ b)"),
    ("a ^ b ^ c", "a ^ (b ^ c)"),
    ("a ^ -b", "a ^ (-b)"),
    ("~a & b", "(~a) & b"),
    ("not a == b", "(not a) == b"),
    ("#t ^ 2", "#(t ^ 2)"),
    ("a - b - c", "(a - b) - c"),
    ("a ~= b ~ c", "a ~= (b ~ c)"),
    ("a >> b >> c", "(a >> b) >> c"),
])
def test_operator_precedence(text, expected):
    def strip(e):
        return strip(e.expr) if isinstance(e, ast.Paren) else e

    def unparen(e):
        # drop Paren nodes so the two sides compare by structure only
        if isinstance(e, ast.Paren):
            return unparen(e.expr)
        if isinstance(e, ast.BinOp):
            return ast.BinOp(e.op, unparen(e.left), unparen(e.right))
        if isinstance(e, ast.UnOp):
            return ast.UnOp(e.op, unparen(e.operand))
        return e

    assert unparen(expr_of(text)) == unparen(expr_of(expected))
    assert expr_of(text) != expr_of(f"({text})")  # the check itself can fail


def test_nupp_additions_build_the_right_nodes():
    f = first_stat("@aot(vectorize = false)\nlocal function f(exclusive o: span.WriteSpan<P>, n: int32): nil end")
    assert isinstance(f, ast.LocalFunction)
    assert f.attributes[0].name == "aot" and f.attributes[0].args[0][0] == "vectorize"
    o, n = f.func.params
    assert (o.qualifier, o.type.path, o.type.args[0].path) == ("exclusive", ("span", "WriteSpan"), ("P",))
    assert (n.qualifier, n.type.name) == (None, "int32")
    assert f.func.returns.name == "nil"

    s = first_stat("local struct P x: float, y: float; z: int32 end")
    assert [(f.name, f.type.name) for f in s.fields] == [("x", "float"), ("y", "float"), ("z", "int32")]

    sw = first_stat("switch v do case 1, -2 -> a case is number -> b case 'x' do f() end else -> c end").switch
    assert [p.raw for p in sw.arms[0].patterns] == ["1", "-2"]
    assert sw.arms[1].patterns[0].type.name == "number"
    assert sw.arms[2].block is not None and sw.otherwise.expr == ast.Name("c")


def test_nupp_words_stay_names_where_no_keyword_fits():
    # `case`, `is`, `exclusive` and `borrows` are only keywords inside their constructs
    tree = parse_text("local case, is = 1, 2\nlocal function f(exclusive, borrows) return exclusive end")
    assert [p.name for p in tree.body.stats[0].names] == ["case", "is"]
    assert [p.name for p in tree.body.stats[1].func.params] == ["exclusive", "borrows"]


def test_spans_point_at_the_source():
    tree = parse_text("local a = 1\n\nif a then\n  print(a .. 'x')\nend\n")
    stat = tree.body.stats[1]
    assert (stat.span.line, stat.span.col, stat.span.end_line) == (3, 1, 5)
    call = stat.clauses[0][1].stats[0].call
    assert (call.span.line, call.span.col) == (4, 3)
    assert (call.args[0].right.span.line, call.args[0].right.span.col) == (4, 14)


@pytest.mark.parametrize("text", [
    "x = [[long\nstring]] .. [==[with ]] inside]==]",
    "--[[ long\ncomment ]] x = 1 --[==[ another ]] ]==] y = 2",
    "x = 0x1p4 + 0X.8 + 1e-3 + .5 + 5. + 0xffULL + 1LL + 2i + 0x1E+1",
    "x = 'a\\'b' .. \"c\\\"d\\\\\" .. '\\z\n   e' .. '\\x41\\065'",
    "#!/usr/bin/env nupp\nx = 1",
    "local t = {1, 2; [3] = 4, x = 5,}",
    "a.b.c:d 'x' {1} [[y]]",
    "f()(g)",
    "return",
])
def test_lexical_forms(text):
    tree = parse_text(text)
    assert parse_text(format_nupp(tree)) == tree
