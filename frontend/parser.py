"""Parsing: Nupp source text to the AST of `frontend.ast`.

`parse(source)` runs the LALR parser of `nupp.lark` and builds the tree with
`TreeBuilder`; lark's errors become diagnostics phrased for a Lua programmer
(see `frontend.syntax_errors`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

from nupp.frontend import ast
from nupp.frontend.diagnostics import NuppError, Source, error_at
from nupp.frontend.syntax_errors import describe_syntax_error
from nupp.paths import cache_dir

GRAMMAR = Path(__file__).with_name("nupp.lark")


@lru_cache(maxsize=1)
def _lark() -> Lark:
    # lark keys its cache file by the grammar and options, so an edited grammar
    # never loads a stale parser; building the tables takes ~150 ms otherwise
    return Lark(GRAMMAR.read_text(), parser="lalr", lexer="contextual",
                propagate_positions=True, maybe_placeholders=True, cache=_grammar_cache())


def _grammar_cache() -> str | bool:
    try:
        folder = cache_dir()  # created private; refused (an OSError) if another user could write to it
    except OSError:
        return False  # an unusable cache only costs time (and a pickle from an unsafe one is not loaded)
    return str(folder / "grammar.lark-cache")


def parse(source: Source) -> ast.Chunk:
    """Parse a whole source file; raise NuppError with a diagnostic on bad syntax."""
    text = _blank_shebang(source.text)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise describe_syntax_error(source, text, err) from None
    try:
        return TreeBuilder(source).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, NuppError):
            raise err.orig_exc from None
        raise


def parse_text(text: str, path: str = "<string>") -> ast.Chunk:
    return parse(Source(path, text))


def _blank_shebang(text: str) -> str:
    # LuaJIT skips a first line starting with '#'; keep the line, drop its text.
    if text.startswith("#"):
        end = text.find("\n")
        return "" if end < 0 else text[end:]
    return text


def _span(meta) -> ast.Span:
    if getattr(meta, "empty", False):
        return ast.NO_SPAN
    return ast.Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _tok_span(tok: Token) -> ast.Span:
    return ast.Span(tok.line, tok.column, tok.end_line, tok.end_column)


def _exprs(explist) -> tuple:
    return tuple(explist) if explist is not None else ()


QUALIFIERS = ("exclusive", "borrows")

_V = v_args(inline=True, meta=True)


class TreeBuilder(Transformer):
    """Builds `ast` nodes from lark's parse tree, one method per grammar rule."""

    def __init__(self, source: Source):
        super().__init__()
        self.source = source

    def _error(self, span: ast.Span, message: str, hint: str | None = None):
        return error_at(self.source, span.line, span.col, message, hint)

    # ---- blocks and statements
    def start(self, children):
        (block,) = children
        return ast.Chunk(block, block.span)

    @v_args(meta=True)
    def block(self, meta, children):
        stats = [c for c in children if c is not None]
        return ast.Block(tuple(stats), _span(meta))

    @_V
    def retstat(self, meta, explist):
        return ast.Return(_exprs(explist), _span(meta))

    @v_args(meta=True)
    def assign(self, meta, children):
        *targets, values = children
        for target in targets:
            if not isinstance(target, (ast.Name, ast.Index, ast.Field)):
                raise self._error(target.span, "cannot assign to this expression",
                                  "only a name, `t[k]` or `t.name` can be assigned to")
        return ast.Assign(tuple(targets), tuple(values), _span(meta))

    @_V
    def call_stat(self, meta, expr):
        if not isinstance(expr, (ast.Call, ast.MethodCall)):
            raise self._error(expr.span, "syntax error: this expression is not a statement",
                              "a statement is an assignment, a call, or a keyword such as `local` or `if`")
        return ast.CallStat(expr, _span(meta))

    @_V
    def do_stat(self, meta, body):
        return ast.Do(body, _span(meta))

    @_V
    def while_stat(self, meta, cond, body):
        return ast.While(cond, body, _span(meta))

    @_V
    def repeat_stat(self, meta, body, cond):
        return ast.Repeat(body, cond, _span(meta))

    @v_args(meta=True)
    def if_stat(self, meta, children):
        cond, body, *rest = children
        clauses = [(cond, body)]
        orelse = None
        for item in rest:
            if isinstance(item, ast.Block):
                orelse = item
            elif item is not None:
                clauses.append(item)
        return ast.If(tuple(clauses), orelse, _span(meta))

    def elseif_clause(self, children):
        cond, body = children
        return (cond, body)

    def else_clause(self, children):
        return children[0]

    @_V
    def numeric_for(self, meta, var, start, stop, step, body):
        return ast.NumericFor(str(var), start, stop, step, body, _span(meta))

    @_V
    def generic_for(self, meta, names, exprs, body):
        return ast.GenericFor(tuple(names), tuple(exprs), body, _span(meta))

    @v_args(meta=True)
    def function_stat(self, meta, children):
        *attrs, (path, method), func = children
        return ast.FunctionStat(path, method, func, tuple(attrs), _span(meta))

    @v_args(meta=True)
    def local_function(self, meta, children):
        *attrs, name, func = children
        return ast.LocalFunction(str(name), func, tuple(attrs), _span(meta))

    @_V
    def local_stat(self, meta, names, values):
        return ast.Local(tuple(names), _exprs(values), _span(meta))

    @_V
    def struct_decl(self, meta, name, fields):
        return ast.StructDecl(str(name), tuple(fields), _span(meta))

    @_V
    def break_stat(self, meta):
        return ast.Break(_span(meta))

    @_V
    def switch_stat(self, meta, switch):
        return ast.SwitchStat(switch, _span(meta))

    # ---- declarations
    @v_args(meta=True)
    def attribute(self, meta, children):
        name, *args = children
        args = [a for a in args if a is not None]
        has_parens = meta.end_column > name.end_column or meta.end_line > name.end_line
        return ast.Attribute(str(name), tuple(args), has_parens, _span(meta))

    def attribute_arg(self, children):
        key, value = children
        return (str(key), value)

    def funcname(self, children):
        *names, method = children
        return tuple(str(n) for n in names), (str(method) if method is not None else None)

    def struct_fields(self, children):
        return [c for c in children if isinstance(c, ast.StructField)]

    @_V
    def struct_field(self, meta, name, type_):
        return ast.StructField(str(name), type_, _span(meta))

    def local_names(self, children):
        return children

    @_V
    def local_name(self, meta, name, type_):
        return ast.Param(str(name), type_, None, _span(meta))

    def namelist(self, children):
        return [str(c) for c in children]

    def explist(self, children):
        return list(children)

    @v_args(meta=True)
    def type(self, meta, children):
        *names, args = children
        return ast.TypeRef(tuple(str(n) for n in names), tuple(args or ()), _span(meta))

    @_V
    def nil_type(self, meta):
        return ast.TypeRef(("nil",), (), _span(meta))

    def type_args(self, children):
        return [c for c in children if isinstance(c, ast.TypeRef)]

    @_V
    def funcbody(self, meta, parlist, returns, body):
        params, is_vararg = parlist if parlist is not None else ((), False)
        return ast.FuncBody(params, is_vararg, returns, body, _span(meta))

    def parlist(self, children):
        is_vararg = bool(children) and children[-1] == "..."
        params = tuple(c for c in children if isinstance(c, ast.Param))
        return params, is_vararg

    def vararg_param(self, children):
        return "..."

    @_V
    def param(self, meta, qualifier, name, type_):
        if qualifier is not None and str(qualifier) not in QUALIFIERS:
            raise self._error(_tok_span(qualifier), f"unknown parameter qualifier '{qualifier}'",
                              "a span parameter may be marked `exclusive` or `borrows`")
        return ast.Param(str(name), type_, str(qualifier) if qualifier is not None else None,
                         _span(meta))

    # ---- expressions
    @_V
    def nil(self, meta):
        return ast.Nil(_span(meta))

    @_V
    def true(self, meta):
        return ast.Bool(True, _span(meta))

    @_V
    def false(self, meta):
        return ast.Bool(False, _span(meta))

    @_V
    def number(self, meta, tok):
        return ast.Number(str(tok), _span(meta))

    @_V
    def string(self, meta, tok):
        return ast.String(str(tok), _span(meta))

    @_V
    def vararg(self, meta):
        return ast.Vararg(_span(meta))

    @_V
    def function_exp(self, meta, func):
        return ast.Function(func, _span(meta))

    @_V
    def binop(self, meta, left, op, right):
        return ast.BinOp(str(op), left, right, _span(meta))

    @_V
    def unop(self, meta, op, operand):
        return ast.UnOp(str(op), operand, _span(meta))

    @_V
    def name(self, meta, tok):
        return ast.Name(str(tok), _span(meta))

    @_V
    def index(self, meta, obj, key):
        return ast.Index(obj, key, _span(meta))

    @_V
    def field(self, meta, obj, name):
        return ast.Field(obj, str(name), _span(meta))

    @_V
    def paren(self, meta, expr):
        return ast.Paren(expr, _span(meta))

    @_V
    def call(self, meta, func, args):
        return ast.Call(func, args, _span(meta))

    @_V
    def method_call(self, meta, obj, method, args):
        return ast.MethodCall(obj, str(method), args, _span(meta))

    def args(self, children):
        (arg,) = children
        if arg is None:
            return ()
        if isinstance(arg, list):
            return tuple(arg)
        return (arg,)  # a table or string argument: f{...}, f"..."

    @v_args(meta=True)
    def table(self, meta, children):
        return ast.Table(tuple(c for c in children if c is not None), _span(meta))

    @_V
    def keyed_field(self, meta, key, value):
        return ast.TableField("keyed", value, key, _span(meta))

    @_V
    def named_field(self, meta, key, value):
        return ast.TableField("named", value, str(key), _span(meta))

    @_V
    def positional_field(self, meta, value):
        return ast.TableField("positional", value, None, _span(meta))

    # ---- switch
    @v_args(meta=True)
    def switch(self, meta, children):
        subject, *arms, otherwise = children
        return ast.Switch(subject, tuple(arms), otherwise, _span(meta))

    @v_args(meta=True)
    def switch_arm(self, meta, children):
        *patterns, body = children
        return ast.SwitchArm(tuple(patterns), body[0], body[1], _span(meta))

    @v_args(meta=True)
    def switch_else(self, meta, children):
        (body,) = children
        return ast.SwitchArm((), body[0], body[1], _span(meta))

    def expr_arm(self, children):
        return (children[0], None)

    def block_arm(self, children):
        return (None, children[0])

    @_V
    def number_pattern(self, meta, minus, tok):
        raw = ("-" if minus is not None else "") + str(tok)
        return ast.Pattern("number", raw, None, _span(meta))

    @_V
    def string_pattern(self, meta, string):
        return ast.Pattern("string", string.raw, None, _span(meta))

    @_V
    def true_pattern(self, meta):
        return ast.Pattern("true", "true", None, _span(meta))

    @_V
    def false_pattern(self, meta):
        return ast.Pattern("false", "false", None, _span(meta))

    @_V
    def nil_pattern(self, meta):
        return ast.Pattern("nil", "nil", None, _span(meta))

    @_V
    def type_pattern(self, meta, type_):
        return ast.Pattern("type", "", type_, _span(meta))
