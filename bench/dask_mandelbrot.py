"""Example and benchmark (not a test): a Mandelbrot image through nupp.dask on a local cluster.

    .venv/bin/python bench/dask_mandelbrot.py [--pixels N] [--chunk N] [--workers N] [--max-iter N]

The image is `--pixels` pixel centres over [-2, 1] x [-1.5, 1.5] (a grid
about as wide as high), made chunk by chunk on the workers, and the BENCH
kernel (kernel-subset-spike/mandelbrot.nupp) runs on each chunk of `--chunk`
pixels on a dask.distributed LocalCluster of `--workers` processes of one
thread.  Printed: the cluster's start, the first call on each worker (it
loads the module: the compile cache builds the library once per machine),
the run (the sum of the escape counts and the pixels inside, reduced by Dask
without bringing the image back), checked on three chunks against one call
of the loaded module, and Dask alone on the same chunks (the pixels made,
copied and summed, no kernel); then the cost of a chunk itself: the same
graph over `--overhead-chunks` chunks of one pixel each, and Dask alone on
them; last the kernel's own time in this process (one call on every 97th
pixel, scaled to the image), and what the run took beyond Dask alone and the
kernel split over the workers, per chunk.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

MANDELBROT = Path(__file__).resolve().parent / "kernel-subset-spike" / "mandelbrot.nupp"


def grid(pixels: int) -> tuple[int, int]:
    """The image's width and height: about as wide as high, at least `pixels` in all."""
    width = max(1, math.isqrt(pixels))
    return width, -(-pixels // width)


def pixel_block(index: np.ndarray, width: int, height: int, dtype: np.dtype) -> np.ndarray:
    """The pixels whose numbers (row by row) are `index`, as Pixel structs."""
    block = np.zeros(len(index), dtype)
    block["cx"] = -2 + 3 * ((index % width) + 0.5) / width
    block["cy"] = -1.5 + 3 * ((index // width) + 0.5) / height
    return block


def image(pixels: int, chunk: int, dtype: np.dtype):
    """The pixels as a dask array of Pixel structs, each block made where it is used."""
    import dask.array as da
    index = da.arange(pixels, chunks=chunk, dtype=np.int64)
    return index.map_blocks(pixel_block, *grid(pixels), dtype, dtype=dtype)


def escapes(pixels: int, chunk: int, max_iter: int, dtypes: tuple):
    """The escape counts of the image as a dask array (nupp.dask.map)."""
    import dask.array as da
    import nupp.dask
    pixel, escape = dtypes
    call = nupp.dask.map(MANDELBROT, "mandelbrot", da.zeros(pixels, dtype=escape, chunks=chunk),
                         image(pixels, chunk, pixel), max_iter)
    return call.spans["out"]


def plain(pixels: int, chunk: int, dtype: np.dtype):
    """Dask alone, for comparison: the image's pixels made, copied and summed."""
    return image(pixels, chunk, dtype)["cx"].map_blocks(np.copy).sum()


def timed(work):
    start = time.perf_counter()
    value = work()
    return value, time.perf_counter() - start


def check_chunks(counts, pixels: int, chunk: int, max_iter: int, module) -> None:
    """Three chunks of the dask run against one call of the loaded module on their pixels."""
    for b in sorted({0, counts.numblocks[0] // 2, counts.numblocks[0] - 1}):
        start = b * chunk
        index = np.arange(start, min(start + chunk, pixels))
        want = np.zeros(len(index), module.dtype("Escape"))
        module.mandelbrot(want, pixel_block(index, *grid(pixels), module.dtype("Pixel")), max_iter)
        got = counts.blocks[b].compute()
        if got["n"].tobytes() != want["n"].tobytes():
            raise SystemExit(f"chunk {b} differs from one call")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pixels", type=int, default=10_000_000, help="pixels in the image (default 10^7)")
    parser.add_argument("--chunk", type=int, default=1_000_000, help="pixels per chunk (default 10^6)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--max-iter", type=int, default=256, help="iterations before a pixel counts as inside")
    parser.add_argument("--overhead-chunks", type=int, default=400,
                        help="one-pixel chunks for the cost of a chunk (default 400)")
    args = parser.parse_args(argv)

    import dask
    from distributed import Client, LocalCluster

    import nupp

    module = nupp.load(MANDELBROT)
    dtypes = (module.dtype("Pixel"), module.dtype("Escape"))
    start = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster)
    print(f"cluster of {args.workers} worker processes: started in {time.perf_counter() - start:.2f} s")
    _, warm = timed(lambda: escapes(8 * args.workers, 1, args.max_iter, dtypes).compute())
    print(f"first calls (each worker loads the module): {warm:.2f} s")

    counts = escapes(args.pixels, args.chunk, args.max_iter, dtypes)
    n = counts["n"]
    (total, inside), run = timed(lambda: dask.compute(n.sum(dtype=np.int64), (n == args.max_iter).sum()))
    chunks = counts.numblocks[0]
    print(f"{args.pixels:,} pixels in {chunks} chunks of {args.chunk:,}: {run:.2f} s "
          f"({args.pixels / run / 1e6:.1f} Mpixels/s); escape counts sum to {total:,}, {inside:,} pixels inside")
    check_chunks(counts, args.pixels, args.chunk, args.max_iter, module)
    print("three chunks checked against one call: the same bits")
    _, plain_run = timed(lambda: plain(args.pixels, args.chunk, dtypes[0]).compute())
    print(f"Dask alone on the same chunks (the pixels made, copied and summed, no kernel): {plain_run:.2f} s")

    small = args.overhead_chunks
    _, ours = timed(lambda: escapes(small, 1, args.max_iter, dtypes)["n"].sum().compute())
    _, plain_small = timed(lambda: plain(small, 1, dtypes[0]).compute())
    print(f"a chunk of one pixel costs {ours / small * 1e3:.2f} ms of the run "
          f"({ours / small * args.workers * 1e3:.2f} ms of a worker's time); "
          f"Dask alone on the same chunks: {plain_small / small * 1e3:.2f} ms")

    sample = pixel_block(np.arange(0, args.pixels, 97), *grid(args.pixels), dtypes[0])
    out = np.zeros(len(sample), dtypes[1])
    _, one = timed(lambda: module.mandelbrot(out, sample, args.max_iter))
    kernel = one * args.pixels / len(sample)
    beyond = run - plain_run - kernel / args.workers
    print(f"the kernel alone ({module.execution}, one call in this process on every 97th pixel, scaled): "
          f"{kernel:.2f} s for the image, {kernel / args.workers:.2f} s over {args.workers} workers; the run "
          f"took {beyond:.2f} s more than that and Dask alone, {beyond / chunks * 1e3:.1f} ms per chunk")
    client.close()
    cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
