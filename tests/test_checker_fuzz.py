"""Generated wrong programs get the user's diagnostic, never an internal error (issue 9).

Each example draws a well-typed module (tests/kernelgen.py `kernels()`, or
tests/fuzz's generator, which covers every construct of the subset) and
applies one to four mutations of the kinds a user's mistakes take
(MUTATIONS): statements deleted, duplicated, swapped, moved (an assert into
a loop, an @aot function into another) or inserted (break, return, goto, a
nested @aot function, a recursive call, a store to a read-only span, ...);
an expression replaced by one outside the subset, of another width or from
elsewhere in the module; operators changed; loop bounds and steps changed;
type annotations changed to another width or an unknown name; parameters,
arguments and functions duplicated or dropped; fields and callees renamed.
The parser's spans say where each node's text is; a mutation edits the text.

For each mutant, `compile_module` (parse, validate, check, verify, fold)
either succeeds (a mutant may still be a valid program) or raises NuppError
whose every diagnostic points into the file and renders its line with a
caret; `translate` (the `--aot off` path) answers alike: it refuses with the
same first diagnostic, or succeeds too.  Any other exception (InternalError
from the verifier, AssertionError, KeyError, RecursionError, ...) fails.
Findings are regression cases in tests/test_checker_gaps.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, is_dataclass
from typing import Callable, Iterator, Optional

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings, strategies as st

from nupp.frontend import ast
from nupp.errors import NuppError, Source
from nupp.frontend.parser import parse
from nupp.pipeline import translate
from nupp.pipeline import compile_module
from tests.conftest import UNDER_CI
from tests.fuzz.generator import generate
from tests.fuzz.program import module_text
from tests.kernelgen import kernels

PATH = "mutant.nupp"

# ---- what a mutation puts in -----------------------------------------------------------------
# Names are those of kernelgen's module: structs In (a b x y w z) and Out (r f d k), the
# helper h(s, t, u), the kernel k(out, inp, p, q) with its loop counter i and elements e, o
# (the fuzz generator's modules share out, inp and In, Out); mutations also splice in the
# module's own expressions and names.

STATEMENTS = (
    "break", "return", "return 1", "return p", "return q, q", "goto done", "::done::", "do end",
    "local z", "local z = nil", "local z, y = 1, 2", "local z: int32 = 'x'", "local z: vector = 1",
    "undefined = 1", "h = 1", "k = nil", "p, q = 1, 2", "p = q", "q = p", "i = 1", "out = inp", "e = o",
    "local z = h(1, 2.0)", "h(1, 2.0, 3.0)", "local z = h(p, q, q)", "k(out, inp, p, q)",
    "local z = k(out, inp, p, q)", "h(s, t, u)", "inp[i].a = 1", "out[i].nosuch = 1", "out[p].r = 1",
    "out[1].r = 1", "e.a = 1", "o.r = 1.5", "o.f = q", "o = out[i]", "local z = e", "local z = #e",
    "local e = out[i]", "local e = inp[1]", "local z = out[i]", "out[i] = inp[i]",
    "@aot\nlocal function g(x: int32): int32\n    return x\nend",
    "@aot\nlocal function h(s: int32, t: number, u: float): number\n    return t\nend",
    "@aot\nfunction k(x: int32): nil\nend",
    "local function g() end", "function g() end", "function h() end", "local h = 1",
    "local struct Q\n    v: int32\nend", "local struct In\n    a: int32\nend",
    "switch p do\n    case 1 do\n    end\nend", "for _, v in pairs(out) do end", "repeat until true",
    "repeat local z: int32 = 1 until z > 0", "while true do end", "while p do end",
    "for j = 1, 10 do break end", "for j = 1, #out do out[j].r = 1 end", "for j = 1, #inp do out[j].r = 1 end",
    "for j = #out, 1, -1 do out[j].k = j end", "for j = 0, 3 do end", "for j = 1, 3, 0 do end",
    'assert(true, "m")', "assert(#out == #inp)", 'assert(p, "m")', 'assert(#out == #inp, q)',
    'assert(#out > 0, "m")', "local z = assert(p, 'x')", "print(p)", "out:m()", "h:m()", "local z = ...",
    "local z = {}", "local z = function() end", "local i: int32 = 0", "local p = q", "local inp = 1",
    "local out = p", "local h = 1", "local q: float = 1", "local i = inp[i]", "local e = o", "local o = e",
    "local z: int32 = switch p do\n    case 1 -> 2\n    case 1 -> 3\n    else -> 4\nend",
    "local z: int32 = switch q do\n    case 1.5 -> 2\n    else -> 4\nend",
    "local z = switch p do\n    case 1 -> 2\nend",
    "local z = switch p do\n    case 1 -> 1.5\n    else -> 2LL\nend",
    "local z: int32 = switch p do\n    case 'a' -> 2\n    else -> 4\nend",
    "local z, y = switch p do\n    case 1 -> 2\n    else -> 3\nend",
    "local z: int32 = switch p do\n    case 4294967296 -> 2\n    else -> 4\nend",
    "local z: int32 = switch p do\n    case 1 do\n    end\n    else -> 4\nend",
    "local z: int32 = switch p do\n    case is number -> 2\n    else -> 4\nend",
    "local z = switch p do\n    case 1 -> switch p do case 2 -> 3 else -> 4 end\n    else -> 5\nend",
    "local z = switch true do\n    case 1 -> 1\n    else -> 2\nend",
    "math.sqrt(q)", "nupp.math.f32.narrow(q)", "local z = g(inp)", "g(inp)",
    "@aot\nlocal function g(borrows a: span.Span<In>): int32\n    return #a\nend",
    "@aot\nlocal function g(...): nil\nend", "@aot\nlocal function g(x: int32)\nend",
    "@aot\nfunction t.m(x: int32): nil\nend", "@aot\nfunction t:m(x: int32): nil\nend",
    "local struct Z\nend", "local struct Z\n    v: int32\n    v: float\nend",
)

EXPRESSIONS = (
    "'s'", '"x"', "[[long]]", "{}", "{1, 2}", "nil", "function() end", "...", "q:m()", "p:m(1)",
    "undefined", "print", "math", "math.pi", "math.huge", "nupp.math.f32", "nupp.mem.span", "span",
    "In", "Out", "h", "k", "out", "inp", "e", "o", "i", "j", "s", "true", "false",
    "0", "-0", "1", "-1", "1.5", "0.1", "1e309", "-1e309", "0x7fffffff", "0xffffffff", "4294967296",
    "2147483648", "-2147483649", "9007199254740993", "0x7fffffffffffffffLL", "18446744073709551615ULL",
    "-1LL", "1ULL", "1i", "0x1p4", "#out", "#inp", "#p", "#h", "- -1", "not 1", "-true", "~1.5", "~q",
    "2 ^ 100", "q ^ 17", "q ^ p", "q ^ -1", "1 // 0", "p // 0", "p % 0", "q .. q", "p == q", "p < true",
    "h(1)", "h(1, 2, 3, 4)", "h(p, q, q)", "h(q, q, q)", "k(out, inp, p, q)", "math.sqrt(p, q)",
    "math.sqrt()", "math.floor('x')", "math.fmod(q, q)", "nupp.math.f32.narrow()", "nupp.math.i32.wrap(p)",
    "nupp.math.u64.wrap(q)", "nupp.math.f32.fma(q, q, q)", "nupp.math.nosuch(q)", "nupp.math.f32.bits(q)",
    "assert(p)", "switch p do case 1 -> 2 else -> 3 end", "inp[i]", "inp[i].a", "inp[i].nosuch",
    "out[i].r", "out[1].r", "inp[p].a", "inp[i][i]", "inp.a", "e.nosuch", "e[i]", "p.x", "p[1]",
    "(inp)[i].a", "inp[i].a.b", "#out == #inp", "p and q", "nil == nil", "q ^ 1.5", "true ^ 2",
    "p << 4294967296", "p & 1.5", "1 << 40", "0xFFFFFFFFF & p", "~0.5", "-(0x7fffffffffffffffLL)",
)

TYPES = (
    "int32", "uint32", "int64", "uint64", "number", "double", "float", "boolean", "nil", "int8", "uint8",
    "int16", "string", "table", "vector", "any", "In", "Out", "span.Span<In>", "span.WriteSpan<Out>",
    "span.Span<Out>", "span.Span<Nope>", "span.Span<int32>", "span.Span", "span.Span<In, Out>",
    "Span<In>", "nupp.mem.span.Span<In>", "int32<In>", "span.WriteSpan<In>",
)
LOOP_BOUNDS = ("0", "1", "-1", "2", "p", "q", "#out", "#inp", "#out + 1", "#out - 1", "#p", "1.5",
               "2147483648", "i", "nil", "h(p, q, q)", "-#out", "#inp // 2", "1LL", "0x7fffffff")
LOOP_STEPS = ("0", "-1", "2", "-2", "1.0", "p", "-0", "3000000000", "-2147483648", "2147483647",
              "#out", "-(1)", "0x10", "1e1", "- 1", "-p", "1LL", "0.5")
INDEX_KEYS = ("1", "p", "i + 1", "j", "q", "#out", "i", "-i", "(i)", "k", "e", "1.5", "nil", "'a'")
FIELD_NAMES = ("a", "b", "x", "y", "w", "z", "r", "f", "d", "k", "nosuch", "__nf1", "span", "v")
CALLEES = ("hh", "h", "k", "print", "math.sqrt", "nupp.math.f32.narrow", "assert", "g", "h.x", "(h)",
           "out", "p", "math.nosuch", "nupp.math.i32.wrap")
ATTRIBUTES = ("@aot", "@aot(vectorize = false)", "@aot(vectorize = 1)", "@aot(fast = true)", "@aut",
              "@aot @aot", "@aot()", "")
IDENTIFIERS = ("int", "char", "double", "unsigned", "static", "main", "printf", "NULL", "errno", "sizeof",
               "auto", "register", "volatile", "restrict", "_Bool", "inline", "default", "case", "struct", "nupp_k",
               "i_2", "sel", "len", "span", "math", "nupp", "assert", "type", "bit", "self", "arg", "_G", "__nupp_x",
               "Out", "In", "h", "k", "end_", "L", "LL", "e2")
QUALIFIERS = ("exclusive ", "borrows ", "", "const ")
BINARY_OPS = ("+", "-", "*", "/", "//", "%", "^", "..", "==", "~=", "<", "<=", ">", ">=", "and", "or",
              "&", "|", "~", "<<", ">>")
UNARY_OPS = ("-", "not", "#", "~")
COMBINATIONS = (
    "-({0})", "not ({0})", "#({0})", "~({0})", "({0}) ^ 2", "({0}) ^ ({1})", "math.max({0}, {1})",
    "math.sqrt({0})", "math.floor({0})", "nupp.math.f32.add({0}, {1})", "nupp.math.f32.narrow({0})",
    "nupp.math.i32.wrap({0})", "nupp.math.u32.wrap({0})", "nupp.math.i64.wrap({0})", "nupp.math.u64.wrap({0})",
    "nupp.math.u32.fromI32({0})", "nupp.math.i32.fromU32({0})", "nupp.math.f32.bits({0})",
    "nupp.math.f32.fromBits({0})", "h({0}, {1}, {1})", "({0})[{1}]", "({0}).a", "{0}({1})",
    "switch {0} do case 1 -> {1} else -> {1} end", "({0}) // 0", "({0}) % ({0})", "({0}) << ({1})",
)


# ---- a parsed module and its mutation points ---------------------------------------------------

@dataclass(frozen=True)
class Slot:
    """A statement in its block: where another may go before it."""

    block: ast.Block
    stat: object


class Parsed:
    """A module's text, its tree and the nodes of each kind, with the text offsets of each."""

    def __init__(self, text: str):
        self.text = text
        self.chunk = parse(Source(PATH, text))
        starts = [0]
        for line in text.split("\n"):
            starts.append(starts[-1] + len(line) + 1)
        self.line_starts = starts
        self.nodes: dict[type, list] = {}
        self.slots: list[Slot] = []
        self.params: list[ast.Param] = []
        self.visit(self.chunk)

    def visit(self, node) -> None:
        self.nodes.setdefault(type(node), []).append(node)
        if isinstance(node, ast.Block):
            self.slots.extend(Slot(node, s) for s in node.stats)
        elif isinstance(node, ast.FuncBody):
            self.params.extend(node.params)
        for child in _children(node):
            self.visit(child)

    def of(self, *kinds) -> list:
        return [n for kind in kinds for n in self.nodes.get(kind, ())]

    def expressions(self) -> list:
        return self.of(ast.Nil, ast.Bool, ast.Number, ast.String, ast.Vararg, ast.Function, ast.Table,
                       ast.BinOp, ast.UnOp, ast.Name, ast.Index, ast.Field, ast.Call, ast.MethodCall,
                       ast.Paren, ast.Switch)

    def one_line_expressions(self) -> list[str]:
        """The text of each expression written on one line: what a mutation may splice in."""
        return [self.source(e) for e in self.expressions() if e.span.line == e.span.end_line]

    def offset(self, line: int, col: int) -> int:
        return self.line_starts[line - 1] + col - 1

    def start(self, node) -> int:
        return self.offset(node.span.line, node.span.col)

    def end(self, node) -> int:
        return self.offset(node.span.end_line, node.span.end_col)

    def source(self, node) -> str:
        return self.text[self.start(node):self.end(node)]

    def indent(self, node) -> str:
        """What precedes a statement on its line, as whitespace."""
        prefix = self.text[self.line_starts[node.span.line - 1]:self.start(node)]
        return prefix if not prefix.strip() else " " * len(prefix)

    def edit(self, *edits: tuple[int, int, str]) -> str:
        """The text with each (start, end, replacement) applied; edits must not overlap."""
        text = self.text
        for start, end, new in sorted(edits, key=lambda e: e[:2], reverse=True):
            text = text[:start] + new + text[end:]
        return text

    def replace(self, node, new: str) -> str:
        return self.edit((self.start(node), self.end(node), new))

    def insert_before(self, stat, new: str) -> str:
        indent = self.indent(stat)
        return self.edit((self.start(stat), self.start(stat), new.replace("\n", "\n" + indent) + "\n" + indent))


def _children(node) -> Iterator:
    for f in fields(node):
        yield from _nodes_in(getattr(node, f.name))


def _nodes_in(value) -> Iterator:
    if isinstance(value, tuple):
        for item in value:
            yield from _nodes_in(item)
    elif is_dataclass(value) and not isinstance(value, ast.Span):
        yield value


# ---- mutations: each draws a change of a parsed module, or None where it has no site ------------

Mutation = Callable[[st.DataObject, Parsed], Optional[str]]


def pick(data: st.DataObject, items):
    return data.draw(st.sampled_from(items)) if items else None


def delete_statement(data, m: Parsed):
    slot = pick(data, m.slots)
    return slot and m.replace(slot.stat, "")


def drop_return(data, m: Parsed):
    ret = pick(data, m.of(ast.Return))
    return ret and m.replace(ret, pick(data, ("", "return")))


def duplicate_statement(data, m: Parsed):
    slot = pick(data, m.slots)
    return slot and m.insert_before(slot.stat, m.source(slot.stat))


def swap_statements(data, m: Parsed):
    slot = pick(data, [s for s in m.slots if len(s.block.stats) > 1])
    if slot is None:
        return None
    other = pick(data, [s for s in slot.block.stats if s is not slot.stat])
    first, second = sorted((slot.stat, other), key=m.start)
    return m.edit((m.start(first), m.end(first), m.source(second)),
                  (m.start(second), m.end(second), m.source(first)))


def move_statement(data, m: Parsed, what=None):
    """A statement (an assert, an @aot function, ...) moved before another one elsewhere."""
    moved = pick(data, what if what is not None else [s.stat for s in m.slots])
    if moved is None:
        return None
    targets = [s.stat for s in m.slots if m.end(s.stat) <= m.start(moved) or m.start(s.stat) >= m.end(moved)]
    target = pick(data, targets)
    if target is None:
        return None
    indent = m.indent(target)
    text = m.source(moved).replace("\n" + m.indent(moved), "\n" + indent)
    return m.edit((m.start(moved), m.end(moved), ""),
                  (m.start(target), m.start(target), text + "\n" + indent))


def move_assert(data, m: Parsed):
    asserts = [c for c in m.of(ast.CallStat)
               if isinstance(c.call, ast.Call) and isinstance(c.call.func, ast.Name) and c.call.func.id == "assert"]
    return move_statement(data, m, asserts)


def move_function(data, m: Parsed):
    return move_statement(data, m, m.of(ast.LocalFunction, ast.FunctionStat))


def insert_statement(data, m: Parsed):
    slot = pick(data, m.slots)
    return slot and m.insert_before(slot.stat, pick(data, STATEMENTS))


def replace_expression(data, m: Parsed):
    node = pick(data, m.expressions())
    if node is None:
        return None
    return m.replace(node, pick(data, EXPRESSIONS + tuple(m.one_line_expressions()[:40])))


def combine_expressions(data, m: Parsed):
    """An expression put in an operator or call with another one of the module (of any width)."""
    node = pick(data, m.expressions())
    if node is None:
        return None
    other = pick(data, m.one_line_expressions())
    form = pick(data, COMBINATIONS + tuple(f"({{0}}) {op} ({{1}})" for op in BINARY_OPS))
    return m.replace(node, form.format(m.source(node), other))


def change_operator(data, m: Parsed):
    node = pick(data, m.of(ast.BinOp, ast.UnOp))
    if node is None:
        return None
    if isinstance(node, ast.BinOp):
        return m.edit((m.end(node.left), m.start(node.right), f" {pick(data, BINARY_OPS)} "))
    return m.edit((m.start(node), m.start(node.operand), f"{pick(data, UNARY_OPS)} "))


def change_loop(data, m: Parsed):
    loop = pick(data, m.of(ast.NumericFor))
    if loop is None:
        return None
    part = pick(data, ("start", "stop", "step"))
    if part == "step" and loop.step is None:
        return m.edit((m.end(loop.stop), m.end(loop.stop), ", " + pick(data, LOOP_STEPS)))
    return m.replace(getattr(loop, part), pick(data, LOOP_STEPS if part == "step" else LOOP_BOUNDS))


def index_span(data, m: Parsed):
    node = pick(data, m.of(ast.Index))
    return node and m.replace(node.key, pick(data, INDEX_KEYS))


def change_type(data, m: Parsed):
    node = pick(data, m.of(ast.TypeRef))
    return node and m.replace(node, pick(data, TYPES))


def annotate_local(data, m: Parsed):
    """A type on an untyped local, or none on a typed one."""
    local = pick(data, [p for loc in m.of(ast.Local) for p in loc.names])
    if local is None:
        return None
    if local.type is not None:
        return without_annotation(m, local)
    return m.edit((m.end(local), m.end(local), ": " + pick(data, TYPES)))


def without_annotation(m: Parsed, name: ast.Param) -> str:
    after_name = m.text.index(name.name, m.start(name)) + len(name.name)
    return m.edit((after_name, m.end(name), ""))


def change_parameter(data, m: Parsed):
    """A parameter duplicated, dropped, retyped or given another qualifier."""
    param = pick(data, m.params)
    if param is None:
        return None
    how = pick(data, ("duplicate", "drop", "qualifier", "untyped"))
    start, end = m.start(param), m.end(param)
    if how == "duplicate":
        return m.edit((end, end, ", " + m.source(param)))
    if how == "drop":
        return m.replace(param, "") if m.text[end:end + 1] != "," else m.edit((start, end + 2, ""))
    if how == "qualifier":
        name_at = m.text.index(param.name, start)
        return m.edit((start, name_at, pick(data, QUALIFIERS)))
    return without_annotation(m, param)


def change_arguments(data, m: Parsed):
    """A call's argument duplicated or dropped, or one added to a call without any."""
    call = pick(data, m.of(ast.Call))
    if call is None:
        return None
    if not call.args:
        return m.edit((m.end(call) - 1, m.end(call) - 1, pick(data, ("1", "p", "q"))))
    arg = pick(data, call.args)
    if pick(data, ("duplicate", "drop")) == "duplicate":
        return m.edit((m.end(arg), m.end(arg), ", " + m.source(arg)))
    index = call.args.index(arg)
    if index > 0:
        return m.edit((m.end(call.args[index - 1]), m.end(arg), ""))
    return m.edit((m.start(arg), m.start(call.args[1]) if len(call.args) > 1 else m.end(arg), ""))


def rename_callee(data, m: Parsed):
    call = pick(data, m.of(ast.Call))
    return call and m.replace(call.func, pick(data, CALLEES))


def rename_field(data, m: Parsed):
    node = pick(data, m.of(ast.Field))
    return node and m.edit((m.end(node) - len(node.name), m.end(node), pick(data, FIELD_NAMES)))


def rename_function(data, m: Parsed):
    func = pick(data, m.of(ast.LocalFunction))
    name = func and re.compile(rf"function\s+({re.escape(func.name)})\b").search(m.text, m.start(func))
    if not name:
        return None
    return m.edit((name.start(1), name.end(1), pick(data, ("h", "k", "g", "In", "span", "print", "out"))))


def rename_identifier(data, m: Parsed):
    """Every occurrence of a name renamed: to another of the module's names (a collision or
    shadowing), a C or Lua word, or a name like those the compiler makes."""
    names = sorted({n.id for n in m.of(ast.Name)} | {p.name for p in m.params}
                   | {p.name for loc in m.of(ast.Local) for p in loc.names})
    old = pick(data, names)
    if old is None:
        return None
    new = pick(data, tuple(names) + IDENTIFIERS)
    return re.sub(rf"(?<![\w.]){re.escape(old)}\b", new, m.text)


def change_attribute(data, m: Parsed):
    attr = pick(data, m.of(ast.Attribute))
    return attr and m.replace(attr, pick(data, ATTRIBUTES))


MUTATIONS: tuple[Mutation, ...] = (
    delete_statement, drop_return, duplicate_statement, swap_statements, move_statement, move_assert,
    move_function, insert_statement, replace_expression, combine_expressions, change_operator, change_loop,
    index_span, change_type, annotate_local, change_parameter, change_arguments, rename_callee, rename_field,
    rename_function, rename_identifier, change_attribute,
)
# the mutations with the most ways to go wrong, drawn twice as often
WEIGHTED = MUTATIONS + (insert_statement, replace_expression, combine_expressions, rename_identifier)


def modules() -> st.SearchStrategy[str]:
    """Well-typed modules: kernelgen's kernels, or the fuzz generator's programs (every construct)."""
    return st.one_of(kernels(max_depth=2, max_statements=3).map(lambda k: k.text),
                     st.integers(0, 2**32).map(lambda seed: module_text([generate(seed)])))


@st.composite
def mutants(draw, mutations: tuple[Mutation, ...] = WEIGHTED, most: int = 4) -> str:
    """A generated module with one to `most` mutations (fewer where one leaves no parsable text)."""
    data = draw(st.data())
    text = draw(modules())
    for _ in range(draw(st.integers(1, most))):
        try:
            parsed = Parsed(text)
        except NuppError:
            break  # a syntax error: the checks below see it as it is
        mutated = draw(st.sampled_from(mutations))(data, parsed)
        text = mutated if mutated is not None else text
    return text


# ---- the property ----------------------------------------------------------------------------

def refusal(stage, text: str) -> Optional[NuppError]:
    """What `stage` says of the text: None when it accepts it, else its NuppError
    (anything else it raises propagates: a failure)."""
    try:
        stage(Source(PATH, text))
    except NuppError as err:
        return err
    return None


def assert_diagnostics_point_into(err: NuppError, text: str) -> None:
    lines = text.split("\n")
    assert err.diagnostics, "a NuppError without diagnostics"
    for d in err.diagnostics:
        rendered = d.render()
        assert d.source.path == PATH, rendered
        assert 1 <= d.line <= len(lines) and lines[d.line - 1].strip(), f"no source line at:\n{rendered}"
        assert 1 <= d.col <= len(lines[d.line - 1]) + 1, f"the column is off its line:\n{rendered}"
        assert rendered.split("\n")[2].endswith("^"), rendered


def check_mutant(text: str) -> None:
    compiled = refusal(compile_module, text)
    translated = refusal(translate, text)
    if compiled is None:
        assert translated is None, f"compile_module accepts what translate refuses:\n{translated}"
        return
    assert_diagnostics_point_into(compiled, text)
    assert translated is not None, f"translate accepts what compile_module refuses:\n{compiled}"
    assert translated.diagnostics == compiled.diagnostics, f"{translated}\n---\n{compiled}"


@settings(max_examples=700 if UNDER_CI else 200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutants())
def test_a_mutant_compiles_or_gets_diagnostics(text):
    check_mutant(text)


def refused_by_the_checker(text: str) -> bool:
    """The text parses, and validation or the checker refuses it."""
    try:
        parse(Source(PATH, text))
    except NuppError:
        return False
    return refusal(compile_module, text) is not None


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.__name__ for m in MUTATIONS])
def test_each_mutation_makes_programs_the_checker_refuses(mutation):
    """No mutation is idle: each one alone makes a parsable program the checker refuses."""
    found = find(mutants((mutation,), most=1), refused_by_the_checker,
                 settings=settings(max_examples=300, deadline=None, database=None, phases=[Phase.generate],
                                   suppress_health_check=list(HealthCheck)))
    check_mutant(found)
