"""The crosscheck driver's comparison of float fields (emit_c/driver.py,
LANGUAGE.md section 3): a float field some store gives binary64 keeps the NaN
C's narrowing gives, so any NaN there equals any NaN; a float field given only
binary32 values holds canonical NaNs, compared to the bit.  The driver's
NU_PLANT_FLIP flips the lowest bit of the last element's first byte in the
widest gang's lane output: here a NaN's lowest payload bit, which is still a NaN.
"""

from __future__ import annotations

import pytest

from .conftest import require_tool
from .test_crosscheck import best_tier, run

MODULE = """local span = nupp.mem.span
local f32 = nupp.math.f32

local struct Out
    f: float
end

@aot
local function k(exclusive out: span.WriteSpan<Out>, x: number): nil
    for i = 1, #out do
        out[i].f = {value}
    end
end

return {{Out = Out, k = k}}
"""

NAN = "(x - x) / (x - x)"  # a NaN for every x: 0/0, or inf - inf over itself


@pytest.mark.parametrize("value,agrees", [
    (NAN, True),                          # binary64 narrowed by the store: "a NaN"
    (f"f32.narrow({NAN})", False),        # binary32 (an f32 result): the canonical NaN, to the bit
])
def test_a_float_fields_nan_payload_counts_only_where_it_is_binary32s(tmp_path, value, agrees):
    require_tool("gcc")
    path = tmp_path / "nans.nupp"
    path.write_text(MODULE.format(value=value))
    status, lines = run([path], tiers=(best_tier(),), gangs=(4, 8), cases=2, extra_flags=("-DNU_PLANT_FLIP",))
    if agrees:
        assert status == 0, "\n".join(lines)
    else:
        assert status == 1 and any("mismatch in k" in line and "out[1].f" in line for line in lines), "\n".join(lines)
