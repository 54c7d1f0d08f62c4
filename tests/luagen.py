"""A hypothesis generator of small plain Lua 5.1 programs, for the fidelity
differential (tests/test_lua_fidelity.py): each is run by the luajit binary
and by `nupp run`, and everything observable must agree.

`programs()` draws the text of a program of this shape:

    local a, b, c = <int>, <decimal>, <int>
    local s, t = "<string>", "<string>"
    local tab = {<numbers>}
    local n = 0; local function count() ... end   -- a counter in an upvalue
    local function shown(ok, e) ... end           -- pcall's results, a table by its code
    <statements>
    [<an uncaught error: error(msg, level) or a run-time error>]

Statements print expressions, reassign the locals, append to `tab`, call
closures (`count`, a vararg one defined on the spot), and run code under
pcall: `error` with a string, a number, a table or nil at levels 0 to 5, from
a function or directly, and run-time errors (arithmetic on nil, indexing
nil, calling nil, concatenating a table, comparing a number with a string).
Expressions are typed by construction: numbers (literals, the locals, `#s`,
`#tab`, + - * / % ^, unary minus, math.floor/max/abs/fmod, tonumber of a
string, select("#", ...), an immediately called closure), strings (literals
with escapes, .., tostring, string.format of numbers (%5.1f %.3f %g %s %.14g
%e, and %d %x %5d %-4d of integers) and of strings (%q), upper, lower,
reverse, rep, sub) and booleans (comparisons, not, and, or).
Decimal literals have a tenths digit other than 5, so that no literal is a
rounding tie (the luajit binary and lupa's LuaJIT round ties differently).
"""

from __future__ import annotations

from hypothesis import strategies as st

NUMBER_NAMES = ("a", "b", "c")
STRING_NAMES = ("s", "t")
NUMBER_FORMATS = ("%5.1f", "%.3f", "%g", "%s", "%.14g", "%e")
INTEGER_FORMATS = ("%d", "%x", "%5d", "%-4d|")
# Lua escapes and plain characters, as they are written in a Lua string literal
STRING_PIECES = ("a", "b", "Z", " ", "0", "7", "_", ",", "\\n", "\\t", "\\\\", '\\"', "\\065", "\\x41",
                 "\\0", "\\255", "%")
MAX_DEPTH = 3


@st.composite
def integer(draw) -> str:
    n = draw(st.integers(-60, 60))
    return f"({n})" if n < 0 else str(n)


@st.composite
def decimal(draw) -> str:
    whole, tenth = draw(st.integers(-20, 20)), draw(st.sampled_from((1, 2, 3, 4, 6, 7, 8, 9)))
    text = f"{abs(whole)}.{tenth}"
    return f"(-{text})" if whole < 0 else text


@st.composite
def string_literal(draw) -> str:
    return '"' + "".join(draw(st.lists(st.sampled_from(STRING_PIECES), max_size=5))) + '"'


@st.composite
def number(draw, depth: int = 0) -> str:
    leaves = [integer(), decimal(), st.sampled_from(NUMBER_NAMES), st.just("#s"), st.just("#tab")]
    if depth >= MAX_DEPTH:
        return draw(st.one_of(leaves))
    deeper = number(depth + 1)
    kind = draw(st.integers(0, 12))
    if kind <= 3:
        return draw(st.one_of(leaves))
    if kind <= 6:
        op = draw(st.sampled_from(("+", "-", "*", "/", "%", "+", "*")))
        return f"({draw(deeper)} {op} {draw(deeper)})"
    if kind == 7:
        return f"(-{draw(deeper)})"
    if kind == 8:
        fn = draw(st.sampled_from(("math.floor", "math.abs", "math.max", "math.fmod")))
        args = [draw(deeper)] + ([draw(deeper)] if fn in ("math.max", "math.fmod") else [])
        return f"{fn}({', '.join(args)})"
    if kind == 9:
        return f"({draw(deeper)} ^ {draw(st.integers(0, 3))})"
    if kind == 10:
        args = ["'#'"] + draw(st.lists(deeper, max_size=3))
        return f"select({', '.join(args)})"
    if kind == 11:
        return f"(tonumber({draw(string(depth + 1))}) or {draw(integer())})"
    return f"(function(x) return x * {draw(integer())} + {draw(deeper)} end)({draw(deeper)})"


@st.composite
def string(draw, depth: int = 0) -> str:
    leaves = [string_literal(), st.sampled_from(STRING_NAMES)]
    if depth >= MAX_DEPTH:
        return draw(st.one_of(leaves))
    deeper, numbers = string(depth + 1), number(depth + 1)
    kind = draw(st.integers(0, 10))
    if kind <= 2:
        return draw(st.one_of(leaves))
    if kind == 3:
        return f"({draw(deeper)} .. {draw(st.one_of(deeper, numbers))})"
    if kind == 4:
        return f"tostring({draw(numbers)})"
    if kind == 5:
        fmt = draw(st.sampled_from(NUMBER_FORMATS))
        return f'string.format("{fmt}", {draw(numbers)})'
    if kind == 6:
        fmt = draw(st.sampled_from(INTEGER_FORMATS))
        return f'string.format("{fmt}", math.floor(math.abs({draw(numbers)}) % 100000))'
    if kind == 7:
        return f"({draw(deeper)}):{draw(st.sampled_from(('upper()', 'reverse()', 'lower()')))}"
    if kind == 8:
        return f"({draw(deeper)}):rep({draw(st.integers(0, 3))})"
    if kind == 9:
        return f'string.format("%q", {draw(deeper)})'
    i, j = draw(st.integers(-3, 3)), draw(st.integers(-3, 4))
    return f"({draw(deeper)}):sub({i}, {j})"


@st.composite
def boolean(draw) -> str:
    kind = draw(st.integers(0, 4))
    if kind <= 1:
        return f"({draw(number(1))} {draw(st.sampled_from(('<', '<=', '==', '~=', '>')))} {draw(number(1))})"
    if kind == 2:
        return f"({draw(string(1))} {draw(st.sampled_from(('<', '==', '>=')))} {draw(string(1))})"
    if kind == 3:
        return f"(not {draw(number(2))} == {draw(number(2))})"
    return f"({draw(number(2))} < 0 {draw(st.sampled_from(('and', 'or')))} {draw(string(2))})"


def value():
    return st.one_of(number(), string(), boolean())


# run-time errors, each with its own message
FAULTS = ("nil + 1", "a.b.c", "undefined_function()", "{} .. s", "#nil", "a < s", "s.x.y", "-{}", "t()")


@st.composite
def error_value(draw) -> str:
    return draw(st.one_of(string(1), integer(), st.just("nil"), st.just("{code = 1}"),
                          st.just("setmetatable({}, {__tostring = function() return 'obj' end})")))


@st.composite
def statement(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind <= 2:
        return f"print({', '.join(draw(st.lists(value(), min_size=1, max_size=3)))})"
    if kind == 3:
        return f"{draw(st.sampled_from(NUMBER_NAMES))} = {draw(number())}"
    if kind == 4:
        return f"{draw(st.sampled_from(STRING_NAMES))} = {draw(string())}"
    if kind == 5:
        return f"tab[#tab + 1] = {draw(number())}; print(#tab, table.concat(tab, ','))"
    if kind == 6:
        level = draw(st.integers(0, 5))  # 4 and 5 reach past the main chunk
        if draw(st.booleans()):
            return f"print(shown(pcall(error, {draw(error_value())}, {level})))"
        return f"print(shown(pcall(function() error({draw(error_value())}, {level}) end)))"
    if kind == 7:
        return f"print(pcall(function() return {draw(st.sampled_from(FAULTS))} end))"
    if kind == 8:
        return f"print(count(), count() + {draw(number(1))})"
    return (f"do local f = function(x, ...) return x, select('#', ...), ... end "
            f"print(f({draw(value())}, {draw(value())})) end")


@st.composite
def ending(draw) -> str:
    """Nothing, or an error nobody catches: the exit status and the message count too."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return f"error({draw(error_value())}, {draw(st.integers(0, 2))})"
    if kind == 1:
        return f"local z = {draw(st.sampled_from(FAULTS))}"
    return ""


@st.composite
def programs(draw) -> str:
    lines = [f"local a, b, c = {draw(integer())}, {draw(decimal())}, {draw(integer())}",
             f"local s, t = {draw(string_literal())}, {draw(string_literal())}",
             f"local tab = {{{', '.join(draw(st.lists(st.one_of(integer(), decimal()), max_size=4)))}}}",
             "local n = 0",
             "local function count() n = n + 1 return n end",
             # a table's address differs from run to run: show what is in it
             "local function shown(ok, e) if type(e) == 'table' then return ok, e.code end return ok, e end"]
    lines += draw(st.lists(statement(), min_size=1, max_size=8))
    lines.append(draw(ending()))
    return "\n".join(lines) + "\n"
