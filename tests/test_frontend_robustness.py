"""The front end on what LuaJIT accepts: deep and long programs, every byte of
the source, every escape of a string literal, and large files in little time.

LuaJIT itself (lupa's `luajit21`, handed bytes) is the oracle for what is
accepted, what is refused and what a string literal's bytes are.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings, strategies as st
from lupa import luajit21

import nupp as nupp_api

from nupp.frontend.checker import check_module
from nupp.errors import Diagnostic, NuppError, Source, source_bytes
from nupp.frontend import ast
from nupp.frontend.literals import StringLiteralError, decode_string, read_numeral
from nupp.frontend.nesting import LJ_MAX_XLEVEL, MAX_TREE_DEPTH
from nupp.frontend.parser import parse, parse_text
from nupp.frontend.printer import format_nupp
from nupp.pipeline import translate
from nupp.scalar_ir import nodes as ir


def nupp(*args, cwd) -> subprocess.CompletedProcess:
    """`nupp ARGS` as a user runs it; stdout and stderr as bytes."""
    proc = subprocess.run([sys.executable, "-m", "nupp", *map(str, args)], capture_output=True,
                          cwd=cwd, timeout=600)
    assert b"Traceback" not in proc.stderr and b"internal compiler error" not in proc.stderr, proc.stderr
    return proc


_LUAJIT = luajit21.LuaRuntime(encoding=None)
_LOAD = _LUAJIT.eval("function(source) local chunk, err = loadstring(source, '=src'); return err end")
_RUN = _LUAJIT.eval("function(source) return assert(loadstring(source, '=src'))() end")


def luajit_refusal(source: bytes) -> bytes | None:
    """LuaJIT's error for `source` if it refuses to load it, else None."""
    return _LOAD(source)


def luajit_value(source: bytes):
    """What LuaJIT's run of `source` returns."""
    return _RUN(source)


# ---- nesting ------------------------------------------------------------------

def test_150_nested_ifs_run(tmp_path):
    (tmp_path / "m.nupp").write_text("local x = 0\n" + "if true then\n" * 150 + "x = 1\n" + "end\n" * 150
                                     + "print(x)\n")
    proc = nupp("run", "m.nupp", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, b"1\n")


@pytest.mark.parametrize("terms", [500, 5000])
def test_long_operator_chains_run(tmp_path, terms):
    (tmp_path / "m.nupp").write_text("print(" + " + ".join(["1"] * terms) + ", "
                                     + " .. ".join(["'a'"] * 150) + ")\n")
    proc = nupp("run", "m.nupp", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, f"{terms}\t{'a' * 150}\n".encode())


# Constructs that nest, as plain Lua at nesting n: LuaJIT refuses each from
# some n on ("chunk has too many syntax levels"), and so must nupp, from the same n.
NESTED_SHAPES = {
    "if": lambda n: "local x\n" + "if x then\n" * n + "x = 1\n" + "end\n" * n,
    "empty if": lambda n: "local x\n" + "if x then " * n + "end " * n,
    "while": lambda n: "local x\n" + "while x do " * n + "x = 1 " + "end " * n,
    "do": lambda n: "do " * n + "end " * n,
    "repeat": lambda n: "repeat " * n + "until true " * n,
    "elseif": lambda n: "local x\n" + "if x then elseif x then " * n + "end " * n,
    "function statement": lambda n: "function f() " * n + "end " * n,
    "function": lambda n: "local f = " + "function() return " * n + "1" + " end" * n,
    "parentheses": lambda n: "local x = " + "(" * n + "1" + ")" * n,
    "return parentheses": lambda n: "return " + "(" * n + "1" + ")" * n,
    "minus": lambda n: "local x = " + "- " * n + "1",
    "not": lambda n: "local x = " + "not " * n + "1",
    "concat": lambda n: "local x = " + " .. ".join(["'a'"] * n),
    "power": lambda n: "local x = " + " ^ ".join(["2"] * n),
    "tables": lambda n: "local x = " + "{" * n + "}" * n,
    "table keys": lambda n: "local x = " + "{[1] = " * n + "1" + "}" * n,
    "index": lambda n: "local t = {} local x = " + "t[" * n + "1" + "]" * n,
    "right operands": lambda n: "local x = " + "1 + (" * n + "1" + ")" * n,
    "mixed": lambda n: "local x = 1 + " + "(2 * " * n + "3" + ")" * n,
}


def _first_refused(make) -> int:
    for n in range(1, 2 * LJ_MAX_XLEVEL):
        err = luajit_refusal(make(n).encode())
        if err is not None:
            assert b"too many syntax levels" in err, err
            return n
    raise AssertionError("LuaJIT accepted every nesting")


def _nupp_refuses(text: str) -> Diagnostic | None:
    try:
        parse_text(text)
    except NuppError as err:
        (diag,) = err.diagnostics
        assert diag.message == "chunk has too many syntax levels", diag.render()
        return diag
    return None


@pytest.mark.parametrize("shape", NESTED_SHAPES, ids=list(NESTED_SHAPES))
def test_nesting_is_refused_exactly_where_luajit_refuses_it(shape):
    make = NESTED_SHAPES[shape]
    n = _first_refused(make)
    assert _nupp_refuses(make(n - 1)) is None
    diag = _nupp_refuses(make(n))
    assert diag is not None
    assert luajit_refusal(make(n).encode()).startswith(f"src:{diag.line}:".encode()), diag.render()


@pytest.mark.parametrize("text", ["return " + " + ".join(["1"] * 5000), "return t" + ".x" * 3000,
                                  "return f" + "()" * 3000, "return " + " < ".join(["1"] * 300)])
def test_left_associative_chains_do_not_nest(text):
    assert luajit_refusal(text.encode()) is None
    parse_text(text)


def test_trees_deeper_than_nupp_compiles_are_refused_where_they_start(tmp_path):
    text = "local x = 1\nprint(" + " + ".join(["1"] * (MAX_TREE_DEPTH + 5)) + ")\n"
    (tmp_path / "m.nupp").write_text(text)
    proc = nupp("check", "m.nupp", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith(b"m.nupp:2:7: error: expression nested too deeply"), proc.stderr[:300]
    parse_text("print(" + " + ".join(["1"] * (MAX_TREE_DEPTH - 10)) + ")")  # just below: accepted


@pytest.mark.parametrize("terms, width", [(200, "int32"), (5000, "int32"), (5000, "number")])
@pytest.mark.parametrize("mode", [("--aot", "off"), ("--mode", "scalar"), ()], ids=["interp", "scalar", "lane"])
def test_long_chains_in_aot_functions_run_in_every_mode(tmp_path, terms, width, mode):
    (tmp_path / "m.nupp").write_text(
        f"@aot\nlocal function f(a: {width}, b: {width}): {width}\n"
        f"  return b + " + " + ".join(["a"] * (terms - 1)) + "\nend\nprint(f(1, 1))\n")
    proc = nupp("run", "m.nupp", *mode, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, f"{terms}\n".encode()), proc.stderr[-500:]


@pytest.mark.parametrize("mode", [("--aot", "off"), ("--mode", "scalar"), ()], ids=["interp", "scalar", "lane"])
def test_deeply_nested_calls_in_aot_functions_run_in_every_mode(tmp_path, mode):
    depth = 95  # near LuaJIT's limit for `a + (a + (...))`; each int32 `+` is a call in the IR's Lua
    (tmp_path / "m.nupp").write_text("@aot\nlocal function f(a: int32): int32\n  return "
                                     + "a + (" * depth + "a" + ")" * depth + "\nend\nprint(f(1))\n")
    proc = nupp("run", "m.nupp", *mode, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, f"{depth + 1}\n".encode()), proc.stderr[-500:]


def test_the_python_api_takes_deep_trees(tmp_path):
    path = tmp_path / "m.nupp"
    path.write_text("@aot\nlocal function f(a: int32): int32\n  return " + " + ".join(["a"] * 5000)
                    + "\nend\nreturn {f = f}\n")
    assert nupp_api.load(str(path), mode="interp").f(1) == 5000


def test_emitters_take_deep_trees(tmp_path):
    (tmp_path / "m.nupp").write_text("@aot\nlocal function f(a: int32): int32\n  return "
                                     + " + ".join(["a"] * 3000) + "\nend\n")
    for what in (["--ir"], ["--c"], ["--c", "--gang", "8"], ["--report"], ["--lua"]):
        proc = nupp("emit", *what, "m.nupp", cwd=tmp_path)
        assert proc.returncode == 0, (what, proc.stderr[-500:])


# ---- the bytes of the source ------------------------------------------------

def test_string_bytes_reach_luajit_exactly(tmp_path):
    (tmp_path / "m.nupp").write_bytes(b'print("caf\xe9", "caf\xc3\xa9", "\\233")\n')
    for mode in (("--aot", "off"), ()):
        proc = nupp("run", "m.nupp", *mode, cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (0, b"caf\xe9\tcaf\xc3\xa9\t\xe9\n")
    assert b'"caf\xe9"' in nupp("emit", "--lua", "m.nupp", cwd=tmp_path).stdout


def test_lua_module_bytes_reach_luajit_exactly(tmp_path):
    (tmp_path / "m.lua").write_bytes(b'-- caf\xe9\nreturn "caf\xe9"\n')
    (tmp_path / "main.nupp").write_text('print(require("m"))\n')
    proc = nupp("run", "main.nupp", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, b"caf\xe9\n")


@pytest.mark.parametrize("header", [b"\xef\xbb\xbf", b"\xef\xbb\xbf#!/usr/bin/env nupp\n"])
def test_a_byte_order_mark_is_skipped_as_luajit_does(tmp_path, header):
    (tmp_path / "m.nupp").write_bytes(header + b"print(1)\n")
    proc = nupp("run", "m.nupp", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, b"1\n")


def test_a_diagnostic_after_a_byte_order_mark_points_at_the_token(tmp_path):
    (tmp_path / "m.nupp").write_bytes(b"\xef\xbb\xbflocal x = = 1\n")
    proc = nupp("check", "m.nupp", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert lines[0].startswith("m.nupp:1:11: error:")
    assert lines[2].index("^") == lines[1].index("= 1")


@pytest.mark.parametrize("name", [b"caf\xc3\xa9", b"caf\xe9", b"\xce\xbb", b"x\xff_1"])
def test_names_may_hold_bytes_from_0x80_up(tmp_path, name):
    source = b"local " + name + b" = 41\nprint(" + name + b" + 1)\n"
    assert luajit_refusal(source) is None
    (tmp_path / "m.nupp").write_bytes(source)
    proc = nupp("run", "m.nupp", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, b"42\n")


def test_a_diagnostic_on_a_line_with_undecodable_bytes_keeps_its_columns(tmp_path):
    (tmp_path / "m.nupp").write_bytes(b'local s = "caf\xe9\xe9" + = 1\n')
    proc = nupp("check", "m.nupp", cwd=tmp_path)
    lines = proc.stderr.decode().splitlines()
    assert lines[0].startswith("m.nupp:1:21: error:")
    assert "caf\ufffd\ufffd" in lines[1]
    assert lines[2].index("^") == lines[1].index("= 1")


@pytest.mark.parametrize("source", [
    b'return "a\\\r\nb"',            # backslash then CRLF: one line break in the string
    b'return "a\\\n\rb"',            # backslash then LFCR: likewise
    b'return "a\\\rb"',               # backslash then CR
    b"return [[\r\nx\ry\n\rz\r\n]]",  # long strings: the first break skipped, each break one "\n"
])
def test_line_breaks_in_strings_follow_luajit(source):
    text = source.decode()
    translate(Source("m.nupp", text))
    (ret,) = parse_text(text).body.stats
    assert decode_string(ret.values[0].raw) == luajit_value(source)


@pytest.mark.parametrize("source", [b'return "a\rb"', b'return "a\nb"', b"return 'a\r\nb'"])
def test_a_raw_line_break_ends_a_short_string_as_in_luajit(source):
    assert b"unfinished string" in luajit_refusal(source)
    with pytest.raises(NuppError) as raised:
        translate(Source("m.nupp", source.decode()))
    assert "unfinished string" in str(raised.value)


@pytest.mark.parametrize("text", ["local f = function(x) return x end\nreturn f\n'x'",
                                  "local f = function(x) return x end\nreturn f\n{1}"])
def test_a_string_or_table_argument_may_start_the_next_line(text):
    assert luajit_refusal(text.encode()) is None
    translate(Source("m.nupp", text))


@pytest.mark.parametrize("text, line, col", [
    ('local function f(x) return x end\nlocal y = f\n("x")\n', 3, 1),
    ("local t = {}\nlocal y = t:m\n(1)\n", 3, 1),
    ("local f\nf\n(1)\n", 3, 1),
    ("local f\nf(1)\n(2)\n", 3, 1),
])
def test_a_call_parenthesis_on_the_next_line_is_ambiguous_as_in_luajit(text, line, col):
    err = luajit_refusal(text.encode())
    assert b"ambiguous syntax" in err
    with pytest.raises(NuppError) as raised:
        parse_text(text)
    (diag,) = raised.value.diagnostics
    assert (diag.line, diag.col) == (line, col) and "ambiguous syntax" in diag.message
    assert err.startswith(f"src:{line}:".encode())


# ---- string literals: one decoder, LuaJIT's -------------------------------------

ESCAPE_PIECES = st.one_of(
    st.sampled_from(["\\a", "\\b", "\\f", "\\n", "\\r", "\\t", "\\v", "\\\\", '\\"', "\\'",
                     "\\\n", "\\\r", "\\\r\n", "\\\n\r", "\\z", "\\z \t\n  ", "\\z\r\n x"]),
    st.integers(0, 999).map(lambda n: f"\\{n}"),                   # decimal, valid up to 255
    st.integers(0, 999).map(lambda n: f"\\{n:03d}"),
    st.text("0123456789abcdefABCDEFgG", min_size=0, max_size=3).map(lambda h: "\\x" + h),
    st.integers(0, 0x11FFFF).map(lambda c: f"\\u{{{c:X}}}"),
    st.integers(0, 0x10FFFF).map(lambda c: f"\\u{{00{c:x}}}"),
    st.sampled_from(["\\u", "\\u{}", "\\u{x}", "\\u{12", "\\q", "\\ ", "\\é", "\\\udce9"]),
)
PLAIN_PIECES = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF, blacklist_characters='"\\'), max_size=4),
    st.sampled_from(["\udce9", "\udcff\udc80", "'", "\t", "0", "7"]),  # undecodable bytes, digits after escapes
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(ESCAPE_PIECES, PLAIN_PIECES), max_size=8))
def test_string_literals_decode_as_luajit_reads_them(pieces):
    raw = '"' + "".join(pieces) + '"'
    refusal = luajit_refusal(source_bytes("return " + raw))
    try:
        ours = decode_string(raw)
    except StringLiteralError:
        assert refusal is not None and b"escape" in refusal, raw
        with pytest.raises(NuppError):  # the parser refuses it too, at the bad escape
            parse_text("return " + raw)
        return
    assert refusal is None, (raw, refusal)
    assert ours == luajit_value(source_bytes("return " + raw))
    parse_text("return " + raw)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["x", "\n", "\r", "\r\n", "\n\r", "]", "]=]", "\\n", "\udce9"]), max_size=8),
       st.integers(0, 2))
def test_long_strings_decode_as_luajit_reads_them(pieces, level):
    raw = "[" + "=" * level + "[" + "".join(pieces) + "]" + "=" * level + "]"
    if luajit_refusal(source_bytes("return " + raw)) is not None:  # the body closed the string early
        return
    assert decode_string(raw) == luajit_value(source_bytes("return " + raw))


def test_an_invalid_escape_is_a_diagnostic_at_the_escape():
    with pytest.raises(NuppError) as raised:
        parse_text('local a = 1\nlocal s = "ok \\q"\n')
    (diag,) = raised.value.diagnostics
    assert (diag.line, diag.col, diag.message) == (2, 15, "invalid escape sequence '\\q'")
    assert "\\ddd" in diag.hint


def test_assert_messages_are_decoded_as_lua_decodes_them(tmp_path):
    text = ('@aot\nlocal function f(x: int32): int32\n'
            '  assert(x > 0, "\\65\\066\\x43\\u{44}\\z\n      E\\233")\n  return x\nend\n'
            'print(pcall(f, 0))\n')
    (fn,) = check_module(Source("m.nupp", text), parse(Source("m.nupp", text))).functions
    (check, _) = fn.body
    assert isinstance(check, ir.Assert) and source_bytes(check.message) == b"ABCDE\xe9"
    (tmp_path / "m.nupp").write_text(text)
    for mode in (("--aot", "off"), ("--mode", "scalar")):
        proc = nupp("run", "m.nupp", *mode, cwd=tmp_path)
        assert proc.stdout == b"false\tm.nupp:3: ABCDE\xe9\n", (mode, proc.stdout, proc.stderr)


# ---- numerals -------------------------------------------------------------------------

NUMERAL_TEXT = st.tuples(st.sampled_from(["0", "1", "9", ".5", "0x", "0X1", "12"]),
                         st.text("0123456789abcdefxXpPeE.+-iIuUlL_", max_size=8)).map("".join)


@settings(max_examples=400, deadline=None)
@given(NUMERAL_TEXT)
def test_numerals_are_read_as_luajit_reads_them(text):
    refusal = luajit_refusal(f"return {text}".encode())
    try:
        chunk = parse_text(f"return {text}")
    except NuppError as err:
        assert refusal is not None, (text, err.diagnostics[0].render())
        return
    assert refusal is None, (text, refusal)
    value = chunk.body.stats[0].values[0]
    if isinstance(value, ast.Number) and read_numeral(value.raw).suffix == "":
        assert read_numeral(value.raw).value == luajit_value(f"return {text}".encode())


@pytest.mark.parametrize("text", ["0x1p1024", "0X" + "f" * 300, "0x.8p1025"])
def test_a_hex_numeral_past_binary64_reads_as_infinity_as_in_luajit(text):
    assert read_numeral(text).value == luajit_value(f"return {text}".encode()) == float("inf")


@pytest.mark.parametrize("text, words", [("1..2", "spaces around '..'"), ("1.5LL", "LL or ULL"),
                                         ("18446744073709551616ULL", "LL or ULL"), ("0x", "hex")])
def test_a_malformed_number_is_a_diagnostic(text, words):
    assert b"malformed number" in luajit_refusal(f"return {text}".encode())
    with pytest.raises(NuppError) as raised:
        parse_text(f"local x = {text}")
    (diag,) = raised.value.diagnostics
    assert (diag.line, diag.col, diag.message) == (1, 11, f"malformed number near '{text}'")
    assert words in diag.hint


# ---- syntax errors ------------------------------------------------------------------

BROKEN = ['print("a" "b")', "print('a' [[b]])", 'x = "a" "b"', "local s = 'abc", "local s = [[abc", "--[[ abc",
          'print("a\nb")', "local x = = 1", "if x then", "if x print(1) end", "for i = 1 do end", "x = 1 +",
          "f(", "x = {1, 2", "local x = 1 2", "print(1))", "local x <const> = 1", "a.b:c = 1", "x = a:b",
          "x = 0x", "x = [==[ abc ]=]", "local t = {a = }", "x = function end", "x = not",
          "if x then else else end", "while true do\n", "repeat x = 1", "local a, = 1", "x = (1", "x = a[1",
          "x = a.", "::a", "f(1 2)", "x = {1 2}", "function f()\n  return 1\n  print(2)\nend", "break break",
          "local function f( end", "local function 1() end", "x = 1\ny = 2 +\n\n",
          # `...` after an operand is `...` (not `..` `.`), as `==` after a name is `==`
          'print("s" ...)', "local x ==", "while x ... do end",
          # an `end` too many; `=` where a statement starts is no condition
          "x = 1 end", "= 1", "do return == 1 end", "goto goto"]
_LUAJIT_SYNTAX_ERROR = re.compile(r"src:(\d+): (.*) near (.*)")


def _luajits_words(reason: str) -> list[str]:
    """What LuaJIT says is expected, in nupp's words."""
    names = {"'<name>'": "a name", "<name>": "a name", "'<eof>'": "end of file"}
    return [names.get(w, w) for w in re.findall(r"'[^']*'|<name>|function arguments", reason)]


@pytest.mark.parametrize("text", BROKEN)
def test_a_syntax_error_gives_luajits_reason_at_luajits_line(text):
    """Not necessarily LuaJIT's wording, never another reason: the same line, an
    unfinished string only where LuaJIT finds one, what LuaJIT expects among what
    nupp names, an unexpected symbol (or a missing operand) where LuaJIT sees one."""
    line, reason, near = _LUAJIT_SYNTAX_ERROR.fullmatch(luajit_refusal(text.encode()).decode()).groups()
    with pytest.raises(NuppError) as raised:
        parse_text(text)
    (diag,) = raised.value.diagnostics
    # at the end of the file nupp points after the last text, LuaJIT at the last line
    assert diag.line == (len(text.rstrip().splitlines()) if near == "'<eof>'" else int(line)), diag.render()
    said, _, nupp_near = diag.message.partition(" near ")
    if reason.startswith(("unfinished", "malformed")):
        assert said == reason
        return
    assert "unfinished" not in said, diag.render()
    if reason == "'=' expected" and said.endswith("this expression is not a statement"):
        return  # LuaJIT's words when an expression statement is no call
    if reason == "unexpected symbol":
        assert said in ("unexpected symbol", "an expression expected"), diag.render()
    else:
        assert reason.endswith(" expected") and said.endswith("expected") or "expected (to close" in said
        for word in _luajits_words(reason):
            assert word in said, (reason, diag.render())
    assert nupp_near == ("end of file" if near == "'<eof>'" else near), diag.render()


UNASSIGNABLE = ["(nil) = 5", "x {} = 3", "x.y {} = 3", "f() = 1", '("a") = 1', "local a\na, f(), b = 1",
                "f(), a = 1", "(x)\n\n= 1", "x 'a'.b, (y) = 1, 2", "a:b() = 1", "x\n{} -- c\n, y = 1"]


@pytest.mark.parametrize("text", UNASSIGNABLE)
def test_an_unassignable_target_is_refused_where_luajit_refuses_it(text):
    """At the token after the target (LuaJIT has read it when it refuses), with nupp's words."""
    line, _, near = _LUAJIT_SYNTAX_ERROR.fullmatch(luajit_refusal(text.encode()).decode()).groups()
    with pytest.raises(NuppError) as raised:
        parse_text(text)
    (diag,) = raised.value.diagnostics
    assert diag.line == int(line), diag.render()
    assert text.splitlines()[diag.line - 1][diag.col - 1:].startswith(near.strip("'")), diag.render()
    assert diag.message == f"cannot assign to the expression before {near}", diag.render()


# ---- large files ------------------------------------------------------------------

def generated_program(lines: int) -> str:
    """Varied ordinary Nupp: locals, tables, calls, loops, closures, operators, in blocks."""
    out = ["local t, u = {}, {}", "local function add(a, b) return a + b end"]
    i = 0
    while len(out) < lines:
        out.append("do")
        for _ in range(40):
            i += 1
            out += [
                f"local v{i} = {i} * 2 + 1 - (3 // 2) ^ 2",
                f"t[{i}] = 'str{i}' .. \"x\\n\"",
                f"if t[{i - 1}] ~= nil then t.k{i} = add({i}, 2) end",
                "for j = 1, 2 do u[j] = (u[j] or 0) + j & 3 end",
                f"local s{i} = {{a = {i}, b = {{1, 2, 3}}, [\"c\"] = 'x'}}",
                f"local function g{i}(x) return x * {i} end",
            ][i % 6].split("\n")
        out.append("end")
    return "\n".join(out) + "\nprint(#t)\n"


def _python_seconds() -> float:
    """CPU time of a fixed piece of plain Python here and now: the yardstick
    for the front end's time, on a fast machine or a loaded one."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        x = 0
        for i in range(3_000_000):
            x += i & 7
        best = min(best, time.process_time() - start)
    return best


def test_a_large_program_translates_in_little_time():
    source = Source("big.nupp", generated_program(10_000))
    translate(Source("warm.nupp", "print(1)"))  # the grammar's tables are built (or loaded) once
    yardstick = _python_seconds()
    start = time.process_time()
    translate(source)
    # about 20 yardsticks (1 to 2 s); before the front end's rework about 95 (a parse tree,
    # then a Transformer, lark's lexer, dataclasses.fields per node, the GC over a million nodes)
    assert (time.process_time() - start) / yardstick < 45


# ---- run-time error lines ------------------------------------------------------------

SPLIT_EXPRESSIONS = {
    "method on the next line": "local obj = {}\nlocal x = obj\n:m()\n",
    "field on the next line": "local obj = {}\nlocal x = obj.a\n.b\n",
    "fields on lines of their own": "local obj = {}\nlocal x = obj\n.a\n.b\n.c\n",
    "returned field": "local a\nreturn a\n.b\n",
    "call statement": "local obj = {}\nobj\n:m()\n",
    "call of a field": "local obj = {}\nobj.a\n.b()\n",
    "table argument": "local f\nlocal r = f\n{1}\n",
    "string argument": "local f\nlocal r = f\n'x'\n",
    "parenthesized table argument": "local f\nlocal r = f(\n{1})\n",
    "method with a string argument": "local o = {}\nlocal r = o\n:m\n'x'\n",
    "parenthesized callee": "local f\nlocal r = (f)(\n1\n)\n",
    "index on the next line": "local t = {}\nlocal x = t.a\n[1]\n",
    "operand on the next line": "local a = {}\nlocal x = 1 +\na\n",
    "argument on the next line": "local o = {m = function(s, x) return x.y end}\nlocal r = o:m(\nnil\n)\n",
}
_LUAJIT_ERROR = _LUAJIT.eval("function(s) local ok, e = pcall(assert(loadstring(s, '@t.lua'))); return e end")


@pytest.mark.parametrize("text", SPLIT_EXPRESSIONS.values(), ids=list(SPLIT_EXPRESSIONS))
def test_run_time_errors_name_the_line_luajit_names(tmp_path, text):
    expected = _LUAJIT_ERROR(text.encode())
    (tmp_path / "t.lua").write_text(text)
    line = expected.split(b":")[1]
    assert nupp("run", "t.lua", "--aot", "off", cwd=tmp_path).stderr.startswith(b"t.lua:" + line + b":")


# ---- line breaks: \n, \r, \r\n and \n\r are one each, as LuaJIT counts them --------

BREAKS = ["\n", "\r", "\r\n", "\n\r"]
# each line prints its number as LuaJIT counts it; a comment ends at any break,
# and a long string or an escaped break holds line breaks of its own
LINES_PROGRAM = [
    "local a = 1 -- a comment to the line break",
    "print(debug.getinfo(1, 'l').currentline)",
    "local s = [[x",
    "y]] print(#s, debug.getinfo(1, 'l').currentline)",
    "local e = 'a\\",
    "b' print(#e, debug.getinfo(1, 'l').currentline)",
    "",
    "print(debug.getinfo(1, 'l').currentline)",
]


@pytest.mark.parametrize("first, second", [(a, b) for a in BREAKS for b in BREAKS],
                         ids=[f"{a!r}+{b!r}" for a in BREAKS for b in BREAKS])
def test_lines_are_counted_as_luajit_counts_them(tmp_path, first, second):
    """Odd lines end in one break, even ones in the other."""
    text = "".join(line + (first if k % 2 == 0 else second) for k, line in enumerate(LINES_PROGRAM))
    (tmp_path / "m.nupp").write_bytes(text.encode())
    expected = _LUAJIT.eval("function(s) local out = {} local print = function(...) "
                            "out[#out + 1] = table.concat({...}, ' ') end "
                            "setfenv(assert(loadstring(s)), setmetatable({print = print}, {__index = _G}))() "
                            "return table.concat(out, ' ') end")(text.encode())
    proc = nupp("run", "m.nupp", cwd=tmp_path)
    assert proc.stdout.split() == expected.split(), proc.stderr


@pytest.mark.parametrize("br", BREAKS)
def test_diagnostics_name_lines_as_luajit_counts_them(tmp_path, br):
    text = br.join(["local a = 1 -- a comment", "local s = [[x", "y]]", "local x = = 2", ""])
    line = luajit_refusal(text.encode()).split(b":")[1]
    (tmp_path / "m.nupp").write_bytes(text.encode())
    proc = nupp("check", "m.nupp", cwd=tmp_path)
    assert proc.stderr.startswith(b"m.nupp:" + line + b":11: error: "), proc.stderr
    assert b" | local x = = 2\n" in proc.stderr  # the line shown is that line
    (tmp_path / "r.nupp").write_bytes(br.join(["local t", "", "print(t.x)", ""]).encode())
    proc = nupp("run", "r.nupp", cwd=tmp_path)
    assert proc.stderr.startswith(b"r.nupp:3:7: error: attempt to index local 't'"), proc.stderr
    assert b" | print(t.x)\n" in proc.stderr


@pytest.mark.parametrize("br", ["\n", "\r"])
def test_a_first_line_starting_with_hash_ends_at_any_break(tmp_path, br):
    (tmp_path / "m.nupp").write_bytes(f"#!/usr/bin/env nupp{br}print(debug.getinfo(1, 'l').currentline){br}".encode())
    assert nupp("run", "m.nupp", cwd=tmp_path).stdout == b"2\n"


# ---- goto and labels ------------------------------------------------------------------

GOTO_PROGRAM = """\
for i = 1, 5 do
  if i % 2 == 0 then goto continue end
  io.write(i, " ")
  ::continue::
end
local goto = 10        -- still a name where no name follows it
goto = goto + 1
local n = 0
::again::
n = n + 1
if n < 3 then goto again end
print(goto, n)
"""


def test_goto_and_labels_run_as_in_luajit(tmp_path):
    (tmp_path / "m.lua").write_text(GOTO_PROGRAM)
    proc = nupp("run", "m.lua", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, b"1 3 5 11\t3\n")
    assert luajit_refusal(GOTO_PROGRAM.encode()) is None
    printed = format_nupp(parse_text(GOTO_PROGRAM))
    assert parse_text(printed) == parse_text(GOTO_PROGRAM) and "goto continue" in printed


def test_a_misplaced_goto_is_luajits_error_at_its_line(tmp_path):
    (tmp_path / "m.lua").write_text("do\n  goto a\n  local y = 1\n  ::a::\n  print(y)\nend\n")
    proc = nupp("run", "m.lua", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith(b"m.lua:2:3: error: <goto a> jumps into the scope of local 'y'")


# Programs LuaJIT refuses only when it loads them (the parse is fine): `nupp
# check` reports each as `nupp run` does, in LuaJIT's words at LuaJIT's line.
REFUSED_AT_LOAD = {
    "goto without label": "local x = 1\ngoto nowhere\n",
    "goto into a local's scope": "do\n  goto a\n  local y = 1\n  ::a::\n  print(y)\nend\n",
    "201 locals": "local function f()\n" + "".join(f"  local v{i} = {i}\n" for i in range(201)) + "end\n",
    "61 upvalues": "".join(f"local u{i} = {i}\n" for i in range(61)) + "local function f()\n  return "
                   + " + ".join(f"u{i}" for i in range(61)) + "\nend\n",
}


@pytest.mark.parametrize("name", REFUSED_AT_LOAD)
def test_check_reports_what_luajit_refuses_at_load(tmp_path, name):
    text = REFUSED_AT_LOAD[name]
    line, message = re.fullmatch(rb"src:(\d+): (.*)", luajit_refusal(text.encode()), re.DOTALL).groups()
    (tmp_path / "m.nupp").write_text(text)
    check, run = nupp("check", "m.nupp", cwd=tmp_path), nupp("run", "m.nupp", cwd=tmp_path)
    assert check.returncode == run.returncode == 1
    assert re.match(rb"m.nupp:" + line + rb":\d+: error: " + re.escape(message) + b"\n", check.stderr), check.stderr
    assert check.stderr.split(b"\n")[0] == run.stderr.split(b"\n")[0]


@pytest.mark.parametrize("op", ["&", "//"])
def test_check_reports_nesting_the_translation_adds(tmp_path, op):
    """The source nests no deeper than LuaJIT takes (as `+` it loads), but its
    translation, where `&` and `//` are calls, nests deeper: check says so."""
    depth = 90
    nested = lambda o: "local a = 1\nlocal x = " + f"a {o} (" * depth + "a" + ")" * depth + "\nprint(x)\n"
    assert luajit_refusal(nested("+").encode()) is None
    (tmp_path / "m.nupp").write_text(nested(op))
    check = nupp("check", "m.nupp", cwd=tmp_path)
    assert check.returncode == 1 and check.stderr.startswith(b"m.nupp:2:"), check.stderr[:300]
    assert b"LuaJIT limits how deeply" in check.stderr
    assert nupp("check", "m.nupp", cwd=tmp_path).stderr.split(b"\n")[0].split(b": error: ")[1] in \
        nupp("run", "m.nupp", cwd=tmp_path).stderr


def test_goto_in_an_aot_function_is_a_subset_diagnostic(tmp_path):
    (tmp_path / "m.nupp").write_text(
        "@aot\nlocal function f(n: int32): int32\n  local s: int32 = 0\n  for i = 1, n do\n"
        "    if i == 2 then goto continue end\n    s = s + i\n    ::continue::\n  end\n  return s\nend\n")
    proc = nupp("check", "m.nupp", cwd=tmp_path)
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "m.nupp:5:20: error: goto is outside the AOT subset" in err
    assert "m.nupp:7:5: error: a label (::name::) is outside the AOT subset" in err


def test_an_error_in_a_switch_arm_names_the_arms_line(tmp_path):
    # the translation's own calls (__nupp.switch_call) must not pull the arms onto another line
    (tmp_path / "m.nupp").write_text('local t = nil\nlocal v = 2\nprint(switch v do\n  case 1 -> "one"\n'
                                     '  case 2 -> t.x\n  else -> "other"\nend)\n')
    proc = nupp("run", "m.nupp", "--aot", "off", cwd=tmp_path)
    assert proc.stderr.startswith(b"m.nupp:5:13: error: attempt to index upvalue 't'"), proc.stderr


SWITCH_FORMS = """\
local struct P
    x: int32
end
local function as_argument(v, t)
    print(switch v do
        case 1 -> "one"
        case 2 -> t.x.y
        case is string -> nil .. v
        else -> "other"
    end)
end
local function as_local(v, t)
    local y = switch v do
        case 1 -> "one"
        case 2 -> t.x.y
        else -> "other"
    end
    return y
end
local function as_statement(v, t)
    switch v do
        case 1 -> print("one")
        case 2 do
            local z = t.x.y
        end
        else -> print(t.q.r)
    end
end
local function returned(P, v)
    return switch v do
        case 1 -> "one"
        case is P -> "P"
    end
end
print(select(2, pcall(as_argument, 2, {})))
print(select(2, pcall(as_argument, "s", {})))
print(select(2, pcall(as_local, 2, {})))
print(select(2, pcall(as_statement, 2, {})))
print(select(2, pcall(as_statement, 3, {})))
print(select(2, pcall(returned, 5, 2)))
"""


def test_every_form_of_switch_raises_at_the_line_that_raised(tmp_path):
    """Each arm's test and value, and a switch that matches nothing, keep their
    source lines in the translation (a switch expression is a call of the
    translation's own, which must not pull them onto its `end` line)."""
    (tmp_path / "m.nupp").write_text(SWITCH_FORMS)
    proc = nupp("run", "m.nupp", "--aot", "off", cwd=tmp_path)
    lines = [int(line.split(b":")[1]) for line in proc.stdout.splitlines()]
    assert lines == [7, 8, 15, 24, 26, 30], proc.stdout


# ---- type patterns --------------------------------------------------------------------

def _type_pattern_hint_names() -> list[str]:
    """The Lua types the diagnostic for an untestable type pattern offers."""
    with pytest.raises(NuppError) as raised:
        translate(Source("m.nupp", "local x = switch 1 do case is Foo -> 1 else -> 2 end"))
    (diag,) = raised.value.diagnostics
    return re.search(r"use a Lua type \(([^)]*)\)", diag.hint)[1].split(", ")


# Each of Lua's types (LuaJIT's type() answers, cdata among them), as a value.
LUA_VALUES = 'nil, true, 1, "s", {}, print, coroutine.create(print), io.stdout, 1LL'


def test_every_lua_type_the_hint_offers_is_a_pattern_meaning_type_of_v(tmp_path):
    names = sorted(set(_type_pattern_hint_names()) | {"thread", "userdata"})
    assert {"function", "nil"} <= set(names)  # Lua keywords, no type names
    tests = "\n".join(f'local function is_{n}(v) return switch v do case is {n} -> true else -> false end end\n'
                      f'for i = 1, n do check("{n}", values[i], is_{n}(values[i]), type(values[i]) == "{n}") end'
                      for n in names)
    (tmp_path / "m.nupp").write_text(
        f"local values, n = {{{LUA_VALUES}}}, 9\n"
        "local function check(name, v, got, want) if got ~= want then print(name, v, got) end end\n"
        f"{tests}\nprint('done')\n")
    proc = nupp("run", "m.nupp", "--aot", "off", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, b"done\n"), proc.stdout + proc.stderr


def test_a_function_pattern_in_statements_and_lists(tmp_path):
    (tmp_path / "m.nupp").write_text(
        "local function f(v)\n  switch v do\n    case is function, is nil do print('callable or nil') end\n"
        "    else -> print('other')\n  end\nend\nf(print)\nf(nil)\nf(1)\n")
    proc = nupp("run", "m.nupp", "--aot", "off", cwd=tmp_path)
    assert proc.stdout == b"callable or nil\ncallable or nil\nother\n", proc.stderr
    assert "case is function, is nil" in format_nupp(parse_text((tmp_path / "m.nupp").read_text()))


def test_a_function_pattern_in_an_aot_function_is_a_subset_diagnostic(tmp_path):
    (tmp_path / "m.nupp").write_text("@aot\nlocal function f(x: number): number\n"
                                     "  local r: number = switch x do\n    case is function -> 1\n"
                                     "    else -> 2\n  end\n  return r\nend\n")
    proc = nupp("check", "m.nupp", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith(b"m.nupp:4:10: error: a type pattern is outside the AOT subset"), proc.stderr


# ---- struct types where a local hides their name -----------------------------------------

MODES = [("--aot", "off"), ("--mode", "scalar"), ()]
MODE_IDS = ["interp", "scalar", "lane"]

HIDDEN_STRUCT = """\
local span = nupp.mem.span
local struct P
    a: int32
end
local other = require("other")
local function kind(P, v)  -- the parameter hides the struct's name (issue 10, item 5)
    return switch v do
        case is P -> "P"
        else -> "other"
    end
end
local made = span.new(P, 2)
local P = 5  -- so does a later local
@aot
local function fill(exclusive s: span.WriteSpan<P>, x: int32): nil
    for i = 1, #s do
        s[i].a = x
    end
end
fill(made, 7)
print(kind(P, made[1]), made[2].a, kind(nil, other.element), kind(P, 1))
package.loaded.other = nil
local again = require("other")  -- a second load of a module declares a struct of its own
print(other.kind(other.element), other.kind(again.element), again.kind(again.element))
"""

OTHER_MODULE = """\
local struct P
    a: int32
end
local P2 = P
local function kind(v) local P = 1 return switch v do case is P -> "own P" else -> "not own" end end
return {element = nupp.mem.span.new(P2, 1)[1], kind = kind}
"""


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_a_struct_type_is_the_struct_where_a_local_hides_its_name(tmp_path, mode):
    """`case is P` and `span.WriteSpan<P>` name the module's struct P (of this
    load of the module) whatever local named P is in scope."""
    (tmp_path / "m.nupp").write_text(HIDDEN_STRUCT)
    (tmp_path / "other.nupp").write_text(OTHER_MODULE)
    proc = nupp("run", "m.nupp", *mode, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, b"P\t7\tother\tother\nown P\tnot own\town P\n"), proc.stderr


# ---- LuaJIT's 200 locals ------------------------------------------------------------------

def _locals_program(n: int) -> str:
    """One @aot function, then n locals of the module's own."""
    return ("@aot\nlocal function f(x: number): number\n    return x + 1\nend\n"
            + "".join(f"local v{i} = {i}\n" for i in range(n)) + "print(f(1), v0)\n")


@pytest.mark.parametrize("n", [198, 199, 200])
def test_the_local_limit_is_the_same_in_every_mode_and_in_check(tmp_path, n):
    """The translation binds the runtime's internals in one local on line 1 in
    every mode (--aot on loads its library into a field of them, no local of
    its own): the module has LuaJIT's limit less that one local, however it
    runs, and `nupp check` refuses exactly what `nupp run` refuses."""
    accepted = luajit_refusal("".join(f"local v{i}\n" for i in range(n + 2)).encode()) is None
    (tmp_path / "m.nupp").write_text(_locals_program(n))
    outcomes = {" ".join(mode) or "lane": nupp("run", "m.nupp", *mode, cwd=tmp_path) for mode in MODES}
    outcomes["check"] = nupp("check", "m.nupp", cwd=tmp_path)
    for name, proc in outcomes.items():
        first_line = proc.stderr.split(b"\n")[0]
        if accepted:
            assert proc.returncode == 0, (name, first_line)
        else:
            assert proc.returncode == 1, name
            assert first_line == b"m.nupp:203:1: error: main function has more than 200 local variables", \
                (name, first_line)
    assert outcomes["lane"].stdout == (b"2\t0\n" if accepted else b"")


def test_a_plain_lua_program_naming_the_internals_in_a_string_keeps_200_locals(tmp_path):
    (tmp_path / "m.nupp").write_text("".join(f"local v{i} = {i}\n" for i in range(199))
                                     + 'local s = "__nupp __nupp_bit __nupp_floor"\nprint(s, v0)\n')
    proc = nupp("run", "m.nupp", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, b"__nupp __nupp_bit __nupp_floor\t0\n"), proc.stderr
