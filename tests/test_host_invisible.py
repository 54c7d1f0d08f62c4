"""The host does not show through (issue 10 items 9 and 11): a program runs in a
LuaJIT state that looks, from inside, like the one `luajit FILE` makes.

  * no runtime internal and no lupa bridge among the globals: `_G` holds
    LuaJIT's own globals plus `nupp` (LANGUAGE.md) and `arg`;
  * a plain Lua chunk keeps all 200 locals LuaJIT allows (a translation binds
    only the internals it uses);
  * the main chunk's caller is one C frame: error levels past it add no
    position, tracebacks show no host frame, `debug.getinfo(3)` is nil;
  * `arg` is set as luajit sets it;
  * errors of the Lua 5.3 operators name the operator, never `band` or
    `__nupp_floor`; an error message of any bytes, a program that drops `io`,
    and a reader that goes away all end as under luajit.

The oracles are LuaJIT's documented behaviour and a bare lupa LuaJIT state;
tests/test_lua_fidelity.py compares whole programs with the luajit binary.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from lupa import luajit21

from nupp.errors import Source
from nupp.runtime.host import Host, LuaRunError

from .test_environment_faults import nupp_cli


def run(text: str, *args, command=()) -> str:
    """What a translated program prints (through the host, as `nupp run` runs it)."""
    host = Host()
    output = host.capture_output()
    host.run_source(Source("main.lua", text), args, command)
    return output()


def run_error(text: str) -> str:
    with pytest.raises(LuaRunError) as err:
        run(text)
    return err.value.message


# ---- globals ----------------------------------------------------------------------------------

def test_globals_are_luajits_plus_nupp_and_arg():
    bare = luajit21.LuaRuntime(register_eval=False, register_builtins=False)
    bare.execute("python = nil; package.loaded.python = nil")
    names = "local n = {} for k in pairs(_G) do n[#n + 1] = k end table.sort(n) return table.concat(n, ' ')"
    luajit_globals = set(bare.execute(names).split())
    assert set(run(f"print((function() {names} end)())").split()) == luajit_globals | {"nupp", "arg"}
    assert run("print(rawget(_G, '__nupp'), package.loaded.__nupp, rawget(_G, 'python'))") == "nil\tnil\tnil\n"


def test_a_translated_chunk_runs_in_the_globals():
    assert run("print(getfenv(1) == _G, getfenv(function() end) == _G)") == "true\ttrue\n"
    # ... and so do the internals' users: a struct, a switch, an operator
    text = ("local struct P\n  a: int32\nend\nlocal k = switch 3 do case 3 -> 7 // 2 else -> 0 end\n"
            "print(k & 1, getfenv(1) == _G, rawget(_G, '__nupp'))\n")
    assert run(text) == "1\ttrue\tnil\n"


# ---- locals -----------------------------------------------------------------------------------

def _locals(n: int) -> str:
    return "".join(f"local v{i} = {i}\n" for i in range(n)) + f"print(v{n - 1})\n"


def test_a_plain_chunk_keeps_all_200_locals():
    assert run(_locals(200)) == "199\n"
    assert run_error(_locals(201)) == "main.lua:201: main function has more than 200 local variables"


def test_a_translation_binds_only_the_internals_it_uses():
    from nupp.pipeline import translate_text
    assert translate_text("print(1)\n").replace(" ", "") == "setfenv(1,_G);print(1)\n"
    first = translate_text("print(5 // 2)\n").split(";")[0]
    assert first == "local __nupp_floor = __nupp.floor_quotient"
    # two internals bound: 198 locals of the program's own still fit
    ops = "local a, b = 6 & 3, 7 // 2\nprint(a, b)\n"
    assert run(_locals(196) + ops) == "195\n2\t3\n"


# ---- the stack --------------------------------------------------------------------------------

def test_error_levels_past_the_main_chunk_add_no_position():
    text = ("print(pcall(function() error('msg', 5) end))\n"
            "print(pcall(function() error('msg', 4) end))\n"
            "print(pcall(function() error('msg', 3) end))\n"
            "print(pcall(error, 'msg', 2))\n")
    assert run(text) == "false\tmsg\nfalse\tmsg\nfalse\tmain.lua:3: msg\nfalse\tmain.lua:4: msg\n"


def test_the_main_chunk_has_one_c_frame_below_it():
    text = ("local i2, i3 = debug.getinfo(2, 'S'), debug.getinfo(3)\n"
            "print(debug.getinfo(1, 'S').what, i2.what, i3)\n"
            "print(debug.traceback('tb'))\n")
    lines = run(text).splitlines()
    assert lines[0] == "main\tC\tnil"
    assert lines[1:4] == ["tb", "stack traceback:", "\tmain.lua:3: in main chunk"]
    assert len(lines) == 5 and lines[4].startswith("\t[") and " at 0x" in lines[4], lines


def test_an_uncaught_error_keeps_its_own_frames_only():
    with pytest.raises(LuaRunError) as err:
        run("local function f()\n  error('deep')\nend\nf()\n")
    assert err.value.message == "main.lua:2: deep"
    frames = err.value.traceback.strip().splitlines()[1:]
    assert [f.strip().split(" at ")[0] for f in frames] == [
        "[C]: in function 'error'", "main.lua:2: in function 'f'", "main.lua:4: in main chunk", "[builtin#21]:"]


# ---- arg --------------------------------------------------------------------------------------

def test_arg_is_set_as_luajit_sets_it():
    text = "print(arg[-2], arg[-1], arg[0], arg[1], arg[2], #arg, select('#', ...), ...)\n"
    assert run(text, "x", "", command=("nupp", "run")) == "nupp\trun\tmain.lua\tx\t\t2\t2\tx\t\n"


def test_arg_from_the_command_line(tmp_path):
    """nupp's own words (options too, wherever they stood) at negative indices, in order."""
    (tmp_path / "a.lua").write_text("for i = -8, #arg do io.write(tostring(arg[i]), '|') end print(...)\n")
    proc = nupp_cli("run", "--aot", "off", "a.lua", "--cc", "gcc", "--", "p", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    *words, rest = proc.stdout.split("|")
    assert words[0] == "nil" and words[1].endswith("__main__.py")  # -m nupp: the program Python names
    assert words[2:] == ["run", "--aot", "off", "--cc", "gcc", "--", "a.lua", "p", "-q"]
    assert rest == "p\t-q\n"


# ---- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("expr, message", [
    ("{} & 3", "attempt to perform bitwise operation '&' on a table value"),
    ("3 | {}", "attempt to perform bitwise operation '|' on a table value"),
    ("1 << 'x'", "attempt to perform bitwise operation '<<' on a string value"),
    ("~nil", "attempt to perform bitwise operation '~' on a nil value"),
    ("true ~ 1", "attempt to perform bitwise operation '~' on a boolean value"),
    ("1 & nil", "attempt to perform bitwise operation '&' on a nil value"),  # named the number once
    ("1 << false", "attempt to perform bitwise operation '<<' on a boolean value"),
    ("'3' >> nil", "attempt to perform bitwise operation '>>' on a nil value"),
    ("7LL // 2", "attempt to perform '//' on int64 values (divide them with '/', which truncates)"),
    ("7ULL // 2", "attempt to perform '//' on uint64 values (divide them with '/', which truncates)"),
    ("{} // 2", "attempt to perform arithmetic on a table value"),
])
def test_operator_errors_name_the_operator_at_its_line(expr, message):
    assert run_error(f"local x\nx = {expr}\n") == f"main.lua:2: {message}"


def test_operators_compute_what_bit_and_floor_compute():
    text = "print(7LL & 3, '12' | 1, ~5, 1 << 33, -1 >> 28, 5 ~ 3, 7 // 2, '7' // 2, -7 // 2, 2^53 // 1)\n"
    assert run(text) == "3LL\t13\t-6\t2\t15\t6\t3\t3\t-4\t9.007199254741e+15\n"


def test_an_error_message_of_any_bytes_reaches_the_user(tmp_path):
    (tmp_path / "b.lua").write_text("error('a\\255b')\n")
    proc = nupp_cli("run", "b.lua", cwd=tmp_path)
    assert proc.returncode == 1 and "b.lua:1:1: error: a\ufffdb" in proc.stderr, proc.stderr


@pytest.mark.parametrize("value, text", [("{}", "(error object is not a string)"), ("nil", "(error object is nil)"),
                                         ("setmetatable({}, {__tostring = function() return 'own' end})", "own"),
                                         ("12", "main.lua:1: 12")])
def test_error_objects_are_reported_in_lua_c_words(value, text):
    assert run_error(f"error({value})") == text


def test_a_program_that_drops_io_still_has_its_output_flushed(tmp_path):
    (tmp_path / "io.lua").write_text("io.write('kept') io = nil print = nil\n")
    proc = nupp_cli("run", "io.lua", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "kept", "")


def test_a_reader_that_goes_away_ends_the_program_as_sigpipe(tmp_path):
    (tmp_path / "many.lua").write_text("for i = 1, 1e7 do print(i) end\n")
    proc = subprocess.Popen([sys.executable, "-m", "nupp", "run", "many.lua"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"1\n"
    proc.stdout.close()
    assert proc.wait(timeout=120) == -signal.SIGPIPE  # the shell's 141, as luajit's
    assert proc.stderr.read() == b""


def test_an_uncaught_error_shows_the_programs_frames_only(tmp_path):
    """The frames of the script's own files, .lua as .nupp; none of the runtime's Lua."""
    (tmp_path / "f.lua").write_text("local function f()\n  error('deep')\nend\nlocal function g() f() end\ng()\n")
    proc = nupp_cli("run", "f.lua", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.split("from:\n")[1].splitlines() == [
        "  f.lua:2: in function 'f'", "  f.lua:4: in function 'g'", "  f.lua:5: in main chunk"]
    (tmp_path / "s.nupp").write_text("local struct P\n  a: int32\nend\nlocal function f(s)\n  return s[5]\nend\n"
                                     "print(f(nupp.mem.span.new(P, 2)))\n")
    proc = nupp_cli("run", "s.nupp", cwd=tmp_path)
    assert proc.returncode == 1 and "s.nupp:5:12: error: span index 5 out of range 1..2" in proc.stderr
    assert proc.stderr.split("from:\n")[1].splitlines() == ["  s.nupp:5: in function 'f'", "  s.nupp:7: in main chunk"]


def test_arguments_reach_the_script_as_the_bytes_they_were(tmp_path):
    (tmp_path / "b.lua").write_text("print(#arg[1], arg[1]:byte(1, -1))\nprint((select(1, ...)) == arg[1])\n")
    proc = subprocess.run([sys.executable, "-m", "nupp", "run", "b.lua", b"\xff\xfeA"], cwd=tmp_path,
                          capture_output=True, timeout=300)
    assert (proc.returncode, proc.stdout) == (0, b"3\t255\t254\t65\ntrue\n"), proc.stderr
