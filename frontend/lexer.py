"""The lexer lark's LALR parser reads Nupp tokens from.

It lexes with the terminals of `nupp.lark` (the grammar stays the one
definition of every token), as lark's contextual lexer would, but with one
regular expression for the whole language and positions counted in one
place: lexing is most of the parse of a large program, and lark's lexer
spends five Python calls on each token.

Like lark's contextual lexer it asks the parser what may come next where that
matters: a word that is a keyword only in some places (`case`, `is`,
`struct`, and `goto` when a name follows it) is that keyword only where the
parser takes it, a name elsewhere; and where the parser takes a `>` closing
a type argument list but not the longer operator, `>>` or `>=` gives way to
it (`Span<Span<P>>` closes two lists).  No other operator is cut short:
LuaJIT reads `...` after an operand as `...`, never `..` `.`.
"""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import UnexpectedCharacters
from lark.lexer import Lexer

from nupp.errors import line_breaks

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# tried before any operator, in this order: what the operators must not cut short
_LEADING = ("WS", "LONG_COMMENT", "LINE_COMMENT", "LONG_STRING", "STRING", "NUMBER", "NAME")


class NuppLexer(Lexer):
    __future_interface__ = 2  # lex(lexer_state, parser_state)

    def __init__(self, conf):
        terminals = {t.name: t for t in conf.terminals}
        self.terminals_by_name = conf.terminals_by_name
        self.ignore = frozenset(conf.ignore)
        words = {t.pattern.value: t.name for t in terminals.values()
                 if t.pattern.type == "str" and _WORD.fullmatch(t.pattern.value)}
        name = re.compile(terminals["NAME"].pattern.to_regexp())
        self.reserved = {word: kind for word, kind in words.items() if not name.fullmatch(word)}
        self.contextual = {word: kind for word, kind in words.items() if word not in self.reserved}
        operators = sorted((t for t in terminals.values() if t.pattern.type == "str" and t.pattern.value not in words),
                           key=lambda t: -len(t.pattern.value))  # the longest first: `...`, not `..`
        groups = [f"(?P<{n}>{terminals[n].pattern.to_regexp()})" for n in _LEADING]
        # a reserved word is what NAME refuses to match (the longest first: `elseif`, not `else`)
        groups.append("(?P<RESERVED>" + "|".join(sorted(self.reserved, key=len, reverse=True)) + ")")
        groups.append("(?P<OPERATOR>" + "|".join(re.escape(t.pattern.value) for t in operators) + ")")
        self.master = re.compile("|".join(groups))
        self.operator_kind = {t.pattern.value: t.name for t in operators}
        self.multiline = frozenset({"WS", "LONG_COMMENT", "LONG_STRING", "STRING"})

    def lex(self, lexer_state, parser_state):
        text = lexer_state.text.text
        pos, end = lexer_state.text.start, lexer_state.text.end
        line, line_start = 1, pos
        match, accepts = self.master.match, parser_state.parse_conf.states
        while pos < end:
            m = match(text, pos, end)
            if m is None:
                raise UnexpectedCharacters(text, pos, line, pos - line_start + 1,
                                           allowed=set(accepts[parser_state.position]) - self.ignore,
                                           state=parser_state, terminals_by_name=self.terminals_by_name)
            kind, value, stop = m.lastgroup, m.group(), m.end()
            if kind == "OPERATOR":
                kind, value, stop = self._operator(value, pos, accepts[parser_state.position])
            elif kind == "RESERVED":
                kind = self.reserved[value]
            elif kind == "NAME" and value in self.contextual and self.contextual[value] in accepts[parser_state.position]:
                if value != "goto" or self._name_follows(text, stop, end):
                    kind = self.contextual[value]
            start_line, start_col = line, pos - line_start + 1
            if kind in self.multiline and ("\n" in value or "\r" in value):
                breaks, after = line_breaks(value)
                line, line_start = line + breaks, pos + after
            if kind not in self.ignore:
                token = Token(kind, value, pos, start_line, start_col, line, stop - line_start + 1, stop)
                lexer_state.last_token = token
                yield token
            pos = stop

    def _name_follows(self, text: str, pos: int, end: int) -> bool:
        """Whether the next token after `pos` is a name: `goto` starts a goto
        statement only then (LuaJIT looks ahead the same way)."""
        while pos < end:
            m = self.master.match(text, pos, end)
            if m is None or m.lastgroup not in self.ignore:  # LuaJIT's lexer makes `goto` no name
                return m is not None and m.lastgroup == "NAME" and m.group() != "goto"
            pos = m.end()
        return False

    def _operator(self, value: str, pos: int, accepted) -> tuple[str, str, int]:
        """The operator at `pos`: the longest one, or the `>` closing type arguments."""
        kind = self.operator_kind[value]
        if kind not in accepted and value[0] == ">" and "GT" in accepted:
            return "GT", ">", pos + 1
        return kind, value, pos + len(value)
