"""`nupp bench`'s peers compute what nupp computes: Numba `@njit` kernels
(bench/peers/numba_kernels.py), the explicit-SIMD C at every gang under GCC and
Clang (bench/handwritten/simd_kernels.c) and the scalar hand-written C
(kernels.c) each give the same output bytes as nupp's scalar C on the bench's
inputs, on prefixes of every length around the gangs' tails, and for corrected
on every triple of interesting binary32 patterns.  A peer that computed
something else would make the bench's ratios meaningless.

mixedwidth's inputs hold no NaN: nupp canonicalizes a binary32 NaN it stores,
the peers keep the payload the arithmetic made, and LANGUAGE.md leaves that
payload unobservable.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import nupp
from tests.conftest import require_module, require_tool

from bench.native_speed import WORKLOADS
from bench.peers.hand_c import NATIVE, SIMD_GANGS, Library, hand_scalar, hand_simd, simd_label

SIZE = 2 * 32 * 16 + 3  # a few gangs of 32 and a tail; mandelbrot takes the largest square below
PREFIXES = sorted({0, 1, 2, *range(7, 10), *range(15, 18), *range(31, 34), *range(63, 66), 97})

# corrected_main.nupp's interesting binary32 patterns: zeros, subnormals, +-1 and neighbours, the largest
# finite, infinities, NaNs with payloads and signs
PATTERNS = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0xBF800000,
            0x3F800001, 0x3F7FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
            0x7FC00001, 0x7F800001, 0xFFBFFFFF, 0x42B00000, 0xC2D00000, 0x42B20000, 0xC2D20000]


@pytest.fixture(scope="module")
def peers() -> dict[str, Library]:
    """Every C peer `nupp bench` runs: kernels.c at -O2 and -O3 -march=native, simd_kernels.c per gang and compiler."""
    libraries = {"hand C -O2": hand_scalar(), "hand C -O3 native": hand_scalar(NATIVE)}
    for cc in ("gcc", "clang"):
        require_tool(cc)
        libraries.update({simd_label(gang, cc): hand_simd(cc, gang) for gang in SIMD_GANGS})
    return libraries


def _inputs(name: str, scalar) -> tuple:
    workload = WORKLOADS[name]
    arrays = workload.build(scalar, SIZE, np.random.default_rng(11))
    if name == "corrected":  # every triple of the patterns ahead of the random ones
        edges = np.array(list(itertools.product(PATTERNS, repeat=3)), dtype=np.uint32)
        triples = np.zeros(len(edges), dtype=arrays[1].dtype)
        triples["a"], triples["b"], triples["c"] = edges.T
        inp = np.concatenate([triples, arrays[1]])
        arrays = (np.zeros(len(inp), dtype=arrays[0].dtype), inp)
    return arrays


def _run(call_of, arrays, length=None) -> bytes:
    """The output bytes of one call on fresh copies of `arrays` (their first `length` elements)."""
    fresh = tuple(_byte_copy(a[:length]) for a in arrays)
    call_of(fresh)()
    return fresh[0].tobytes()


def _byte_copy(array):
    """A copy with every byte, the padding between fields too (NumPy's copies skip it)."""
    copy = np.empty(len(array), dtype=array.dtype)
    copy.view(np.uint8)[...] = array.view(np.uint8)
    return copy


def _check_peer(name: str, call_of) -> None:
    workload = WORKLOADS[name]
    scalar = nupp.load(workload.path, mode="scalar")
    arrays = _inputs(name, scalar)
    expected = _run(lambda a: workload.nupp_call(scalar, a), arrays)
    assert _run(call_of, arrays) == expected
    item = arrays[0].itemsize
    for length in PREFIXES:
        assert _run(call_of, arrays, length) == expected[:length * item], f"first {length} elements"


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_numba_peer_gives_nupps_bits(name):
    require_module("numba")
    _check_peer(name, WORKLOADS[name].numba_call)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_hand_written_c_gives_nupps_bits(name, peers):
    workload = WORKLOADS[name]
    for label, library in peers.items():
        try:
            _check_peer(name, lambda arrays: workload.c_call(library, arrays))
        except AssertionError as err:
            raise AssertionError(f"{label}: {err}") from None


def test_the_check_catches_a_peer_computing_something_else():
    """The comparison is not vacuous: a peer off by one element's bits fails it."""
    workload = WORKLOADS["tecsbits"]

    def wrong(arrays):
        def run():
            workload.nupp_call(nupp.load(workload.path, mode="scalar"), arrays)()
            arrays[0]["hash"][len(arrays[0]) // 2] ^= 1
        return run

    with pytest.raises(AssertionError):
        _check_peer("tecsbits", wrong)
