"""Syntax errors in words a Lua programmer knows.

lark reports an unexpected character or token and the set of terminals the
parser could take.  This module turns that into Lua's own phrasing
(`'then' expected near 'print'`, `'end' expected (to close 'function' at
line 3) near end of file`) plus a hint for the mistakes people really make
(`!=`, `~ =`, `=` in a condition, unfinished strings and comments).
"""

from __future__ import annotations

import re

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from nupp.errors import LINE_BREAK, NuppError, Source, error_at

# Terminals that can begin an expression.
EXPRESSION_STARTS = {"NAME", "NUMBER", "STRING", "LONG_STRING", "LPAR", "LBRACE", "FUNCTION",
                     "NIL", "TRUE", "FALSE", "NOT", "HASH", "MINUS", "TILDE", "SWITCH"}
# Those that begin nothing else (no statement, no call's arguments, no operator):
# where one is expected, an operand is missing: "an expression expected".
OPERAND_STARTS = {"NUMBER", "NIL", "TRUE", "FALSE", "NOT", "HASH"}
# What may follow a function value to call it.
CALL_ARGUMENTS = {"LPAR", "STRING", "LONG_STRING", "LBRACE"}
# What only continues an expression already complete (binary operators, indexing):
# where one is expected, so is all of CONTINUATIONS, and that says nothing of
# what the parser lacks there.
AFTER_OPERAND = {"OR", "AND", "LT", "GT", "LE", "GE", "EQ", "NE", "BOR", "BAND", "SHL", "SHR", "CONCAT",
                 "PLUS", "STAR", "SLASH", "DSLASH", "PERCENT", "POW", "DOT", "COLON", "LSQB"}
CONTINUATIONS = AFTER_OPERAND | CALL_ARGUMENTS | {"MINUS", "TILDE"}
# Tokens that end a block (Lua's block_follow), and what begins a statement.
BLOCK_ENDS = {"END", "ELSE", "ELSEIF", "UNTIL", "$END"}
STATEMENT_STARTS = {"LOCAL", "IF", "WHILE", "FOR", "REPEAT", "DO", "RETURN", "BREAK", "GOTO", "LABEL"}

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


def describe_syntax_error(source: Source, text: str, err: UnexpectedInput, lark: Lark) -> NuppError:
    """`lark`: the parser that failed (it knows its terminals, and lexes to find an unclosed block)."""
    if isinstance(err, UnexpectedCharacters):
        return _bad_character(source, text, err.pos_in_stream, err.line, err.column)
    token = getattr(err, "token", None)
    if (token is not None and token.type not in ("$END", "STRING", "LONG_STRING")
            and token.start_pos is not None):
        # The start of an unfinished long string or comment lexes as tokens
        # ('[', or '-' '-' '['): name the real problem instead.  (A string
        # token is a whole string: `"a" "b"` is no unfinished one.)
        pos, col = token.start_pos, token.column
        if text[pos - 2:pos] == "--" and col > 2:
            pos, col = pos - 2, col - 2
        lexical = _bad_character(source, text, pos, token.line, col)
        if "unfinished" in lexical.diagnostics[0].message:
            return lexical
    if isinstance(err, (UnexpectedToken, UnexpectedEOF)):
        return _bad_token(source, text, err, lark)
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


def _bad_token(source: Source, text: str, err, lark: Lark) -> NuppError:
    token = getattr(err, "token", None)
    at_eof = token is None or token.type == "$END"
    line, col = (_eof_position(text) if at_eof else (token.line, token.column))
    near = "end of file" if at_eof else f"'{token}'"
    expected = _acceptable(err)
    previous = _previous_token(err)

    if not at_eof and token.type == "EQUAL" and previous is not None and previous.type == "TILDE":
        return error_at(source, previous.line, previous.column, "unexpected '=' after '~'",
                        "not-equal is written '~=' with no space; a lone '~' is bitwise xor (or not)")
    if not at_eof and token.type == "EQUAL" and text[token.start_pos + 1:token.start_pos + 2] == ">":
        return error_at(source, line, col, "unexpected '=>'", "a switch arm is written `case 1 -> value`")
    in_condition = expected & {"THEN", "DO"} and not expected & (STATEMENT_STARTS - {"DO"})
    if not at_eof and token.type == "EQUAL" and in_condition:
        return error_at(source, line, col, "unexpected '=' in a condition",
                        "use '==' to compare; '=' is assignment")
    block_must_end = not expected & (STATEMENT_STARTS | OPERAND_STARTS)  # e.g. after `return x`
    closes = at_eof or token.type in BLOCK_ENDS or block_must_end
    opener = _unclosed_opener(text if at_eof else text[:token.start_pos], lark) if closes else None
    if not at_eof and token.type in BLOCK_ENDS and "$END" in expected and opener is None:
        return error_at(source, line, col, f"end of file expected near {near}",
                        f"no block is open here for this '{token}' to close: one '{token}' too many?")
    if expected & {"END", "UNTIL"} and closes:
        if opener is not None:
            word, opened_at = opener
            closer = "until" if word == "repeat" else "end"
            return error_at(source, line, col,
                            f"'{closer}' expected (to close '{word}' at line {opened_at}) near {near}",
                            f"every '{word}' needs a matching '{closer}'")
    phrase = _expected_phrase(expected, lark)
    if phrase:
        return error_at(source, line, col, f"{phrase} expected near {near}")
    return error_at(source, line, col, f"unexpected symbol near {near}")


def _acceptable(err) -> set[str]:
    """The terminals the parser takes where it stopped, each tried on a copy of
    its state (lark's `expected` is the LALR state's: after an operand its
    default reductions blur it into everything that may follow any expression)."""
    parser = getattr(err, "interactive_parser", None)
    if parser is not None:
        return set(parser.accepts())
    return set(getattr(err, "expected", ()) or ())


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
    lines = LINE_BREAK.split(text)
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    return len(lines), len(lines[-1]) + 1


def _expected_phrase(expected: set[str], lark: Lark) -> str | None:
    """What the parser lacks, in words, or None when it could take too many things to say."""
    if expected & OPERAND_STARTS:
        return "an expression"
    if expected == CALL_ARGUMENTS:
        return "function arguments"
    if expected & AFTER_OPERAND and expected - CONTINUATIONS:
        expected = expected - CONTINUATIONS
    words = sorted({_terminal_words(name, lark) for name in expected})
    if not words or len(words) > 4:
        return None
    return " or ".join(words)


def _terminal_words(name: str, lark: Lark) -> str:
    if name in REGEX_TERMINAL_WORDS:
        return REGEX_TERMINAL_WORDS[name]
    try:
        pattern = lark.get_terminal(name).pattern
    except KeyError:
        return name.lower()
    return f"'{pattern.value}'" if pattern.type == "str" else name.lower()


def _unclosed_opener(text: str, lark: Lark) -> tuple[str, int] | None:
    """The innermost block opener left open at the end of `text`, with its line."""
    stack: list[tuple[str, int]] = []
    do_owned = 0
    for word, line in _keywords(text, lark):
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


def _keywords(text: str, lark: Lark):
    """Keywords of `text` outside strings and comments, with their line numbers."""
    try:
        for tok in lark.lex(text, dont_ignore=False):
            if tok.type in ("NAME",) or not WORD.fullmatch(str(tok)):
                continue
            yield str(tok), tok.line
    except UnexpectedInput:
        return
