"""The fast call's span dtype check (runtime/fast_call.c same_dtype) against the Lua path's.

An array whose dtype is another object equal to the module's takes the fast
path, call after call (the Caller keeps the last equal dtype it saw); once
that dtype's fields are renamed in place it is no longer equal, and the call
answers as the Lua path does: the same error with the same text.
"""

from __future__ import annotations

import numpy as np
import pytest

import nupp
from nupp.runtime import api
from nupp.runtime import fast_call

MODULE = """local span = nupp.mem.span

local struct P
    x: number
    k: int32
end

@aot
local function total(borrows a: span.Span<P>): number
    local sum: number = 0
    for i = 1, #a do
        sum = sum + a[i].x * a[i].k
    end
    return sum
end

return {P = P, total = total}
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    if fast_call.extension("gcc") is None:
        pytest.skip("no Python or NumPy C headers: every call takes the Lua path")
    path = tmp_path_factory.mktemp("dtypes") / "dtypes.nupp"
    path.write_text(MODULE)
    return nupp.load(path, mode="scalar")


@pytest.fixture
def lua_calls(monkeypatch):
    """The calls that reach the Lua path (NuppModule._invoke)."""
    calls = []
    real = api.NuppModule._invoke
    monkeypatch.setattr(api.NuppModule, "_invoke", lambda self, *args: calls.append(args) or real(self, *args))
    return calls


def equal_dtype(dtype: np.dtype) -> np.dtype:
    """A new dtype object equal to `dtype`."""
    return np.dtype({"names": list(dtype.names), "formats": [dtype.fields[n][0] for n in dtype.names],
                     "offsets": [dtype.fields[n][1] for n in dtype.names], "itemsize": dtype.itemsize})


def filled(dtype: np.dtype) -> np.ndarray:
    a = np.zeros(5, dtype)
    a[a.dtype.names[0]] = [0.5, 1.5, 2.5, 3.5, 4.5]
    a[a.dtype.names[1]] = [1, 2, 3, 4, 5]
    return a


def outcome(call, array):
    try:
        return "result", call(array)
    except Exception as err:  # noqa: BLE001 - the outcome compared
        return "raised", type(err).__name__, str(err)


def test_an_equal_dtype_takes_the_fast_path_every_time(module, lua_calls):
    own = module.dtype("P")
    for dtype in (equal_dtype(own), equal_dtype(own), own):
        assert dtype == own
        a = filled(dtype)
        for _ in range(3):
            assert module.total(a) == module._lua_calls["total"](a) == 47.5
    assert len(lua_calls) == 9  # the Lua path's own calls alone


def test_an_equal_dtype_renamed_in_place_is_refused_as_the_lua_path_refuses_it(module):
    dtype = equal_dtype(module.dtype("P"))
    a = filled(dtype)
    assert module.total(a) == 47.5  # now the Caller's last equal dtype
    dtype.names = ("y", "k")  # the same object, no longer equal
    assert dtype != module.dtype("P")
    fast, slow = outcome(module.total, a), outcome(module._lua_calls["total"], a)
    assert fast == slow and fast[0] == "raised", (fast, slow)
    dtype.names = ("x", "k")  # equal again
    assert module.total(a) == 47.5
