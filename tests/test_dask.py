"""nupp.dask against one call on the whole arrays, bit for bit.

`nupp.dask.map` runs an @aot function once per chunk of dask arrays; the
written spans, the result and the errors must be those of one call of the
loaded module (`nupp.load`) on the whole NumPy arrays.  On a `LocalCluster`
of 2 worker processes (one for the module): mandelbrot and tecsbits (the
BENCH kernels), simd's advance (a span both read and written), and exact
reductions (wrapping int32 add and sub, min and max of binary64 with NaN
and signed zeros), at chunk sizes that are not multiples of any gang (7, 13),
chunkings with chunks of length 0 and 1, and chunkings hypothesis makes.
The reductions are checked against an oracle written from the spec too
(integers modulo 2^32, tests/oracles.py's min/max).  An error in a chunk
reports one call's message and the element's index; the functions whose
iterations could tell their chunk are refused with the reason; Dask's local
schedulers give the same bits.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nupp.errors import NuppError
from nupp.paths import NuppEnvironmentError
from nupp.runtime.api import load

from . import oracles as o
from .conftest import require_module

ROOT = Path(__file__).resolve().parent.parent
SPIKE = ROOT / "bench" / "kernel-subset-spike"
N = 211  # elements per test: a prime, so no chunk size below divides it

KERNELS = """local span = nupp.mem.span

local struct Item
    v: int32
    x: double
end

local struct Out
    w: int32
end

@aot
local function total(borrows xs: span.Span<Item>): int32
    local acc: int32 = 0
    for i = 1, #xs do
        acc = acc + xs[i].v
    end
    return acc
end

@aot
local function spread(borrows xs: span.Span<Item>): int32
    local acc: int32 = 0
    for i = 1, #xs do
        acc = acc - xs[i].v
    end
    return acc
end

@aot
local function lowest(borrows xs: span.Span<Item>): number
    local m: number = 1 / 0
    for i = 1, #xs do
        m = math.min(m, xs[i].x)
    end
    return m
end

@aot
local function peak(borrows xs: span.Span<Item>, start: number): number
    local m = start
    for i = 1, #xs do
        m = math.max(m, xs[i].x)
    end
    return m
end

@aot
local function not13(v: int32): int32
    assert(v ~= 13, "thirteen")
    return v
end

@aot
local function checked(exclusive out: span.WriteSpan<Out>, borrows xs: span.Span<Item>, k: int32): int32
    assert(#out == #xs, "length mismatch")
    assert(k > 0, "k must be positive")
    local bits: int32 = 0
    for i = 1, #out do
        out[i].w = k // xs[i].v
        bits = bits ~ not13(xs[i].v)
    end
    return bits
end

@aot
local function bump(exclusive out: span.WriteSpan<Item>, borrows xs: span.Span<Item>): nil
    assert(#out == #xs, "length mismatch")
    for i = 1, #out do
        out[i].v = xs[i].v + 1
        out[i].x = xs[i].x
    end
end

@aot
local function position(exclusive out: span.WriteSpan<Out>): nil
    for i = 1, #out do
        out[i].w = i
    end
end

@aot
local function sized(exclusive out: span.WriteSpan<Out>): nil
    for i = 1, #out do
        out[i].w = #out
    end
end

@aot
local function from_two(exclusive out: span.WriteSpan<Out>): nil
    for i = 2, #out do
        out[i].w = 1
    end
end

@aot
local function count_from(borrows xs: span.Span<Item>): int32
    local acc: int32 = 5
    for i = 1, #xs do
        acc = acc + xs[i].v
    end
    return acc
end

@aot
local function stop_at(exclusive out: span.WriteSpan<Out>, borrows xs: span.Span<Item>): nil
    assert(#out == #xs, "length mismatch")
    for i = 1, #out do
        if xs[i].v < 0 then
            break
        end
        out[i].w = xs[i].v
    end
end

@aot
local function fsum(borrows xs: span.Span<Item>): number
    local s = 0.0
    for i = 1, #xs do
        s = s + xs[i].x
    end
    return s
end

@aot
local function doubled(borrows xs: span.Span<Item>): int32
    local acc: int32 = 0
    for i = 1, #xs do
        acc = acc + xs[i].v
    end
    return acc * 2
end

return {Item = Item, Out = Out, total = total, spread = spread, lowest = lowest, peak = peak, not13 = not13,
        checked = checked, bump = bump, position = position, sized = sized, from_two = from_two,
        count_from = count_from, stop_at = stop_at, fsum = fsum, doubled = doubled}
"""

# chunk sizes: 7 and 13 fit no gang (4, 8, 16); a chunk of 0 and one of 1 anywhere
CHUNKINGS = [7, 13, (0, 1, N - 1), (N - 1, 1, 0), (5, 0, 1, 0, N - 6), N]


def ids(chunks) -> str:
    return f"chunks{chunks}" if isinstance(chunks, int) else "+".join(map(str, chunks))


@pytest.fixture(scope="module")
def nd():
    require_module("dask")
    require_module("distributed")
    import nupp.dask
    return nupp.dask


@pytest.fixture(scope="module")
def client(nd):
    """One cluster for the module: 2 worker processes, each running one task at a time."""
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("dask") / "kernels.nupp"
    path.write_text(KERNELS)
    return path


def chunked(array: np.ndarray, chunks):
    import dask.array as da
    return da.from_array(array, chunks=chunks if isinstance(chunks, int) else (chunks,))


def compute(*things, **options):
    import dask
    return dask.compute(*things, **options)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """The same dtype, and every field of every element the same bits (a struct's
    padding holds no value: Dask's assembly of blocks leaves it as it finds it)."""
    return a.dtype == b.dtype and a.shape == b.shape and all(
        a[name].tobytes() == b[name].tobytes() for name in a.dtype.names)


# ---- the BENCH kernels ----------------------------------------------------------------------

def pixels(module, n: int = N) -> np.ndarray:
    """Pixel centres over [-2, 1] x [-1.5, 1.5], every few inside the set."""
    grid = np.zeros(n, module.dtype("Pixel"))
    grid["cx"] = np.linspace(-2, 1, n, dtype=np.float32)
    grid["cy"] = np.linspace(-1.5, 1.5, n, dtype=np.float32)[::-1] * (np.arange(n) % 3 == 0)
    return grid


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=ids)
def test_mandelbrot_as_one_call(nd, client, chunks):
    path = SPIKE / "mandelbrot.nupp"
    module = load(path)
    grid = pixels(module)
    want = np.zeros(N, module.dtype("Escape"))
    module.mandelbrot(want, grid, 256)
    assert len(set(want["n"])) > 10  # escapes at many counts, some at 256
    call = nd.map(path, "mandelbrot", chunked(np.zeros_like(want), chunks), chunked(grid, chunks), 256)
    escapes, result = compute(call.spans["out"], call.result)
    assert same_bits(escapes, want)
    assert result is None and list(call.spans) == ["out"]


def entities(module, n: int = N, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ents = np.zeros(n, module.dtype("Entity"))
    ents["mask"] = rng.integers(-2 ** 31, 2 ** 31, n)
    ents["tag"] = rng.choice([-2 ** 31, 0, 1, 2, 7], n)
    ents["seed"] = rng.integers(0, 2 ** 32, n)
    return ents


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=ids)
def test_tecsbits_as_one_call(nd, client, chunks):
    path = SPIKE / "tecsbits.nupp"
    module = load(path)
    ents = entities(module)
    want = np.zeros(N, module.dtype("Verdict"))
    module.query(want, ents, 5, 8)
    assert set(want["selected"]) == {0, 1, 2, 3}
    call = nd.map(path, "query", chunked(np.zeros_like(want), chunks), chunked(ents, chunks), 5, 8)
    (verdicts,) = compute(call.spans["out"])
    assert same_bits(verdicts, want)


@pytest.mark.parametrize("scheduler", ["distributed", "threads"])
def test_a_span_read_and_written_is_a_copy(nd, client, scheduler):
    """simd's advance reads and writes `bodies`: the dask array given, and the
    NumPy array under it (whose views the threaded scheduler hands out), stay as they were."""
    path = SPIKE / "simd.nupp"
    module = load(path)
    bodies = np.zeros(N, module.dtype("Body"))
    bodies["x"] = np.linspace(-1, 1, N)
    bodies["v"] = np.linspace(2, -3, N)
    bodies["m"] = np.arange(N) % 5
    given_bodies = bodies.copy()
    options = {} if scheduler == "distributed" else {"scheduler": scheduler}
    call = nd.map(path, "advance", chunked(bodies, 13), 0.01, 0.999)
    (advanced,) = compute(call.spans["bodies"], **options)
    assert same_bits(bodies, given_bodies)
    (again,) = compute(call.spans["bodies"], **options)
    module.advance(bodies, 0.01, 0.999)
    assert same_bits(advanced, bodies) and same_bits(again, bodies)
    assert not same_bits(advanced, given_bodies)


# ---- exact reductions --------------------------------------------------------------------------

EDGE_DOUBLES = [0.0, -0.0, 1.5, -2.5, float("inf"), float("-inf"), 1e308, -1e-308, 5e-324]


def items(module, n: int = N, seed: int = 2, nan_at: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xs = np.zeros(n, module.dtype("Item"))
    xs["v"] = rng.integers(-2 ** 31, 2 ** 31, n)  # their sum wraps
    xs["x"] = rng.choice(EDGE_DOUBLES, n) * rng.choice([1.0, 0.5], n)
    if nan_at is not None and n:
        xs["x"][nan_at % n] = float("nan")
    return xs


def failing_items(module, n: int = N, seed: int = 2, nan_at=None, zero_at=None, thirteen_at=None) -> np.ndarray:
    """Items whose `checked` fails only at `zero_at` (division by zero) and `thirteen_at` (an assert)."""
    xs = items(module, n, seed, nan_at)
    xs["v"] = np.where(np.isin(xs["v"], (0, 13)), 1, xs["v"])
    if zero_at is not None:
        xs["v"][zero_at] = 0  # k // 0: integer division by zero
    if thirteen_at is not None:
        xs["v"][thirteen_at] = 13  # not13's assert
    return xs


def wrap32(n: int) -> int:
    return (n + 2 ** 31) % 2 ** 32 - 2 ** 31


def oracle(function: str, xs: np.ndarray, *args):
    """What one call returns, from the spec: int32 arithmetic modulo 2^32, min/max by
    their rules (NaN if any is NaN, -0 below +0), from the value before the loop."""
    if function in ("total", "spread"):
        sign = 1 if function == "total" else -1
        return wrap32(sign * sum(int(v) for v in xs["v"]))
    value, want_min = (float("inf"), True) if function == "lowest" else (args[0], False)
    for x in xs["x"]:
        value = o.f64_min_max(value, float(x), want_min)
    return value


def same_value(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (a != a and b != b) or np.float64(a).tobytes() == np.float64(b).tobytes()
    return type(a) is type(b) and a == b


REDUCTIONS = [("total", ()), ("spread", ()), ("lowest", ()), ("peak", (0.5,)), ("peak", (float("-inf"),))]


@pytest.mark.parametrize("function, args", REDUCTIONS, ids=[f"{f}{a}" for f, a in REDUCTIONS])
@pytest.mark.parametrize("chunks", [7, (0, 1, N - 1), (N - 1, 1, 0)], ids=ids)
def test_reductions_as_one_call_and_the_oracle(nd, client, kernels, function, args, chunks):
    module = load(kernels)
    xs = items(module)
    want = getattr(module, function)(xs, *args)
    assert same_value(want, oracle(function, xs, *args))
    (got,) = compute(nd.map(kernels, function, chunked(xs, chunks), *args).result)
    assert same_value(got, want)


def test_a_nan_reaches_the_result(nd, client, kernels):
    module = load(kernels)
    xs = items(module, nan_at=150)
    assert module.lowest(xs) != module.lowest(xs)
    (got,) = compute(nd.map(kernels, "lowest", chunked(xs, 13)).result)
    assert got != got


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=12), seed=st.integers(0, 2 ** 32 - 1),
       nan_at=st.none() | st.integers(0, 500), zero_at=st.none() | st.integers(0, 500),
       thirteen_at=st.none() | st.integers(0, 500))
def test_generated_chunkings(nd, client, kernels, sizes, seed, nan_at, zero_at, thirteen_at):
    """Any chunking gives one call's spans and results, reductions and errors included."""
    module = load(kernels)
    n = sum(sizes)
    xs = failing_items(module, n, seed, nan_at, *(None if at is None or not n else at % n
                                                   for at in (zero_at, thirteen_at)))
    dxs = chunked(xs, tuple(sizes))
    total, lowest = compute(nd.map(kernels, "total", dxs).result, nd.map(kernels, "lowest", dxs).result)
    assert same_value(total, module.total(xs)) and same_value(lowest, module.lowest(xs))
    out = np.zeros(n, module.dtype("Out"))
    call = nd.map(kernels, "checked", chunked(out, tuple(sizes)), dxs, 7)
    failing = [at % n for at in (zero_at, thirteen_at) if at is not None and n]
    if failing:
        message = one_call_error(module.checked, out, xs, 7)
        with pytest.raises(nd.ChunkError) as raised:
            compute(call.result)
        assert (raised.value.message, raised.value.index) == (message, min(failing))
    else:
        got, written = compute(call.result, call.spans["out"])
        assert same_value(got, module.checked(out, xs, 7)) and same_bits(written, out)


# ---- errors ------------------------------------------------------------------------------------

def one_call_error(function, *args) -> str:
    with pytest.raises(Exception) as raised:
        function(*args)
    return str(raised.value)


@pytest.mark.parametrize("zero_at, thirteen_at, index", [(100, None, 100), (None, 150, 150), (100, 60, 60),
                                                         (60, 100, 60), (0, None, 0), (N - 1, None, N - 1)])
def test_an_error_in_a_chunk_is_one_calls_error_at_its_element(nd, client, kernels, zero_at, thirteen_at, index):
    module = load(kernels)
    xs = failing_items(module, zero_at=zero_at, thirteen_at=thirteen_at)
    out = np.zeros(N, module.dtype("Out"))
    message = one_call_error(module.checked, out, xs, 7)
    assert message.startswith(f"{kernels}:")
    call = nd.map(kernels, "checked", chunked(np.zeros_like(out), 13), chunked(xs, 13), 7)
    with pytest.raises(nd.ChunkError) as raised:
        compute(call.result)
    assert (raised.value.message, raised.value.index, raised.value.chunk) == (message, index, index // 13)
    assert str(raised.value) == f"{message} (at index {index} of the spans, in chunk {index // 13})"
    start = index // 13 * 13
    with pytest.raises(nd.ChunkError) as raised:
        compute(call.spans["out"])
    assert raised.value.index == index
    with pytest.raises(nd.ChunkError):
        compute(call.spans["out"][N - 1:])  # a block after the failing chunk fails too
    if start:  # the blocks before it: as one call wrote them
        (before,) = compute(call.spans["out"][:start])
        assert same_bits(before, out[:start])


def test_an_error_before_the_span_loop_has_no_index(nd, client, kernels):
    module = load(kernels)
    xs = failing_items(module)
    message = one_call_error(module.checked, np.zeros(N, module.dtype("Out")), xs, 0)
    assert message == f"{kernels}:57: k must be positive"
    call = nd.map(kernels, "checked", chunked(np.zeros(N, module.dtype("Out")), 13), chunked(xs, 13), 0)
    with pytest.raises(nd.ChunkError) as raised:
        compute(call.result)
    assert (raised.value.message, raised.value.index, raised.value.chunk) == (message, None, 0)


def test_a_refused_argument_is_one_calls_error(nd, client, kernels):
    """The same dask array for two spans is one buffer: the exclusive span overlaps the other."""
    module = load(kernels)
    xs = failing_items(module)
    message = one_call_error(module.bump, xs, xs)
    assert message == "bad argument #1 to 'bump' (exclusive span overlaps argument #2)"
    dxs = chunked(xs, 13)
    with pytest.raises(nd.ChunkError) as raised:
        compute(nd.map(kernels, "bump", dxs, dxs).spans["out"])
    assert (raised.value.message, raised.value.index) == (message, None)


def test_a_message_names_the_file_as_the_user_did(nd, kernels, tmp_path, monkeypatch):
    """A worker in another working directory names the module otherwise: the
    message is rewritten to the path the graph was built with."""
    import dask
    (tmp_path / "here").mkdir()
    shutil.copy(kernels, tmp_path / "here" / "moved.nupp")
    monkeypatch.chdir(tmp_path / "here")
    module = load("moved.nupp")
    xs = failing_items(module, zero_at=3)
    message = one_call_error(module.checked, np.zeros(N, module.dtype("Out")), xs, 7)
    assert message.startswith("moved.nupp:")
    call = nd.map("moved.nupp", "checked", chunked(np.zeros(N, module.dtype("Out")), 13), chunked(xs, 13), 7)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(nd.ChunkError) as raised:
        dask.compute(call.result, scheduler="sync")
    assert raised.value.message == message


def test_a_changed_module_is_refused_on_the_worker(nd, kernels, tmp_path):
    import dask
    path = tmp_path / "changing.nupp"
    shutil.copy(kernels, path)
    xs = items(load(path))
    call = nd.map(path, "total", chunked(xs, 13))
    path.write_text(KERNELS.replace("acc + xs[i].v", "acc + 2 * xs[i].v"))
    with pytest.raises(NuppEnvironmentError, match="is not the module the graph was built from"):
        dask.compute(call.result, scheduler="sync")


# ---- what cannot be split ----------------------------------------------------------------------

REFUSED = [
    ("position", "78:9", "the span loop's counter %i is read as a value at 78:9: in each chunk's call it "
                          "counts from 1 again"),
    ("sized", "85:9", "%out's length is read at 85:9, not as the span loop's bound or in an assert comparing "
                       "span lengths: each chunk's call sees its own chunk's length"),
    ("from_two", "91:5", "the span loop at 91:5 is not `for i = 1, #s` (step 1 over a whole span): a chunk "
                          "runs the loop over its own elements"),
    ("count_from", "98:11", "%acc, the result reduced by add.i32, does not start at 0, the identity of add.i32, "
                             "before the span loop (at 98:11)"),
    ("stop_at", "110:13", "a break at 110:13 leaves the span loop: one call stops there, while the chunks after "
                          "it run regardless"),
    ("fsum", "119:5", "%s, declared outside the span loop at 119:5, is assigned in it and is not an exact "
                      "reduction"),
    ("doubled", "131:5", "what follows the span loop at 131:5 is not `return acc` of an exact reduction"),
    ("not13", "48:1", "it has no loop over spans"),
]


@pytest.mark.parametrize("function, at, reason", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_function_that_could_tell_its_chunk_is_refused(nd, kernels, function, at, reason):
    module = load(kernels)
    xs = chunked(items(module), 13)
    out = chunked(np.zeros(N, module.dtype("Out")), 13)
    args = {"position": (out,), "sized": (out,), "from_two": (out,), "stop_at": (out, xs), "not13": (1,)}
    with pytest.raises(NuppError) as raised:
        nd.map(kernels, function, *args.get(function, (xs,)))
    text = str(raised.value)
    assert text.startswith(f"{kernels}:{at}: error: nupp.dask cannot run '{function}' chunk by chunk: {reason}")
    assert f"hint: call it once on the whole arrays (nupp.load(...).{function})" in text
    assert "\n" + " " * 6 + "| " in text  # the source line, with a caret under the construct


def test_arguments_that_cannot_be_chunked_are_refused(nd, kernels):
    module = load(kernels)
    xs = items(module)
    out = np.zeros(N, module.dtype("Out"))
    with pytest.raises(ValueError, match=r"argument #2 \(xs\) of 'checked' is chunked \(13, .*every span needs "
                                         r"the same chunks \(x.rechunk\(first.chunks\) makes them so\)"):
        nd.map(kernels, "checked", chunked(out, 7), chunked(xs, 13), 7)
    with pytest.raises(TypeError, match=r"argument #1 \(xs\) of 'total' is a span: a 1-d dask array expected, "
                                        "got ndarray"):
        nd.map(kernels, "total", xs)
    with pytest.raises(TypeError, match=r"argument #3 \(k\) of 'checked' is not a span"):
        nd.map(kernels, "checked", chunked(out, 7), chunked(xs, 7), chunked(xs, 7))
    with pytest.raises(TypeError, match=r"'checked' takes 3 arguments \(out, xs, k\), got 2"):
        nd.map(kernels, "checked", chunked(out, 7), chunked(xs, 7))
    with pytest.raises(TypeError, match="unknown option 'colour'"):
        nd.map(kernels, "total", chunked(xs, 7), colour=2)
    with pytest.raises(AttributeError, match="has no @aot function 'missing'"):
        nd.map(kernels, "missing", chunked(xs, 7))


def test_a_span_of_another_dtype_or_shape_is_refused_at_map_time(nd, kernels):
    module = load(kernels)
    out = np.zeros(N, module.dtype("Out"))
    with pytest.raises(TypeError, match=r"argument #2 \(xs\) of 'checked' is a span of Item: a dask array of its "
                                        r"dtype expected \(nupp.load\(...\).dtype\('Item'\) is .*\), got dtype "
                                        r"\[\('w', '<i4'\)\]"):
        nd.map(kernels, "checked", chunked(out, 7), chunked(out, 7), 7)
    import dask.array as da
    grid = da.zeros((4, 4), dtype=module.dtype("Item"), chunks=2)
    with pytest.raises(TypeError, match=r"argument #1 \(xs\) of 'total' is a span: a 1-d dask array expected, "
                                        "got a 2-d dask array"):
        nd.map(kernels, "total", grid)


@pytest.mark.parametrize("k, refusal", [
    (2 ** 40, "bad argument #3 to 'checked' (int32 expected, got 1099511627776)"),
    ("7", "bad argument #3 to 'checked' (int32 expected, got string)"),
    (None, "bad argument #3 to 'checked' (int32 expected, got None)"),
], ids=["out of range", "a string", "None"])
def test_a_scalar_the_boundary_refuses_is_refused_at_map_time(nd, kernels, k, refusal):
    """In the boundary's own words (LANGUAGE.md: an integer parameter takes an
    integer in range), which one call on the whole arrays raises too."""
    module = load(kernels)
    xs = items(module)
    out = np.zeros(N, module.dtype("Out"))
    assert one_call_error(module.checked, out, xs, k) == refusal
    with pytest.raises(TypeError) as raised:
        nd.map(kernels, "checked", chunked(out, 7), chunked(xs, 7), k)
    assert str(raised.value) == f"nupp.dask.map: {refusal}: every chunk's call would refuse it"


def test_an_error_of_the_functions_own_code_is_left_to_the_chunks(nd, kernels):
    """`k must be positive` is the function's assert, not a refused argument: map builds the graph."""
    module = load(kernels)
    call = nd.map(kernels, "checked", chunked(np.zeros(N, module.dtype("Out")), 7), chunked(items(module), 7), 0)
    assert set(call.spans) == {"out"}


def test_a_function_exported_under_another_name_is_refused_at_map_time(nd, kernels, tmp_path):
    path = tmp_path / "renamed.nupp"
    path.write_text(KERNELS.replace("return {Item = Item,", "return {sum_of = total, Item = Item,")
                    .replace("spread = spread,", "spread = total,"))
    xs = chunked(items(load(path)), 7)
    with pytest.raises(AttributeError, match="exports @aot function 'total' as 'spread': map it by its declared name"):
        nd.map(path, "spread", xs)


# ---- the local schedulers, and loading once per worker ------------------------------------------

@pytest.mark.parametrize("scheduler", ["threads", "sync"])
def test_local_schedulers(nd, kernels, scheduler):
    path = SPIKE / "mandelbrot.nupp"
    module = load(path)
    grid = pixels(module)
    want = np.zeros(N, module.dtype("Escape"))
    module.mandelbrot(want, grid, 256)
    call = nd.map(path, "mandelbrot", chunked(np.zeros_like(want), 7), chunked(grid, 7), 256, mode="scalar")
    (escapes,) = compute(call.spans["out"], scheduler=scheduler)
    assert same_bits(escapes, want)
    xs = items(load(kernels))
    (total,) = compute(nd.map(kernels, "total", chunked(xs, 13)).result, scheduler=scheduler)
    assert total == oracle("total", xs)


def _loaded_modules() -> dict:
    """In a worker: the modules its process loaded, by path, each as the id of its NuppModule."""
    import nupp.dask
    return {ref.path: id(module) for ref, module in nupp.dask._LOADED.items()}


def test_each_worker_loads_a_module_once(nd, client, kernels):
    """Two maps of the module, each computed: every worker process keeps the module it loaded."""
    xs = items(load(kernels))
    loaded = []
    for _ in range(2):
        compute(nd.map(kernels, "total", chunked(xs, 7)).result)
        loaded.append(client.run(_loaded_modules))
    assert len(loaded[0]) == 2 and loaded[0] == loaded[1]
    assert any(str(kernels) in modules for modules in loaded[0].values())


def test_the_signature_nupp_dask_checks_against(kernels):
    """NuppModule.signature, as `checked` is declared in KERNELS."""
    from nupp.runtime.api import Param, Signature
    module = load(kernels)
    assert module.signature("checked") == Signature("checked", (
        Param("out", "span", "Out", module.dtype("Out"), writable=True),
        Param("xs", "span", "Item", module.dtype("Item"), writable=False),
        Param("k", "int32")), "int32")
    assert module.signature("bump").result == "nil"
    with pytest.raises(AttributeError, match="exports no @aot function 'Item'"):
        module.signature("Item")


def test_emit_report_says_which_functions_nupp_dask_splits(kernels, capsys, monkeypatch):
    """`nupp emit --report`: one line per @aot function, with the reason map refuses it for."""
    from nupp.runtime.cli import main as cli_main
    monkeypatch.chdir(kernels.parent)
    assert cli_main(["emit", "--report", kernels.name]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "nupp.dask.map" in line]
    refused = {function: reason for function, _, reason in REFUSED}
    splits = ["total", "spread", "lowest", "peak", "checked", "bump"]
    assert sorted(line.split(": ")[1] for line in lines) == sorted(splits + list(refused))
    for function in splits:
        assert f"{kernels.name}: {function}: nupp.dask.map splits it into chunks" in lines
    for function, reason in refused.items():
        head = f"{kernels.name}: {function}: nupp.dask.map cannot split it into chunks: {reason}"
        assert any(line.startswith(head) for line in lines), head
