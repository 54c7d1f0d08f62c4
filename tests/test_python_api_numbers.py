"""Numbers across the Python API (runtime/api.py): exact both ways, NumPy scalars by value.

For every scalar parameter type, each argument below -- Python ints and
floats at and around every integer width's bounds, non-integral values, NaN,
the infinities, -0.0, integers beyond 64 bits, and NumPy scalars of every
type that holds the value -- is passed to an identity `@aot` function, and:

  * an accepted argument comes back as the oracle says: for an integer type
    the exact integer (a Python int), for `number`/`double` the value
    rounded to binary64 once, for `float` that rounded to binary32 (a Python
    float, its sign kept: -0.0 stays -0.0), for `boolean` the bool;
  * a refused one raises NuppRuntimeError with the boundary's text, and that
    text is exactly what the same call raises from Nupp code, where the value
    is the Nupp literal of the same number (`9007199254740993LL`, `(0/0)`).

The oracle is Python's exact integer arithmetic and IEEE rounding (float(int)
rounds to nearest even; tests/oracles.py narrows to binary32 exactly), written from
LANGUAGE.md section 7, not from the compiler.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import nupp
from nupp.errors import Source
from nupp.runtime.api import NuppRuntimeError
from nupp.runtime.host import Host

from .oracles import f32_of_bits, round_double_to_f32_bits
from .test_interp_vs_fold import same  # equal bits (a zero's sign counts), any NaN equals any NaN

INT_RANGES = {"int32": (-2 ** 31, 2 ** 31 - 1), "uint32": (0, 2 ** 32 - 1),
              "int64": (-2 ** 63, 2 ** 63 - 1), "uint64": (0, 2 ** 64 - 1)}
FLOAT_TYPES = ("float", "number", "double")
TYPES = (*INT_RANGES, *FLOAT_TYPES, "boolean")
FUNCTION = {t: f"id_{t}" for t in TYPES}
NUMPY_INTS = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)
NUMPY_FLOATS = (np.float16, np.float32, np.float64)

MODULE = "\n".join(
    [f"@aot\nlocal function {FUNCTION[t]}(x: {t}): {t}\n    return x\nend" for t in TYPES]
    + ["@aot\nlocal function negate(x: number): number\n    return -x\nend",
       "return {" + ", ".join(f"{f} = {f}" for f in [*FUNCTION.values(), "negate"]) + "}"]) + "\n"


def _interesting_integers() -> list[int]:
    values = {0, 1, -1, 2 ** 24 + 1, 2 ** 53, 2 ** 53 + 1, -(2 ** 53 + 1), 10 ** 30, -10 ** 30, 10 ** 400}
    for lo, hi in [*INT_RANGES.values(), *((int(i.min), int(i.max)) for i in map(np.iinfo, NUMPY_INTS))]:
        values |= {lo, hi, lo - 1, hi + 1}
    return sorted(values)


INTEGERS = _interesting_integers()
FLOATS = [0.0, -0.0, 0.5, -0.5, 0.1, 2.0, 2.0 ** 31 - 0.5, 2.0 ** 31, 2.0 ** 32, 2.0 ** 53, 2.0 ** 63, 2.0 ** 64,
          -2.0 ** 63, 3.4028234663852886e38, 3.4028235677973366e38, 1e300, 5e-324, 2.0 ** -149,
          math.nan, math.inf, -math.inf]


def _numpy_scalars() -> list:
    """Every NumPy scalar type holding each interesting value exactly."""
    out = []
    for kind in NUMPY_INTS:
        info = np.iinfo(kind)
        out += [kind(n) for n in INTEGERS if info.min <= n <= info.max]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float16(1e300) is inf: wanted, not a mistake
        for kind in NUMPY_FLOATS:
            out += [kind(x) for x in FLOATS if math.isnan(x) or float(kind(x)) == x]
    return out + [np.bool_(True), np.bool_(False)]


ARGUMENTS = [*INTEGERS, *FLOATS, True, False, *_numpy_scalars()]


# ---- the oracle ------------------------------------------------------------------------------

def python_value(value):
    """The number a NumPy scalar stands for; Python values as they are."""
    return value.item() if isinstance(value, np.generic) else value


def to_binary64(value) -> float:
    """Round to nearest even, overflowing to an infinity (IEEE 754)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def to_binary32(x: float) -> float:
    return float(f32_of_bits(round_double_to_f32_bits(x)))


def expected(type_name: str, value):
    """("ok", result) or ("refused", None), from LANGUAGE.md section 7."""
    value = python_value(value)
    if type_name == "boolean":
        return ("ok", value) if isinstance(value, bool) else ("refused", None)
    if isinstance(value, bool):
        return "refused", None
    if type_name in INT_RANGES:
        lo, hi = INT_RANGES[type_name]
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            return "refused", None
        exact = int(value)
        return ("ok", exact) if lo <= exact <= hi else ("refused", None)
    wide = to_binary64(value)
    return "ok", to_binary32(wide) if type_name == "float" else wide


def nupp_literal(value) -> str:
    """The Nupp expression of the same number as a Python value (for the same call from Nupp)."""
    value = python_value(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) <= 2 ** 53:
            return f"({value})"
        if -2 ** 63 <= value < 0:
            return f"(-{-value - 1}LL - 1)"
        return f"{value}LL" if value < 2 ** 63 else f"{value}ULL"
    if math.isnan(value):
        return "(0/0)"
    if math.isinf(value):
        return "(1/0)" if value > 0 else "(-1/0)"
    return f"({value!r})"


# ---- the calls -------------------------------------------------------------------------------

MODES = ("interp", "scalar", "lane")


@pytest.fixture(scope="module")
def module_path(tmp_path_factory):
    """The module, compiled into a cache of this file's own (each mode's library built once)."""
    path = tmp_path_factory.mktemp("numbers") / "widths.nupp"
    path.write_text(MODULE)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NUPP_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield path


@pytest.fixture(scope="module", params=MODES)
def loaded(request, module_path):
    return request.param, nupp.load(module_path, mode=request.param)


def call(module, type_name: str, value):
    try:
        return "ok", getattr(module, FUNCTION[type_name])(value)
    except NuppRuntimeError as err:
        return "refused", str(err)


def calls_from_nupp(mode: str, module_path: Path, cases: list[tuple[str, object]]) -> list[str]:
    """Each case called from a Nupp script: the error text, or "ok"."""
    lines = ["local m = require('widths')"]
    for type_name, value in cases:
        lines.append(f"do local ok, e = pcall(m.{FUNCTION[type_name]}, {nupp_literal(value)}) "
                     f"print(ok and 'ok' or e) end")
    host = Host(search_path=[module_path.parent], mode=mode)
    output = host.capture_output()
    host.run_source(Source(str(module_path.parent / "calls.nupp"), "\n".join(lines) + "\n"))
    return output().splitlines()


@pytest.mark.parametrize("type_name", TYPES)
def test_arguments_and_results_against_the_oracle(loaded, type_name, module_path):
    mode, module = loaded
    from_nupp_cases = []
    failures = []
    for value in ARGUMENTS:
        kind, want = expected(type_name, value)
        got_kind, got = call(module, type_name, value)
        where = f"{FUNCTION[type_name]}({value!r} : {type(value).__name__})"
        if got_kind != kind:
            failures.append(f"{where}: {got_kind} {got!r}, expected {kind} {want!r}")
        elif kind == "ok" and not same(got, want):
            failures.append(f"{where} returned {got!r} ({type(got).__name__}), expected {want!r}")
        elif kind == "refused":
            prefix = f"bad argument #1 to '{FUNCTION[type_name]}' ({type_name} expected, got "
            if not got.startswith(prefix):
                failures.append(f"{where}: {got!r} is not the boundary's text")
            python = python_value(value)
            if isinstance(python, int) and not -2 ** 63 <= python < 2 ** 64:
                # no Lua value holds it: the boundary shows its exact digits
                if got != f"{prefix}{python})":
                    failures.append(f"{where}: {got!r} does not show the integer exactly")
            else:
                from_nupp_cases.append((value, got))
    from_nupp = calls_from_nupp(mode, module_path, [(type_name, v) for v, _ in from_nupp_cases])
    for (value, got), nupp_text in zip(from_nupp_cases, from_nupp, strict=True):
        if got != nupp_text:
            failures.append(f"{FUNCTION[type_name]}({value!r}): from Python {got!r}, from Nupp {nupp_text!r}")
    assert not failures, "\n".join(failures)


def test_every_width_is_tried_at_its_bounds():
    """The argument list really holds each width's min, max, max+1, min-1 (as ints and as NumPy scalars)."""
    for lo, hi in INT_RANGES.values():
        assert {lo, hi, lo - 1, hi + 1} <= set(INTEGERS)
    numpy_values = {(type(v), v.item()) for v in _numpy_scalars()}
    for kind in NUMPY_INTS:
        info = np.iinfo(kind)
        assert {(kind, int(info.min)), (kind, int(info.max))} <= numpy_values


def test_number_results_are_floats_with_their_sign(loaded):
    _, module = loaded
    zero = module.negate(0.0)
    assert isinstance(zero, float) and math.copysign(1.0, zero) == -1.0
    assert math.copysign(1.0, module.negate(-0.0)) == 1.0
    for type_name in FLOAT_TYPES:
        two = getattr(module, FUNCTION[type_name])(2)
        assert isinstance(two, float) and two == 2.0
        assert math.copysign(1.0, getattr(module, FUNCTION[type_name])(-0.0)) == -1.0


def test_64_bit_integers_are_exact_both_ways(loaded):
    _, module = loaded
    assert module.id_int64(2 ** 53 + 1) == 2 ** 53 + 1
    assert module.id_int64(2 ** 63 - 1) == 2 ** 63 - 1
    assert module.id_int64(-2 ** 63) == -2 ** 63
    assert module.id_uint64(2 ** 64 - 1) == 2 ** 64 - 1
    assert module.id_uint64(np.uint64(2 ** 64 - 1)) == 2 ** 64 - 1
    with pytest.raises(NuppRuntimeError, match=r"int64 expected, got 9223372036854775808ULL\)"):
        module.id_int64(2 ** 63)
    with pytest.raises(NuppRuntimeError, match=r"uint64 expected, got 18446744073709551616\)"):
        module.id_uint64(2 ** 64)
