"""nupp's layers point down and its modules import no one in a circle: `lint-imports`
(import-linter) keeps every contract of pyproject.toml's [tool.importlinter].

The stage directories install as subpackages of `nupp` through setuptools'
package-dir (the editable install maps `nupp.frontend` to frontend/), so
grimp, walking the folder of the `nupp` it imports, would see only nupp/.
`installed_layout` copies the sources into a temporary folder laid out as the
installed package, and lint-imports runs with that folder first on
sys.path; `test_lint_imports_sees_the_whole_package` checks that it read
every module from there.  Then each contract must be kept, and a copy with
one injected import that breaks it must make lint-imports fail naming it.

bench/ and tests/ are not installed: `nupp bench` run from the installed
layout says it needs a source checkout (exit 2, no traceback), and every
bench program imports from the checkout.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import require_module

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"


def installed_layout(dest: Path) -> Path:
    """The .py files of every package pyproject.toml installs, under `dest` as
    pip lays them out (nupp/, nupp/frontend/, ...); returns `dest`."""
    setuptools = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]
    for package in setuptools["packages"]:
        folder = dest.joinpath(*package.split("."))
        folder.mkdir(parents=True)
        for source in (ROOT / setuptools["package-dir"][package]).glob("*.py"):
            shutil.copyfile(source, folder / source.name)
    return dest


def contract_names() -> dict[str, str]:
    """id -> name of each contract in pyproject.toml."""
    return {c["id"]: c["name"] for c in tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]}


def run_in(tree: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    """Python `code` run with the package laid out in `tree` first on sys.path, as if installed."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)}, timeout=300)


def lint_imports(tree: Path, *args: str) -> subprocess.CompletedProcess:
    """lint-imports with pyproject.toml's contracts on the package laid out in `tree`."""
    require_module("importlinter")
    return run_in(tree, "from importlinter.cli import lint_imports_command; lint_imports_command()",
                  str(PYPROJECT), "--no-cache", "--no-logo", *args)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return installed_layout(tmp_path_factory.mktemp("layout"))


@pytest.fixture(scope="module")
def report(tree) -> subprocess.CompletedProcess:
    return lint_imports(tree)


def test_lint_imports_sees_the_whole_package(tree, report):
    # the `nupp` imported with the tree first on sys.path is the tree's, not the editable install's
    origin = run_in(tree, "import importlib.util; print(importlib.util.find_spec('nupp').origin)")
    assert Path(origin.stdout.strip()) == tree / "nupp" / "__init__.py", origin.stderr
    analyzed = re.search(r"Analyzed (\d+) files", report.stdout)
    assert analyzed is not None, report.stdout + report.stderr
    assert int(analyzed[1]) == len(list(tree.rglob("*.py")))


@pytest.mark.parametrize("contract", ["layers", "verifier", "acyclic"])
def test_contract_is_kept(report, contract):
    assert f"{contract_names()[contract]} KEPT" in report.stdout, report.stdout + report.stderr


def test_every_contract_is_kept(report):
    assert report.returncode == 0, report.stdout + report.stderr
    assert f"Contracts: {len(contract_names())} kept, 0 broken." in report.stdout


def test_plain_lint_imports_in_the_checkout_sees_the_whole_package(tree):
    """`lint-imports` run by hand in the repository root: nupp/ links each stage
    directory (nupp/frontend -> ../frontend, ...), so grimp walking nupp/ reads
    the same files as the installed layout."""
    require_module("importlinter")
    done = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                           "lint_imports_command()", "--no-cache", "--no-logo"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    analyzed = re.search(r"Analyzed (\d+) files", done.stdout)
    assert analyzed is not None and int(analyzed[1]) == len(list(tree.rglob("*.py"))), done.stdout


# (file in the laid-out tree, the import added to it, the contract it breaks)
BREACHES = [
    ("nupp/frontend/lower.py", "import nupp.pipeline", "layers"),                     # a back edge
    ("nupp/scalar_ir/nodes.py", "def late():\n    from nupp.frontend import ast", "layers"),  # a lazy one
    ("nupp/emit_c/scalar.py", "import nupp.emit_lua.to_lua", "layers"),               # independent siblings
    ("nupp/targets/backends.py", "import nupp.verifier", "verifier"),
    ("nupp/scalar_ir/ops.py", "import nupp.scalar_ir.fold", "acyclic"),               # fold imports ops
]


@pytest.mark.parametrize("path, injected, contract", BREACHES, ids=[b[2] + ":" + b[0] for b in BREACHES])
def test_a_breach_fails_lint_imports(tmp_path, path, injected, contract):
    tree = installed_layout(tmp_path / "layout")
    with open(tree / path, "a") as module:
        module.write(f"\n\n{injected}\n")
    proc = lint_imports(tree, "--contract", contract)
    assert proc.returncode != 0
    assert f"{contract_names()[contract]} BROKEN" in proc.stdout, proc.stdout + proc.stderr


def test_bench_needs_a_source_checkout(tree):
    proc = run_in(tree, "from nupp.runtime.cli import main; raise SystemExit(main(['bench']))")
    assert proc.returncode == 2
    assert proc.stderr == ("nupp bench: error: nupp bench runs from a source checkout of nupp: "
                           "its benchmark programs are not installed\n")


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "bench").glob("*.py") if p.stem != "__init__"))
def test_bench_programs_import_from_the_checkout(name):
    importlib.import_module(f"bench.{name}")  # the repository root is on sys.path (tests/ is a package in it)
