/* The BENCH.md kernels written by hand with explicit SIMD: GCC/Clang vector
 * extensions (vector_size), the peer a strong C programmer would write instead
 * of Nupp.  Compiled once per gang with -DGANG=8|16|32 -O3 -march=native
 * -ffp-contract=off -fno-math-errno (no contraction: the same bits as nupp's
 * scalar C), by bench/peers/hand_c.py.  Not part of nupp: a yardstick.
 *
 * A gang of GANG elements runs as P register-wide vectors in flight (P = GANG /
 * lanes per register of the tier the compiler targets), written once and
 * unrolled by the compiler, so independent work overlaps (mandelbrot's
 * latency-bound while).  On AVX-512 the registers are 64 bytes: 32-byte
 * vectors (twice as many in flight) measured slower under Clang on every
 * kernel here, at 10^5 on an EPYC (Zen 4).  The structs are the NumPy structured arrays' (AoS):
 * a block of them is loaded as whole vectors and split into fields with
 * shuffles, and written back the same way.  The last n mod GANG elements run
 * the scalar kernels of kernels.c. */
#include "kernels.c"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifndef GANG
#error "compile with -DGANG=8, 16 or 32"
#endif

/* Lanes per register of 32-bit and of 64-bit values (literals: they name the
 * shuffles' index lists below), never more than the gang. */
#if defined(__AVX512F__)
#define REG_BYTES 64
#elif defined(__AVX__)
#define REG_BYTES 32
#else
#define REG_BYTES 16
#endif
#if GANG * 4 <= REG_BYTES
#define L32 GANG
#elif REG_BYTES == 64
#define L32 16
#elif REG_BYTES == 32
#define L32 8
#else
#define L32 4
#endif
#if GANG * 8 <= REG_BYTES && GANG == 8
#define L64 8
#define W64 16
#elif GANG * 8 <= REG_BYTES
#error "a gang below 8 is not one of the bench's"
#elif REG_BYTES == 64
#define L64 8
#define W64 16
#elif REG_BYTES == 32
#define L64 4
#define W64 8
#else
#define L64 2
#define W64 4
#endif
#define P32 (GANG / L32)
#define P64 (GANG / L64)

#define VEC(T, LANES) T __attribute__((vector_size(sizeof(T) * (LANES))))
typedef VEC(float, L32) f32v;
typedef VEC(int32_t, L32) i32v;
typedef VEC(uint32_t, L32) u32v;
typedef VEC(double, L64) f64v;
typedef VEC(int64_t, L64) i64v;
typedef VEC(uint64_t, L64) u64v;
typedef VEC(float, L64) f32h;        /* the binary32 values of one f64v */
typedef VEC(uint32_t, L64) u32h;
typedef VEC(uint32_t, W64) u32w; /* an f64v's bytes as 32-bit words (W64 = 2 * L64) */

/* SEQ<L>(F, L, K, o): F(o, L, K), F(o + 1, L, K), ..., F(o + L - 1, L, K): a
 * shuffle's index list, lane by lane; L and K (a field, an output vector) are
 * literals, so each index is a constant expression. */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define SEQ1(F, L, K, o) F((o), L, K)
#define SEQ2(F, L, K, o) SEQ1(F, L, K, o), SEQ1(F, L, K, (o) + 1)
#define SEQ4(F, L, K, o) SEQ2(F, L, K, o), SEQ2(F, L, K, (o) + 2)
#define SEQ8(F, L, K, o) SEQ4(F, L, K, o), SEQ4(F, L, K, (o) + 4)
#define SEQ16(F, L, K, o) SEQ8(F, L, K, o), SEQ8(F, L, K, (o) + 8)
#define LANES(L, F, K) CAT(SEQ, L)(F, L, K, 0)

/* Field f of an AoS block of L elements with S words each, loaded as S vectors
 * v[0..S-1] of L words: lane j is word S*j + f of the block. */
#define STRIDE2(j, L, f) (2 * (j) + (f))
#define FIELD_OF_2(v, L, f) __builtin_shufflevector((v)[0], (v)[1], LANES(L, STRIDE2, f))
/* stride 3: the words in v[0], v[1] first, then those in v[2] */
#define FROM_01(j, L, f) (3 * (j) + (f) < 2 * (L) ? 3 * (j) + (f) : 0)
#define THEN_2(j, L, f) (3 * (j) + (f) < 2 * (L) ? (j) : (L) + 3 * (j) + (f) - 2 * (L))
#define FIELD_OF_3(v, L, f) \
    __builtin_shufflevector(__builtin_shufflevector((v)[0], (v)[1], LANES(L, FROM_01, f)), (v)[2], LANES(L, THEN_2, f))

/* Word m of output vector q of an AoS block of L elements with S fields is
 * field (q*L + m) % S of element (q*L + m) / S.  ELEM/WORD name those. */
#define WORD(m, L, q, S) (((q) * (L) + (m)) % (S))
#define ELEM(m, L, q, S) (((q) * (L) + (m)) / (S))
#define PICK2(m, L, q) (WORD(m, L, q, 2) == 0 ? ELEM(m, L, q, 2) : (L) + ELEM(m, L, q, 2))
/* stride 3 and 4: fields 0 and 1 first (A), then fields 2 (and 3) beside them */
#define PICK3_A(m, L, q) (WORD(m, L, q, 3) == 0 ? ELEM(m, L, q, 3) : WORD(m, L, q, 3) == 1 ? (L) + ELEM(m, L, q, 3) : 0)
#define PICK3(m, L, q) (WORD(m, L, q, 3) < 2 ? (m) : (L) + ELEM(m, L, q, 3))
#define PICK4_A(m, L, q) (WORD(m, L, q, 4) == 0 ? ELEM(m, L, q, 4) : WORD(m, L, q, 4) == 1 ? (L) + ELEM(m, L, q, 4) : 0)
#define PICK4_B(m, L, q) (WORD(m, L, q, 4) == 2 ? ELEM(m, L, q, 4) : WORD(m, L, q, 4) == 3 ? (L) + ELEM(m, L, q, 4) : 0)
#define PICK4(m, L, q) (WORD(m, L, q, 4) < 2 ? (m) : (L) + (m))
#define BLOCK_OF_2(a, b, L, q) __builtin_shufflevector(a, b, LANES(L, PICK2, q))
#define BLOCK_OF_3(a, b, c, L, q) \
    __builtin_shufflevector(__builtin_shufflevector(a, b, LANES(L, PICK3_A, q)), c, LANES(L, PICK3, q))
#define BLOCK_OF_4(a, b, c, d, L, q)                                                                  \
    __builtin_shufflevector(__builtin_shufflevector(a, b, LANES(L, PICK4_A, q)),                     \
                            __builtin_shufflevector(c, d, LANES(L, PICK4_B, q)), LANES(L, PICK4, q))

#define EVEN(j, L, K) (2 * (j))
#define HALF(j, L, K) ((j) / 2)
#define EVEN_FROM_FIRST(j, L, K) ((j) % 2 == 0 ? (j) : (L) + (j))

/* m ? a : b lane by lane (C has no vector ?:), m all ones or zero per lane */
static inline u32v select32(i32v m, u32v a, u32v b) { return ((u32v)m & a) | (~(u32v)m & b); }

static inline u32v as_bits(f32v x) { u32v u; memcpy(&u, &x, sizeof u); return u; }
static inline f32v as_f32(u32v u) { f32v x; memcpy(&x, &u, sizeof x); return x; }

/* f32.bits: a NaN reads as the canonical quiet NaN */
static inline u32v canonical_bits(f32v x) { return select32(x != x, (u32v){0} + 0x7FC00000u, as_bits(x)); }

/* fmaf per lane: the register's fused multiply-add where the tier has one (GCC 12
 * left the lane-by-lane loop below as 16 scalar vfmadd at 16 lanes: a strong
 * programmer writes the intrinsic); else lane by lane (no contraction elsewhere) */
static inline f32v fma32v(f32v a, f32v b, f32v c)
{
#if defined(__AVX512F__) && L32 == 16
    return (f32v)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__) && L32 == 8
    return (f32v)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    f32v r;
    for (int j = 0; j < L32; j++) r[j] = __builtin_fmaf(a[j], b[j], c[j]);
    return r;
#endif
}

static inline f64v sqrt64v(f64v x)
{
    f64v r;
    for (int j = 0; j < L64; j++) r[j] = __builtin_sqrt(x[j]);
    return r;
}

static inline int any_lane(i32v m)
{
    int32_t any = 0;
    for (int j = 0; j < L32; j++) any |= m[j];
    return any != 0;
}

/* ---- mandelbrot: P vectors of pixels iterate together until every lane escaped */

void hs_mandelbrot(Escape *restrict out, const Pixel *restrict px, int32_t n, int32_t max_iter)
{
    int32_t i = 0;
    for (; i + GANG <= n; i += GANG) {
        f32v cx[P32], cy[P32], zx[P32], zy[P32];
        i32v count[P32], live[P32];
        for (int p = 0; p < P32; p++) {
            f32v block[2];
            memcpy(block, px + i + p * L32, sizeof block);
            cx[p] = FIELD_OF_2(block, L32, 0);
            cy[p] = FIELD_OF_2(block, L32, 1);
            zx[p] = zy[p] = (f32v){0};
            count[p] = (i32v){0};
            live[p] = (i32v){0} - 1;
        }
        for (int32_t k = 0; k < max_iter; k++) {
            i32v any = {0};
            for (int p = 0; p < P32; p++) {
                f32v xx = zx[p] * zx[p], yy = zy[p] * zy[p];
                live[p] &= xx + yy <= 4.0f; /* an escaped lane stays out; its z runs on unused */
                count[p] -= live[p];
                zy[p] = (zx[p] + zx[p]) * zy[p] + cy[p];
                zx[p] = xx - yy + cx[p];
                any |= live[p];
            }
            if (!any_lane(any)) break;
        }
        memcpy(out + i, count, sizeof count);
    }
    hw_mandelbrot(out + i, px + i, n - i, max_iter);
}

/* ---- corrected: f32.min, f32.max, f32.fma and f32.exp, every NaN canonical */

static inline u32v min_bits(f32v a, f32v b)
{
    u32v ab = as_bits(a), bb = as_bits(b);
    u32v ordered = select32(a < b, ab, bb);
    u32v r = select32(a == b, ab | bb, ordered); /* -0 < +0: the sign of either */
    return select32((a != a) | (b != b), (u32v){0} + 0x7FC00000u, r);
}

static inline u32v max_bits(f32v a, f32v b)
{
    u32v ab = as_bits(a), bb = as_bits(b);
    u32v ordered = select32(a > b, ab, bb);
    u32v r = select32(a == b, ab & bb, ordered);
    return select32((a != a) | (b != b), (u32v){0} + 0x7FC00000u, r);
}

static inline f32v exp32v(f32v x)
{
    static const float c[13] = {1.0f, 1.0f, 0.5f, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040,
                                1.0f / 40320, 1.0f / 362880, 1.0f / 3628800, 1.0f / 39916800, 1.0f / 479001600};
    x = as_f32(select32(x < -104.0f, as_bits((f32v){0} - 104.0f), as_bits(x))); /* a NaN stays */
    x = as_f32(select32(x > 88.0f, as_bits((f32v){0} + 88.0f), as_bits(x)));
    f32v t = x * 0.0078125f, p = (f32v){0} + c[12];
    for (int k = 11; k >= 0; k--) p = fma32v(p, t, (f32v){0} + c[k]);
    for (int k = 0; k < 7; k++) p = p * p;
    return p;
}

void hs_correct(Corrected *restrict out, const Triple *restrict in, int32_t n)
{
    int32_t i = 0;
    for (; i + GANG <= n; i += GANG) {
        for (int p = 0; p < P32; p++) {
            u32v block[3];
            memcpy(block, in + i + p * L32, sizeof block);
            f32v a = as_f32(FIELD_OF_3(block, L32, 0));
            f32v b = as_f32(FIELD_OF_3(block, L32, 1));
            f32v c = as_f32(FIELD_OF_3(block, L32, 2));
            u32v lo = min_bits(a, b), hi = max_bits(a, b);
            u32v fused = canonical_bits(fma32v(a, b, c)), e = canonical_bits(exp32v(a));
            u32v result[4] = {BLOCK_OF_4(lo, hi, fused, e, L32, 0), BLOCK_OF_4(lo, hi, fused, e, L32, 1),
                              BLOCK_OF_4(lo, hi, fused, e, L32, 2), BLOCK_OF_4(lo, hi, fused, e, L32, 3)};
            memcpy(out + i + p * L32, result, sizeof result);
        }
    }
    hw_correct(out + i, in + i, n - i);
}

/* ---- tecsbits: a query over bit masks, a switch on tags, an xorshift */

void hs_query(Verdict *restrict out, const Entity *restrict e, int32_t n, int32_t required, int32_t excluded)
{
    int32_t i = 0;
    for (; i + GANG <= n; i += GANG) {
        for (int p = 0; p < P32; p++) {
            u32v block[3];
            memcpy(block, e + i + p * L32, sizeof block);
            i32v m = (i32v)FIELD_OF_3(block, L32, 0), tag = (i32v)FIELD_OF_3(block, L32, 1);
            u32v x = FIELD_OF_3(block, L32, 2);
            i32v hit = ((m & required) == required) & ((m & excluded) == 0);
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            i32v cls = ((tag == INT32_MIN) & 3) | ((tag == 0) & 1) | (((u32v)tag - 1u < 2u) & 2);
            u32v selected = (u32v)(hit & cls);
            u32v result[2] = {BLOCK_OF_2(selected, x, L32, 0), BLOCK_OF_2(selected, x, L32, 1)};
            memcpy(out + i + p * L32, result, sizeof result);
        }
    }
    hw_query(out + i, e + i, n - i, required, excluded);
}

/* ---- mixedwidth: binary64 and binary32 arithmetic side by side */

void hs_mix(Sample *restrict out, const Sample *restrict in, int32_t n)
{
    int32_t i = 0;
    for (; i + GANG <= n; i += GANG) {
        for (int p = 0; p < P64; p++) {
            f32h value;
            memcpy(&value, in + i + p * L64, sizeof value);
            f64v wide = __builtin_convertvector(value, f64v);
            f64v doubled = wide + wide;
            f32h narrow = value + value;
            f32h result = __builtin_convertvector(__builtin_convertvector(narrow, f64v) + doubled, f32h);
            memcpy(out + i + p * L64, &result, sizeof result);
        }
    }
    hw_mix(out + i, in + i, n - i);
}

/* ---- simd: a damped oscillator step, in place; Body is {double x, v; float m; 4 bytes padding} */

void hs_advance(Body *restrict b, int32_t n, double dt, double damping)
{
    _Static_assert(sizeof(Body) == 24, "three doubles per body");
    int32_t i = 0;
    for (; i + GANG <= n; i += GANG) {
        for (int p = 0; p < P64; p++) {
            f64v block[3];
            memcpy(block, b + i + p * L64, sizeof block);
            f64v x = FIELD_OF_3(block, L64, 0), v = FIELD_OF_3(block, L64, 1);
            u32w tail = (u32w)FIELD_OF_3(block, L64, 2); /* m, then the padding, per body */
            f32h m;
            u32h m_bits = __builtin_shufflevector(tail, tail, LANES(L64, EVEN, 0));
            memcpy(&m, &m_bits, sizeof m);
            f64v md = __builtin_convertvector(m, f64v);
            v = v * damping - x * dt;
            x = x + v * dt;
            f32h m_new = __builtin_convertvector(sqrt64v(md * md + dt), f32h);
            memcpy(&m_bits, &m_new, sizeof m_bits);
            u32w m_words = __builtin_shufflevector(m_bits, m_bits, LANES(W64, HALF, 0));
            tail = __builtin_shufflevector(m_words, tail, LANES(W64, EVEN_FROM_FIRST, 0)); /* keep the padding */
            f64v slot = (f64v)tail;
            f64v result[3] = {BLOCK_OF_3(x, v, slot, L64, 0), BLOCK_OF_3(x, v, slot, L64, 1),
                              BLOCK_OF_3(x, v, slot, L64, 2)};
            memcpy(b + i + p * L64, result, sizeof result);
        }
    }
    hw_advance(b + i, n - i, dt, damping);
}
