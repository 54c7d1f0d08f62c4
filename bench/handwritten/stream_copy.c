/* The memory roof's yardstick: STREAM's Copy, a[i] = b[i] over buffers far
 * larger than the caches, with ordinary stores like the kernels' (bench/
 * lane_speed.py counts 24 bytes per element: the read, the target line's read
 * before a store fills it, the write back; the kernels are counted alike).  Compiled
 * with -fno-tree-loop-distribute-patterns so that GCC keeps the loop rather
 * than calling memcpy, whose non-temporal stores no kernel here makes. */
#include <stdint.h>

void stream_copy(void *dst, const void *src, int64_t n)
{
    double *restrict d = dst;
    const double *restrict s = src;
    for (int64_t i = 0; i < n; i++) d[i] = s[i];
}
