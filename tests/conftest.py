"""Shared test configuration.

Slow (exhaustive) tests run under CI=true or with --runslow.  A test that
needs a missing tool or Python module may skip locally, never under CI
(`require_tool`, `require_module`).
"""

from __future__ import annotations

import importlib
import os
import shutil

import pytest

UNDER_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run slow tests too")


def pytest_collection_modifyitems(config, items):
    if UNDER_CI or config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: runs under CI=true or with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


def require_tool(name: str) -> str:
    """The path of a command-line tool; skips locally when missing, fails under CI."""
    path = shutil.which(name)
    if path is None:
        _missing(name)
    return path


def require_module(name: str):
    """An importable Python module (a test dependency); skips locally when missing, fails under CI."""
    try:
        return importlib.import_module(name)
    except ImportError:
        _missing(f"the Python module {name}")


def _missing(what: str):
    if UNDER_CI:
        pytest.fail(f"{what} is required under CI but is not installed")
    pytest.skip(f"{what} is not installed")
