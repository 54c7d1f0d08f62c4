"""Loading modules: `require` stays inside its search folders, `nupp.load` says what went wrong,
and no script reaches the Python interpreter.

  * `require(name)` looks for files only under the script's folder: a name
    with a leading, trailing or doubled dot, a path separator, a NUL, or
    bytes that are not UTF-8 is refused in Lua's own words (`module 'x' not
    found:` plus the reason), and a name too long for the file system says
    so; the module a refused name would have reached outside is never run.
    Good names (`sub.mod`, UTF-8 ones) still load.
  * `nupp.load` of a module that returns no table, that raises while
    loading, or that requires a module that does not compile: a
    NuppRuntimeError with the message, or the NuppError with diagnostics;
    options of the wrong type: a TypeError naming the option and the type.
  * lupa's `python` module (eval, builtins) is absent in every mode, from the
    command line and from `nupp.load`, and the Python objects Lua holds have
    no attributes for a script (reached through the debug library).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nupp
from nupp.errors import NuppError
from nupp.runtime.api import NuppRuntimeError

from .conftest import require_tool
from .test_environment_faults import nupp_cli

MODES = ("interp", "scalar", "lane")


def run_script(folder: Path, text: str, *options) -> str:
    (folder / "main.nupp").write_text(text)
    proc = nupp_cli("run", *options, folder / "main.nupp", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def require_error(folder: Path, name_expr: str) -> str:
    """The message of `require(<name_expr>)` in a script in `folder`."""
    return run_script(folder, f"local ok, e = pcall(require, {name_expr})\nprint(ok, e)\n")


# ---- require ---------------------------------------------------------------------------------

@pytest.fixture
def tree(tmp_path) -> Path:
    """tmp/project (the script's folder, with sub/mod.nupp) and tmp/outside/secret.nupp."""
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "mod.nupp").write_text('return {name = "sub.mod"}\n')
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.nupp").write_text('print("SECRET RAN")\nreturn {}\n')
    return project


def test_a_leading_separator_does_not_reach_outside(tree):
    secret = tree.parent / "outside" / "secret"
    dotted = str(secret).replace("/", ".")  # ".tmp.....outside.secret": once the absolute path
    out = require_error(tree, repr(dotted))
    assert "SECRET RAN" not in out
    assert out.startswith(f"false\tmodule '{dotted}' not found:"), out
    assert "no file searched by nupp: a module name cannot start or end with '.'" in out


REFUSED = {
    "'x.'": "cannot start or end with '.'",
    "'a..b'": "or hold '..'",
    "''": "a module name cannot be empty",
    "'sub/mod'": "cannot hold the path separator '/' (write a.b for the file a/b)",
    "'..sub.mod'": "cannot start or end with '.'",
    "'sub\\\\mod'": "cannot hold the path separator '\\'",
    "'\\255'": "a module name must be UTF-8 text",
    "'caf\\233'": "a module name must be UTF-8 text",
}


@pytest.mark.parametrize("name_expr", REFUSED)
def test_names_that_leave_the_search_folders_are_refused_in_luas_words(tree, name_expr):
    out = require_error(tree, name_expr)
    assert out.startswith("false\tmodule '") and "' not found:\n\tno field package.preload[" in out, out
    assert "\n\tno file searched by nupp: a module name " in out and REFUSED[name_expr] in out, out
    assert "codec" not in out and "Errno" not in out


def test_a_name_too_long_for_the_file_system(tree):
    out = require_error(tree, '("a"):rep(300)')
    assert out.startswith("false\tmodule 'aaa") and "(File name too long)" in out, out
    assert "Errno" not in out


def test_good_names_still_load(tree):
    (tree / "café.nupp").write_text('return {name = "café"}\n')
    out = run_script(tree, 'print(require("sub.mod").name, require("café").name)\n')
    assert out == "sub.mod\tcafé\n"


# ---- nupp.load -------------------------------------------------------------------------------

@pytest.mark.parametrize("returned, described", [("5", "a number"), ('"text"', "a string"),
                                                  ("function() end", "a function"), ("nil", "nothing"),
                                                  ("true", "a boolean")])
def test_a_module_returning_no_table(tmp_path, returned, described):
    path = tmp_path / "odd.nupp"
    path.write_text(f"return {returned}\n")
    with pytest.raises(NuppRuntimeError) as caught:
        nupp.load(path, mode="interp")
    text = str(caught.value)
    assert f"odd.nupp: the module returned {described}, not a table" in text
    assert "return {name = value, ...}" in text


def test_a_module_raising_while_loading(tmp_path):
    path = tmp_path / "raises.nupp"
    path.write_text('local x = 1\nerror("no luck here")\nreturn {}\n')
    with pytest.raises(NuppRuntimeError, match=r"raises\.nupp:2: no luck here"):
        nupp.load(path, mode="interp")


def test_a_required_module_that_does_not_compile(tmp_path):
    (tmp_path / "broken.nupp").write_text("local x = = 1\n")
    path = tmp_path / "uses.nupp"
    path.write_text('local b = require("broken")\nreturn {}\n')
    with pytest.raises(NuppError) as caught:
        nupp.load(path, mode="interp")
    assert "broken.nupp:1:11: error:" in str(caught.value)


def test_a_required_module_that_raises(tmp_path):
    (tmp_path / "fails.nupp").write_text('error("fails at load")\n')
    path = tmp_path / "uses.nupp"
    path.write_text('local f = require("fails")\nreturn {}\n')
    with pytest.raises(NuppRuntimeError, match=r"fails\.nupp:1: fails at load"):
        nupp.load(path, mode="interp")


ADD = "@aot\nlocal function add(a: int32, b: int32): int32\n    return a + b\nend\nreturn {add = add}\n"


@pytest.mark.parametrize("option, value, wanted", [
    ("gang", "8", "gang must be an int: 4, 8, 16 or 32 (or None: each loop's own), not str '8'"),
    ("gang", 8.0, "gang must be an int"),
    ("gang", True, "not bool True"),
    ("mode", None, "mode must be a str: 'lane', 'scalar', 'spirv' or 'interp', not NoneType None"),
    ("tier", 3, "tier must be a str"),
    ("cc", ["gcc"], "cc must be a str"),
])
def test_options_of_the_wrong_type(tmp_path, option, value, wanted):
    path = tmp_path / "add.nupp"
    path.write_text(ADD)
    with pytest.raises(TypeError) as caught:
        nupp.load(path, **{option: value})
    assert str(caught.value).startswith("nupp.load: ") and wanted in str(caught.value)


def test_a_numpy_integer_gang_is_an_int(tmp_path, monkeypatch):
    require_tool("gcc")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "add.nupp"
    path.write_text(ADD)
    module = nupp.load(path, mode="lane", gang=np.int64(4))
    assert module.add(2, 3) == 5 and module.execution.startswith("lane4")


# ---- no way into Python ----------------------------------------------------------------------

PROBE = """
local reached = {}
if python ~= nil then reached[#reached + 1] = "python" end
if package.loaded.python ~= nil then reached[#reached + 1] = "package.loaded.python" end
if pcall(require, "python") then reached[#reached + 1] = "require('python')" end
-- the Python objects Lua holds: the module searcher's upvalues
local loader = package.loaders[2]
for i = 1, 10 do
    local name, value = debug.getupvalue(loader, i)
    if name == nil then break end
    if type(value) == "userdata" then
        for _, attribute in ipairs({"__class__", "__self__", "__globals__", "__func__"}) do
            local ok = pcall(function() return value[attribute] end)
            if ok then reached[#reached + 1] = name .. "." .. attribute end
        end
    end
end
"""


@pytest.mark.parametrize("mode", MODES)
def test_scripts_cannot_reach_python(tmp_path, mode, monkeypatch):
    if mode != "interp":
        require_tool("gcc")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "add.nupp").write_text(ADD)
    out = run_script(tmp_path, 'local m = require("add")\n' + PROBE
                     + 'print(#reached == 0 and "sealed" or table.concat(reached, ", "), m.add(1, 2))\n',
                     "--mode", mode)
    assert out == "sealed\t3\n"
    module = tmp_path / "probe.nupp"
    module.write_text(ADD.replace("return {add = add}", PROBE + 'assert(#reached == 0, table.concat(reached, ", "))\n'
                                  "return {add = add}"))
    assert nupp.load(module, mode=mode).add(2, 2) == 4
