"""The C stack guard of runtime/lua/coroutines.lua, on each way it finds the running thread.

A resume is refused with "stack overflow" when less than one coroutine's
worth of C stack is left below the resumer (test_recursion_through_c runs
the shapes that crashed without it under `nupp run`).  The guard reads the
running lua_State from global_State.cur_L, a word it finds at load, and
calls coroutine.running (a C function the JIT compiler leaves to the
interpreter: some 100 ns a resume) only where that word is not found.  Here:
on lupa's LuaJIT the word is found and no resume calls coroutine.running;
both ways end a recursion through coroutines and string.gsub in a stack
overflow, not a crash; and so does a module loaded by nupp.load, whose Lua
runs on a deep-stack thread of its own at each load (runtime/deep_stack.py).
Each program runs in a child process: a crash must fail the test, not end it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from nupp.runtime.host import LUA_DIR

# Each coroutine recurses through string.gsub (some 10 MB of C stack a
# coroutine) and resumes the next: without the guard, a segmentation fault
# after about 25 coroutines.  Each first resumes a generator in a loop, which
# the JIT compiler compiles with the guard's read in it: the first resume
# refused is one of these.
MIXED_RECURSION = """
local function pull(n)
    local generator = coroutine.wrap(function() while true do coroutine.yield() end end)
    for _ = 1, n do generator() end
end
local function down(n)
    if n % 1000 == 0 then pull(100) return coroutine.wrap(down)(n + 1) end
    return (string.gsub("a", "a", function() return down(n + 1) end))
end
"""

# Generators nested eight deep: every resume but the outermost is made from
# inside a coroutine, the case the guard looks at.
CHAINED_GENERATORS = """
local function generator(n)
    return coroutine.wrap(function() for i = 1, n do coroutine.yield(i) end end)
end
local function chain(depth, n)
    if depth == 0 then return generator(n) end
    local inner = chain(depth - 1, n)
    return coroutine.wrap(function() for v in inner do coroutine.yield(v) end end)
end
"""

# The guard as loaded by prelude.lua, into a plain LuaJIT state where
# coroutine.running counts its calls; `found_words` replaces how many words
# of global_State it searches for cur_L (0: none, the other way).  It prints
# how many resumes called coroutine.running, a generator chain's sum, and
# what a pcall of the mixed recursion returns, on a 256 MB thread as nupp run's.
GUARD_ALONE = """
import sys
import lupa.luajit21 as luajit21
from nupp.runtime.deep_stack import on_deep_stack

def run(source, found_words):
    lua = luajit21.LuaRuntime(unpack_returned_tuples=True)
    lua.execute('''
        local running = coroutine.running
        running_calls = 0
        coroutine.running = function() running_calls = running_calls + 1 return running() end
    ''')
    if found_words is not None:
        source = source.replace("local GLOBAL_WORDS = 128", f"local GLOBAL_WORDS = {found_words}")
        assert f"GLOBAL_WORDS = {found_words}" in source
    lua.execute(source)
    return lua.execute('''
        CHAINED
        running_calls = 0
        local sum = 0
        for v in chain(8, 1000) do sum = sum + v end
        local calls = running_calls
        MIXED
        return calls, sum, pcall(down, 1)
    '''.replace("CHAINED", CHAINED_GENERATORS).replace("MIXED", MIXED_RECURSION))

source = open(sys.argv[1]).read()
found_words = None if sys.argv[2] == "all" else int(sys.argv[2])
print(*on_deep_stack(run, source, found_words))
"""


def run_child(tmp_path, script: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "child.py").write_text(script)
    return subprocess.run([sys.executable, "child.py", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("found_words, least_calls, most_calls", [("all", 0, 0), ("0", 8008, 8009)],
                         ids=["global_State.cur_L", "coroutine.running"])
def test_the_guard_ends_recursion_through_coroutines_in_a_stack_overflow(tmp_path, found_words, least_calls,
                                                                          most_calls):
    """On lupa's LuaJIT the guard finds cur_L: the 8008 resumes made from
    inside a generator chain's coroutines call coroutine.running none of the
    times (once each where it is not found, and once more for the first
    outermost resume, which finds the stack's size); either way the mixed
    recursion ends in pcall's stack overflow."""
    script = f"MIXED_RECURSION = {MIXED_RECURSION!r}\nCHAINED_GENERATORS = {CHAINED_GENERATORS!r}\n" + GUARD_ALONE
    done = run_child(tmp_path, script, str(LUA_DIR / "coroutines.lua"), found_words)
    assert done.returncode == 0, done.stderr[-2000:]
    running_calls, results = done.stdout.split(" ", 1)
    assert least_calls <= int(running_calls) <= most_calls
    total, ok, message = results.split(" ", 2)
    assert (total, ok) == ("500500", "False") and message.endswith("stack overflow\n"), results


LOADED_MODULE = """
MIXED
local ok, e = pcall(down, 1)
assert(not ok and tostring(e):find("stack overflow$"), "not a stack overflow: " .. tostring(e))
local sum = 0
for v in chain(8, 1000) do sum = sum + v end
assert(sum == 500500, sum)

@aot
local function one(): int32
    return 1
end
return {one = one}
"""


def test_a_module_loaded_from_python_ends_recursion_through_coroutines_in_a_stack_overflow(tmp_path):
    """nupp.load runs a module's Lua on a thread of its own with a stack of its
    own, another at each load: the guard finds that thread's stack and refuses
    the resume there too (a second load runs on a new thread's stack)."""
    (tmp_path / "deep.nupp").write_text(LOADED_MODULE.replace("MIXED", MIXED_RECURSION + CHAINED_GENERATORS))
    script = textwrap.dedent("""
        import nupp
        for _ in range(2):
            print(nupp.load("deep.nupp", mode="interp").one())
    """)
    done = run_child(tmp_path, script)
    assert (done.returncode, done.stdout) == (0, "1\n1\n"), done.stderr[-2000:]
