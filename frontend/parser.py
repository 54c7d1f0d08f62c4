"""Parsing: Nupp source text to the AST of `frontend.ast`.

`parse(source)` runs the LALR parser of `nupp.lark`; lark calls `TreeBuilder`
as it reduces each rule, so the AST is built in one pass, without a parse
tree and without recursion.  lark's errors become diagnostics phrased for a
Lua programmer (see `frontend.syntax_errors`), and a program nested deeper
than LuaJIT's parser, or nupp, allows is refused here (`frontend.nesting`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput

from nupp.frontend import ast
from nupp.errors import NuppError, Source, error_at, line_breaks
from nupp.frontend.lexer import NuppLexer
from nupp.frontend.literals import StringLiteralError, decode_string, is_numeral
from nupp.frontend.syntax_errors import describe_syntax_error
from nupp.frontend.nesting import check_nesting
from nupp.paths import cache_dir

GRAMMAR = Path(__file__).with_name("nupp.lark")


@lru_cache(maxsize=1)
def _lark() -> Lark:
    # lark keys its cache file by the grammar and options, so an edited grammar
    # never loads a stale parser; building the tables takes ~150 ms otherwise
    return Lark(GRAMMAR.read_text(), parser="lalr", lexer=NuppLexer, transformer=TreeBuilder(),
                maybe_placeholders=True, cache=_grammar_cache())


def _grammar_cache() -> str | bool:
    try:
        folder = cache_dir()  # created private; refused (an OSError) if another user could write to it
    except OSError:
        return False  # an unusable cache only costs time (and a pickle from an unsafe one is not loaded)
    return str(folder / "grammar.lark-cache")


def parse(source: Source) -> ast.Chunk:
    """Parse a whole source file; raise NuppError with a diagnostic on bad syntax."""
    text = lua_text(source.text)
    try:
        chunk = _lark().parse(text)
    except UnexpectedInput as err:
        raise describe_syntax_error(source, text, err, _lark()) from None
    except _Refusal as refusal:
        raise refusal.diagnostic(source) from None
    check_nesting(source, chunk)
    return chunk


def parse_text(text: str, path: str = "<string>") -> ast.Chunk:
    return parse(Source(path, text))


def lua_text(text: str) -> str:
    """The text LuaJIT's lexer reads: a UTF-8 byte order mark at the start is
    skipped, and so is a first line starting with '#' (its line is kept,
    blank, so that lines keep their numbers)."""
    text = text.removeprefix("\ufeff")
    if text.startswith("#"):
        end = _LINE_END.search(text)
        return "" if end is None else text[end.start():]
    return text


_LINE_END = re.compile(r"[\r\n]")


class _Refusal(Exception):
    """Raised by the tree builder, which has no source; `parse` makes it a diagnostic."""

    def __init__(self, span: ast.Span, message: str, hint: str | None = None):
        super().__init__(message)
        self.span, self.message, self.hint = span, message, hint

    def diagnostic(self, source: Source) -> NuppError:
        return error_at(source, self.span.line, self.span.col, self.message, self.hint)


# ---- positions: a node spans its first token to its last -----------------------

def _start(item) -> tuple[int, int]:
    if isinstance(item, Token):
        return item.line, item.column
    return item.span.line, item.span.col


def _end(item) -> tuple[int, int]:
    if isinstance(item, Token):
        return item.end_line, item.end_column
    return item.span.end_line, item.span.end_col


def _between(first, last) -> ast.Span:
    """From the start of `first` to the end of `last` (each a token or a node)."""
    return ast.Span(*_start(first), *_end(last))


def _tok_span(tok: Token) -> ast.Span:
    return _between(tok, tok)


def _exprs(explist) -> tuple:
    return tuple(explist) if explist is not None else ()


@dataclass(frozen=True)
class _Args:
    """Call arguments as parsed: the values, their extent, and the '(' if any."""

    values: tuple
    span: ast.Span
    open_paren: Token | None


QUALIFIERS = ("exclusive", "borrows")

_inline = v_args(inline=True)


class TreeBuilder(Transformer):
    """Builds `ast` nodes as lark reduces, one method per grammar rule.

    Each method gets the rule's children: nodes already built, the tokens the
    grammar names (`END`, `LPAR`: they give a node its extent) and None for
    an absent `[optional]` part.  The builder holds no state, so one instance
    serves every parse."""

    # ---- blocks and statements
    def start(self, children):
        (block,) = children
        return ast.Chunk(block, block.span)

    def block(self, children):
        stats = [c for c in children if c is not None]
        span = _between(stats[0], stats[-1]) if stats else ast.NO_SPAN
        return ast.Block(tuple(stats), span)

    def retstat(self, children):
        keyword, explist = children
        values = _exprs(explist)
        return ast.Return(values, _between(keyword, values[-1] if values else keyword))

    def assign(self, children):
        # children: target, ',', target, ..., '=', values
        *targets_and_tokens, values = children
        targets = targets_and_tokens[0::2]
        for target, after in zip(targets, targets_and_tokens[1::2]):
            if not isinstance(target, (ast.Name, ast.Index, ast.Field)):
                # where LuaJIT refuses it: the token after, once the target is read
                raise _Refusal(_tok_span(after), f"cannot assign to the expression before '{after}'",
                               "only a name, `t[k]` or `t.name` can be assigned to")
        return ast.Assign(tuple(targets), tuple(values), _between(targets[0], values[-1]))

    @_inline
    def call_stat(self, expr):
        if not isinstance(expr, (ast.Call, ast.MethodCall)):
            raise _Refusal(expr.span, "syntax error: this expression is not a statement",
                           "a statement is an assignment, a call, or a keyword such as `local` or `if`")
        return ast.CallStat(expr, expr.span)

    @_inline
    def do_stat(self, keyword, body, end):
        return ast.Do(body, _between(keyword, end))

    @_inline
    def while_stat(self, keyword, cond, body, end):
        return ast.While(cond, body, _between(keyword, end))

    @_inline
    def repeat_stat(self, keyword, body, cond):
        return ast.Repeat(body, cond, _between(keyword, cond))

    def if_stat(self, children):
        keyword, cond, body, *rest, end = children
        clauses = [(cond, body)]
        orelse = None
        for item in rest:
            if isinstance(item, ast.Block):
                orelse = item
            elif item is not None:
                clauses.append(item)
        return ast.If(tuple(clauses), orelse, _between(keyword, end))

    def elseif_clause(self, children):
        cond, body = children
        return (cond, body)

    def else_clause(self, children):
        return children[0]

    @_inline
    def numeric_for(self, keyword, var, start, stop, step, body, end):
        return ast.NumericFor(str(var), start, stop, step, body, _between(keyword, end))

    @_inline
    def generic_for(self, keyword, names, exprs, body, end):
        return ast.GenericFor(tuple(names), tuple(exprs), body, _between(keyword, end))

    def function_stat(self, children):
        *attrs, keyword, (path, method), func = children
        return ast.FunctionStat(path, method, func, tuple(attrs), _between(attrs[0] if attrs else keyword, func))

    def local_function(self, children):
        *attrs, keyword, name, func = children
        return ast.LocalFunction(str(name), func, tuple(attrs), _between(attrs[0] if attrs else keyword, func))

    @_inline
    def local_stat(self, keyword, names, values):
        values = _exprs(values)
        return ast.Local(tuple(names), values, _between(keyword, values[-1] if values else names[-1]))

    @_inline
    def struct_decl(self, keyword, name, fields, end):
        return ast.StructDecl(str(name), tuple(fields), _between(keyword, end))

    @_inline
    def break_stat(self, keyword):
        return ast.Break(_tok_span(keyword))

    @_inline
    def switch_stat(self, switch):
        return ast.SwitchStat(switch, switch.span)

    @_inline
    def goto_stat(self, keyword, label):
        return ast.Goto(str(label), _between(keyword, label))

    @_inline
    def label_stat(self, open_, name, close):
        return ast.Label(str(name), _between(open_, close))

    # ---- declarations
    def attribute(self, children):
        at, name, *rest = children
        args = tuple(arg for arg in rest if isinstance(arg, tuple))
        close = rest[-1] if rest else None
        has_parens = close is not None
        return ast.Attribute(str(name), args, has_parens, _between(at, close if has_parens else name))

    @_inline
    def attribute_arg(self, key, value):
        return (str(key), value)

    def funcname(self, children):
        *names, method = children
        return tuple(str(n) for n in names), (str(method) if method is not None else None)

    def struct_fields(self, children):
        return [c for c in children if isinstance(c, ast.StructField)]

    @_inline
    def struct_field(self, name, type_):
        return ast.StructField(str(name), type_, _between(name, type_))

    def local_names(self, children):
        return children

    @_inline
    def local_name(self, name, type_):
        return ast.Param(str(name), type_, None, _between(name, type_ or name))

    def namelist(self, children):
        return [str(c) for c in children]

    def explist(self, children):
        return children

    def type(self, children):
        *names, args = children
        type_args, close = args if args is not None else ((), names[-1])
        return ast.TypeRef(tuple(str(n) for n in names), tuple(type_args), _between(names[0], close))

    @_inline
    def nil_type(self, keyword):
        return ast.TypeRef(("nil",), (), _tok_span(keyword))

    def type_args(self, children):
        return [c for c in children if isinstance(c, ast.TypeRef)], children[-1]

    @_inline
    def funcbody(self, open_paren, parlist, returns, body, end):
        params, is_vararg = parlist if parlist is not None else ((), False)
        return ast.FuncBody(params, is_vararg, returns, body, _between(open_paren, end))

    def parlist(self, children):
        is_vararg = bool(children) and children[-1] == "..."
        params = tuple(c for c in children if isinstance(c, ast.Param))
        return params, is_vararg

    def vararg_param(self, children):
        return "..."

    @_inline
    def param(self, qualifier, name, type_):
        if qualifier is not None and str(qualifier) not in QUALIFIERS:
            raise _Refusal(_tok_span(qualifier), f"unknown parameter qualifier '{qualifier}'",
                           "a span parameter may be marked `exclusive` or `borrows`")
        return ast.Param(str(name), type_, str(qualifier) if qualifier is not None else None,
                         _between(qualifier or name, type_ or name))

    # ---- expressions
    @_inline
    def nil(self, keyword):
        return ast.Nil(_tok_span(keyword))

    @_inline
    def true(self, keyword):
        return ast.Bool(True, _tok_span(keyword))

    @_inline
    def false(self, keyword):
        return ast.Bool(False, _tok_span(keyword))

    @_inline
    def number(self, tok):
        return ast.Number(_numeral(tok), _tok_span(tok))

    @_inline
    def string(self, tok):
        raw = str(tok)
        try:
            decode_string(raw)  # refuse what LuaJIT's lexer refuses, where it does
        except StringLiteralError as err:
            line, col = _position_in(tok, err.offset)
            raise _Refusal(ast.Span(line, col, line, col), err.message, err.hint) from None
        return ast.String(raw, _tok_span(tok))

    @_inline
    def vararg(self, tok):
        return ast.Vararg(_tok_span(tok))

    @_inline
    def function_exp(self, keyword, func):
        return ast.Function(func, _between(keyword, func))

    def exp(self, children):
        return children[0] if len(children) == 1 else operator_tree(children)

    @_inline
    def name(self, tok):
        return ast.Name(str(tok), _tok_span(tok))

    @_inline
    def index(self, obj, key, close):
        return ast.Index(obj, key, _between(obj, close))

    @_inline
    def field(self, obj, name):
        return ast.Field(obj, str(name), _between(obj, name), _tok_span(name))

    @_inline
    def paren(self, open_paren, expr, close):
        return ast.Paren(expr, _between(open_paren, close))

    @_inline
    def call(self, func, args):
        _check_call_line(func, args)
        return ast.Call(func, args.values, _between(func, args))

    @_inline
    def method_call(self, obj, method, args):
        _check_call_line(method, args)
        return ast.MethodCall(obj, str(method), args.values, _between(obj, args), _tok_span(method))

    def args(self, children):
        if len(children) == 3:  # ( [explist] )
            open_paren, values, close = children
            return _Args(_exprs(values), _between(open_paren, close), open_paren)
        (arg,) = children  # a table or string argument: f{...}, f"..."
        return _Args((arg,), arg.span, None)

    def table(self, children):
        open_brace, *fields, close = children
        return ast.Table(tuple(f for f in fields if f is not None), _between(open_brace, close))

    @_inline
    def keyed_field(self, open_bracket, key, value):
        return ast.TableField("keyed", value, key, _between(open_bracket, value))

    @_inline
    def named_field(self, key, value):
        return ast.TableField("named", value, str(key), _between(key, value))

    @_inline
    def positional_field(self, value):
        return ast.TableField("positional", value, None, value.span)

    # ---- switch
    def switch(self, children):
        keyword, subject, *arms, otherwise, end = children
        return ast.Switch(subject, tuple(arms), otherwise, _between(keyword, end))

    def switch_arm(self, children):
        keyword, *patterns, (expr, block, last) = children
        return ast.SwitchArm(tuple(patterns), expr, block, _between(keyword, last))

    @_inline
    def switch_else(self, keyword, body):
        expr, block, last = body
        return ast.SwitchArm((), expr, block, _between(keyword, last))

    @_inline
    def expr_arm(self, expr):
        return (expr, None, expr)

    @_inline
    def block_arm(self, block, end):
        return (None, block, end)

    @_inline
    def number_pattern(self, minus, tok):
        raw = ("-" if minus is not None else "") + _numeral(tok)
        return ast.Pattern("number", raw, None, _between(minus or tok, tok))

    @_inline
    def string_pattern(self, string):
        return ast.Pattern("string", string.raw, None, string.span)

    @_inline
    def true_pattern(self, keyword):
        return ast.Pattern("true", "true", None, _tok_span(keyword))

    @_inline
    def false_pattern(self, keyword):
        return ast.Pattern("false", "false", None, _tok_span(keyword))

    @_inline
    def nil_pattern(self, keyword):
        return ast.Pattern("nil", "nil", None, _tok_span(keyword))

    @_inline
    def type_pattern(self, keyword, type_):
        return ast.Pattern("type", "", type_, _between(keyword, type_))

    @_inline
    def function_type_pattern(self, keyword, function):
        # `function` is a keyword, so no type: the pattern alone names Lua's type
        return ast.Pattern("type", "", ast.TypeRef(("function",), (), _tok_span(function)),
                           _between(keyword, function))


def _numeral(tok: Token) -> str:
    raw = str(tok)
    if not is_numeral(raw):
        hint = ("to concatenate numbers, put spaces around '..'" if ".." in raw else
                "a number is decimal (12, 1.5, 1e-3) or hex (0xFF, 0x1p4); LL or ULL after an integer "
                "makes it 64-bit, i imaginary")
        raise _Refusal(_tok_span(tok), f"malformed number near '{raw}'", hint)
    return raw


def _check_call_line(callee_end, args: _Args) -> None:
    """LuaJIT refuses a '(' on a later line than the function it would call:
    `f` then `(g)()` on the next line reads as one call but was likely meant as two statements."""
    if args.open_paren is not None and args.open_paren.line != _end(callee_end)[0]:
        raise _Refusal(_tok_span(args.open_paren), "ambiguous syntax (function call x new statement) near '('",
                       "put the '(' on the line of the expression it calls, or start the new "
                       "statement with ';'")


def _position_in(tok: Token, offset: int) -> tuple[int, int]:
    """The line and column of character `offset` of a token's text."""
    breaks, after = line_breaks(str(tok)[:offset])
    if not breaks:
        return tok.line, tok.column + offset
    return tok.line + breaks, offset - after + 1


# ---- operator precedence ------------------------------------------------------

def operator_tree(items: list) -> object:
    """The expression tree of a flat run of operands and operators (tokens:
    one after an operand is binary, any other a prefix operator) under Lua
    5.3 precedence (ast.BINARY_PRECEDENCE), built with an operator stack so
    that no chain, however long, recurses."""
    operands: list = []
    operators: list[tuple[int, Token]] = []  # (binding power, token); prefix ones at ast.UNARY_PRECEDENCE

    def reduce() -> None:
        power, op = operators.pop()
        right = operands.pop()
        if power == ast.UNARY_PRECEDENCE:
            span = ast.Span(op.line, op.column, right.span.end_line, right.span.end_col)
            operands.append(ast.UnOp(str(op), right, span))
        else:
            left = operands.pop()
            span = ast.Span(left.span.line, left.span.col, right.span.end_line, right.span.end_col)
            operands.append(ast.BinOp(str(op), left, right, span))

    after_operand = False
    for item in items:
        if not isinstance(item, Token):
            operands.append(item)
            after_operand = True
        elif not after_operand:
            operators.append((ast.UNARY_PRECEDENCE, item))
        else:
            power = ast.BINARY_PRECEDENCE[item]
            # a looser operator closes the tighter ones before it, and so does an equal
            # left-associative one; prefix operators yield to nothing but `^` on their right
            while operators and (operators[-1][0] > power
                                 or (operators[-1][0] == power and item not in ast.RIGHT_ASSOCIATIVE)):
                reduce()
            operators.append((power, item))
            after_operand = False
    while operators:
        reduce()
    (tree,) = operands
    return tree
