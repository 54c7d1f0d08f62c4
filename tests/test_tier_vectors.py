"""A tier's C compilers keep the lane C's vectors in registers of the tier's width.

At x86-64-v4 GCC and Clang prefer 256-bit vectors; Clang then splits each
64-byte vector of the lane C into two ymm halves (twice the instructions).
The tier's flags (targets/tiers.py Tier.flags) prefer its register width, so
a gang of sixteen 32-bit lanes at v4 is computed in zmm registers (its
shift by 13, the one the kernel's vector loop alone holds).
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
end

@aot
local function mix(exclusive out: span.WriteSpan<Cell>, borrows cells: span.Span<Cell>): nil
    assert(#cells == #out, "length mismatch")
    for i = 1, #out do
        local x = cells[i].a ~ (cells[i].b << 13)
        out[i].a = x ~ (x >> 17)
        out[i].b = cells[i].b
    end
end

return {Cell = Cell, mix = mix}
"""


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_a_gang_of_one_v4_register_is_computed_in_zmm_registers(cc, tmp_path):
    if shutil.which(cc) is None:
        pytest.skip(f"no {cc}")
    source = tmp_path / "mix.nupp"
    source.write_text(KERNEL)
    lane_c = subprocess.run([sys.executable, "-m", "nupp", "emit", "--c", "--gang", "16", str(source)],
                            capture_output=True, text=True, check=True).stdout
    (tmp_path / "mix.c").write_text(lane_c)
    subprocess.run([cc, *BASE_FLAGS, *tier_named("v4").flags, "-S", "-o", str(tmp_path / "mix.s"),
                    str(tmp_path / "mix.c")], check=True)
    shifts = re.findall(r"vpslld\s+\$13,\s*%([xyz]mm)", (tmp_path / "mix.s").read_text())  # x << 13
    assert shifts and set(shifts) == {"zmm"}, shifts
