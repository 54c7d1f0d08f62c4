"""The SPIR-V backend: @aot span loops as Vulkan compute kernels.

`emit_module(module, path)` takes verified, folded scalar IR and gives a
`DeviceModule`: one `DeviceKernel` (kernel.py) per function the device can
run, and for each other function the reason it cannot (admit.py), which
`nupp emit --report` prints and `--mode spirv` answers by running that
function as lane C.  The binary is written here, word by word (module.py,
with the opcode numbers of grammar.py, generated from Khronos' grammar by
gen_grammar.py): emitting needs no SPIR-V tool.  The op rules are rules.py,
the struct fields fields.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from nupp.backend import Backend
from nupp.emit_spirv.admit import device_refusal
from nupp.emit_spirv.kernel import DeviceKernel, emit_kernel
from nupp.scalar_ir import nodes as ir


@dataclass(frozen=True)
class DeviceModule:
    """A module's device kernels by function name, and why each other function has none."""

    path: str
    kernels: dict  # name -> DeviceKernel
    refused: dict  # name -> reason


def emit_module(module: ir.Module, path: str, symbol_prefix: str = "") -> DeviceModule:
    kernels, refused = {}, {}
    for fn in module.functions:
        reason = device_refusal(fn, module)
        if reason is None:
            kernels[fn.name] = emit_kernel(module, fn, path)
        else:
            refused[fn.name] = reason
    return DeviceModule(path, kernels, refused)


SPIRV = Backend("spirv", "scalar", emit_module, "SPIR-V compute kernels (Vulkan) of span loops",
                refuses=None)

__all__ = ["SPIRV", "DeviceKernel", "DeviceModule", "emit_module"]
