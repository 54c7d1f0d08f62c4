"""Khronos' validator for the SPIR-V nupp writes, shared by the tests and the fuzzer."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

TARGET_ENV = "vulkan1.1"  # what the kernels promise: SPIR-V 1.3 under Vulkan 1.1


class InvalidSpirv(Exception):
    """spirv-val refused a module; the message is its own."""


def spirv_val_problem(binary: bytes) -> str | None:
    """spirv-val's complaint about a module, or None when it accepts it (or is not installed: check
    `shutil.which("spirv-val")` where its absence matters)."""
    tool = shutil.which("spirv-val")
    if tool is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.spv"
        path.write_bytes(binary)
        result = subprocess.run([tool, "--target-env", TARGET_ENV, str(path)], capture_output=True, text=True)
    return None if result.returncode == 0 else (result.stdout + result.stderr).strip()


def validate_kernels(device_module) -> None:
    """InvalidSpirv for the first kernel of an emit_spirv DeviceModule that spirv-val refuses."""
    for name, kernel in device_module.kernels.items():
        problem = spirv_val_problem(kernel.spirv)
        if problem is not None:
            raise InvalidSpirv(f"the SPIR-V kernel of {name}: {problem}")
