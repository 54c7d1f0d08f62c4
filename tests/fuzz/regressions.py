"""Saved failures: a minimized program and its inputs, run in every execution by the test suite.

A regression is two files in tests/fuzz_regressions/:

    NAME.nupp    the module (its structs and the program's functions)
    NAME.json    {"entry": ..., "spans": [[struct, writable], ...], "scalars": [widths],
                  "result": type, "calls": [CallSpec fields, ...],
                  "found": {"execution", "kind", "signature", "detail"},
                  "known_bug": null, or a line naming the known bug it shows (the test then
                               expects it to fail, strictly: once fixed, drop the line)}

`check_saved(path, runner)` runs one in the reference and every execution
and returns its failures (tests/test_fuzz_regressions.py asserts none).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict
from pathlib import Path

from .program import module_text
from .runner import Failure, Runner, entry_of
from .runs import CallSpec, call_plan

FOLDER = Path(__file__).resolve().parent.parent / "fuzz_regressions"


def save(failure: Failure, folder: Path = FOLDER) -> Path:
    """Write a (minimized) failure as NAME.nupp + NAME.json; the .nupp's path."""
    folder.mkdir(parents=True, exist_ok=True)
    text = module_text([failure.program])
    slug = re.sub(r"[^a-z0-9]+", "-", f"{failure.kind} {failure.execution.name}".lower()).strip("-")
    path = folder / f"{slug}-{hashlib.sha256(text.encode()).hexdigest()[:8]}.nupp"
    path.write_text(text)
    entry = entry_of(failure.program, [failure.call] if failure.call else None)
    path.with_suffix(".json").write_text(json.dumps({
        "entry": entry.function, "spans": entry.spans, "scalars": entry.scalars, "result": entry.result,
        "calls": [asdict(c) for c in entry.calls],
        "found": {"execution": failure.execution.name, "kind": failure.kind, "signature": failure.signature,
                  "detail": failure.detail[:2000]},
        "known_bug": None,
    }, indent=1) + "\n")
    return path


def saved(folder: Path = FOLDER) -> list[Path]:
    return sorted(folder.glob("*.json"))


def known_bugs(folder: Path = FOLDER) -> dict[str, str]:
    """Signature -> "known bug (its saved case)" of the saved cases that name a known bug and whose
    signature names its message (a bare wrong answer is too broad to call known)."""
    out = {}
    for path in saved(folder):
        spec = json.loads(path.read_text())
        signature = spec["found"]["signature"]
        if spec.get("known_bug") and not signature.endswith("| "):
            out[signature] = f"{spec['known_bug']} ({path.with_suffix('.nupp').name})"
    return out


def load_entry(spec: dict):
    from .worker import Entry
    calls = tuple(CallSpec(**c) for c in spec["calls"]) or tuple(call_plan(bool(spec["spans"])))
    return Entry(spec["entry"], tuple(tuple(s) for s in spec["spans"]), tuple(spec["scalars"]), spec["result"], calls)


def check_saved(json_path: Path, runner: Runner) -> list[Failure]:
    """The failures of a saved regression in the runner's executions (none once it is fixed)."""
    spec = json.loads(json_path.read_text())
    return runner.check_module(str(json_path.with_suffix(".nupp")), [load_entry(spec)])
