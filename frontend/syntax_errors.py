"""Syntax errors in words a Lua programmer knows.

lark reports an unexpected character or token and the set of terminals the
parser could take.  This module turns that into Lua's own phrasing
(`'then' expected near 'print'`, `'end' expected (to close 'function' at
line 3) near end of file`) plus a hint for the mistakes people really make
(`!=`, `~ =`, `=` in a condition, unfinished strings and comments).
"""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from nupp.frontend.diagnostics import NuppError, Source, error_at

# Terminals that can begin an expression: when several are expected, say "an expression".
EXPRESSION_STARTS = {"NAME", "NUMBER", "STRING", "LONG_STRING", "LPAR", "LBRACE", "FUNCTION",
                     "NIL", "TRUE", "FALSE", "NOT", "HASH", "MINUS", "TILDE", "SWITCH"}

REGEX_TERMINAL_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "LONG_STRING": "a string",
    "$END": "end of file",
}

# Block openers and what closes them, for "'end' expected (to close ...)".
OPENERS = {"function", "if", "while", "for", "do", "repeat", "struct", "switch"}
# These own the next `do`, which therefore opens nothing of its own.
DO_OWNERS = {"while", "for", "switch"}
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LONG_BRACKET = re.compile(r"\[=*\[")


def describe_syntax_error(source: Source, text: str, err: UnexpectedInput) -> NuppError:
    if isinstance(err, UnexpectedCharacters):
        return _bad_character(source, text, err.pos_in_stream, err.line, err.column)
    token = getattr(err, "token", None)
    if token is not None and token.type != "$END" and token.start_pos is not None:
        # The contextual lexer may lex the start of an unfinished string or
        # comment as tokens ('[', or '-' '-' '['); name the real problem instead.
        pos, col = token.start_pos, token.column
        if text[pos - 2:pos] == "--" and col > 2:
            pos, col = pos - 2, col - 2
        lexical = _bad_character(source, text, pos, token.line, col)
        if "unfinished" in lexical.diagnostics[0].message:
            return lexical
    if isinstance(err, (UnexpectedToken, UnexpectedEOF)):
        return _bad_token(source, text, err)
    return error_at(source, getattr(err, "line", 1), getattr(err, "column", 1), "syntax error")


def _bad_character(source: Source, text: str, pos: int, line: int, col: int) -> NuppError:
    rest = text[pos:pos + 8]
    if rest[:1] in "\"'":
        return error_at(source, line, col, "unfinished string",
                        f"close the string with {rest[0]} on the same line "
                        "(use \\n for a newline, or a long string [[...]])")
    if rest.startswith("--") and LONG_BRACKET.match(rest, 2):
        return error_at(source, line, col, "unfinished long comment",
                        "close it with ']]' (with as many '=' as it was opened with)")
    if LONG_BRACKET.match(rest):
        return error_at(source, line, col, "unfinished long string",
                        "close it with ']]' (with as many '=' as it was opened with)")
    if rest.startswith("!="):
        return error_at(source, line, col, "unexpected symbol '!='", "Lua writes not-equal as '~='")
    if rest[:1] == "!":
        return error_at(source, line, col, "unexpected symbol '!'", "Lua writes logical not as 'not'")
    shown = rest[:1] if rest[:1].isprintable() else repr(rest[:1])
    return error_at(source, line, col, f"unexpected symbol '{shown}'")


def _bad_token(source: Source, text: str, err) -> NuppError:
    token = getattr(err, "token", None)
    at_eof = token is None or token.type == "$END"
    line, col = (_eof_position(text) if at_eof else (token.line, token.column))
    near = "end of file" if at_eof else f"'{token}'"
    expected = set(getattr(err, "expected", ()) or ())
    previous = _previous_token(err)

    if not at_eof and token.type == "EQUAL" and previous is not None and previous.type == "TILDE":
        return error_at(source, previous.line, previous.column, "unexpected '=' after '~'",
                        "not-equal is written '~=' with no space; a lone '~' is bitwise xor (or not)")
    if not at_eof and token.type == "EQUAL" and text[token.start_pos + 1:token.start_pos + 2] == ">":
        return error_at(source, line, col, "unexpected '=>'", "a switch arm is written `case 1 -> value`")
    if not at_eof and token.type == "EQUAL" and expected & {"THEN", "DO"}:
        return error_at(source, line, col, "unexpected '=' in a condition",
                        "use '==' to compare; '=' is assignment")
    if expected & {"END", "UNTIL"} and (at_eof or token.type not in EXPRESSION_STARTS):
        opener = _unclosed_opener(text)
        if opener is not None:
            word, opened_at = opener
            closer = "until" if word == "repeat" else "end"
            return error_at(source, line, col,
                            f"'{closer}' expected (to close '{word}' at line {opened_at}) near {near}",
                            f"every '{word}' needs a matching '{closer}'")
    phrase = _expected_phrase(expected)
    if phrase:
        return error_at(source, line, col, f"{phrase} expected near {near}")
    return error_at(source, line, col, f"unexpected {near}")


def _previous_token(err) -> Token | None:
    history = getattr(err, "token_history", None)
    if history:
        return history[-1]
    state = getattr(err, "state", None)
    stack = getattr(state, "value_stack", None)
    if stack and isinstance(stack[-1], Token):
        return stack[-1]
    return None


def _eof_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    return len(lines), len(lines[-1]) + 1


def _expected_phrase(expected: set[str]) -> str | None:
    if not expected:
        return None
    if len(expected & EXPRESSION_STARTS) >= 3:
        return "an expression"
    words = sorted({_terminal_words(name) for name in expected})
    if len(words) > 4:
        return None
    return " or ".join(words)


def _terminal_words(name: str) -> str:
    if name in REGEX_TERMINAL_WORDS:
        return REGEX_TERMINAL_WORDS[name]
    from nupp.frontend.parser import _lark  # the one parser instance knows its terminals
    try:
        pattern = _lark().get_terminal(name).pattern
    except KeyError:
        return name.lower()
    return f"'{pattern.value}'" if pattern.type == "str" else name.lower()


def _unclosed_opener(text: str) -> tuple[str, int] | None:
    """The innermost block opener left open at the end of `text`, with its line."""
    stack: list[tuple[str, int]] = []
    do_owned = 0
    for word, line in _keywords(text):
        if word in DO_OWNERS:
            stack.append((word, line))
            do_owned += 1
        elif word == "do" and do_owned:
            do_owned -= 1
        elif word in OPENERS:
            stack.append((word, line))
        elif word in ("end", "until") and stack:
            stack.pop()
    return stack[-1] if stack else None


def _keywords(text: str):
    """Keywords of `text` outside strings and comments, with their line numbers."""
    from nupp.frontend.parser import _lark
    try:
        for tok in _lark().lex(text, dont_ignore=False):
            if tok.type in ("NAME",) or not WORD.fullmatch(str(tok)):
                continue
            yield str(tok), tok.line
    except UnexpectedInput:
        return
