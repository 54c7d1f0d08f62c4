"""A tier's C compilers keep the lane C's vectors in registers of the tier's width, and its
block loads in registers.

At x86-64-v4 GCC and Clang prefer 256-bit vectors; Clang then splits each
64-byte vector of the lane C into two ymm halves (twice the instructions).
The tier's flags (targets/tiers.py Tier.flags) prefer its register width, so
a gang of sixteen 32-bit lanes at v4 is computed in zmm registers (its
shift by 13, the one the kernel's vector loop alone holds).  GCC would fold
each vector of a gang's block of elements into every shuffle that picks a
field from it, one reload per field; the lane C pins it in a register
(lane_helpers.block_load_form), so no shuffle reads memory.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from nupp.targets.tiers import tier_named
from nupp.targets.toolchain import BASE_FLAGS

KERNEL = """local span = nupp.mem.span

local struct Cell
    a: int32
    b: int32
    c: uint32
end

@aot
local function mix(exclusive out: span.WriteSpan<Cell>, borrows cells: span.Span<Cell>): nil
    assert(#cells == #out, "length mismatch")
    for i = 1, #out do
        local x = cells[i].a ~ (cells[i].b << 13)
        out[i].a = x ~ (x >> 17)
        out[i].b = cells[i].b
        out[i].c = cells[i].c
    end
end

return {Cell = Cell, mix = mix}
"""


def v4_assembly(cc: str, tmp_path) -> str:
    """The assembly of KERNEL's lane C at gang 16, as the v4 tier compiles it."""
    if shutil.which(cc) is None:
        pytest.skip(f"no {cc}")
    source = tmp_path / "mix.nupp"
    source.write_text(KERNEL)
    lane_c = subprocess.run([sys.executable, "-m", "nupp", "emit", "--c", "--gang", "16", str(source)],
                            capture_output=True, text=True, check=True).stdout
    (tmp_path / "mix.c").write_text(lane_c)
    subprocess.run([cc, *BASE_FLAGS, *tier_named("v4").flags, "-S", "-o", str(tmp_path / "mix.s"),
                    str(tmp_path / "mix.c")], check=True)
    return (tmp_path / "mix.s").read_text()


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_a_gang_of_one_v4_register_is_computed_in_zmm_registers(cc, tmp_path):
    shifts = re.findall(r"vpslld\s+\$13,\s*%([xyz]mm)", v4_assembly(cc, tmp_path))  # x << 13
    assert shifts and set(shifts) == {"zmm"}, shifts


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_no_shuffle_of_a_block_of_elements_reads_memory(cc, tmp_path):
    assembly = v4_assembly(cc, tmp_path)
    shuffles = re.findall(r"\tvperm[it]2[dq]\t[^\n]*", assembly)
    assert shuffles and not [s for s in shuffles if "(" in s], shuffles
