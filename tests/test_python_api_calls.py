"""The Python API's fast calls (runtime/fast_call.py) against its calls through LuaJIT.

A native @aot function called from Python runs through a Caller (C) that
takes plain arguments itself and hands every other call to the host
boundary in LuaJIT.  Generated calls -- every parameter kind (spans, read-only
and writable, of a struct of every field type; float, number, double, the
four integer types, boolean) and every result kind, given arguments of every
kind: NumPy arrays of the right dtype, another dtype, 2-d, strided, read-only,
empty, views sharing memory, the same array twice; Python and NumPy numbers
at and past each type's bounds, NaN, the infinities, -0.0; None, strings;
too few and too many arguments, keywords -- run through both paths on
identical copies of their arrays, and must give the same outcome: the same
result (type and bits: a NaN's bits too), or the same exception with the
same text, and the same bytes in every array afterwards.

Plain calls must take the fast path (the Lua path is not called); interp
mode, and the functions a device runs in spirv mode, keep the Lua path.
"""

from __future__ import annotations

import enum
import math
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nupp
from nupp.runtime import api
from nupp.runtime import fast_call

STRUCT_FIELDS = ("f: float", "d: number", "i: int32", "u: uint32", "l: int64", "g: uint64", "s: int8")

MODULE = """local span = nupp.mem.span

local struct Rec
    FIELDS
end

@aot
local function step(exclusive out: span.WriteSpan<Rec>, borrows a: span.Span<Rec>, borrows b: span.Span<Rec>): nil
    assert(#a == #out, "a's length")
    assert(#b == #out, "b's length")
    for i = 1, #out do
        out[i].f = a[i].f + b[i].f
        out[i].d = a[i].d * b[i].d
        out[i].i = a[i].i + b[i].i
        out[i].u = a[i].u + 1
        out[i].l = a[i].l - b[i].l
        out[i].g = b[i].g
        out[i].s = a[i].s
    end
end

@aot
local function total(borrows a: span.Span<Rec>): number
    local sum: number = 0
    for i = 1, #a do
        sum = sum + a[i].d
    end
    return sum
end

@aot
local function scale(exclusive out: span.WriteSpan<Rec>, by: float, shift: double, n: int32, flip: boolean): nil
    for i = 1, #out do
        out[i].f = out[i].f * by
        out[i].d = out[i].d + shift
        if flip then
            out[i].i = n
        end
    end
end

@aot
local function wide(x: int64, y: uint64, z: uint32): int64
    if y > 5 then
        return x
    end
    local w: int64 = z
    return x + w
end

@aot
local function product(x: float, y: number): float
    return x * y
end

@aot
local function quotient(x: double, y: double): double
    return x / y
end

@aot
local function unsigned(x: uint64): uint64
    return x
end

@aot
local function odd(x: int32): boolean
    assert(x ~= 13, "thirteen is refused")
    return x % 2 == 1
end

@aot
local function either(b: boolean, x: uint32): uint32
    if b then
        return x
    end
    return 0
end

return {step = step, total = total, scale = scale, wide = wide, product = product, quotient = quotient,
        unsigned = unsigned, odd = odd, either = either, Rec = Rec, answer = 42}
""".replace("FIELDS", "\n    ".join(STRUCT_FIELDS))

# function -> its parameters' kinds, for generating calls
PARAMS = {"step": ("write", "read", "read"), "total": ("read",), "scale": ("write", "float", "double", "int32",
                                                                        "boolean"),
          "wide": ("int64", "uint64", "uint32"), "product": ("float", "double"), "quotient": ("double", "double"),
          "unsigned": ("uint64",), "odd": ("int32",), "either": ("boolean", "uint32")}
LENGTH = 6


@pytest.fixture(scope="module", params=["lane", "scalar"])
def module(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("calls") / "calls.nupp"
    path.write_text(MODULE)
    return nupp.load(path, mode=request.param)


@pytest.fixture(scope="module")
def interp(tmp_path_factory):
    path = tmp_path_factory.mktemp("calls_interp") / "calls.nupp"
    path.write_text(MODULE)
    return nupp.load(path, mode="interp")


# ---- arguments as recipes: built afresh, identically, for each path ---------------------------

def pool(dtype) -> list[np.ndarray]:
    """Two arrays of the struct with varied contents: every recipe's memory."""
    arrays = []
    for k in (1, 2):
        a = np.zeros(2 * LENGTH, dtype)
        n = np.arange(2 * LENGTH, dtype=np.int64)
        a["f"], a["d"] = n * 0.5 - k, n * 1.25 + k
        a["i"], a["u"] = n * 1000003 - 2 ** 31 + k, 2 ** 32 - 1 - n
        a["l"], a["g"] = n * 2 ** 40 - k, np.uint64(2 ** 64 - 1) - n.astype(np.uint64)
        a["s"] = n - 128
        arrays.append(a)
    return arrays


def build(recipe, arrays: list[np.ndarray], dtype):
    """The argument a recipe describes, over `arrays` (a fresh pool)."""
    if not (isinstance(recipe, tuple) and recipe and recipe[0] == "array"):
        return recipe  # a scalar or other value, immutable
    _, kind, which, start, stop, step, read_only = recipe
    if kind == "view":
        a = arrays[which][start:stop:step]
    elif kind == "other dtype":
        a = np.zeros(abs(stop - start), np.float64)
    elif kind == "equal dtype":  # a copy under another dtype object that compares equal
        a = arrays[which][start:stop].copy().view(equal_dtype(dtype))
    elif kind == "two-d":
        a = arrays[which][:4].reshape(2, 2)
    else:
        raise AssertionError(kind)
    if read_only:
        a.flags.writeable = False
    return a


def equal_dtype(dtype: np.dtype) -> np.dtype:
    """A new dtype object equal to `dtype`."""
    fields = [(name, *dtype.fields[name][:2]) for name in dtype.names]
    return np.dtype({"names": [f[0] for f in fields], "formats": [f[1] for f in fields],
                     "offsets": [f[2] for f in fields], "itemsize": dtype.itemsize})


ARRAY = st.tuples(st.just("array"), st.sampled_from(["view", "view", "view", "other dtype", "equal dtype", "two-d"]),
                  st.integers(0, 1), st.integers(0, LENGTH), st.just(LENGTH) | st.integers(0, 2 * LENGTH),
                  st.just(1) | st.sampled_from([1, 2, -1]), st.booleans())
BOUNDS = [0, 1, -1, 5, 13, 2 ** 31 - 1, 2 ** 31, -2 ** 31, -2 ** 31 - 1, 2 ** 32 - 1, 2 ** 32, 2 ** 53, 2 ** 53 + 1,
          -2 ** 53 - 1, 2 ** 63 - 1, 2 ** 63, -2 ** 63, -2 ** 63 - 1, 2 ** 64 - 1, 2 ** 64, 10 ** 30]
INTEGER = st.sampled_from(BOUNDS) | st.integers(-2 ** 70, 2 ** 70)
SPECIAL_FLOATS = [0.0, -0.0, math.inf, -math.inf, 1.0, 2.0 ** 31, 2.0 ** 64, 5e-324, 3.4028235677973366e38]
FLOAT = st.floats() | st.sampled_from(SPECIAL_FLOATS + [math.nan])
NUMPY = st.one_of(st.integers(-2 ** 31, 2 ** 31 - 1).map(np.int32), st.floats(width=32).map(np.float32),
                  FLOAT.map(np.float64), st.integers(0, 2 ** 64 - 1).map(np.uint64), st.booleans().map(np.bool_))
class Level(enum.IntEnum):
    HIGH = 7


class OwnInt(int):
    """An int that converts to another number: the boundary's reading of it decides."""

    def __int__(self):
        return 3


class OwnFloat(float):
    pass


OTHER = st.sampled_from([None, "1", b"1", (), [1], Level.HIGH, OwnInt(9), OwnFloat(2.5), OwnFloat("nan")])
ANY = st.one_of(ARRAY, INTEGER, FLOAT, st.booleans(), NUMPY, OTHER)

# a plain argument of each kind: the k-th span of a call gets the k-th of four disjoint regions (span_region)
PLAIN = {"write": st.just("span"), "read": st.just("span"),
         "float": st.floats(allow_nan=False) | st.sampled_from(SPECIAL_FLOATS) | st.integers(-2 ** 53, 2 ** 53),
         "double": st.floats(allow_nan=False) | st.sampled_from(SPECIAL_FLOATS) | st.integers(-2 ** 53, 2 ** 53),
         "int32": st.integers(-2 ** 31, 2 ** 31 - 1).filter(lambda n: n != 13), "uint32": st.integers(0, 2 ** 32 - 1),
         "int64": st.integers(-2 ** 63, 2 ** 63 - 1), "uint64": st.integers(0, 2 ** 64 - 1), "boolean": st.booleans()}


def span_region(k: int, read_only: bool = False) -> tuple:
    return ("array", "view", k // 2, (k % 2) * LENGTH, (k % 2 + 1) * LENGTH, 1, read_only)


def plain_arguments(draw, name: str) -> list:
    args, spans = [], 0
    for kind in PARAMS[name]:
        arg = draw(PLAIN[kind])
        if arg == "span":
            arg, spans = span_region(spans, kind == "read" and draw(st.booleans())), spans + 1
        args.append(arg)
    return args


@st.composite
def calls(draw):
    """(function, argument recipes, keywords): each argument of its parameter's kind, or of any kind."""
    name = draw(st.sampled_from(sorted(PARAMS)))
    plain = plain_arguments(draw, name)
    args = [arg if draw(st.integers(0, 3)) else draw(ANY) for arg in plain]
    count = draw(st.sampled_from([len(args)] * 8 + [max(0, len(args) - 1), len(args) + 1]))
    args = (args + [draw(ANY)])[:count]
    keywords = draw(st.sampled_from([{}] * 10 + [{"x": 1}]))
    return name, args, keywords


def outcome(fn, recipes, keywords, dtype):
    """What a call did: its result (type and bits) or exception (type and text), and every array's bytes after."""
    arrays = pool(dtype)
    args = [build(r, arrays, dtype) for r in recipes]
    try:
        result = fn(*args, **keywords)
        happened = ("result", type(result).__name__, bits(result))
    except Exception as err:  # noqa: BLE001 - the outcome compared
        happened = ("raised", type(err).__name__, str(err))
    return happened, [a.tobytes() for a in arrays]


def bits(value):
    return struct.pack("<d", value) if isinstance(value, float) else value


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=calls())
def test_the_fast_path_answers_as_the_lua_path(module, call):
    name, recipes, keywords = call
    dtype = module.dtype("Rec")
    fast = outcome(getattr(module, name), recipes, keywords, dtype)
    slow = outcome(module._lua_calls[name], recipes, keywords, dtype)
    assert fast == slow, (name, recipes, keywords)


# ---- the fast path is taken -------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_plain_calls_take_the_fast_path(module, data, lua_calls):
    if fast_call.extension("gcc") is None:
        pytest.skip("no Python or NumPy C headers: every call takes the Lua path")
    name = data.draw(st.sampled_from(sorted(PARAMS)))
    recipes = plain_arguments(data.draw, name)
    dtype = module.dtype("Rec")
    arrays = pool(dtype)
    before = lua_calls.count
    getattr(module, name)(*[build(r, arrays, dtype) for r in recipes])
    assert lua_calls.count == before, (name, recipes)


@pytest.fixture(scope="module")
def lua_calls():
    """Counts the calls that reach the Lua path (NuppModule._invoke)."""
    real = api.NuppModule._invoke

    class Counter:
        count = 0

    def counting(self, *args):
        Counter.count += 1
        return real(self, *args)

    api.NuppModule._invoke = counting
    yield Counter
    api.NuppModule._invoke = real


def test_native_functions_have_a_caller_and_interp_ones_the_lua_path(module, interp):
    if fast_call.extension("gcc") is None:
        pytest.skip("no Python or NumPy C headers: every call takes the Lua path")
    assert all(type(getattr(module, name)).__name__ == "Caller" for name in PARAMS)
    assert not any(type(getattr(interp, name)).__name__ == "Caller" for name in PARAMS)
    with pytest.raises(AttributeError, match="the module exports no @aot function 'answer'"):
        module.answer


def test_statuses_results_and_a_large_call(module):
    line = MODULE.splitlines().index('    assert(x ~= 13, "thirteen is refused")') + 1
    for call in (getattr, lambda m, name: m._lua_calls[name]):
        with pytest.raises(api.NuppRuntimeError) as err:
            call(module, "odd")(13)
        assert str(err.value).endswith(f"calls.nupp:{line}: thirteen is refused")
        assert call(module, "odd")(7) is True and call(module, "odd")(-2) is False
        assert call(module, "unsigned")(2 ** 64 - 1) == 2 ** 64 - 1
        assert call(module, "wide")(-2 ** 63, 6, 0) == -2 ** 63
        assert bits(call(module, "quotient")(-0.0, 1.0)) == bits(-0.0)
    for name, args in (("product", (math.inf, 0.0)), ("quotient", (0.0, 0.0))):  # NaN results, to the bit
        assert bits(getattr(module, name)(*args)) == bits(module._lua_calls[name](*args))
    big = np.zeros(100_000, module.dtype("Rec"))  # past the size at which the GIL is let go
    big["d"] = 1.5
    assert module.total(big) == module._lua_calls["total"](big) == 150_000.0


class Thing:
    pass


@pytest.mark.parametrize("value, words", [([1.5], "a Python list"), ((1.5,), "a Python tuple"), ({}, "a Python dict"),
                                          (Thing(), f"a Python {__name__}.Thing"), (None, "None"),
                                          (np.zeros(2), "a Python numpy.ndarray")])
def test_a_refused_python_value_is_named_as_python_names_it(module, interp, value, words):
    """Not as the Lua value lupa made of it (userdata, nil); a missing argument
    is 'no value', as LuaJIT's C functions say.  The same on every path."""
    for call in (module.product, module._lua_calls["product"], interp.product):
        with pytest.raises(api.NuppRuntimeError, match=rf"^bad argument #2 to 'product' \(number expected, got {words}\)$"):
            call(1.0, value)
    with pytest.raises(api.NuppRuntimeError, match=r"^bad argument #1 to 'total' \(span.Span<Rec> expected, got "
                                                   r"a Python list\)$"):
        module.total([1.0])
    with pytest.raises(api.NuppRuntimeError, match=r"^bad argument #2 to 'product' \(number expected, got no value\)$"):
        module.product(1.0)


def test_a_function_a_device_runs_keeps_the_lua_path(tmp_path):
    from nupp.targets.device import DeviceUnavailable
    if fast_call.extension("gcc") is None:
        pytest.skip("no Python or NumPy C headers: every call takes the Lua path")
    path = tmp_path / "calls.nupp"
    path.write_text(MODULE)
    try:
        module = nupp.load(path, mode="spirv")
    except DeviceUnavailable as err:
        pytest.skip(f"no Vulkan device: {err}")
    on_device = {name for name, execution in module.executions.items() if execution.startswith("spirv-")}
    assert on_device and on_device != set(PARAMS), module.executions
    for name in PARAMS:
        assert (type(getattr(module, name)).__name__ == "Caller") == (name not in on_device), name
