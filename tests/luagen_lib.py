"""A hypothesis generator of small plain Lua 5.1 programs centred on LuaJIT's
standard library and on the pieces of it that nupp's runtime replaces or wraps
(coroutine.resume and coroutine.wrap behind the C-stack guard, print and
io.write, the error positions of `nupp run`), for the fidelity differential
(tests/test_lua_fidelity.py): each program runs under the luajit binary and
under `nupp run`, and everything observable must agree.

`programs()` draws a few helpers (`describe`, `show`: values by their contents,
never by an address) and then statements of these families:

  * strings: find (plain and pattern, negative and far init), match, gmatch
    in a for-in loop, gsub with string (%0 %1 %%), table and function
    replacements and a maximum count; patterns of anchors, character classes,
    sets, `%b`, `%f`, `()` position captures, back-references and lazy and
    greedy repetitions; byte/char, len, rep with a separator, sub, upper,
    lower, reverse, format (%q %s %d %x %X %o %c %e %g %.3f %5.2s %-6s %+d
    %05d); called as `string.f(s, ...)`, as `("lit"):f(...)`, `s:f(...)`
    and through pcall;
  * tables: insert (2 and 3 arguments), remove (with and without a position),
    concat (separator, i, j; numbers inside), sort (default; a comparator that
    is a strict weak order), unpack and select with ranges, `#` after each;
  * printing: print, io.write and file:write of several values, of numbers
    as LuaJIT writes them (integer-valued floats, -0, inf, nan, 2^53, 1e15,
    1e16), booleans and nil; print under a replaced global tostring; a
    __tostring through print, tostring and %s; tostring and tonumber with
    bases and blanks; the script's arguments (`...`, `arg`);
  * coroutines: create/resume/yield/status/wrap/running/isyieldable with
    values passed both ways, yields across pcall, errors inside (resume's
    false and message, wrap's error raised again at its caller), resuming a
    dead, running or normal coroutine, a generator inside another, generators
    nested 40 deep with an error crossing every level, coroutine.wrap
    iterators in for-in loops, yields across a C call (gsub, sort);
  * errors: bad-argument messages from direct calls, error objects (strings,
    numbers, tables, nil, a __tostring that returns nil or fails) through
    pcall and xpcall with a traceback-free handler (or one that fails),
    error() at levels 0 to 3 inside library callbacks (a gsub function, a
    sort comparator).

A statement calls the library directly (its error ends the program: the exit
status and message count too) or under pcall; a program may end in an
uncaught error or in os.exit after unflushed output, from a coroutine or a
library callback.  Nothing is drawn that two LuaJIT builds may legitimately
do differently: no addresses, no pairs order, no time or random numbers, no
stack overflow (where LuaJIT places one varies from run to run), and no
number that `%.Nf` would round as a tie (formatted non-integers are thirds,
sevenths, 0.1 and -1e-7).
"""

from __future__ import annotations

from hypothesis import strategies as st

from .luagen import string_literal

# ---- leaves -------------------------------------------------------------------

# subjects of the string functions, as Lua literals
SUBJECTS = ('"hello world"', '"a,b,,c"', '"key=val; k2=v2"', '"f(a(b)c)d"', '"THE (quick) fox!"',
            '"x1y22z333"', '""', '"  12  "', '"0x1F"', '"one two  three"', '"a.b-c%d"', '"\\0a\\0b"',
            '"caf\\195\\169"', '"aaa"', '"[x] [yy]"')
# pattern pieces, as they are written inside a Lua literal
PATTERN_PIECES = ("%a+", "%d+", "(%w+)", "()", ".-", "%s*", "[^,]*", "a*", "b?", "%.", "%%", "[a-c]+",
                  "%u%l*", "(%a)(%a)", "(%a)%1", "%b()", "%b[]", "%f[%w]", "%f[%W]", "[%w_]+", "%p",
                  "%x+", "%l", "%S+", "=", ",", "o", "(.)", "[%d%.]+", "%z", "[]", "(", "%", "[^%s]")
NUMBERS = ("0", "1", "-1", "3", "7", "42", "-0.0", "1/0", "-1/0", "0/0", "2^53", "2^63", "1e15", "1e16",
           "1e100", "1/3", "-2/7", "10/3", "3.0", "123456789012", "-1e-7", "255", "65", "0.1")
PLAIN_VALUES = NUMBERS[:8] + ('"s"', '"10"', '" 0x10 "', "true", "false", "nil")
TONUMBER_TEXTS = ('"  10  "', '"0x10"', '"1e2"', '"z"', '"7fffffff"', '"-ff"', '"10 1"', '""', '" "',
                  '"0x"', '"1e"', '".5"', '"5."', '"inf"', '"nan"', '"  -0x1p4  "', '"\\t12\\n"', '"1_0"',
                  '"Zz"', '"-11"', "12", "nil", "{}")
FORMATS = ("%q", "%s", "%d", "%x", "%X", "%o", "%c", "%e", "%g", "%.3f", "%5.2s", "%-6s|", "%+d", "%05d",
           "%.14g", "%%", "%i", "%5.1f")
LUA_NEWLINE = "'\\n'"
ERROR_VALUES = ('"msg"', "42", "nil", "{code = 7}", "true", "2.5", '"x.lua:99: a position of nothing"', "'\\n'",
                "setmetatable({code = 8}, {__tostring = function() return 'obj' end})",
                "setmetatable({code = 9}, {__tostring = function() return nil end})",
                "setmetatable({code = 10}, {__tostring = function() error('in __tostring') end})")


def unprotected(draw) -> bool:
    """Whether a statement calls directly, so that its error ends the program (one in six)."""
    return draw(st.integers(0, 5)) == 0


def ints(low: int, high: int):
    return st.integers(low, high).map(lambda n: f"({n})" if n < 0 else str(n))


def subject():
    return st.one_of(st.sampled_from(SUBJECTS), string_literal(), st.sampled_from(("s", "t")))


@st.composite
def pattern(draw) -> str:
    pieces = draw(st.lists(st.sampled_from(PATTERN_PIECES), min_size=1, max_size=3))
    anchor = draw(st.sampled_from(("", "", "", "^")))
    end = draw(st.sampled_from(("", "", "", "$")))
    return '"' + anchor + "".join(pieces) + end + '"'


@st.composite
def call(draw, name: str, first: str, args: list[str]) -> str:
    """string.NAME(first, args) in one of the forms a program writes it."""
    form = draw(st.integers(0, 3))
    separator = draw(st.sampled_from((", ", ", ", ", ", ",\n  ")))  # an error is at the line of the call's '('
    if form == 0:
        return f"string.{name}({separator.join([first, *args])})"
    if form == 1:  # LuaJIT names no function in the message of its bad argument: '?'
        return f"pcall(string.{name}, {separator.join([first, *args])})"
    receiver = first if first in ("s", "t") else f"({first})"
    gap = draw(st.sampled_from(("", "", "\n")))  # the receiver on the line before
    return f"{receiver}{gap}:{name}({separator.join(args)})"


# ---- strings ----------------------------------------------------------------------

@st.composite
def replacement(draw) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.sampled_from(('"<%0>"', '"%1-%1"', '"%%"', '"[%2]"', '"x"', '""', '"%1"', '"%"')))
    if kind == 1:
        return draw(st.sampled_from(('{hello = "HI", a = 1, b = true, o = false, x = 2.5}',
                                     '{["1"] = "one", ["22"] = 22, k2 = "K"}', "{}")))
    if kind == 2:
        return draw(st.sampled_from(("function(x) return x:upper() end",
                                     "function(...) return select('#', ...) end",
                                     "function() return nil end",
                                     "function(x) return false end",
                                     "function(x, y) return tostring(y) .. x end",
                                     "function(x) return {} end",
                                     "function(x) return #x * 1.5 end")))
    level = draw(st.integers(0, 3))
    return f"function(x) error('cb ' .. tostring(x), {level}) end"


@st.composite
def string_call(draw) -> str:
    """An expression of the string library, maybe several values."""
    s = draw(subject())
    kind = draw(st.integers(0, 11))
    if kind == 0:
        args = [draw(pattern())]
        if draw(st.booleans()):
            args += [draw(ints(-12, 12))] + draw(st.lists(st.sampled_from(("true", "false", "nil")), max_size=1))
        return draw(call("find", s, args))
    if kind == 1:
        args = [draw(pattern())] + draw(st.lists(ints(-6, 6), max_size=1))
        return draw(call("match", s, args))
    if kind == 2:
        args = [draw(pattern()), draw(replacement())] + draw(st.lists(ints(-1, 3), max_size=1))
        return draw(call("gsub", s, args))
    if kind == 3:
        return draw(call("byte", s, draw(st.lists(ints(-5, 6), max_size=2))))
    if kind == 4:
        codes = draw(st.lists(st.sampled_from(("65", "97", "0", "255", "256", "-1", "48.0", '"66"')),
                              max_size=4))
        return f"string.char({', '.join(codes)})"
    if kind == 5:
        args = [draw(ints(-1, 4))] + draw(st.lists(st.sampled_from(('","', '""', '"--"', "7")), max_size=1))
        return draw(call("rep", s, args))
    if kind == 6:
        return draw(call("sub", s, draw(st.lists(ints(-8, 9), min_size=1, max_size=2))))
    if kind == 7:
        return draw(call(draw(st.sampled_from(("len", "upper", "lower", "reverse"))), s, []))
    if kind in (8, 9):
        fmt = draw(st.lists(st.sampled_from(FORMATS), min_size=1, max_size=3))
        args = draw(st.lists(st.one_of(st.sampled_from(NUMBERS), subject()), min_size=len(fmt), max_size=len(fmt)))
        return f'string.format("{" ".join(fmt)}", {", ".join(args)})'
    if kind == 10:
        return f"string.len({draw(st.sampled_from(NUMBERS[:6]))}) + #{draw(subject())}"
    return f"tostring({s}):len()"


@st.composite
def gmatch_loop(draw) -> str:
    return (f"for a, b in ({draw(subject())}):gmatch({draw(pattern())}) do "
            f"io.write(tostring(a), '|', tostring(b), ';') end print()")


# ---- tables -----------------------------------------------------------------------

@st.composite
def table_step(draw, size: int) -> tuple[str, int]:
    """One table operation on `t` of `size` elements, and the size after it."""
    kind = draw(st.integers(0, 6))
    value = draw(st.sampled_from(("'v'", "7", "2.5", "-0.0", "1/3", "'x y'", "100")))
    if kind == 0:
        return f"table.insert(t, {value})", size + 1
    if kind == 1:
        return f"table.insert(t, {draw(st.integers(1, size + 1))}, {value})", size + 1
    if kind == 2:
        return "print('removed', table.remove(t))", max(size - 1, 0)
    if kind == 3 and size > 0:
        return f"print('removed', table.remove(t, {draw(st.integers(1, size))}))", size - 1
    if kind == 4:
        i, j = draw(st.integers(1, size + 1)), draw(st.integers(0, size))
        sep = draw(st.sampled_from(("", ", '-'", ", ''", ", 0")))
        bounds = f", {i}, {j}" if sep else ""
        return f"print(table.concat(t{sep or ', nil'}{bounds}))", size
    if kind == 5:
        i, j = draw(st.integers(-1, size + 1)), draw(st.integers(0, size + 1))
        return f"print(select('#', unpack(t, {i}, {j})), unpack(t, {i}, {j}))", size
    index = draw(st.sampled_from(("-1", "-2", "2", "'#'", "#t > 0 and #t or 1")))
    return f"print(#t, t[#t], select({index}, unpack(t)))", size


@st.composite
def table_block(draw) -> str:
    elements = draw(st.lists(st.sampled_from(("1", "5", "3", "2.5", "-1", "1/3", "10", "2^53", "-0.0", "0/0", "'s'")),
                             max_size=5))
    lines, size = [f"local t = {{{', '.join(elements)}}}"], len(elements)
    for _ in range(draw(st.integers(1, 5))):
        step, size = draw(table_step(size))
        lines += [step, "print(#t, table.concat(t, ' '))"]
    return "\n".join(lines)


@st.composite
def sort_block(draw) -> str:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        items = draw(st.lists(st.sampled_from(("3", "1", "2.5", "-7", "1/3", "100", "-0.0")), max_size=8))
        return f"local t = {{{', '.join(items)}}} table.sort(t) print(table.concat(t, ' '))"
    if kind == 1:
        items = draw(st.lists(st.sampled_from(('"b"', '"a"', '"B"', '"ab"', '""', '"a\\0"', '"10"', '"9"')),
                              max_size=8))
        order = draw(st.sampled_from(("", ", function(x, y) return x > y end",
                                      ", function(x, y) return #x < #y end")))
        return f"local t = {{{', '.join(items)}}} table.sort(t{order}) print(table.concat(t, ' '))"
    if kind == 2:  # records by a key; equal keys stay wherever the algorithm leaves them, the same in both
        keys = draw(st.lists(st.integers(0, 4), max_size=7))
        records = ", ".join(f"{{k = {k}, n = {i}}}" for i, k in enumerate(keys))
        return (f"local t = {{{records}}} table.sort(t, function(x, y) return x.k < y.k end) "
                "for i = 1, #t do io.write(t[i].k, ':', t[i].n, ' ') end print()")
    if kind == 3:  # an error from the comparator, at a level
        level = draw(st.integers(0, 3))
        return (f"print(pcall(table.sort, {{3, 1, 2}}, function(x, y) error('cmp ' .. x, {level}) end))")
    mixed = draw(st.sampled_from(("{1, 'a', 2}", "{{}, {}}", "{1, 2, nil, 4}", "{true, false}")))
    return f"local t = {mixed} print(pcall(table.sort, t))"


# ---- printing and conversions --------------------------------------------------------

@st.composite
def printing(draw) -> str:
    values = draw(st.lists(st.one_of(st.sampled_from(NUMBERS + ("true", "false", "nil")), subject()), max_size=4))
    kind = draw(st.integers(0, 7))
    if kind == 0:
        return f"print({', '.join(values)})"
    if kind == 1:
        return f"io.write({', '.join(v for v in values if v not in ('true', 'false', 'nil'))}) io.write('\\n')"
    if kind == 2:
        return f"io.write({', '.join([*values, LUA_NEWLINE])})"  # a boolean or nil is io.write's bad argument
    if kind == 3:
        return f"print(tostring({draw(st.sampled_from(NUMBERS + ('true', 'nil', 'print == print')))}))"
    if kind == 4:  # print calls the global tostring, whatever it is now
        replacement = draw(st.sampled_from(("function(v) return '<' .. real(v) .. '>' end",
                                            "function(v) return 7 end", "function(v) return nil end",
                                            "function(v) error('no tostring', 2) end", "nil")))
        return (f"local real = tostring tostring = {replacement} "
                f"print(pcall({', '.join(['print', *values])})) tostring = real")
    if kind == 5:
        strings = [v for v in values if v not in ("true", "false", "nil")]
        writer = draw(st.sampled_from(("io.stdout", "io.output()", "io.write('[')")))
        return f"{writer}:write({', '.join([*strings, LUA_NEWLINE])})"
    if kind == 6:  # a table's __tostring, as print, tostring and %s call it
        # (not a table: %s would show its address)
        made = draw(st.sampled_from(("'made'", "42", "nil", "true", "error('in __tostring')")))
        return (f"local o = setmetatable({{}}, {{__tostring = function() return {made} end}}) "
                f"print(pcall(print, o)) show(pcall(tostring, o)) show(pcall(string.format, '%s|', o))")
    base = draw(st.sampled_from(("", ", 10", ", 16", ", 2", ", 36", ", 8", ", 1", ", 37")))
    return f"print(tonumber({draw(st.sampled_from(TONUMBER_TEXTS))}{base}))"


# ---- coroutines -------------------------------------------------------------------

def plain_values():
    return st.lists(st.sampled_from(PLAIN_VALUES), max_size=3)


# statements of a coroutine's body that need nothing drawn
COROUTINE_PROBES = (
    "print(coroutine.status((coroutine.running())), coroutine.isyieldable(), select('#', coroutine.running()))",
    "print(coroutine.resume((coroutine.running())))",  # itself: running
    # the coroutine that resumed this one is 'normal', and cannot be resumed
    "local me = coroutine.running() print('child', coroutine.resume(coroutine.create(\n"
    "  function() return coroutine.status(me), coroutine.resume(me) end)))",
    "local me = coroutine.running() print('child', pcall(coroutine.wrap(\n"
    "  function() return coroutine.status(me), coroutine.resume(me) end)))",
    "local inner = coroutine.wrap(function(x) coroutine.yield(x + 1) coroutine.yield(x + 2) return 'end' end)\n"
    "print('inner', inner(1), inner(), inner())",
    # a yield across a C function: an error
    "print(pcall(string.gsub, 'ab', '.', function(c) coroutine.yield(c) end))",
    "print(pcall(table.sort, {2, 1}, function(x, y) coroutine.yield() return x < y end))",
    "print('args', ...)", "print('args', select('#', ...))", "print('args', select(2, ...))")


@st.composite
def coroutine_step(draw) -> str:
    """A statement of a coroutine's body."""
    kind = draw(st.integers(0, 5))
    values = ", ".join(draw(plain_values()))
    if kind <= 2:
        return f"print('got', coroutine.yield({values}))"
    if kind == 3:
        return f"print('in pcall', pcall(function() print('got', coroutine.yield({values})) end))"
    if kind == 4:
        thrown = draw(st.sampled_from(ERROR_VALUES[:3]))
        return f"print('caught', pcall(function() coroutine.yield('p') error({thrown}) end))"
    return draw(st.sampled_from(COROUTINE_PROBES))


@st.composite
def coroutine_ending(draw) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return f"error({draw(st.sampled_from(ERROR_VALUES))}, {draw(st.integers(0, 2))})"
    if kind == 1:
        return f"return {', '.join(draw(plain_values()))}"
    if kind == 2:
        return "local z = nil + 1"
    return ""


@st.composite
def coroutine_body(draw) -> str:
    steps = draw(st.lists(coroutine_step(), min_size=1, max_size=4)) + [draw(coroutine_ending())]
    return "function(...)\n" + "\n".join(steps) + "\nend"


@st.composite
def coroutine_block(draw) -> str:
    body = draw(coroutine_body())
    resumes = draw(st.integers(1, 5))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        lines = [f"local co = coroutine.create({body})", "print(coroutine.status(co))"]
        for _ in range(resumes):
            arguments = ", ".join(["co", *draw(plain_values())])
            lines += [f"show(coroutine.resume({arguments}))", "print(coroutine.status(co))"]
        return "\n".join(lines)
    if kind == 1:
        lines = [f"local gen = coroutine.wrap({body})"]
        for _ in range(resumes):
            values = draw(plain_values())
            lines.append(f"show(gen({', '.join(values)}))" if unprotected(draw)
                         else f"show(pcall({', '.join(['gen', *values])}))")
        return "\n".join(lines)
    if kind == 2:
        loop = f"for a, b in coroutine.wrap({body}) do print('it', a, b) end"
        return loop if unprotected(draw) else f"show(pcall(function()\n{loop}\nend))"
    # the wrap function calls itself: resuming a running coroutine
    return ("local again\nagain = coroutine.wrap(function() coroutine.yield(1) print(pcall(again)) again() end)\n"
            "print(again()) show(pcall(again))")


@st.composite
def nested_generators(draw) -> str:
    """A generator of generators DEPTH deep (each resume nests one more, under
    the C-stack guard), and maybe an error at the bottom that crosses every
    level: a string gains a position at each coroutine.wrap."""
    depth = draw(st.integers(1, 40))
    bottom = draw(st.sampled_from(("", "", "error('bottom')", "error('bottom', 2)", "error({code = 3})",
                                   "local z = nil .. 'x'")))
    loop = "for v in walk(DEPTH) do io.write(v, ' ') end print()".replace("DEPTH", str(depth))
    return "\n".join([
        "local function walk(n)",
        "  return coroutine.wrap(function()",
        f"    if n == 0 then {bottom} return end",
        "    for v in walk(n - 1) do coroutine.yield(v) end",
        "    coroutine.yield(n)",
        "  end)",
        "end",
        loop if unprotected(draw) else f"show(pcall(function() {loop} end))"])


# ---- errors -------------------------------------------------------------------------

BAD_CALLS = ("string.sub()", "string.sub(nil, 1)", "('x'):rep('a')", "string.rep()", "table.concat({{}})",
             "table.concat({1, true})", "table.insert(nil, 1)", "string.char(256)", "string.char(-1)",
             "math.floor('a')", "tostring()", "setmetatable(1, {})", "ipairs(nil)", "select(0, 1)",
             "string.format('%d', 'x')", "string.format('%d', 2.5)", "string.format('%y', 1)",
             "string.format('%s')", "('abc'):find('%')", "('abc'):gsub('(', '')", "('abc'):match('[a')",
             "('abc'):gsub('.', '%2')", "coroutine.resume(1)", "coroutine.wrap(1)", "coroutine.status(nil)",
             "coroutine.yield(1)", "unpack(nil)", "unpack({}, 1, 1e8)", "tonumber('10', 99)", "('x'):byte(1, 'z')",
             "string.upper({})", "table.remove(nil)", "error()", "error('lvl', 1)", "error('lvl', 2)",
             "string.gsub('abc', 'b', true)", "io.write({})", "print(#nil)", "s:nosuch()", "('x'):nosuch(1)",
             "string.nosuch()", "print(nosuch.x)", "s.len()", "(s):rep(2, {})", "string.format('%5.2q', 'x')",
             "string.format('%' .. string.rep('9', 5) .. 'd', 1)", "math.max()", "select('#')")


@st.composite
def error_statement(draw) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return f"print(pcall(function() return {draw(st.sampled_from(BAD_CALLS))} end))"
    if kind == 1:
        handler = draw(st.sampled_from(("function(m) return 'handled: ' .. describe(m) end",
                                        "function(m) return m end", "describe",
                                        "function(m) error('again') end", "function(m) return 1, 2, 3 end")))
        thrown = draw(st.sampled_from(ERROR_VALUES))
        level = draw(st.integers(0, 3))
        return f"show(xpcall(function(...) error({thrown}, {level}) end, {handler}, 1, 2))"
    if kind == 2:
        return f"show(xpcall(function() return {draw(st.sampled_from(BAD_CALLS))} end, describe))"
    return f"show(pcall(error, {draw(st.sampled_from(ERROR_VALUES))}, {draw(st.integers(0, 3))}))"


# ---- programs -------------------------------------------------------------------------

HELPERS = """\
local s, t = "The rain in Spain", "a1,b22,c333"
local function describe(v)  -- a value by its contents, never by an address
  local kind = type(v)
  if kind == "table" then return "table " .. tostring(rawget(v, "code")) end
  if kind == "function" or kind == "thread" or kind == "userdata" then return kind end
  return tostring(v)
end
local function show(...)  -- how many values, and each described
  local shown = {}
  for i = 1, select("#", ...) do shown[i] = describe((select(i, ...))) end
  print(select("#", ...), table.concat(shown, " | "))
end"""


@st.composite
def library_call(draw) -> str:
    """A string expression printed: directly (its error ends the program) or under pcall."""
    expression = draw(string_call())
    if unprotected(draw):
        return f"print({expression})"
    return draw(st.sampled_from((f"show(pcall(function() return {expression} end))",
                                 f"print(pcall(function() return {expression} end))")))


# the script's arguments ("alpha", "", "3" in the fidelity test) through the library
ARGUMENT_USES = ("print(select('#', ...), ...)", "print(#arg, arg[0], arg[1], arg[2] == '', arg[4])",
                 "print(arg[1]:upper():rep(2, '-'), (select(3, ...)) + 1, tonumber(arg[3], 16))",
                 "for i, v in ipairs(arg) do io.write(i, '=', v, ' ') end print()",
                 "print(table.concat({...}, '|'), table.concat(arg, ',', 1, #arg))",
                 "print(pcall(string.rep, ...))", "print(string.format('%q %s %d', ...))")


@st.composite
def arguments(draw) -> str:
    return draw(st.sampled_from(ARGUMENT_USES))


@st.composite
def statement(draw) -> str:
    family = draw(st.sampled_from((library_call, library_call, library_call, gmatch_loop, table_block,
                                   sort_block, printing, printing, coroutine_block, coroutine_block,
                                   nested_generators, error_statement, arguments)))
    return "do\n" + draw(family()) + "\nend"


@st.composite
def ending(draw) -> str:
    """Nothing, or an error nobody catches, from the library or a coroutine."""
    kind = draw(st.integers(0, 8))
    if kind == 0:
        return draw(st.sampled_from(BAD_CALLS))
    if kind == 1:
        thrown, level = draw(st.sampled_from(ERROR_VALUES)), draw(st.integers(0, 2))
        return f"coroutine.wrap(function() error({thrown}, {level}) end)()"
    if kind == 2:
        return f"('abc'):gsub('%w', function(c) error('in gsub ' .. c, {draw(st.integers(0, 3))}) end)"
    if kind == 3:
        return draw(exit_ending())
    return ""


# where os.exit may be called from, and what it may be given
EXIT_PLACES = ("EXIT", "print(pcall(function() EXIT end))", "coroutine.wrap(function() EXIT end)()",
               "print(coroutine.resume(coroutine.create(function() EXIT end)))",
               "('ab'):gsub('.', function() EXIT end)", "table.sort({1, 2, 3}, function() EXIT end)",
               "xpcall(error, function() EXIT end)")
EXIT_CODES = ("", "0", "3", "true", "false", "2.7", "'4'", "'x'", "1, true")


@st.composite
def exit_ending(draw) -> str:
    """os.exit after output not ended by a newline (which it must flush), from some frame."""
    exit_call = f"os.exit({draw(st.sampled_from(EXIT_CODES))})"
    return f"io.write('partial') " + draw(st.sampled_from(EXIT_PLACES)).replace("EXIT", exit_call) + " print('after')"


@st.composite
def programs(draw) -> str:
    lines = [HELPERS, *draw(st.lists(statement(), min_size=2, max_size=7)), draw(ending())]
    return "\n".join(lines) + "\n"
