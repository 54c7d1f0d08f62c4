"""Memory safety of spans and structs (runtime/lua/mem.lua; issue 10, items 1-6, 11).

What a script can reach of a span must never index memory unchecked, and the
memory must outlive everything that reaches it: views, read-only views and
element references.  Whole programs run through `nupp run --aot on|off` in a
subprocess (a dangling reference crashes the process, rc 139, which a test
must see rather than die of); the API's details run in a LuaJIT state of
their own (tests/test_runtime_spans.py's helpers).  The slow Valgrind test
runs the collector stress program with lupa's LuaJIT allocating through libc
(LuaRuntime(max_memory=...)), so Valgrind sees every block LuaJIT frees.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import require_tool
from .test_runtime_spans import error_of, lua, raw_error, run  # noqa: F401 - lua is the fixture

ROOT = Path(__file__).resolve().parent.parent
AOT = ("on", "off")

HEADER = """\
local span = nupp.mem.span

local struct P
    a: int32
    x: float
    d: number
end

-- a native function over the same memory, so --aot on passes spans to C
@aot
local function scale(exclusive s: span.WriteSpan<P>, k: int32): nil
    for i = 1, #s do
        s[i].a = s[i].a * k
    end
end

-- element 1 of a fresh span of n that nothing else holds (the issue's program)
local function first(n) local s = span.new(P, n); s[1].a = 42; return s[1] end
"""


def nupp_run(tmp_path: Path, body: str, aot: str) -> subprocess.CompletedProcess:
    """`nupp run --aot <aot>` of HEADER + body, in a process of its own."""
    if aot == "on":
        require_tool("gcc")
    path = tmp_path / "prog.nupp"
    path.write_text(HEADER + textwrap.dedent(body))
    env = {**os.environ, "NUPP_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "nupp", "run", str(path), "--aot", aot],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def output_of(tmp_path: Path, body: str, aot: str) -> str:
    proc = nupp_run(tmp_path, body, aot)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    return proc.stdout


# --- 1. lifetime -------------------------------------------------------------


@pytest.mark.parametrize("aot", AOT)
def test_an_element_keeps_its_span_alive(tmp_path, aot):
    # the program: the 8 MB block was unmapped under the element (rc 139)
    assert output_of(tmp_path, """
        local e = first(1000000)
        collectgarbage(); collectgarbage()
        print(e.a)
    """, aot) == "42\n"


@pytest.mark.parametrize("aot", AOT)
def test_a_store_through_an_old_element_stays_in_its_own_span(tmp_path, aot):
    # the freed block went to the next span of its size, and `e.a = 77`
    # landed in that fresh span
    assert output_of(tmp_path, """
        local e = first(100)
        collectgarbage(); collectgarbage()
        local fresh = {}
        for i = 1, 50 do fresh[i] = span.new(P, 100) end
        e.a = 77
        local dirty = 0
        for i = 1, 50 do
            scale(fresh[i], 3)
            for j = 1, 100 do if fresh[i][j].a ~= 0 then dirty = dirty + 1 end end
        end
        print(e.a, dirty)
    """, aot) == "77\t0\n"


@pytest.mark.parametrize("aot", AOT)
def test_elements_of_views_keep_the_memory(tmp_path, aot):
    # only the elements survive make(): no span or view of the memory does
    assert output_of(tmp_path, """
        local function make()
            local s = span.new(P, 1000)
            for i = 1, #s do s[i].a = i end
            scale(s, 2)
            local r = span.readonly(s)
            return s:sub(700, 900)[3], r[999], r:sub(5, 6)[2]
        end
        local element, ro_element, ro_sub_element = make()
        for round = 1, 3 do
            collectgarbage("collect")
            local churn = {}
            for i = 1, 50 do
                churn[i] = span.new(P, 1000)
                for j = 1, 1000 do churn[i][j].a = -1 end
            end
        end
        element.a = element.a + 1
        print(element.a, ro_element.a, ro_sub_element.a)
    """, aot) == "1405\t1998\t12\n"


# A collector stress test: each round fills a fresh span, keeps one element,
# sub view or read-only view of it in a ring of 97 slots (the span itself is
# dropped), collects every 25 rounds, reuses freed memory for other values,
# and checks (and writes through) everything it kept.  Hot loops, so the JIT
# compiles them with their element tables sunk.
STRESS = """
    local function expect_a(r, i) return r * 1000 + i end
    local ROUNDS = {rounds}
    local kept, bad = {{}}, 0

    local function check(entry)
        local r, first = entry.round, entry.first
        if entry.kind == "element" then
            local e = entry.ref
            if e.a ~= entry.a or e.x ~= first + 0.5 or e.d ~= -r then bad = bad + 1 end
            if entry.writable then
                entry.a = entry.a + 1
                e.a = entry.a
            end
        else
            local v = entry.ref
            for j = 1, #v do
                local i = first + j - 1
                if v[j].a ~= expect_a(r, i) or v[j].x ~= i + 0.5 or v[j].d ~= -r then bad = bad + 1 end
            end
        end
    end

    for round = 1, ROUNDS do
        local n = 2 + round % 61
        local s = span.new(P, n)
        for i = 1, n do
            s[i].a = expect_a(round, i)
            s[i].x = i + 0.5
            s[i].d = -round
        end
        local first = 1 + round % (n - 1)
        local entry = {{round = round, first = first, a = expect_a(round, first)}}
        local pick = round % 4
        if pick == 0 then
            entry.kind, entry.ref, entry.writable = "element", s[first], true
        elseif pick == 1 then
            entry.kind, entry.ref = "view", s:sub(first, n)
        elseif pick == 2 then
            entry.kind, entry.ref = "view", span.readonly(s):sub(first, first + 1)
        else
            entry.kind, entry.ref = "element", span.readonly(s)[first]
        end
        kept[round % 97 + 1] = entry
        s = nil
        if round % 25 == 0 then collectgarbage("collect") end
        local junk = span.new(P, n)
        for i = 1, n do junk[i].a = -7; junk[i].x = -7; junk[i].d = -7 end
        scale(junk, 3)
        for _, e in pairs(kept) do check(e) end
    end
    print("bad", bad)
"""


@pytest.mark.parametrize("aot", AOT)
def test_views_and_elements_survive_the_collector_in_hot_loops(tmp_path, aot):
    assert output_of(tmp_path, STRESS.format(rounds=6000), aot) == "bad\t0\n"


# lupa's LuaJIT with its allocator routed through libc (max_memory), so
# Valgrind tracks each block LuaJIT frees; then nupp's own command line.
VALGRIND_DRIVER = """
import functools, sys
from lupa import luajit21
luajit21.LuaRuntime = functools.partial(luajit21.LuaRuntime, max_memory=1 << 40)
from nupp.runtime.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_the_collector_stress_is_clean_under_valgrind(tmp_path):
    valgrind = require_tool("valgrind")
    program = tmp_path / "stress.nupp"
    program.write_text(HEADER + textwrap.dedent(STRESS.format(rounds=1500)))
    env = {**os.environ, "PYTHONMALLOC": "malloc", "NUPP_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [valgrind, "--smc-check=all-non-file", sys.executable, "-c", VALGRIND_DRIVER,
         "run", str(program), "--aot", "off"],
        capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "bad\t0\n"
    # Python's own "uninitialised value" reports are noise here; a read or
    # write of freed or unallocated memory is what the old element references did
    invalid = [line for line in proc.stderr.splitlines() if re.search(r"Invalid (read|write|free)", line)]
    assert invalid == [], proc.stderr[-3000:]


def test_the_common_element_path_allocates_nothing_once_compiled(lua):
    # each `s[i]` is a small table; in a compiled trace LuaJIT sinks it
    grew, a, x = run(lua, """
        local s = span.new(Escape, 100000)
        local function bump(s)
            for i = 1, #s do
                s[i].n = s[i].n + 1
                local e = s[i]
                e.value = e.value + e.n
            end
        end
        bump(s); bump(s)
        collectgarbage("collect")
        collectgarbage("stop")
        local before = collectgarbage("count")
        bump(s)
        local grew = collectgarbage("count") - before
        collectgarbage("restart")
        return grew, s[1].n, s[100000].value
    """)
    assert (a, x) == (3, 6)
    assert grew < 64  # KiB; unsunk, the 300000 element tables would take some 25 MiB


# --- 2. no raw pointer -------------------------------------------------------


@pytest.mark.parametrize("member", ["data", "ptr", "pointer", "memory", "__index"])
def test_a_span_has_no_pointer_member(lua, member):
    assert error_of(lua, f"local s = span.new(Escape, 3)\nreturn s.{member}") == f"span has no member '{member}'"
    assert error_of(lua, f"local s = span.new(Escape, 3)\ns.{member} = 1") == f"span has no member '{member}'"


def test_a_span_shows_only_numbers_and_they_are_constant(lua):
    kinds, length, bytes_ = run(lua, """
        local s = span.new(Escape, 3):sub(2, 3)
        return type(s.length) .. type(s.address) .. type(s.bytes), s.length, s.bytes
    """)
    assert (kinds, length, bytes_) == ("numbernumbernumber", 2, 32)
    for field in ("length", "address", "bytes"):
        assert "constant" in error_of(lua, f"local s = span.new(Escape, 3)\ns.{field} = 0")
    # indexing a span is bounds-checked, whatever the index
    assert error_of(lua, "local s = span.new(Escape, 3)\nreturn s[-1]") == "span index -1 out of range 1..3"


# --- 3. only the declared fields exist ---------------------------------------

RAW_NAMES = ["__nf1", "__nb1", "__nf2", "__nlo2", "__nhi2", "__nf3"]  # Pixel-like: float, number, int32


@pytest.mark.parametrize("raw", RAW_NAMES)
@pytest.mark.parametrize("view", ["s", "span.readonly(s)", "s:sub(2, 2)"])
def test_raw_c_field_names_do_not_exist(lua, raw, view):
    setup = ('local T = __nupp.struct("T", {{"f", "float"}, {"d", "number"}, {"u", "uint8"}})\n'
             f"local s = span.new(T, 2)\nlocal v = {view}\n")
    assert error_of(lua, setup + f"return v[1].{raw}") == f"T has no field '{raw}'"
    assert error_of(lua, setup + f"v[1].{raw} = 3.7") == f"T has no field '{raw}'"
    assert run(lua, setup + "pcall(function() v[1].__nf3 = 300 end)\nreturn s[2].u, s[2].f") == (0, 0)


def test_a_modified_element_table_reaches_nothing_else(lua):
    setup = "local s = span.new(Escape, 3)\nlocal r = span.readonly(s)\nlocal e, q = s[2], r[2]\n"
    stale = "Escape element no longer names an element of a span (its table was modified)"
    for tamper in ("rawset(e, false, 4)", "rawset(e, false, 0)", "rawset(e, false, '1')", "rawset(e, true, {})",
                   "rawset(e, true, nil)", "rawset(e, true, r)",
                   # a cdata struct of the span's very layout, made with the FFI
                   'rawset(e, true, ffi.new("struct { const double length, address, bytes; }", 1e9, 4096, 0))'):
        assert error_of(lua, setup + f"{tamper}\nlocal n = e.n\nreturn n") == stale, tamper
        assert error_of(lua, setup + f"{tamper}\ne.n = 1") == stale, tamper
    # a read-only element cannot be pointed at a writable span to write through it
    assert error_of(lua, setup + "rawset(q, true, s)\nreturn q.n") == (
        "read-only Escape element no longer names an element of a span (its table was modified)")
    # the slots are under keys no field has: numbered keys are unknown fields
    assert error_of(lua, setup + "e[1] = 5") == "Escape has no field '1'"
    assert error_of(lua, setup + "local x = e[2]\nreturn x") == "Escape has no field '2'"
    assert run(lua, setup + "return #e") == 0
    # the metatable is protected
    assert run(lua, setup + "return getmetatable(e)") is False
    assert "protected metatable" in error_of(lua, setup + "setmetatable(e, nil)")
    # retargeting within a live span of its kind is all a modification can do
    assert run(lua, setup + "rawset(e, false, 3)\ne.n = 9\nreturn s[3].n, s[2].n") == (9, 0)


def test_the_element_path_keeps_the_globals_it_was_loaded_with(lua):
    # a program may replace its globals, and declare structs after that
    message = error_of(lua, """
        error, loadstring, string.dump, rawget = function() end, nil, nil, nil
        local T = __nupp.struct("T", {{"n", "int32"}})
        local e = span.new(T, 2)[1]
        rawset(e, false, 5)
        local n = e.n
        return n
    """)
    assert message == "T element no longer names an element of a span (its table was modified)"


def test_from_table_stores_every_key_of_a_row_as_a_field(lua):
    # an element is a table too, but not a row of field values; and no key of
    # a row may reach the element table's own slots
    assert error_of(lua, "local s = span.new(Escape, 1)\nreturn span.fromTable(Escape, {{n = 1}, s[1]})") == (
        "span.fromTable: element 2 must be a table of field values, got Escape element")
    for row, key in (("{5, 6}", "1"), ("{[true] = 5}", "true"), ("{[false] = 1}", "false")):
        assert error_of(lua, f"return span.fromTable(Escape, {{{row}}})") == (
            f"span.fromTable: element 1: Escape has no field '{key}'")


@pytest.mark.parametrize("how", ["pairs", "ipairs"])
def test_iterating_a_span_with_pairs_is_refused_naming_it(lua, how):
    message = raw_error(lua, f"local s = span.new(Escape, 2)\nfor k, v in {how}(s) do end")
    assert message == (f"test:2: cannot iterate over span.WriteSpan<Escape> with {how}: "
                       "index it, for i = 1, #s do ... s[i] ... end")


@pytest.mark.parametrize("args", ["", "nil, 2", "1, {}"])
def test_sub_refuses_a_missing_first_index(lua, args):
    shown = "table" if "{}" in args else "nil"
    assert error_of(lua, f"local s = span.new(Escape, 3)\nlocal v = s:sub({args})\nreturn v") == (
        f"span:sub: integer indices expected, got {shown}")


# --- 4. struct types are not constructors -------------------------------------

CALL_REFUSED = ("cannot call struct type Escape: its values are elements of spans, made with "
                "span.new(Escape, n) or span.fromTable(Escape, {{field = value, ...}, ...})")


@pytest.mark.parametrize("call", ["Escape(3.7, 300)", "Escape({n = 5, value = 6})", "Escape()",
                                  "Escape{n = 1}"])
def test_calling_a_struct_type_is_refused(lua, call):
    assert error_of(lua, f"local v = {call}\nreturn v") == CALL_REFUSED
    assert raw_error(lua, f"local x = 1\nlocal v = {call}\nreturn v").startswith("test:2: ")


def test_a_struct_type_has_no_members(lua):
    member = "struct type Escape has no member 'n': fields belong to its elements (s[i].field)"
    assert error_of(lua, "return Escape.n") == member
    assert error_of(lua, "Escape.n = 1") == member


# --- 5. `case is T` ------------------------------------------------------------

SWITCH = """
local function kind(v)
    return switch v do
        case is P -> "P"
        case is table -> "table"
        else -> "other"
    end
end
local s = span.new(P, 2)
print(kind(s[1]), kind(span.readonly(s):sub(2, 2)[1]), kind({}), kind(s), kind(3))
"""

SHADOWED_SWITCH = """
local function shadowed(P, v)
    return switch v do
        case 1 -> "one"
        case is P -> "P"
        else -> "other"
    end
end
print(shadowed(5, 1))
print(shadowed(5, span.new(P, 1)[1]))
"""


@pytest.mark.parametrize("aot", AOT)
def test_case_is_struct_matches_elements_of_either_writability(tmp_path, aot):
    assert output_of(tmp_path, SWITCH, aot) == "P\tP\ttable\tother\tother\n"


@pytest.mark.parametrize("aot", AOT)
def test_a_struct_pattern_names_the_struct_where_a_local_hides_its_name(tmp_path, aot):
    assert output_of(tmp_path, SHADOWED_SWITCH, aot) == "one\nP\n"


def test_a_struct_pattern_test_refuses_what_is_not_a_struct_type(lua):
    # the translation passes `case is P` the module's struct P; anything else must not be silently false
    assert error_of(lua, "return __nupp.is_struct(5, 1)") == (
        "case is <struct>: the name is bound to 5 here, not to a struct type "
        "(a local or parameter named like the struct hides it; rename one)")


# --- 6. a length is an integer -------------------------------------------------


def test_negative_zero_counts_make_empty_spans_of_length_zero(lua):
    text, inverse, at_inverse, sub_inverse = run(lua, """
        local s = span.new(Escape, -0.0)
        local at = mem.span_at(Escape, 4096, -0.0, true)
        local sub = span.new(Escape, 2):sub(1, -0.0)
        return tostring(s), 1 / #s, 1 / #at, 1 / #sub
    """)
    assert text == "span.WriteSpan<Escape> (0 elements)"
    assert inverse == at_inverse == sub_inverse == float("inf")


# --- 11. messages name structs as declared ---------------------------------------

INTERNAL_NAME = re.compile(r"struct \d|nupp_\d|ctype<|__n[a-z]+\d")


@pytest.mark.parametrize("code, message", [
    ("return s + 1", "attempt to perform arithmetic on span.WriteSpan<Escape>"),
    ("return -r", "attempt to perform arithmetic on read-only span.Span<Escape>"),
    ("return s .. 'x'", "attempt to concatenate span.WriteSpan<Escape>"),
    ("return s < s", "attempt to compare span.WriteSpan<Escape>"),
    ("local x = s() return x", "attempt to call span.WriteSpan<Escape>"),
    ("return s[1] * 2", "attempt to perform arithmetic on Escape element"),
    ("return 'x' .. r[1]", "attempt to concatenate read-only Escape element"),
    ("return s[1] <= s[2]", "attempt to compare Escape element"),
    ("local x = s[1]() return x", "attempt to call Escape element"),
    ("return span.new(r, 1)", "span.new: struct type expected, got read-only span.Span<Escape>"),
    ("return span.new(Escape, s[1])", "span.new: element count must be a non-negative integer, got Escape element"),
    ("return span.readonly(Escape)", "span.readonly: span expected, got struct type Escape"),
    ("s[1].n = s[2]", "cannot store Escape element in int32 field 'n' of Escape"),
    ("s[1].value = Escape", "cannot store struct type Escape in number field 'value' of Escape"),
])
def test_messages_name_spans_elements_and_struct_types_as_declared(lua, code, message):
    got = error_of(lua, f"local s = span.new(Escape, 2)\nlocal r = span.readonly(s)\n{code}")
    assert got == message
    assert not INTERNAL_NAME.search(got)


def test_the_field_limit_is_named(lua):
    message = error_of(lua, """
        local fields = {}
        for i = 1, 4097 do fields[i] = {"f" .. i, "int32"} end
        return __nupp.struct("Wide", fields)
    """)
    assert message == "struct Wide: 4097 fields, more than the 4096 a struct may have"
    assert run(lua, """
        local fields = {}
        for i = 1, 4096 do fields[i] = {"f" .. i, "uint8"} end
        local s = span.new(__nupp.struct("Widest", fields), 1)
        s[1].f4096 = 7
        return s[1].f4096
    """) == 7


def test_elements_compare_equal_by_their_memory(lua):
    assert run(lua, """
        local s = span.new(Escape, 3)
        local r = span.readonly(s)
        return s[1] == s[1], r[2] == s[2], s:sub(2, 3)[1] == s[2], s[1] ~= s[2], s[1] ~= span.new(Escape, 1)[1]
    """) == (True, True, True, True, True)
