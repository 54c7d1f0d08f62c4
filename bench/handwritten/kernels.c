/* The BENCH.md kernels written by hand in C: the peer a user would write
 * instead of Nupp.  Same memory layout as the Nupp structs (NumPy structured
 * arrays), same arithmetic; compiled by bench/native_speed.py with -O2 (and
 * -O3 -march=native where it says so).  Not part of nupp: a yardstick. */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct { float cx, cy; } Pixel;
typedef struct { int32_t n; } Escape;

void hw_mandelbrot(Escape *restrict out, const Pixel *restrict px, int32_t n, int32_t max_iter)
{
    for (int32_t i = 0; i < n; i++) {
        float cx = px[i].cx, cy = px[i].cy, zx = 0.0f, zy = 0.0f;
        int32_t k = 0;
        while (k < max_iter && zx * zx + zy * zy <= 4.0f) {
            float nx = zx * zx - zy * zy + cx;
            zy = (zx + zx) * zy + cy;
            zx = nx;
            k++;
        }
        out[i].n = k;
    }
}

typedef struct { uint32_t a, b, c; } Triple;
typedef struct { uint32_t lo, hi, fused, e; } Corrected;

static float f32_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t bits_of(float f) { uint32_t u; if (f != f) return 0x7FC00000u; memcpy(&u, &f, 4); return u; }
static float min32(float a, float b) { if (a != a || b != b) return NAN; if (a == b) return signbit(a) ? a : b; return a < b ? a : b; }
static float max32(float a, float b) { if (a != a || b != b) return NAN; if (a == b) return signbit(a) ? b : a; return a > b ? a : b; }
static float exp32(float x)
{
    static const float c[13] = {1.0f, 1.0f, 0.5f, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040,
                                1.0f / 40320, 1.0f / 362880, 1.0f / 3628800, 1.0f / 39916800, 1.0f / 479001600};
    if (x != x) return NAN;
    x = x < -104.0f ? -104.0f : (x > 88.0f ? 88.0f : x);
    float t = x * 0.0078125f, p = c[12];
    for (int k = 11; k >= 0; k--) p = fmaf(p, t, c[k]);
    for (int k = 0; k < 7; k++) p = p * p;
    return p;
}

void hw_correct(Corrected *restrict out, const Triple *restrict in, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        float a = f32_of(in[i].a), b = f32_of(in[i].b), c = f32_of(in[i].c);
        out[i].lo = bits_of(min32(a, b));
        out[i].hi = bits_of(max32(a, b));
        out[i].fused = bits_of(fmaf(a, b, c));
        out[i].e = bits_of(exp32(a));
    }
}

typedef struct { int32_t mask, tag; uint32_t seed; } Entity;
typedef struct { int32_t selected; uint32_t hash; } Verdict;

void hw_query(Verdict *restrict out, const Entity *restrict e, int32_t n, int32_t required, int32_t excluded)
{
    for (int32_t i = 0; i < n; i++) {
        int32_t m = e[i].mask;
        int hit = (m & required) == required && (m & excluded) == 0;
        uint32_t x = e[i].seed;
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        int32_t tag = e[i].tag, cls;
        switch (tag) {
        case INT32_MIN: cls = 3; break;
        case 0: cls = 1; break;
        case 1: case 2: cls = 2; break;
        default: cls = 0; break;
        }
        out[i].selected = hit ? cls : 0;
        out[i].hash = x;
    }
}

typedef struct { float value; } Sample;

void hw_mix(Sample *restrict out, const Sample *restrict in, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        double wide = in[i].value;
        double doubled = wide + wide;
        float narrow = (float)wide + (float)wide;
        out[i].value = (float)((double)narrow + doubled);
    }
}

typedef struct { double x, v; float m; } Body;

void hw_advance(Body *restrict b, int32_t n, double dt, double damping)
{
    for (int32_t i = 0; i < n; i++) {
        double v = b[i].v * damping - b[i].x * dt;
        b[i].v = v;
        b[i].x = b[i].x + v * dt;
        b[i].m = (float)sqrt((double)b[i].m * (double)b[i].m + dt);
    }
}

int32_t hw_inc(int32_t x) { return (int32_t)((uint32_t)x + 1u); }
