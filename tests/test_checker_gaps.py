"""What the verifier would catch as a compiler bug, the checker reports first, as the user's error.

Each refused program is run as a user runs it: `nupp check`, `nupp run --aot
off`, `--mode scalar` and the default (lane C); every one must exit 1 with the
checker's diagnostic at its position (no "bug in nupp", nothing run).  Then
the programs these rules must not refuse run identically in every mode, and
a table maps every verifier rule (verifier/verify.py's docstring) to a
source program that would reach it and the diagnostic the checker gives
first, or says why no source program can reach it.
"""

from __future__ import annotations

import re

import pytest

from nupp.errors import NuppError, Source
from nupp.pipeline import compile_module
from nupp.runtime import cli
from nupp.verifier import verify

MODES = (("check",), ("run", "--aot", "off"), ("run", "--mode", "scalar"), ("run",))
HEADER = """local span = nupp.mem.span
local struct P
    v: int32
end
"""
HEADER_LINES = HEADER.count("\n")
CALLEE = """@aot
local function f(x: int32): int32
    return x + 1
end
"""  # lines 1-4
CALLER = """@aot
local function g(x: int32): int32
    return f(x)
end
"""  # `f(x)` at column 12 of its third line


def nupp(capfd, *argv) -> tuple[int, str, str]:
    """`nupp ARGV` in this process: (exit status, stdout, stderr)."""
    status = cli.main(list(argv))
    out, err = capfd.readouterr()
    return status, out, err


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))


# (name, program, line, column, words of the first diagnostic); lines count from 1.
REFUSED = [
    # issue 9 item 4: two @aot functions of one name
    ("same @aot name twice", CALLEE + """print(f(5))
@aot
local function f(x: int32): int32
    return x * 100
end
print(f(5))
""", 6, 1, ["@aot function 'f' is defined a second time", "the first is at 1:1", "rename"]),
    ("same name, global then local", """@aot
function f(x: int32): int32
    return x
end
@aot
local function f(x: number): number
    return x
end
""", 5, 1, ["defined a second time", "1:1"]),
    ("a plain local function hides the callee", CALLEE + """local function f(x)
    return 0
end
""" + CALLER + """print(g(1))
""", 10, 12, ["'f' here is the local function at 5:1", "hides the @aot function 'f' at 1:1"]),
    ("a plain local hides the callee", CALLEE + "local f = 3\n" + CALLER, 8, 12, ["'f' here is the local at 5:1"]),
    ("the callee reassigned", CALLEE + CALLER + """f = function(x) return 0 end
print(g(1))
""", 9, 1, ["'f' is assigned here", "the call at 7:12", "different functions"]),
    ("the callee reassigned inside a function", CALLEE + CALLER + """local function reset()
    function f(x) return 0 end
end
""", 10, 5, ["'f' is assigned here"]),
    ("the callee assigned inside @aot code: one diagnostic", CALLEE + CALLER + """@aot
local function h(x: int32): nil
    f = 1
end
""", 11, 5, ["assignment to the @aot function 'f' (defined at 1:1) is outside the AOT subset"]),
    ("a parameter named like the callee", CALLEE + """@aot
local function g(f: int32): int32
    return f(1)
end
""", 7, 12, ["'f' is a local of 'g', not a function"]),
    # issue 9 item 8
    ("a missing return", """@aot
local function f(x: int32): int32
    if x > 0 then
        return 1
    end
end
print(f(5))
""", 6, 1, ["'f' can reach its end without returning an int32", "every path"]),
    ("a return only inside a for", """@aot
local function f(n: int32): number
    for i = 1, n do
        return 1.5
    end
end
""", 6, 1, ["can reach its end without returning a number"]),
    ("a while true whose break skips the return", """@aot
local function f(n: int32): int32
    while true do
        if n > 3 then
            break
        end
        return n
    end
end
""", 9, 1, ["can reach its end"]),
    ("a duplicate parameter", """@aot
local function f(x: int32, x: int32): int32
    return x
end
print(f(5, 6))
""", 2, 28, ["parameter 'x' of @aot function 'f' is declared twice", "2:18"]),
    ("a span loop from 0", HEADER + """@aot
local function f(exclusive out: span.WriteSpan<P>): nil
    for i = 0, #out do
        out[i].v = 1
    end
end
f(span.new(P, 3))
""", HEADER_LINES + 4, 9, ["'out' is indexed by a loop not proven to stay in its bounds",
                           "runs from 0 to #out", "from 1 up to #out"]),
    ("a span loop up with step -1", HEADER + """@aot
local function f(exclusive out: span.WriteSpan<P>): nil
    for i = 1, #out, -1 do
        out[i].v = 1
    end
end
f(span.new(P, 3))
""", HEADER_LINES + 4, 9, ["runs from 1 to #out step -1", "down to 1"]),
    ("a span loop from a parameter", HEADER + """@aot
local function f(exclusive out: span.WriteSpan<P>, a: int32): nil
    for i = a, #out do
        out[i].v = 1
    end
end
""", HEADER_LINES + 4, 9, ["runs from a to #out"]),
    ("@aot on a nested function", """local function outer()
    @aot
    local function g(x: int32): int32
        return x + 1
    end
    return g(1)
end
print(outer())
""", 2, 5, ["@aot function 'g' must be at the top level of its module", "move it out"]),
    ("@aot inside a do block", """do
    @aot
    local function g(x: int32): int32
        return x + 1
    end
end
""", 2, 5, ["must be at the top level"]),
    # every verifier rule a program reaches (see VERIFIER_RULES)
    ("a step beyond int32", """@aot
local function f(): nil
    for i = 1, 10, 3000000000 do
    end
end
""", 3, 20, ["step of a counted loop must be a non-zero int32 literal"]),
    ("a repeated switch case", """@aot
local function f(a: int32): int32
    local r: int32 = switch a do
        case 1, 2 -> 10
        case 2 -> 20
        else -> 0
    end
    return r
end
""", 5, 14, ["the case 2 repeats the case at 4:17", "never is"]),
    ("a return in a descending span loop", HEADER + """@aot
local function f(exclusive out: span.WriteSpan<P>): nil
    for i = #out, 1, -1 do
        return
    end
end
""", HEADER_LINES + 4, 9, ["return inside a loop over spans"]),
    ("a return in a loop bounded by a length expression", HEADER + """@aot
local function f(exclusive out: span.WriteSpan<P>): nil
    for i = 1, #out - 1 do
        return
    end
end
""", HEADER_LINES + 4, 9, ["return inside a loop over spans"]),
    ("a struct declared twice", HEADER + """@aot
local function f(exclusive out: span.WriteSpan<P>): nil
    for i = 1, #out do
        out[i].v = 1
    end
end
local struct P
    w: double
    v: int32
end
""", HEADER_LINES + 7, 1, ["struct P is declared a second time", "the first is at 2:1"]),
    # issue 9 item 10
    ("int64 with uint64", """@aot
local function f(x: int64, c: uint64): int64
    return x + c
end
""", 3, 12, ["`+` mixes int64 and uint64", "nothing converts between int64 and uint64",
             "one signedness"]),
    ("int64 & uint64", """@aot
local function f(x: int64, c: uint64): int64
    return x & c
end
""", 3, 12, ["`&` mixes int64 and uint64", "nothing converts"]),
    ("uint32 with int64", """@aot
local function f(x: int64, c: uint32): int64
    return x + c
end
""", 3, 12, ["mixes int64 and uint32", "local w: int64 = x"]),
    # what tests/test_checker_fuzz.py found
    ("a switch over a refused selector", """@aot
local function f(): nil
    local s: uint32 = switch undefined do
        case 1 -> 7
        else -> 0
    end
end
""", 3, 30, ["the global 'undefined' is outside the AOT subset"]),
    ("a refused switch still declares its local", """@aot
local function f(b: boolean): int32
    local r: int32 = switch b do
        case 1 -> 1
        else -> 2
    end
    return r
end
""", 3, 29, ["a switch selector must be a number, int32 or uint32, not a boolean"]),
    ("a result type with type arguments", HEADER + """@aot
local function f(x: int32): int32<P>
    return x
end
""", HEADER_LINES + 2, 29, ["unknown return type 'int32<P>' of @aot function 'f'"]),
    ("assignment to a module's local", """local limit = 10
@aot
local function f(x: int32): int32
    limit = x
    return x
end
""", 4, 5, ["assignment to the module's local 'limit' (declared at 1:1) is outside the AOT subset"]),
    ("a module alias hidden by a local function", """local sqrt = math.sqrt
local function sqrt(x)
    return -1
end
@aot
local function g(x: number): number
    return sqrt(x)
end
print(g(4))
""", 7, 12, ["the call to the module's local function 'sqrt' (declared at 2:1) is outside the AOT subset"]),
    ("a module local named math", """local math = {sqrt = function(x) return -1 end}
@aot
local function f(x: number): number
    return math.sqrt(x)
end
print(f(4))
""", 4, 12, ["'math' is the module's local 'math' (declared at 1:1), not a function or library"]),
    ("a local named math", """@aot
local function f(x: number): number
    local math = 2
    return math.sqrt(x)
end
""", 4, 12, ["'math' is a local of 'f', not a function or library", "rename the local"]),
    ("a parameter named like a module alias", """local f32 = nupp.math.f32
@aot
local function f(x: number, f32: number): float
    return f32.narrow(x)
end
""", 4, 12, ["'f32' is a local of 'f', not a function or library"]),
    ("a parameter named assert", """@aot
local function f(x: int32, assert: int32): nil
    assert(x > 0, "positive")
end
""", 3, 5, ["'assert' is a local of 'f', not a function or library"]),
    ("a module alias assigned after @aot code calls through it", """local f32 = nupp.math.f32
@aot
local function f(x: number): float
    return f32.narrow(x)
end
f32 = {narrow = function(x) return 0 end}
print(f(0.1))
""", 6, 1, ["'f32' is assigned here, but @aot code calls through the module alias 'f32' (at 4:12)"]),
    ("an element reference with a type", HEADER + """@aot
local function f(borrows inp: span.Span<P>): int32
    local r: int32 = 0
    for i = 1, #inp do
        local e: int32 = inp[i]
        r = r + e.v
    end
    return r
end
""", HEADER_LINES + 5, 18, ["'e' refers to a span element, which has no type of its own"]),
]


@pytest.mark.parametrize("mode", MODES, ids=" ".join)
@pytest.mark.parametrize("name, program, line, col, words", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_in_every_mode(capfd, tmp_path, mode, name, program, line, col, words):
    (tmp_path / "prog.nupp").write_text(program)
    status, out, err = nupp(capfd, mode[0], "prog.nupp", *mode[1:])
    assert (status, out) == (1, ""), err
    assert "bug in nupp" not in err
    first = err.split("\n")
    assert first[0].startswith(f"prog.nupp:{line}:{col}: error: "), err
    assert first[2].strip().endswith("^"), err  # the source line, then the caret
    for word in words:
        assert word in err, err
    assert err.count(": error: ") == 1, err


def test_every_independent_error_is_reported(capfd, tmp_path):
    """A signature error (validate.py) no longer hides the checker's errors."""
    (tmp_path / "prog.nupp").write_text("""@aot
local function f(x): nil
end
@aot
local function g(): nil
    local s = "x"
end
@aot
local function h(y: int32): int32
    return y .. y
end
@aot
local function k(): int32
    local t = {}
    return f(1)
end
""")
    for mode in MODES:
        status, _, err = nupp(capfd, mode[0], "prog.nupp", *mode[1:])
        assert status == 1
        assert re.findall(r"^prog\.nupp:(\d+:\d+): error:", err, re.M) == ["2:18", "6:15", "10:12", "14:15"]


# Programs the new rules must not refuse: (program, what every mode prints).
ACCEPTED = [
    ("the Lua shadowing that changes nothing @aot calls", CALLEE + """print(f(1))
local function f(x)
    return "plain"
end
print(f(1))
""", "2\nplain\n"),
    ("a plain function, then an @aot one of its name", """local function f(x)
    return "plain"
end
print(f(1))
@aot
local function f(x: int32): int32
    return x * 2
end
@aot
local function g(x: int32): int32
    return f(x) + 1
end
print(f(4), g(4))
""", "plain\n8\t9\n"),
    ("the callee's name assigned in a scope that declares it anew", CALLEE + CALLER + """local function h(f)
    f = 5
    return f
end
do
    local f = 1
    f = 7
end
print(g(1), h(0))
""", "2\t5\n"),
    ("a module alias's name assigned in a scope that declares it anew", """local f32 = nupp.math.f32
@aot
local function f(x: number): float
    return f32.narrow(x)
end
do
    local f32 = 1
    f32 = 2
end
print(f(0.5))
""", "0.5\n"),
    ("every path returns", """@aot
local function f(n: int32): int32
    if n > 0 then
        return 1
    elseif n < 0 then
        return -1
    else
        while true do
            n = n + 1
            if n > 3 then
                return n
            end
        end
    end
end
print(f(3), f(-3), f(0))
""", "1\t-1\t4\n"),
    ("a descending loop and an assert of a conjunction", HEADER + """@aot
local function f(exclusive out: span.WriteSpan<P>, borrows a: span.Span<P>, borrows b: span.Span<P>): nil
    assert(#out == #a and #a == #b, "length mismatch")
    for i = #out, 1, -1 do
        out[i].v = a[i].v * 10 + b[i].v + i
    end
end
local s, a, b = span.new(P, 5), span.new(P, 5), span.new(P, 5)
for i = 1, 5 do a[i].v = i; b[i].v = 100 * i end
f(s, a, b)
local t = {}
for i = 1, 5 do t[#t + 1] = tostring(s[i].v) end
print(table.concat(t, " "))
print(pcall(f, s, a, span.new(P, 4)))
""", "111 222 333 444 555\nfalse\tprog.nupp:7: length mismatch\n"),
    ("32- and 64-bit bitwise operands of one signedness, in either order", """@aot
local function signed(a: int32, w: int64): int64
    return (w & a) + (a | w)
end
@aot
local function unsigned(b: uint32, z: uint64): uint64
    return (b | z) + (z ~ b)
end
print(signed(-2, 0x100000001LL), unsigned(4294967295, 0x100000000ULL))
""", "4294967295LL\t17179869182ULL\n"),
]


@pytest.mark.parametrize("mode", MODES, ids=" ".join)
@pytest.mark.parametrize("name, program, printed", ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_accepted_and_identical_in_every_mode(capfd, tmp_path, mode, name, program, printed):
    (tmp_path / "prog.nupp").write_text(program)
    status, out, err = nupp(capfd, mode[0], "prog.nupp", *mode[1:])
    assert status == 0, err
    assert out == ("" if mode == ("check",) else printed)


# ---- every verifier rule: the user's diagnostic comes first ---------------------------------

def kernel(body: str, result: str = "nil") -> str:
    """An @aot function `f` around `body`, with a span of each kind, scalars and two callees."""
    lines = "\n".join("    " + line for line in body.split("\n"))
    return f"""local span = nupp.mem.span
local f32 = nupp.math.f32
local struct P
    v: float
    n: int32
end
@aot
local function g(q: int32): int32
    return q
end
@aot
local function none(q: int32): nil
end
@aot
local function f(exclusive out: span.WriteSpan<P>, borrows inp: span.Span<P>, a: int32, x: number): {result}
{lines}
end
"""


# rule -> [(program, words of a diagnostic the checker gives)]: programs that, let
# through, would build IR breaking the rule.
REACHABLE = {
    "unique-name": [
        ("local struct P\n    v: int32\nend\nlocal struct P\n    w: int32\nend\n", ["declared a second time"]),
        ("local struct P\n    v: int32\n    v: float\nend\n", ["declares the field 'v' twice"]),
        (REFUSED[0][1], ["defined a second time"]),
        ("@aot\nlocal function h(x: int32, x: int32): nil\nend\n", ["declared twice"]),
    ],
    "field-type": [("local struct P\n    v: string\nend\n", ["unknown field type 'string'"])],
    "call-target": [(kernel("local v = later(1)"), ["call to later is outside the AOT subset"])],
    "call-args": [
        (kernel("local v = g(1, 2)"), ["takes 1 arguments, got 2"]),
        (kernel("local v = g(x)"), ["cannot assign a number to parameter 'q' of 'g'"]),
        ("local span = nupp.mem.span\nlocal struct P\n    v: int32\nend\n"
         "@aot\nlocal function s(borrows p: span.Span<P>): nil\nend\n"
         "@aot\nlocal function t(borrows p: span.Span<P>): nil\n    s(p)\nend\n", ["passing spans to 's'"]),
    ],
    "call-width": [
        (kernel("local v = none(1)"), ["'none' returns nothing, so its call is not a value"]),
        (kernel("local v: int32 = none(1) + 1"), ["'none' returns nothing"]),
    ],
    "recursion": [(kernel("f(out, inp, a, x)"), ["calls itself"])],
    "param-type": [("@aot\nlocal function h(x: vector): nil\nend\n", ["unknown type 'vector'"]),
                   ("local span = nupp.mem.span\n@aot\nlocal function h(borrows s: span.Span<Q>): nil\nend\n",
                    ["unknown struct 'Q'"])],
    "span-qualifier": [("local span = nupp.mem.span\nlocal struct P\n    v: int32\nend\n"
                        "@aot\nlocal function h(s: span.WriteSpan<P>): nil\nend\n", ["needs its ownership"]),
                       ("@aot\nlocal function h(exclusive x: int32): nil\nend\n", ["only to span parameters"])],
    "alias-matrix": [("local span = nupp.mem.span\nlocal struct P\n    v: int32\nend\n"
                      "@aot\nlocal function h(borrows s: span.Span<P>, borrows s: span.Span<P>): nil\nend\n",
                      ["parameter 's' of @aot function 'h' is declared twice"])],
    "op-width": [(kernel("local v = x & 3"), ["bitwise operand must be a 32- or 64-bit integer"]),
                 (kernel("local v = f32.add(x, x)"), ["takes a float, not a number"])],
    "const-fits": [(kernel("local v: int32 = 3000000000"), ["does not fit int32"]),
                   (kernel("local v: float = 0.1"), ["not exactly a binary32 value"])],
    "let-width": [(kernel("local v: int32 = x"), ["cannot assign a number to local 'v'"]),
                  (kernel("local v: int32 = none(1)"), ["returns nothing"])],
    "assign-width": [(kernel("a = x"), ["cannot assign a number to local 'a'"])],
    "cond-bool": [(kernel("if a then end"), ["condition must be a boolean"]),
                  (kernel("while none(1) do end"), ["returns nothing"]),
                  (kernel('assert(a, "no")'), ["condition must be a boolean"])],
    "return-width": [(kernel("return x", "int32"), ["cannot assign a number to the result"]),
                     (kernel("return", "int32"), ["must return an int32"]),
                     (kernel("return 1"), ["declared to return nothing"]),
                     (kernel("return none(1)", "int32"), ["returns nothing"])],
    "missing-return": [(kernel("if a > 0 then\n    return 1\nend", "int32"), ["can reach its end"])],
    "store-width": [(kernel("for i = 1, #out do\n    out[i].n = x\nend"), ["cannot store a number"]),
                    (kernel("for i = 1, #out do\n    out[i].v = true\nend"), ["cannot assign a boolean"]),
                    (kernel("for i = 1, #out do\n    out[i].n = none(1)\nend"), ["returns nothing"])],
    "span-param": [(kernel("local v = #a"), ["`#` takes a span parameter"]),
                   (kernel("for i = 1, #out do\n    local v = a[i]\nend"), ["only a span parameter can be indexed"])],
    "span-value": [(kernel("local v = out"), ["'out' is a span and cannot be used as a value"]),
                   (kernel("out = 1"), ["cannot assign to the span parameter 'out'"])],
    "index-counter": [(kernel("for i = 1, #out do\n    local v = out[1].n\nend"), ["counted loop's counter"])],
    "field-exists": [(kernel("for i = 1, #out do\n    local v = out[i].missing\nend"), ["no field 'missing'"])],
    "store-writable": [(kernel("for i = 1, #inp do\n    inp[i].n = 1\nend"), ["read-only"])],
    "counter-write": [(kernel("for i = 1, #out do\n    i = 2\nend"), ["cannot assign to the loop counter 'i'"])],
    "for-counter": [(kernel("for i = 1, x do end"), ["loop's bound must be an int32"]),
                    (kernel("for i = 1, 10, 3000000000 do end"), ["non-zero int32 literal"]),
                    (kernel("for i = 1, 10, 0 do end"), ["non-zero int32 literal"])],
    "bounds": [(kernel("for i = 0, #out do\n    out[i].n = 1\nend"), ["runs from 0 to #out"]),
               (kernel("for i = 1, #out, -1 do\n    out[i].n = 1\nend"), ["step -1"]),
               (kernel("for i = a, #out do\n    out[i].n = 1\nend"), ["runs from a to #out"]),
               (kernel("for i = 1, #out do\n    local v = inp[i].n\nend"), ["'inp' is not proven at least as long"])],
    "switch-labels": [(kernel("local r: int32 = switch a do\n    case 1 -> 1\n    case 1 -> 2\n    else -> 3\nend"),
                       ["the case 1 repeats"]),
                      (kernel("local r: int32 = switch a do\n    case 4294967295 -> 1\n    else -> 3\nend"),
                       ["does not fit the selector's width"])],
    "undeclared": [(kernel("unknown = 1"), ["assignment to the global 'unknown'"]),
                   (kernel("local v = unknown"), ["the global 'unknown'"])],
    "definite-assignment": [(kernel("local v: int32\nlocal w = v"), ["exactly one initial value"])],
    "break-outside-loop": [(kernel("break"), ["break outside a loop"])],
    "return-in-span-loop": [(kernel("for i = 1, #out do\n    return\nend"), ["return inside a loop over spans"]),
                            (kernel("for i = #out, 1, -1 do\n    return\nend"), ["return inside a loop over spans"]),
                            (kernel("for i = 1, #out - 1 do\n    return\nend"), ["return inside a loop over spans"])],
    "assert-placement": [(kernel('for i = 1, #out do\nend\nassert(a == 1, "no")'), ["before the first loop"]),
                         (kernel('if a > 0 then\n    assert(a == 1, "no")\nend'), ["at function level"])],
}

# rule -> why no source program can break it: the checker builds that part of the IR
# itself, from what it has already checked.
UNREACHABLE = {
    "alias-fact": "each fact is derived from the qualifiers (alias_matrix), which validate.py checks",
    "node-kind": "the checker builds only scalar IR nodes, and an Eval only around a Call",
    "op-known": "every opcode is named through ops.arith_op / compare_op / widths.conversion_name, "
                "which look it up in the table",
    "op-arity": "each op is built with exactly its operands (Checker.op and the conversion helpers)",
    "var-width": "a Var takes its width from the binding the checker recorded at the declaration",
    "load-width": "a Load takes its width from FIELD_STORAGE[field type].load_width",
    "redeclared": "every source local gets a fresh IR name (FunctionState.fresh), so `local x` "
                  "twice in one block declares two IR locals",
    "gang-placement": "lane IR is made by the lane rewrite from verified scalar IR, never from source",
    "gang-size": "lane IR is made by the lane rewrite, never from source",
    "gang-varying": "lane IR is made by the lane rewrite, never from source",
    "gang-mask": "lane IR is made by the lane rewrite, never from source",
    "gang-reduce": "lane IR is made by the lane rewrite, never from source",
    "gang-legal": "lane IR is made by the lane rewrite, never from source",
}


def verifier_rules() -> list[str]:
    """The rule names verifier/verify.py's docstring lists, in order."""
    return re.findall(r"^  ([a-z][a-z-]+)  ", verify.__doc__, re.M)


def test_every_verifier_rule_is_reachable_with_a_diagnostic_or_said_unreachable():
    rules = verifier_rules()
    assert len(rules) >= 40
    assert not set(REACHABLE) & set(UNREACHABLE)
    assert sorted(set(REACHABLE) | set(UNREACHABLE)) == sorted(rules)


CASES = [(rule, program, words) for rule, cases in REACHABLE.items() for program, words in cases]


@pytest.mark.parametrize("rule, program, words", CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_the_checker_reports_it_first(rule, program, words):
    with pytest.raises(NuppError) as err:
        compile_module(Source("prog.nupp", program))
    rendered = [d.render() for d in err.value.diagnostics]
    assert any(all(word in text for word in words) for text in rendered), "\n".join(rendered)
    for text in rendered:
        assert re.match(r"prog\.nupp:\d+:\d+: error: ", text) and "^" in text, text
