"""nupp.dask: an @aot function mapped over chunked Dask arrays, with the bits of one call.

    import dask.array as da
    import nupp.dask

    call = nupp.dask.map("mandelbrot.nupp", "mandelbrot", out, pixels, 256)
    escapes = call.spans["out"]     # a dask array: `out` as one call on the whole arrays leaves it
    call.result.compute()           # what that call returns (None for a function of no result)

Each span argument is a 1-d dask array of the struct's dtype, and all of
them have the same chunks (`x.rechunk(y.chunks)` makes them so); every other
argument is passed as it is to each chunk's call.  The function is called
once per chunk, on a copy of the chunk's elements of each span it writes
(the same dask array given for two spans is one buffer, as the same NumPy
array would be); `spans` holds the written spans as new dask arrays, the
inputs are never changed.  `result` is a `dask.delayed.Delayed` combining
the chunks' results through a tree of `split_every` (8) at a time with the
reduction's exact op (the IR's own rule, scalar_ir/fold.py), so it equals
one call's result bit for bit.  Only functions whose iterations cannot tell
where their chunk starts are split (runtime/chunking.py); the others are
refused with the reason, a NuppError at the construct refused.

`map` refuses at once, before any task runs, what no chunk could run: an
unknown function or one exported under another name, a wrong number of
arguments, a span that is not a 1-d dask array of the struct's dtype (the
client loads the module, interpreted, for its signature: `NuppModule.signature`),
spans chunked differently, an argument the host boundary refuses (checked by
a call on empty spans, so in the boundary's own words), and a function that
cannot be chunked (with the reason).

An error: a call of a chunk raises, and the element whose iteration raised
is found by running shorter prefixes of the chunk (iterations do not depend
on the chunk's length).  Every output block from that chunk on, and
`result`, raise `ChunkError`: `message` is the text one call on the whole
arrays raises (`FILE:LINE: message`, the first error in element order),
`index` the element's NumPy index in the whole arrays (None for an error
before the span loop, or an argument the call refused).  One call leaves the elements before that index
written; here the blocks before the failing chunk compute as one call wrote
them, and computing the arrays raises.

Workers get the module's path, its digest and the load options, never a
loaded module (it holds a LuaJIT state): each worker process loads it once
(`nupp.load`, whose compile cache builds the library once per machine) and
refuses a file that differs from the one the graph was built from.  Every
worker needs nupp, the module at the same absolute path, and a C compiler
(or a warm cache).  Calls in one process do not overlap (two threads calling
took as long as one calling twice, measured): Dask's local threaded scheduler
gives the same results, and worker processes (a `distributed` cluster, or
scheduler="processes") use the cores.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from itertools import accumulate
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import dask
import dask.array as da
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

from nupp.errors import Source, error_at
from nupp.paths import NuppEnvironmentError
from nupp.pipeline import compile_module
from nupp.runtime.api import OPTION_TYPES, NuppModule, NuppRuntimeError, Signature, load
from nupp.runtime.chunking import chunk_refusal, result_op
from nupp.runtime.host import display_path
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.fold import evaluate

__all__ = ["ChunkError", "ChunkedCall", "map"]

LOAD_OPTIONS = tuple(OPTION_TYPES)  # nupp.load's keyword arguments


class ChunkError(NuppRuntimeError):
    """A chunk's call raised.  `message` is what one call on the whole arrays
    raises, `index` the NumPy index (in the whole arrays) of the element whose
    iteration raised (None: the call raised before its span loop, or refused
    an argument), and `chunk` the number of the chunk."""

    def __init__(self, message: str, index: int | None, chunk: int):
        super().__init__(message, index, chunk)  # the arguments rebuild it when a worker's error is unpickled
        self.message, self.index, self.chunk = message, index, chunk

    def __str__(self) -> str:
        where = "before the span loop" if self.index is None else f"at index {self.index} of the spans"
        return f"{self.message} ({where}, in chunk {self.chunk})"


@dataclass(frozen=True)
class ChunkedCall:
    """A function mapped over chunks: the spans it writes, by parameter name in
    parameter order, as dask arrays, and its result as a Delayed."""

    spans: dict
    result: Delayed


def map(path: str | Path, function: str, *args, split_every: int = 8, **load_options) -> ChunkedCall:
    """`function` of the module at `path` called on `args` chunk by chunk (see the
    module's docstring); `load_options` are nupp.load's (mode, cc, gang, tier,
    ...), with which every worker loads the module."""
    unknown = sorted(set(load_options) - set(LOAD_OPTIONS))
    if unknown:
        raise TypeError(f"nupp.dask.map: unknown option {unknown[0]!r} "
                        f"(nupp.load takes {', '.join(LOAD_OPTIONS)})")
    if split_every < 2:
        raise ValueError(f"nupp.dask.map: split_every must be at least 2, not {split_every!r}")
    module = _module_ref(Path(path), load_options)
    fn = _chunkable(module, function)
    if len(args) != len(fn.params):
        raise TypeError(f"nupp.dask.map: '{function}' takes {len(fn.params)} arguments "
                        f"({', '.join(p.name for p in fn.params)}), got {len(args)}")
    signature = _declared(_loaded(_checking(module)), module, function)
    sources, slots = _span_sources(signature, args)
    _check_scalars(module, signature, args)
    written = tuple(k for k, p in enumerate(fn.params) if isinstance(p.type, ir.SpanType) and p.type.writable)
    call = _Call(module, function, tuple(slots), written, result_op(fn))
    return _graph(call, sources, tuple(fn.params[k].name for k in written), split_every)


# ---- the client: the function, its arguments, the graph ------------------------------------

@dataclass(frozen=True)
class _ModuleRef:
    """What a worker loads: the module's absolute path, the path as the user
    named it (error messages start with it), its digest and nupp.load's options."""

    path: str
    shown: str
    digest: str
    options: tuple


@dataclass(frozen=True)
class _Block:
    """A span argument: the chunk's block of the `source`-th distinct dask array."""

    source: int


@dataclass(frozen=True)
class _Call:
    """One chunk's call: its arguments (a _Block for each span), the positions of
    the written spans, and the op combining the chunks' results (None: no result)."""

    module: _ModuleRef
    function: str
    args: tuple
    written: tuple
    combine: str | None

    def arguments(self, blocks, length: int | None = None) -> list:
        """The arguments for the chunk whose blocks are `blocks`, or for their
        first `length` elements: a fresh copy of each block a span writes."""
        copied = {self.args[k].source for k in self.written}
        arrays = [np.array(b[:length], order="C") if s in copied else np.ascontiguousarray(b[:length])
                  for s, b in enumerate(blocks)]
        return [arrays[a.source] if isinstance(a, _Block) else a for a in self.args]


def _module_ref(path: Path, options: dict) -> _ModuleRef:
    return _ModuleRef(str(path.resolve()), display_path(path), _digest(path), tuple(sorted(options.items())))


def _digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _chunkable(module: _ModuleRef, function: str) -> ir.Function:
    """The IR of `function`; a NuppError at it if it cannot run chunk by chunk."""
    source = Source.from_file(module.shown)
    fn = compile_module(source).function(function)
    if fn is None:
        raise AttributeError(f"nupp.dask.map: {module.shown} has no @aot function '{function}'")
    refusal = chunk_refusal(fn)
    if refusal is not None:
        raise error_at(source, refusal.loc.line, refusal.loc.col,
                       f"nupp.dask cannot run '{function}' chunk by chunk: {refusal.reason}",
                       hint=f"call it once on the whole arrays (nupp.load(...).{function})")
    return fn


def _checking(module: _ModuleRef) -> _ModuleRef:
    """The module as the client loads it to check arguments: interpreted (the
    host boundary's checks are the same in every mode, and need no C compiler)."""
    return replace(module, options=(("mode", "interp"),))


def _declared(loaded: NuppModule, module: _ModuleRef, name: str) -> Signature:
    """The signature of the @aot function exported as `name`, which must be the
    one declared `name` (the function the client split)."""
    signature = loaded.signature(name)
    if signature.name != name:
        raise AttributeError(f"nupp.dask: {module.shown} exports @aot function '{signature.name}' as '{name}': "
                             f"map it by its declared name, exported under that name")
    return signature


def _span_sources(signature: Signature, args) -> tuple[list, list]:
    """The distinct dask arrays the span arguments are (one chunking for all),
    and the arguments with each span replaced by a _Block of its array."""
    sources, slots = [], []
    for k, (param, value) in enumerate(zip(signature.params, args)):
        where = f"argument #{k + 1} ({param.name}) of '{signature.name}'"
        if param.dtype is None:
            if dask.is_dask_collection(value):
                raise TypeError(f"nupp.dask.map: {where} is not a span, and is passed as it is to every "
                                f"chunk: got a dask {type(value).__name__}; compute it first")
            slots.append(value)
            continue
        if not isinstance(value, da.Array) or value.ndim != 1:
            got = f"a {value.ndim}-d dask array" if isinstance(value, da.Array) else type(value).__name__
            raise TypeError(f"nupp.dask.map: {where} is a span: a 1-d dask array expected, got {got}")
        if value.dtype != param.dtype:
            raise TypeError(f"nupp.dask.map: {where} is a span of {param.struct}: a dask array of its dtype "
                            f"expected (nupp.load(...).dtype({param.struct!r}) is {param.dtype}), got dtype "
                            f"{value.dtype}")
        at = next((s for s, a in enumerate(sources) if a.name == value.name), len(sources))
        if at == len(sources):
            if sources and value.chunks != sources[0].chunks:
                raise ValueError(f"nupp.dask.map: {where} is chunked {value.chunks[0]}, the first span "
                                 f"{sources[0].chunks[0]}: every span needs the same chunks "
                                 "(x.rechunk(first.chunks) makes them so)")
            sources.append(value)
        slots.append(_Block(at))
    return sources, slots


def _check_scalars(module: _ModuleRef, signature: Signature, args) -> None:
    """Refuse now what every chunk's call would refuse: the arguments that are
    not spans, as the host boundary checks them in a call on empty spans (an
    error of the function's own code, its prologue's, is left to the chunks)."""
    empty = [a if p.dtype is None else np.zeros(0, p.dtype) for p, a in zip(signature.params, args)]
    try:
        getattr(_loaded(_checking(module)), signature.name)(*empty)
    except NuppRuntimeError as err:
        message = _as_shown(str(err), module)
        if not message.startswith(module.shown + ":"):
            raise TypeError(f"nupp.dask.map: {message}: every chunk's call would refuse it") from None


def _graph(call: _Call, sources: list, names: tuple, split_every: int) -> ChunkedCall:
    """Per chunk: its call, its summary (result, error), and each written span's
    block; the summaries combined through a tree whose root is the result.  A
    block raises the first error of the chunks up to its own, which the tree's
    nodes covering the chunks before it tell (a handful per level, so no chain
    of tasks runs through the chunks).  One layer holds every task.

    Every task takes the call itself, one node of the graph, as an argument:
    with two dependencies or more, none of them is fused into a linear chain,
    whose renamed keys would depend on what a computation asks for (a
    distributed scheduler still holding a key from an earlier computation,
    after an error, may deadlock on the same key with another task)."""
    layer = f"nupp-{call.function}-{tokenize(call, *(s.name for s in sources))}"
    spec, sizes = (layer, "call"), sources[0].chunks[0]
    blocks = [s.__dask_keys__() for s in sources]  # of a 1-d array: its blocks' keys in order
    graph = {spec: call}
    calls = [(layer, "chunk", b) for b in range(len(sizes))]
    for b, offset in enumerate(accumulate(sizes[:-1], initial=0)):
        graph[calls[b]] = (_run_chunk, spec, b, offset, *(keys[b] for keys in blocks))
    levels = [[(layer, "summary", b) for b in range(len(sizes))]]
    graph.update({summary: (_summary, spec, chunk) for summary, chunk in zip(levels[0], calls)})
    while len(levels[-1]) > 1:
        below, level = levels[-1], len(levels)
        levels.append([(layer, f"combine{level}", i // split_every) for i in range(0, len(below), split_every)])
        graph.update({node: (_combine, spec, *below[i * split_every:(i + 1) * split_every])
                      for i, node in enumerate(levels[-1])})
    result = (layer, "result")
    graph[result] = (_result, spec, levels[-1][0])
    result = Delayed(result, HighLevelGraph.from_collections(layer, graph, dependencies=sources), layer=layer)
    spans = {}
    for k, (name, position) in enumerate(zip(names, call.written)):
        array = f"{layer}-{name}"
        takes = {(array, b): (_take, spec, chunk, k, *_covering(levels, split_every, b))
                 for b, chunk in enumerate(calls)}
        # the struct's dtype as it is (da.concatenate of blocks would drop its padding)
        spans[name] = da.Array(HighLevelGraph.from_collections(array, takes, dependencies=[result]), array,
                               chunks=(sizes,), dtype=sources[call.args[position].source].dtype)
    return ChunkedCall(spans, result)


def _covering(levels: list, split_every: int, chunk: int) -> list:
    """The tree's nodes that together summarize the chunks before `chunk`, in order:
    from the top, every whole group of a level that fits (a level's groups
    start at multiples of its size, and so does what is left to cover)."""
    nodes, start = [], 0
    for level in reversed(range(len(levels))):
        size = split_every ** level
        while start + size <= chunk:
            nodes.append(levels[level][start // size])
            start += size
    return nodes


# ---- the workers: one chunk's call, and what follows from it ---------------------------------

@dataclass(frozen=True)
class _Outcome:
    """A chunk's call: the written spans, the value returned, or the error."""

    written: tuple
    value: object
    error: ChunkError | None


def _run_chunk(call: _Call, chunk: int, offset: int, *blocks) -> _Outcome:
    function = _function(call.module, call.function)
    args = call.arguments(blocks)
    try:
        value = function(*args)
    except NuppRuntimeError as err:
        message = _as_shown(str(err), call.module)
        # the function's code raised (FILE:LINE: ...), not the boundary refusing an argument
        in_code = message.startswith(call.module.shown + ":")
        failing = _failing_iteration(function, call, blocks, len(blocks[0])) if in_code else None
        return _Outcome((), None, ChunkError(message, None if failing is None else offset + failing - 1, chunk))
    return _Outcome(tuple(args[k] for k in call.written), value, None)


def _failing_iteration(function, call: _Call, blocks, length: int) -> int | None:
    """The iteration (from 1) of the chunk's span loop that raised, None if the
    call raises before it: the shortest prefix of the chunk whose call raises
    (iterations before it run as in the whole chunk's call)."""
    def raises(n: int) -> bool:
        try:
            function(*call.arguments(blocks, n))
        except NuppRuntimeError:
            return True
        return False

    if raises(0):
        return None
    low, high = 0, length  # the prefix of `low` elements runs, the one of `high` raises
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if raises(middle) else (middle, high)
    return high


def _summary(call: _Call, outcome: _Outcome) -> tuple:
    return outcome.value, outcome.error


def _take(call: _Call, outcome: _Outcome, k: int, *before: tuple) -> np.ndarray:
    """The k-th written span of a chunk's call, or the first error of the chunks up
    to it (`before` summarizes the chunks before it, in order)."""
    error = next((e for _, e in before if e is not None), outcome.error)
    if error is not None:
        raise error
    return outcome.written[k]


def _combine(call: _Call, *summaries: tuple) -> tuple:
    """Consecutive chunks' (result, error) as one: the first error, else the results
    combined in order with the call's op (exact: any grouping gives the same bits)."""
    error = next((e for _, e in summaries if e is not None), None)
    if error is not None or call.combine is None:
        return None, error
    return functools.reduce(lambda a, b: evaluate(call.combine, (a, b)), (v for v, _ in summaries)), None


def _result(call: _Call, summary: tuple):
    value, error = summary
    if error is not None:
        raise error
    return value


# ---- the module, loaded once per worker process ------------------------------------------------

_LOADED: dict = {}  # _ModuleRef -> NuppModule: each worker process loads a module once
_LOADING = threading.Lock()


def _loaded(module: _ModuleRef) -> NuppModule:
    """The module, loaded in this process."""
    with _LOADING:
        loaded = _LOADED.get(module)
        if loaded is None:
            if _digest(module.path) != module.digest:
                raise NuppEnvironmentError(f"nupp.dask: {module.path} on this worker is not the module the graph "
                                           "was built from (its contents differ): give every worker the same file")
            loaded = _LOADED[module] = load(module.path, **dict(module.options))
    return loaded


def _function(module: _ModuleRef, name: str):
    """The @aot function `name` of the module, loaded in this process: the one the
    client split, declared `name`."""
    loaded = _loaded(module)
    _declared(loaded, module, name)
    return getattr(loaded, name)


def _as_shown(message: str, module: _ModuleRef) -> str:
    """A message of the module's call with the path as the user named it (a
    worker names the file relative to its own working directory)."""
    here = display_path(module.path)
    return module.shown + message[len(here):] if message.startswith(here + ":") else message
