"""The committed IR of every BENCH.md kernel and seed example (golden files).

`tests/golden/ir/NAME.ir` is the verified, folded IR of the program; a change
in lowering shows up here as a diff to review.  NUPP_BLESS=1 rewrites them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nupp.errors import Source
from nupp.pipeline import compile_module
from nupp.scalar_ir.text import parse_module, print_module

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "ir"
PROGRAMS = sorted(p for p in (ROOT / "bench" / "kernel-subset-spike").glob("*.nupp")
                  if not p.name.endswith("_main.nupp")) + sorted((ROOT / "tests" / "corpus" / "nupp").glob("*.nupp"))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_program_lowers_to_its_committed_ir(path):
    module = compile_module(Source(path.name, path.read_text()))
    text = print_module(module)
    golden = GOLDEN / (path.stem + ".ir")
    if os.environ.get("NUPP_BLESS"):
        golden.write_text(text)
    assert golden.exists(), f"no golden IR for {path.name}: run with NUPP_BLESS=1 and review it"
    assert text == golden.read_text()
    assert parse_module(text) == module


def test_classify_shows_its_exact_width_switch_labels():
    text = (GOLDEN / "seed_classify.ir").read_text()
    assert "switch %sel: i32 [-2147483648] [1, 2] default" in text
    assert "eq.i32(%sel, -2147483648:i32)" in text
