"""Shared test configuration.

Slow (exhaustive) tests run under CI=true or with --runslow.  A test that
needs a missing tool may skip locally, never under CI (`require_tool`).
"""

from __future__ import annotations

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
        if UNDER_CI:
            pytest.fail(f"{name} is required under CI but is not installed")
        pytest.skip(f"{name} is not installed")
    return path
