"""What machine an ELF object is for: its header's e_machine."""

from __future__ import annotations

from pathlib import Path

# cross.py's machine names -> ELF e_machine (the System V ABI's EM_ numbers)
E_MACHINE = {"x86_64": 62, "aarch64": 183}
MACHINE_OF = {number: name for name, number in E_MACHINE.items()}


def e_machine(path: Path) -> int | None:
    """The e_machine of an ELF file (None: not ELF)."""
    with open(path, "rb") as file:
        header = file.read(20)
    if len(header) < 20 or header[:4] != b"\x7fELF" or header[5] not in (1, 2):
        return None
    return int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")  # EI_DATA: 1 LSB, 2 MSB
