r"""The scalar IR's text form: a printer and a parser that round-trip exactly.

`parse_module(print_module(m)) == m`, and the locations of functions and
statements (not part of node equality) come back too, so `nupp emit --ir` and
the verifier's messages point at source lines.  The printer prints any tree of
scalar IR nodes, invalid ones included (the verifier renders its errors under
them); the parser checks only what it needs to rebuild the nodes: every
`%name` is declared in scope (a `Var` takes its width from the declaration),
every op exists in `ops.OPS` with its arity.  Widths, bounds and aliasing are
the verifier's job.

    struct Pixel { cx: float, cy: float }
    struct Escape { n: int32 }

    func mandelbrot(%out: span<Escape> write exclusive, %pixels: span<Pixel> read borrows, %maxIter: i32) -> nil
      alias %out %pixels disjoint
    {                                                         @17:1
      assert eq.i32(len %out, len %pixels), "length mismatch"  @18:5
      for %i = 1:i32 to len %out step 1 {                     @19:5
        let %cx: f64 = load.f64 %pixels[%i].cx                @20:9
        store %out[%i].n = call @escape(%cx, %maxIter) -> i32  @31:9
      }
    }

Grammar (whitespace and newlines separate tokens and are otherwise free;
`;` starts a comment that runs to the end of the line):

    module  := (struct | func)*
    struct  := 'struct' NAME '{' [NAME ':' NAME (',' NAME ':' NAME)*] '}'   field: storage type
    func    := 'func' NAME '(' [param (',' param)*] ')' '->' result ['novectorize']
               alias* block
    param   := VAR ':' (WIDTH | 'span' '<' NAME '>' ('read' | 'write')) ['exclusive' | 'borrows']
    alias   := 'alias' VAR VAR ('disjoint' | 'shared-read')
    result  := WIDTH | 'nil'
    block   := '{' [LOC] stmt* '}'          the LOC is that of the func/if/for/while opening it
    stmt    := 'let' VAR ':' WIDTH ['=' expr] [LOC]
             | 'assign' VAR '=' expr [LOC]
             | 'store' VAR '[' VAR ']' '.' NAME '=' expr [LOC]
             | IF expr block (ELIF expr block)* ['else' '{' stmt* '}'] [switch]
             | FOR VAR '=' expr 'to' expr 'step' INT block        the counter is i32
             | WHILE expr block
             | 'gang' [INT ['vector' INT]] VAR '=' expr 'to' expr 'varying' '(' [VAR (',' VAR)*] ')'
               ['reduce' '(' VAR ':' OPNAME (',' VAR ':' OPNAME)* ')'] block
                                     gang size, and the widest vector in bits (Gang.vector_bits)
             | 'break' [LOC]
             | 'return' [expr] [LOC]
             | 'assert' expr ',' STRING [LOC]
             | 'eval' call [LOC]
    switch  := 'switch' VAR ':' WIDTH ('[' [INT (',' INT)*] ']')* ['default']
    expr    := const | VAR | OPNAME '(' [expr (',' expr)*] ')'
             | 'load.' WIDTH VAR '[' VAR ']' '.' NAME | 'len' VAR | call
    call    := 'call' FUNC '(' [expr (',' expr)*] ')' '->' result
    const   := NUMBER ':' WIDTH | ('true' | 'false') [':' WIDTH]

    IF ELIF FOR WHILE   the keyword, or in lane IR the keyword + '.masked' (`while.masked`):
            its condition or bounds vary across the gang
    VAR     %name   a parameter, local or counter: [A-Za-z0-9_.]+ after the %
    FUNC    @name   a function: [A-Za-z_][A-Za-z0-9_.]* after the @
    LOC     @line:col, printed after a statement (omitted for NO_LOC)
    NAME    [A-Za-z_][A-Za-z0-9_.]*        (struct, field, storage type, function)
    WIDTH   f64 f32 i32 u32 i64 u64 bool
    NUMBER  a decimal int (int value) or a Python float repr: 1.5, -0.0, 1e-45,
            inf, -inf, nan (float value; a NaN's sign and payload are not kept)
    STRING  "..." with escapes \\ \" \n \t \r \xHH \uHHHH \UHHHHHHHH

Printed form: one statement per line, two spaces per level; a location is
padded to column LOC_COLUMN.  `elif` stands for an else branch holding just
one unlabelled If; `switch ...` after the closing brace gives the If's
`SwitchLabels`.  `true`/`false` without a width are bool constants; a
constant's Python type comes back as printed (`2:f64` is an int, `2.0:f64` a
float).  The round trip holds for nodes whose names fit the patterns above,
whose Vars carry their declaration's width and whose qualifiers/facts are the
known words; locations of expressions are not printed.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
import math
import re
from typing import NamedTuple, Optional, Union

from nupp.scalar_ir.nodes import (
    DISJOINT, NO_LOC, SHARED_READ, AliasFact, Assert, Assign, Break, Call, Const, Eval, For,
    Function, If, Len, Let, Load, Loc, Module, Op, Param, Return, SpanType, Store, StructDef,
    SwitchLabels, Var, While, Gang,
)
from nupp.scalar_ir.ops import OPS
from nupp.scalar_ir.widths import Width

LOC_COLUMN = 58          # where a statement's `@line:col` starts, when the line leaves room
INDENT = "  "
QUALIFIERS = ("exclusive", "borrows")
FACTS = (DISJOINT, SHARED_READ)
MAX_EXPR_DEPTH = 150     # deeper input is refused rather than overflowing Python's stack
MAX_BLOCK_DEPTH = 50


class IRSyntaxError(Exception):
    """Bad IR text: `line` and `col` are 1-based."""

    def __init__(self, line: int, col: int, message: str):
        super().__init__(f"{line}:{col}: {message}")
        self.line, self.col, self.message = line, col, message


# ==== printer =================================================================

def print_module(module: Module) -> str:
    """Structs, then functions, separated by blank lines; each line ends with a newline."""
    blocks = []
    if module.structs:
        blocks.append("".join(_struct(s) + "\n" for s in module.structs))
    blocks += [print_function(fn) for fn in module.functions]
    return "\n".join(blocks)


def print_function(fn: Function) -> str:
    out = _Lines()
    params = ", ".join(_param(p) for p in fn.params)
    head = f"func {fn.name}({params}) -> {_result(fn.result)}" + ("" if fn.vectorize else " novectorize")
    if fn.aliases:
        out.add(0, head)
        for a in fn.aliases:
            out.add(1, f"alias %{a.a} %{a.b} {a.fact}")
        out.add(0, "{", fn.loc)
    else:
        out.add(0, head + " {", fn.loc)
    _block(out, fn.body, 1)
    out.add(0, "}")
    return out.text()


def print_expr(e) -> str:
    if isinstance(e, Const):
        return _const(e)
    if isinstance(e, Var):
        return f"%{e.name}"
    if isinstance(e, Op):
        return f"{e.op}({_args(e.args)})"
    if isinstance(e, Load):
        return f"load.{e.width} %{e.span}[%{e.index}].{e.field}"
    if isinstance(e, Len):
        return f"len %{e.span}"
    if isinstance(e, Call):
        return f"call @{e.func}({_args(e.args)}) -> {_result(e.width)}"
    raise TypeError(f"not a scalar IR expression: {e!r}")


class _Lines:
    def __init__(self):
        self.lines: list[str] = []

    def add(self, level: int, text: str, loc: Loc = NO_LOC) -> None:
        line = INDENT * level + text
        if isinstance(loc, Loc) and loc != NO_LOC:
            line = f"{line.ljust(LOC_COLUMN - 2)}  @{loc.line}:{loc.col}"
        self.lines.append(line)

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def _struct(s: StructDef) -> str:
    fields = ", ".join(f"{name}: {storage}" for name, storage in s.fields)
    return f"struct {s.name} {{ {fields} }}" if fields else f"struct {s.name} {{ }}"


def _param(p: Param) -> str:
    text = f"%{p.name}: {p.type}"
    return f"{text} {p.qualifier}" if p.qualifier is not None else text


def _result(width: Optional[Width]) -> str:
    return "nil" if width is None else str(width)


def _args(args) -> str:
    return ", ".join(print_expr(a) for a in args)


def _const(c: Const) -> str:
    value = c.value
    if isinstance(value, bool):
        text = "true" if value else "false"
        return text if c.width == Width.BOOL else f"{text}:{c.width}"
    text = float.__repr__(value) if isinstance(value, float) else str(value)
    return f"{text}:{c.width}"


def _block(out: _Lines, stmts, level: int) -> None:
    for s in stmts:
        _stmt(out, s, level)


def _stmt(out: _Lines, s, level: int) -> None:
    if isinstance(s, Let):
        value = "" if s.value is None else f" = {print_expr(s.value)}"
        out.add(level, f"let %{s.name}: {s.width}{value}", s.loc)
    elif isinstance(s, Assign):
        out.add(level, f"assign %{s.name} = {print_expr(s.value)}", s.loc)
    elif isinstance(s, Store):
        out.add(level, f"store %{s.span}[%{s.index}].{s.field} = {print_expr(s.value)}", s.loc)
    elif isinstance(s, If):
        _if(out, s, level)
    elif isinstance(s, For):
        head = (f"{_keyword('for', s.masked)} %{s.var} = {print_expr(s.start)} to {print_expr(s.stop)} "
                f"step {s.step} {{")
        _braced(out, head, s.body, level, s.loc)
    elif isinstance(s, While):
        _braced(out, f"{_keyword('while', s.masked)} {print_expr(s.cond)} {{", s.body, level, s.loc)
    elif isinstance(s, Gang):
        varying = ", ".join(f"%{name}" for name in s.varying)
        reduce = ", ".join(f"%{name}: {op}" for name, op in s.reductions)
        reduce = f" reduce({reduce})" if s.reductions else ""
        size = "" if s.size is None else f"{s.size} "
        size += "" if s.vector_bits is None else f"vector {s.vector_bits} "
        head = (f"gang {size}%{s.var} = {print_expr(s.start)} to {print_expr(s.stop)} "
                f"varying({varying}){reduce} {{")
        _braced(out, head, s.body, level, s.loc)
    elif isinstance(s, Break):
        out.add(level, "break", s.loc)
    elif isinstance(s, Return):
        out.add(level, "return" if s.value is None else f"return {print_expr(s.value)}", s.loc)
    elif isinstance(s, Assert):
        out.add(level, f"assert {print_expr(s.cond)}, {quote(s.message)}", s.loc)
    elif isinstance(s, Eval):
        out.add(level, f"eval {print_expr(s.expr)}", s.loc)
    else:
        raise TypeError(f"not a scalar IR statement: {s!r}")


def _braced(out: _Lines, head: str, body, level: int, loc: Loc) -> None:
    out.add(level, head, loc)
    _block(out, body, level + 1)
    out.add(level, "}")


def _if(out: _Lines, s: If, level: int) -> None:
    """`if c {} elif c {} else {} switch ...`: an else holding one unlabelled If is an elif."""
    keyword, node = "if", s
    while True:
        out.add(level, f"{_keyword(keyword, node.masked)} {print_expr(node.cond)} {{", node.loc)
        _block(out, node.then, level + 1)
        rest = node.orelse
        if len(rest) == 1 and isinstance(rest[0], If) and rest[0].labels is None:
            keyword, node = "} elif", rest[0]
            continue
        break
    if rest:
        out.add(level, "} else {")
        _block(out, rest, level + 1)
    out.add(level, "}" if s.labels is None else f"}} {_labels(s.labels)}")


def _keyword(word: str, masked: bool) -> str:
    return word + MASKED if masked else word


def _labels(labels: SwitchLabels) -> str:
    cases = "".join(f" [{', '.join(str(v) for v in case)}]" for case in labels.cases)
    return f"switch %{labels.selector}: {labels.width}{cases}" + (" default" if labels.default else "")


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPES = {v[1]: k for k, v in _ESCAPES.items()}


def quote(message: str) -> str:
    """A string literal: quotes, backslashes and unprintable characters escaped."""
    return '"' + "".join(_escape(ch) for ch in message) + '"'


def _escape(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


# ==== tokenizer ===============================================================

class Token(NamedTuple):
    kind: str   # var func loc word number string punct end
    text: str
    line: int
    col: int


_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f\v]+) | (?P<newline>\n) | (?P<comment>;[^\n]*)
  | (?P<loc>@[0-9]+:[0-9]+)
  | (?P<func>@[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<var>%[A-Za-z0-9_.]+)
  | (?P<word>shared-read|[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<number>-?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|inf|nan))
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>->|[{}()\[\]<>,:=.])
""", re.VERBOSE)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_INT = re.compile(r"-?[0-9]+")


def tokenize(text: str) -> list[Token]:
    tokens, line, line_start, pos = [], 1, 0, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        col = pos - line_start + 1
        if m is None:
            what = "unterminated string" if text[pos] == '"' else f"unexpected character {text[pos]!r}"
            raise IRSyntaxError(line, col, what)
        kind = m.lastgroup
        if kind == "newline":
            line, line_start = line + 1, m.end()
        elif kind not in ("space", "comment"):
            tokens.append(Token(kind, m.group(), line, col))
        pos = m.end()
    tokens.append(Token("end", "", line, pos - line_start + 1))
    return tokens


def unquote(tok: Token) -> str:
    """The value of a string token (its text includes the quotes)."""
    out, body, i = [], tok.text[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        esc = body[i + 1]
        if esc in _UNESCAPES:
            out.append(_UNESCAPES[esc])
            i += 2
            continue
        digits = {"x": 2, "u": 4, "U": 8}.get(esc)
        code = body[i + 2:i + 2 + digits] if digits else ""
        if not digits or not re.fullmatch(r"[0-9a-fA-F]+", code) or len(code) != digits \
                or int(code, 16) > 0x10FFFF:
            raise IRSyntaxError(tok.line, tok.col + 1 + i, f"bad escape '\\{esc}{code}' in string")
        out.append(chr(int(code, 16)))
        i += 2 + digits
    return "".join(out)


# ==== parser ==================================================================

def parse_module(text: str) -> Module:
    """Parse the text form; raise IRSyntaxError (and nothing else) on bad input."""
    if not isinstance(text, str):
        raise TypeError("parse_module takes a str")
    parser = _Parser(tokenize(text))
    try:
        return parser.module()
    except RecursionError:  # the depth limits should make this unreachable
        tok = parser.peek()
        raise IRSyntaxError(tok.line, tok.col, "the IR is nested too deeply") from None


_WIDTHS = {w.value: w for w in Width}
Scope = dict[str, Union[Width, SpanType]]


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.tokens, self.pos = tokens, 0
        self.scopes: list[Scope] = []
        self.expr_depth = self.block_depth = 0

    # ---- tokens ----

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def next(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != "end":
            self.pos += 1
        return tok

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok.text == text and tok.kind in ("word", "punct")

    def accept(self, text: str) -> Optional[Token]:
        return self.next() if self.at(text) else None

    def expect(self, text: str, context: str = "") -> Token:
        if not self.at(text):
            raise self.error(self.peek(), f"expected '{text}'{context}, found {_describe(self.peek())}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        tok = self.next()
        if tok.kind != kind:
            raise self.error(tok, f"expected {what}, found {_describe(tok)}")
        return tok

    @staticmethod
    def error(tok: Token, message: str) -> IRSyntaxError:
        return IRSyntaxError(tok.line, tok.col, message)

    def comma_list(self, close: str, item) -> list:
        """item (',' item)* close, or just close."""
        items = []
        if self.accept(close):
            return items
        while True:
            items.append(item())
            if self.accept(close):
                return items
            self.expect(",", f" or '{close}'")

    # ---- names, widths, numbers ----

    def name(self, what: str) -> str:
        tok = self.next()
        if tok.kind != "word" or not _NAME.fullmatch(tok.text):
            raise self.error(tok, f"expected {what}, found {_describe(tok)}")
        return tok.text

    def width(self) -> Width:
        tok = self.next()
        width = _WIDTHS.get(tok.text) if tok.kind == "word" else None
        if width is None:
            raise self.error(tok, f"expected a width ({', '.join(_WIDTHS)}), found {_describe(tok)}")
        return width

    def result(self) -> Optional[Width]:
        return None if self.accept("nil") else self.width()

    def integer(self, what: str) -> int:
        tok = self.next()
        if tok.kind != "number" or not _INT.fullmatch(tok.text):
            raise self.error(tok, f"expected {what} (an integer), found {_describe(tok)}")
        return self.int_value(tok, tok.text)

    def int_value(self, tok: Token, text: str) -> int:
        try:
            return int(text)
        except ValueError:  # longer than Python's int-from-text limit
            raise self.error(tok, "integer literal too long") from None

    def loc(self) -> Loc:
        """[LOC]: the location of the statement just parsed."""
        if self.peek().kind != "loc":
            return NO_LOC
        tok = self.next()
        line, col = tok.text[1:].split(":")
        return Loc(self.int_value(tok, line), self.int_value(tok, col))

    # ---- scopes ----

    def declare(self, name: str, kind: Union[Width, SpanType]) -> None:
        self.scopes[-1][name] = kind

    def lookup(self, tok: Token) -> Union[Width, SpanType]:
        for scope in reversed(self.scopes):
            if tok.text[1:] in scope:
                return scope[tok.text[1:]]
        raise self.error(tok, f"undeclared variable {tok.text}")

    def use(self, what: str = "a variable") -> str:
        """VAR, which must be declared; its name."""
        tok = self.expect_kind("var", what)
        self.lookup(tok)
        return tok.text[1:]

    # ---- module ----

    def module(self) -> Module:
        structs, functions = [], []
        while self.peek().kind != "end":
            if self.at("struct"):
                structs.append(self.struct())
            elif self.at("func"):
                functions.append(self.function())
            else:
                raise self.error(self.peek(), f"expected 'struct' or 'func', found {_describe(self.peek())}")
        return Module(tuple(structs), tuple(functions))

    def struct(self) -> StructDef:
        """'struct' NAME '{' [field (',' field)*] '}'"""
        self.expect("struct")
        name = self.name("a struct name")
        self.expect("{")
        return StructDef(name, tuple(self.comma_list("}", self.struct_field)))

    def struct_field(self) -> tuple[str, str]:
        name = self.name("a field name")
        self.expect(":")
        return name, self.name("a storage type")

    def function(self) -> Function:
        """'func' NAME '(' params ')' '->' result ['novectorize'] alias* block"""
        self.expect("func")
        name = self.name("a function name")
        self.scopes = [{}]
        self.expect("(")
        params = self.comma_list(")", self.param)
        self.expect("->")
        result = self.result()
        vectorize = self.accept("novectorize") is None
        aliases = []
        while self.accept("alias"):
            aliases.append(self.alias())
        loc, body = self.block()
        return Function(name, tuple(params), result, body, tuple(aliases), vectorize, loc)

    def param(self) -> Param:
        """VAR ':' type [qualifier]"""
        name = self.expect_kind("var", "a parameter %name").text[1:]
        self.expect(":")
        if self.accept("span"):
            self.expect("<")
            struct = self.name("a struct name")
            self.expect(">")
            access = self.next()
            if access.text not in ("read", "write"):
                raise self.error(access, f"expected 'read' or 'write', found {_describe(access)}")
            kind: Union[Width, SpanType] = SpanType(struct, access.text == "write")
        else:
            kind = self.width()
        qualifier = self.next().text if self.peek().text in QUALIFIERS else None
        self.declare(name, kind)
        return Param(name, kind, qualifier)

    def alias(self) -> AliasFact:
        """'alias' VAR VAR fact"""
        a, b = self.use("a span parameter"), self.use("a span parameter")
        fact = self.next()
        if fact.text not in FACTS:
            raise self.error(fact, f"expected an alias fact ({' or '.join(FACTS)}), found {_describe(fact)}")
        return AliasFact(a, b, fact.text)

    # ---- statements ----

    def block(self, declare: Optional[Scope] = None) -> tuple[Loc, tuple]:
        """'{' [LOC] stmt* '}'"""
        opening = self.expect("{")
        return self.loc(), self.block_rest(opening, declare)

    def block_rest(self, opening: Token, declare: Optional[Scope] = None) -> tuple:
        """stmt* '}', in a new scope holding `declare`."""
        self.block_depth += 1
        if self.block_depth > MAX_BLOCK_DEPTH:
            raise self.error(opening, f"blocks nested more than {MAX_BLOCK_DEPTH} deep")
        self.scopes.append(dict(declare or {}))
        stmts = []
        while not self.accept("}"):
            if self.peek().kind == "end":
                raise self.error(self.peek(), f"unterminated block: the '{{' at "
                                              f"{opening.line}:{opening.col} is never closed")
            stmts.append(self.stmt())
        self.scopes.pop()
        self.block_depth -= 1
        return tuple(stmts)

    def stmt(self):
        tok = self.peek()
        keyword = tok.text.removesuffix(MASKED) if tok.text in _MASKABLE else tok.text
        method = _STATEMENTS.get(keyword) if tok.kind == "word" else None
        if method is None:
            raise self.error(tok, f"expected a statement ({', '.join(_STATEMENTS)}), found {_describe(tok)}")
        self.next()
        node = method(self)
        return replace(node, masked=True) if keyword != tok.text else node

    def let(self) -> Let:
        """'let' VAR ':' WIDTH ['=' expr] [LOC]"""
        name = self.expect_kind("var", "a local %name").text[1:]
        self.expect(":")
        width = self.width()
        value = self.expr() if self.accept("=") else None
        self.declare(name, width)
        return Let(name, width, value, self.loc())

    def assign(self) -> Assign:
        """'assign' VAR '=' expr [LOC]"""
        name = self.use()
        self.expect("=")
        return Assign(name, self.expr(), self.loc())

    def store(self) -> Store:
        """'store' VAR '[' VAR ']' '.' NAME '=' expr [LOC]"""
        span, index, field = self.element()
        self.expect("=")
        return Store(span, index, field, self.expr(), self.loc())

    def element(self) -> tuple[str, str, str]:
        """VAR '[' VAR ']' '.' NAME"""
        span = self.use("a span %name")
        self.expect("[")
        index = self.use("an index %name")
        self.expect("]")
        self.expect(".")
        return span, index, self.name("a field name")

    def if_(self) -> If:
        """'if' expr block ('elif' expr block)* ['else' '{' stmt* '}'] [switch]"""
        arms = [(self.expr(), *self.block(), False)]
        while self.at("elif") or self.at("elif" + MASKED):
            masked = self.next().text != "elif"
            arms.append((self.expr(), *self.block(), masked))
        orelse: tuple = ()
        if self.accept("else"):
            orelse = self.block_rest(self.expect("{"))
        labels = self.switch() if self.accept("switch") else None
        for cond, loc, then, masked in reversed(arms[1:]):
            orelse = (If(cond, then, orelse, None, loc, masked),)
        cond, loc, then, _ = arms[0]
        return If(cond, then, orelse, labels, loc)

    def switch(self) -> SwitchLabels:
        """'switch' VAR ':' WIDTH ('[' [INT (',' INT)*] ']')* ['default']"""
        selector = self.use("a selector %name")
        self.expect(":")
        width = self.width()
        cases = []
        while self.accept("["):
            cases.append(tuple(self.comma_list("]", lambda: self.integer("a case label"))))
        return SwitchLabels(selector, width, tuple(cases), self.accept("default") is not None)

    def for_(self) -> For:
        """'for' VAR '=' expr 'to' expr 'step' INT block"""
        var, start, stop = self.counted()
        self.expect("step")
        step = self.integer("a step")
        loc, body = self.block(declare={var: Width.I32})
        return For(var, start, stop, step, body, loc)

    def gang(self) -> Gang:
        """'gang' [INT ['vector' INT]] VAR '=' expr 'to' expr 'varying' '(' [VAR (',' VAR)*] ')' block
        (no INT: an unsized gang, as the lane rewrite leaves it)"""
        size = self.integer("a gang size") if self.peek().kind == "number" else None
        vector_bits = self.integer("a vector width in bits") if size is not None and self.accept("vector") else None
        var, start, stop = self.counted()
        self.expect("varying")
        self.expect("(")
        varying = self.comma_list(")", lambda: self.expect_kind("var", "a varying %name").text[1:])
        reductions = []
        if self.accept("reduce"):
            self.expect("(")
            reductions = self.comma_list(")", self.reduction)
        loc, body = self.block(declare={var: Width.I32})
        return Gang(var, start, stop, size, tuple(varying), body, loc, tuple(reductions), vector_bits)

    def reduction(self) -> tuple[str, str]:
        """VAR ':' OPNAME"""
        name = self.use("a reduced %name")
        self.expect(":")
        return name, self.name("an opcode")

    def counted(self) -> tuple:
        """VAR '=' expr 'to' expr: a counted loop's counter and bounds"""
        var = self.expect_kind("var", "a counter %name").text[1:]
        self.expect("=")
        start = self.expr()
        self.expect("to")
        return var, start, self.expr()

    def while_(self) -> While:
        """'while' expr block"""
        cond = self.expr()
        loc, body = self.block()
        return While(cond, body, loc)

    def break_(self) -> Break:
        return Break(self.loc())

    def return_(self) -> Return:
        """'return' [expr] [LOC]"""
        tok = self.peek()
        starts_expr = tok.kind in ("var", "number") or (tok.kind == "word" and tok.text not in _STATEMENTS)
        value = self.expr() if starts_expr else None
        return Return(value, self.loc())

    def assert_(self) -> Assert:
        """'assert' expr ',' STRING [LOC]"""
        cond = self.expr()
        self.expect(",", " before the assert's message")
        message = unquote(self.expect_kind("string", 'a message "..."'))
        return Assert(cond, message, self.loc())

    def eval_(self) -> Eval:
        """'eval' call [LOC]"""
        self.expect("call", " (eval takes a call)")
        return Eval(self.call(), self.loc())

    # ---- expressions ----

    def expr(self):
        """const | VAR | OPNAME '(' args ')' | load | 'len' VAR | call"""
        self.expr_depth += 1
        tok = self.next()
        if self.expr_depth > MAX_EXPR_DEPTH:
            raise self.error(tok, f"expression nested more than {MAX_EXPR_DEPTH} deep")
        if tok.kind == "var":
            e = Var(tok.text[1:], self.value_width(tok))
        elif tok.kind == "number" or (tok.kind == "word" and tok.text in ("true", "false", "inf", "nan")):
            e = self.const(tok)
        elif tok.kind == "word" and tok.text == "len":
            e = Len(self.use("a span %name"))
        elif tok.kind == "word" and tok.text == "call":
            e = self.call()
        elif tok.kind == "word" and tok.text.startswith("load."):
            e = self.load(tok)
        elif tok.kind == "word" and self.at("("):
            e = self.op(tok)
        else:
            raise self.error(tok, f"expected an expression, found {_describe(tok)}")
        self.expr_depth -= 1
        return e

    def value_width(self, tok: Token) -> Width:
        kind = self.lookup(tok)
        if isinstance(kind, SpanType):
            raise self.error(tok, f"{tok.text} is a span, not a value (use len, load or store)")
        return kind

    def const(self, tok: Token) -> Const:
        """NUMBER ':' WIDTH | ('true' | 'false') [':' WIDTH]"""
        if tok.text in ("true", "false"):
            return Const(tok.text == "true", self.width() if self.accept(":") else Width.BOOL)
        if not self.accept(":"):
            raise self.error(tok, f"constant {tok.text} needs a width, e.g. {tok.text}:f64")
        value = self.int_value(tok, tok.text) if _INT.fullmatch(tok.text) else float(tok.text)
        if isinstance(value, float) and math.isnan(value):
            value = math.nan  # one NaN object, so that equal texts give equal nodes
        return Const(value, self.width())

    def op(self, tok: Token) -> Op:
        info = OPS.get(tok.text)
        if info is None:
            close = difflib.get_close_matches(tok.text, OPS, n=1)
            raise self.error(tok, f"unknown op '{tok.text}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        self.expect("(")
        args = self.comma_list(")", self.expr)
        if len(args) != len(info.operands):
            raise self.error(tok, f"{tok.text} takes {len(info.operands)} operand"
                                  f"{'s' if len(info.operands) != 1 else ''}, got {len(args)}")
        return Op(tok.text, tuple(args))

    def load(self, tok: Token) -> Load:
        """'load.' WIDTH VAR '[' VAR ']' '.' NAME"""
        width = _WIDTHS.get(tok.text[len("load."):])
        if width is None:
            raise self.error(tok, f"expected load.WIDTH ({', '.join(_WIDTHS)}), found '{tok.text}'")
        span, index, field = self.element()
        return Load(span, index, field, width)

    def call(self) -> Call:
        """'call' FUNC '(' args ')' '->' result"""
        func = self.expect_kind("func", "a function @name").text[1:]
        self.expect("(")
        args = self.comma_list(")", self.expr)
        self.expect("->", " and the call's result width")
        return Call(func, tuple(args), self.result())


_STATEMENTS = {
    "let": _Parser.let, "assign": _Parser.assign, "store": _Parser.store, "if": _Parser.if_,
    "for": _Parser.for_, "while": _Parser.while_, "break": _Parser.break_,
    "return": _Parser.return_, "assert": _Parser.assert_, "eval": _Parser.eval_,
    "gang": _Parser.gang,
}
MASKED = ".masked"  # lane IR: `if.masked`, `elif.masked`, `while.masked`, `for.masked`
_MASKABLE = {"if" + MASKED, "while" + MASKED, "for" + MASKED}


def _describe(tok: Token) -> str:
    return "end of input" if tok.kind == "end" else repr(tok.text)
