"""The crosscheck driver: a C `main` that runs a module's scalar C and its lane
C at several gangs on the same generated inputs and compares them bit for bit.

    driver_source(module, "kernels.nupp", variants) -> C text

`variants` is ((symbol prefix, gang or None, errors), ...), the scalar C's
first (gang None): the units `nupp crosscheck` links beside this one
(nupp/crosscheck.py), each emitted with that prefix.  The program is plain C:

    ./check SEED CASES                   every function, every length, CASES input sets
    ./check SEED CASES dump              also a line per case: its digest
    ./check SEED CASES show F L C        only case C of function F at length L, every output value

It prints, one tab-separated record a line:

    mismatch F GANG LENGTH CASE WHERE SCALAR LANE   the first difference of F at GANG
    case F LENGTH CASE DIGEST                         (dump) one case's digest
    value F LENGTH CASE WHERE BITS                    (show) one output value of the scalar C
    digest F DIGEST CASES                             FNV-1a/64 of every status, result and span after
    time SECONDS CASES                                the whole run

WHERE is `status`, `result` or `SPAN[I].FIELD` (I 1-based, as Nupp indexes).
Exit status 1 when any variant differs from the scalar C, else 0.

Inputs: a case's generator is splitmix64 seeded from (SEED, function, length,
case), so every case repeats alone.  Each span element field and each scalar
parameter is, by the generator's draw, an edge value of its type (EDGES: the
tests' edge sets, tests/kernelgen.py), random bits, or a moderate number.  An
input that steers a loop's trip count (`trip_inputs`: it flows into a `for`
bound or a `while` condition) is drawn from small values instead, so no case
runs 2^31 iterations.  Every span is its own buffer (no two parameters alias:
exclusive and borrows hold by construction) of exactly its length; every
span has the case's length except that one case in four gives the spans after
the first the next length, exercising length checks.  Each variant runs on
its own copy of the inputs.

Comparison (LANGUAGE.md section 3): statuses by the error's text (0 when
none); a result when the status is 0; every element field of every span after
the call, failing calls included.  binary64 values agree when their bits are
equal or both are NaN (ordinary binary64 arithmetic may give either NaN
sign), and so do the float fields some store gives binary64 (the store
narrows it, NaN as it comes: FieldStorage.stores_canonical_nan); everything
else, binary32 results and the other float fields included (canonical NaNs),
to the bit.  The digest hashes the scalar C's values with every NaN compared
as "a NaN" as one pattern, so two compilers' digests agree exactly when
their values do.
"""

from __future__ import annotations

import math
import struct

from nupp.emit_c.helpers import C_TYPES, FIELD_C_TYPES
from nupp.emit_c.unit import INDENT, ModuleContext
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.walk import statements, subexprs
from nupp.scalar_ir.widths import FIELD_STORAGE, Width

Variant = tuple  # (symbol prefix, gang or None, errors)


def _f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


# The edge sets of each value type (the tests' own, tests/kernelgen.py), as bit patterns for floats.
F32_EDGE_BITS = (
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
    0x3F800000, 0xBF800000, 0x3F7FFFFF, 0x3F800001, 0xBF800001, 0x7F7FFFFF, 0xFF7FFFFF,
    0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC01234, 0x7F800001, 0xFFC00000, 0xFFD00001,
    0x3DCCCCCD,  # 0.1f
    0x4B800000, 0x4B800001,  # 2^24, 2^24 + 2
    0x3E800000, 0xBF400000, 0x3F000000, 0xC0000000, 0x3FC00000, 0x3E99999A,  # 0.25 -0.75 0.5 -2 1.5 0.3
    0x42B00000, 0xC2D00000, 0x42AE0000,  # 88, -104, 87 (around exp's clamp)
    0x4F000000, 0xCF000000, 0x5F000000,  # 2^31, -2^31, 2^63
)
F64_EDGE_BITS = tuple(_f64_bits(x) if isinstance(x, float) else x for x in (
    0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -2.225073858507201e-308,
    math.inf, -math.inf, 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF4000000001234,
    0.1, -0.1, 1e300, -1e300, 1.7976931348623157e308, 1.0, -1.0, 0.5, -0.5, 3.5, -3.5, 1.5, -2.5,
    2.0**53 + 2, 2.0**53, 2.0**53 - 1, 2.0**31, -2.0**31, -2.0**31 - 1, 2.0**32, 2.0**32 + 0.5,
    4294967295.0, 2.0**63, -2.0**63, 2.0**64, 1e20, -1e20, 2147483647.5, 3.4028235677973366e38, 1e-46, 0.25,
))
INT32_MIN, INT32_MAX, UINT32_MAX = -2**31, 2**31 - 1, 2**32 - 1
INT64_MIN, INT64_MAX, UINT64_MAX = -2**63, 2**63 - 1, 2**64 - 1
INT_EDGES = {
    "int8": (-128, -1, 0, 1, 127),
    "uint8": (0, 1, 127, 128, 255),
    "int16": (-32768, -1, 0, 1, 32767),
    "uint16": (0, 1, 32767, 32768, 65535),
    "int32": (INT32_MIN, INT32_MIN + 1, -65536, -7, -2, -1, 0, 1, 2, 3, 7, 255, 65535, 65536,
              0x5555, INT32_MAX - 1, INT32_MAX),
    "uint32": tuple(sorted({0, 1, 2, 3, 7, 255, 65535, 65536, 0x7FFFFFFF, 0x80000000, 0x80000001,
                            UINT32_MAX - 1, UINT32_MAX} | set(F32_EDGE_BITS))),
    "int64": (INT64_MIN, INT64_MIN + 1, -(2**53 + 1), -(2**32), INT32_MIN, -1, 0, 1, 2, 7,
              2**31, 2**32, 2**53 + 1, INT64_MAX - 1, INT64_MAX),
    "uint64": (0, 1, 2, 7, 2**31, UINT32_MAX, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1,
               UINT64_MAX - 1, UINT64_MAX),
}
# Loop-steering inputs: small trip counts, and the values that end a loop at once.
TRIP_INTS = (INT32_MIN, -1, 0, 1, 2, 3, 7, 37)
TRIP_F64 = (0x7FF8000000000000, 0xFFF8000000000000, _f64_bits(-math.inf), _f64_bits(-0.0), 0, 1,
            _f64_bits(0.5), _f64_bits(1.0), _f64_bits(2.5), _f64_bits(7.0), _f64_bits(-1e300), _f64_bits(300.0))
TRIP_LIMIT = 300  # a loop-steering draw of "moderate" kind is in [-8, TRIP_LIMIT]

# Each value type: (its C type, its generator's kind: "f64", "f32" or an INT_EDGES key).
WIDTH_KINDS = {Width.F64: "f64", Width.F32: "f32", Width.I32: "int32", Width.U32: "uint32",
               Width.I64: "int64", Width.U64: "uint64", Width.BOOL: "bool"}
FIELD_KINDS = {"number": "f64", "double": "f64", "float": "f32", **{k: k for k in INT_EDGES}}


# ==== which inputs steer trip counts ===============================================================

def trip_inputs(fn: ir.Function) -> tuple[set[str], set[tuple[str, str]]]:
    """The parameters and (span parameter, field) loads whose values flow into a
    `for` bound or a `while` condition of `fn`, through any chain of locals."""
    steering: set[str] = set()
    loads: set[tuple[str, str]] = set()
    sources: dict[str, list[ir.Expr]] = {}  # local -> every value assigned to it
    for s in statements(fn.body):
        if isinstance(s, (ir.Let, ir.Assign)) and s.value is not None:
            sources.setdefault(s.name, []).append(s.value)
        if isinstance(s, ir.For):
            _steer(s.start, steering, loads)
            _steer(s.stop, steering, loads)
        elif isinstance(s, ir.While):
            _steer(s.cond, steering, loads)
    done: set[str] = set()
    while steering - done:
        name = (steering - done).pop()
        done.add(name)
        for value in sources.get(name, ()):
            _steer(value, steering, loads)
    return steering, loads


def _steer(e: ir.Expr, names: set[str], loads: set[tuple[str, str]]) -> None:
    for x in subexprs(e):
        if isinstance(x, ir.Var):
            names.add(x.name)
        elif isinstance(x, ir.Load):
            loads.add((x.span, x.field))


# ==== the program ===================================================================================

def driver_source(module: ir.Module, path: str, variants: tuple[Variant, ...]) -> str:
    """The driver's C: `main` checking every @aot function of `module` (see the module docstring)."""
    ctx = ModuleContext(module, path, variants[0][0])  # the struct names every unit gives
    types = "".join(ctx.struct(s) for s in module.structs)
    parts = [_PRELUDE, _edge_tables(), types, _variant_tables(variants)]
    parts += [_prototypes(ctx, fn, variants) for fn in module.functions]
    loose = _fields_of_any_nan(module)
    parts += [_struct_code(ctx, s, loose) for s in module.structs if s.fields]
    parts += [_check_function(ctx, k, fn, variants) for k, fn in enumerate(module.functions)]
    parts.append(_main(module))
    return "\n".join(parts)


_PRELUDE = r"""/* Generated by nupp (emit_c/driver.py): the crosscheck driver. */
#define _POSIX_C_SOURCE 199309L  /* clock_gettime under -std=c11 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { uint64_t s; } nu_rng;

static uint64_t nu_next(nu_rng *r)
{   /* splitmix64 */
    uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static nu_rng nu_case_rng(uint64_t seed, int function, int32_t length, int32_t c)
{
    nu_rng r = { seed };
    r.s ^= nu_next(&r) + ((uint64_t)(uint32_t)function << 48) + ((uint64_t)(uint32_t)length << 20) + (uint64_t)c;
    nu_next(&r);
    return r;
}

#define NU_FNV_OFFSET UINT64_C(0xcbf29ce484222325)
static uint64_t nu_fnv(uint64_t h, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; ++i) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static uint64_t nu_text_hash(uint64_t h, const char *text)
{
    for (; *text; ++text)
        h = nu_fnv(h, (unsigned char)*text, 1);
    return nu_fnv(h, 0, 1);
}

static double nu_f64_of(uint64_t bits) { double x; memcpy(&x, &bits, 8); return x; }
static float nu_f32_of(uint32_t bits) { float x; memcpy(&x, &bits, 4); return x; }
static uint64_t nu_f64_bits(double x) { uint64_t b; memcpy(&b, &x, 8); return b; }
static uint32_t nu_f32_bits(float x) { uint32_t b; memcpy(&b, &x, 4); return b; }
/* binary64: equal bits or both NaN; the digest sees every binary64 NaN as one */
static int nu_f64_same(double a, double b) { return nu_f64_bits(a) == nu_f64_bits(b) || (a != a && b != b); }
static uint64_t nu_f64_key(double x) { return x != x ? UINT64_C(0x7FF8000000000000) : nu_f64_bits(x); }
/* a float field some store gives binary64 the same: it keeps the NaN the narrowing gives */
static int nu_f32_same(float a, float b) { return nu_f32_bits(a) == nu_f32_bits(b) || (a != a && b != b); }
static uint32_t nu_f32_key(float x) { return x != x ? UINT32_C(0x7FC00000) : nu_f32_bits(x); }

#define NU_PICK(table, r) (table[(r) % (sizeof table / sizeof table[0])])
#define NU_MODERATE(r) ((int64_t)((r) % 2001u) - 1000)   /* an integer in [-1000, 1000] */
#define NU_TRIP(r) ((int64_t)((r) % (NU_TRIP_LIMIT + 9u)) - 8)  /* an integer in [-8, NU_TRIP_LIMIT] */

/* A fresh buffer of n elements of `size` bytes (never a null pointer, even for n = 0). */
static void *nu_alloc(int32_t n, size_t size)
{
    void *p = malloc((size_t)(n > 0 ? n : 1) * size);
    if (p == NULL) {
        fprintf(stderr, "crosscheck driver: out of memory\n");
        exit(2);
    }
    return p;
}

static const char *nu_error(const char *const *table, int32_t status)
{
    return status == 0 ? "" : table[status - 1];
}
"""


def _c_list(values, c_type: str) -> str:
    return ", ".join(f"({c_type})UINT64_C(0x{v & (2**64 - 1):x})" for v in values)


def _edge_tables() -> str:
    lines = [f"#define NU_TRIP_LIMIT {TRIP_LIMIT}u",
             f"static const uint64_t nu_edges_f64[] = {{{_c_list(F64_EDGE_BITS, 'uint64_t')}}};",
             f"static const uint32_t nu_edges_f32[] = {{{_c_list(F32_EDGE_BITS, 'uint32_t')}}};",
             f"static const uint64_t nu_trip_f64[] = {{{_c_list(TRIP_F64, 'uint64_t')}}};",
             f"static const int32_t nu_trip_int[] = {{{', '.join(f'{v}' if v != INT32_MIN else 'INT32_MIN' for v in TRIP_INTS)}}};"]
    for kind, values in INT_EDGES.items():
        c_type = f"{kind}_t"
        lines.append(f"static const {c_type} nu_edges_{kind}[] = {{{_c_list(values, c_type)}}};")
    lines.append(_GENERATORS)
    return "\n".join(lines) + "\n"


# A draw: two cases in four an edge value, one random bits, one a moderate number;
# a loop-steering draw (trip != 0) one in two a small edge, else a small number.
_GENERATORS = r"""
static inline double nu_gen_f64(nu_rng *g, int trip)
{
    uint64_t r = nu_next(g), k = r & 3, v = r >> 2;
    if (trip)
        return k < 2 ? nu_f64_of(NU_PICK(nu_trip_f64, v)) : (double)NU_TRIP(v) / (k == 2 ? 1.0 : 8.0);
    if (k < 2)
        return nu_f64_of(NU_PICK(nu_edges_f64, v));
    return k == 2 ? nu_f64_of(nu_next(g)) : (double)NU_MODERATE(v) / 64.0;
}

static inline float nu_gen_f32(nu_rng *g, int trip)
{
    uint64_t r = nu_next(g), k = r & 3, v = r >> 2;
    if (trip)
        return (float)nu_gen_f64(g, 1);
    if (k < 2)
        return nu_f32_of(NU_PICK(nu_edges_f32, v));
    return k == 2 ? nu_f32_of((uint32_t)nu_next(g)) : (float)NU_MODERATE(v) / 64.0f;
}

#define NU_INT_GENERATOR(kind, type)                                               \
static inline type nu_gen_##kind(nu_rng *g, int trip)                                     \
{                                                                                  \
    uint64_t r = nu_next(g), k = r & 3, v = r >> 2;                                \
    if (trip)                                                                      \
        return k < 2 ? (type)NU_PICK(nu_trip_int, v) : (type)NU_TRIP(v);           \
    if (k < 2)                                                                     \
        return NU_PICK(nu_edges_##kind, v);                                        \
    return k == 2 ? (type)nu_next(g) : (type)NU_MODERATE(v);                       \
}
NU_INT_GENERATOR(int8, int8_t)
NU_INT_GENERATOR(uint8, uint8_t)
NU_INT_GENERATOR(int16, int16_t)
NU_INT_GENERATOR(uint16, uint16_t)
NU_INT_GENERATOR(int32, int32_t)
NU_INT_GENERATOR(uint32, uint32_t)
NU_INT_GENERATOR(int64, int64_t)
NU_INT_GENERATOR(uint64, uint64_t)

static inline _Bool nu_gen_bool(nu_rng *g, int trip)
{
    (void)trip;
    return (_Bool)(nu_next(g) & 1);
}
"""


LONG_LENGTH = 1000  # besides every length 0..2G+1


def _variant_tables(variants: tuple[Variant, ...]) -> str:
    """Each variant's error table and gang (0: the scalar C), and the hook a test plants a difference with."""
    out = []
    for prefix, _, errors in variants:
        out.append(f"static const char *const {prefix}errors[] = {{{', '.join(map(_c_string, errors)) or '0'}}};")
    gangs = [g or 0 for _, g, _ in variants]
    out += [f"static const char *const *const nu_errors[] = {{{', '.join(f'{p}errors' for p, _, _ in variants)}}};",
            f"static const int nu_gangs[] = {{{', '.join(map(str, gangs))}}};",
            f"#define NU_MAX_GANG {max(gangs)}",
            f"#define NU_LONG_LENGTH {LONG_LENGTH}",
            "/* Tests only: NU_PLANT_FLIP flips the lowest bit of the first byte of the last element of",
            " * the first span after the widest gang's call; NU_PLANT_DIGEST does it to the scalar C's,",
            " * after the comparison, in a Clang build. */",
            "#if defined(NU_PLANT_FLIP) || defined(NU_PLANT_DIGEST)",
            "static void nu_plant_flip(void *span, int32_t bytes, int32_t element)",
            "{",
            "    if (bytes > 0)",
            "        ((unsigned char *)span)[bytes - element] ^= 1;",
            "}",
            "#endif"]
    return "\n".join(out) + "\n"


def _c_string(text: str) -> str:
    """A C string literal of `text` (UTF-8; anything but printable ASCII as octal escapes)."""
    return '"' + "".join(chr(b) if 0x20 <= b < 0x7F and chr(b) not in '"\\?' else f"\\{b:03o}"
                         for b in text.encode("utf-8")) + '"'


# ---- per function ---------------------------------------------------------------------------------

def _c_params(ctx: ModuleContext, fn: ir.Function) -> list[str]:
    params = []
    for p in fn.params:
        if isinstance(p.type, ir.SpanType):
            const = "" if p.type.writable else "const "
            params += [f"{const}{ctx.structs[p.type.struct][0]} *", "int32_t"]
        else:
            params.append(C_TYPES[p.type])
    if fn.result is not None:
        params.append(f"{C_TYPES[fn.result]} *")
    return params


def _prototypes(ctx: ModuleContext, fn: ir.Function, variants: tuple[Variant, ...]) -> str:
    params = ", ".join(_c_params(ctx, fn))
    return "".join(f"int32_t {prefix}{fn.name}({params});\n" for prefix, _, _ in variants)


def _fields_of_any_nan(module: ir.Module) -> set[tuple[str, str]]:
    """(struct, field) of the float fields some store gives a value whose NaN
    it keeps as it is (FieldStorage.stores_canonical_nan: binary64 narrowed),
    "a NaN" in the comparison; every other float field holds canonical NaNs
    (a binary32 value's, an f32 result's among them), compared to the bit."""
    loose = set()
    for fn in module.functions:
        structs = {p.name: p.type.struct for p in fn.span_params()}
        for s in statements(fn.body):
            if isinstance(s, ir.Store):
                struct = structs[s.span]
                storage = FIELD_STORAGE[module.struct(struct).field_type(s.field)]
                if storage.name == "float" and not storage.stores_canonical_nan(s.value.width):
                    loose.add((struct, s.field))
    return loose


def _struct_code(ctx: ModuleContext, s: ir.StructDef, loose: set[tuple[str, str]]) -> str:
    """fill_S (generate n elements), same_S (the first differing element field), hash_S, show_S;
    a float field in `loose` compares any NaN equal to any NaN."""
    c_name, fields = ctx.structs[s.name]
    fill, same, hash_, show = [], [], [], []
    for j, (name, storage) in enumerate(s.fields):
        f, kind = fields[name], FIELD_KINDS[storage]
        fill.append(f"{INDENT * 2}p[i].{f} = nu_gen_{kind}(g, trip[{j}]);")
        a, b = f"a[i].{f}", f"b[i].{f}"
        bits_a, bits_b, key, differs = _value_bits(kind, a, b, any_nan=(s.name, name) in loose)
        same.append(f"{INDENT * 2}if ({differs}) {{ *field = \"{name}\"; *x = {bits_a}; *y = {bits_b}; return i; }}")
        hash_.append(f"{INDENT * 2}h = nu_fnv(h, {key}, 8);")
        show.append(f"{INDENT * 2}printf(\"value\\t%s\\t%d\\t%d\\t%s[%d].{name}\\t0x%llx\\n\", fn, (int)len, c, span, "
                    f"(int)i + 1, (unsigned long long)({bits_a}));")
    n = len(s.fields)
    return f"""static void fill_{c_name}({c_name} *p, int32_t n, nu_rng *g, const int trip[{n}])
{{
    for (int32_t i = 0; i < n; ++i) {{
{chr(10).join(fill)}
    }}
}}

/* -1, or the first element where a and b differ, its field and both values' bits */
static int32_t same_{c_name}(const {c_name} *a, const {c_name} *b, int32_t n, const char **field, uint64_t *x, uint64_t *y)
{{
    for (int32_t i = 0; i < n; ++i) {{
{chr(10).join(same)}
    }}
    return -1;
}}

static uint64_t hash_{c_name}(uint64_t h, const {c_name} *a, int32_t n)
{{
    for (int32_t i = 0; i < n; ++i) {{
{chr(10).join(hash_)}
    }}
    return h;
}}

static void show_{c_name}(const char *fn, const char *span, int32_t len, int c, const {c_name} *a, int32_t n)
{{
    for (int32_t i = 0; i < n; ++i) {{
{chr(10).join(show)}
    }}
}}
"""


def _value_bits(kind: str, a: str, b: str, any_nan: bool = False) -> tuple[str, str, str, str]:
    """C expressions of two values of `kind`: a's bits, b's bits, a's digest key, 'they differ'.
    binary64 and, with `any_nan` (a float field given binary64), binary32 agree with any NaN."""
    if kind == "f64":
        return f"nu_f64_bits({a})", f"nu_f64_bits({b})", f"nu_f64_key({a})", f"!nu_f64_same({a}, {b})"
    if kind == "f32" and any_nan:
        return f"nu_f32_bits({a})", f"nu_f32_bits({b})", f"nu_f32_key({a})", f"!nu_f32_same({a}, {b})"
    if kind == "f32":
        return f"nu_f32_bits({a})", f"nu_f32_bits({b})", f"nu_f32_bits({a})", f"nu_f32_bits({a}) != nu_f32_bits({b})"
    mask = "" if kind in ("int64", "uint64", "bool") else f" & UINT64_C(0x{(1 << int(kind.lstrip('uint'))) - 1:x})"
    return f"((uint64_t){a}{mask})", f"((uint64_t){b}{mask})", f"(uint64_t){a}", f"{a} != {b}"


def _check_function(ctx: ModuleContext, index: int, fn: ir.Function, variants: tuple[Variant, ...]) -> str:
    steering, loads = trip_inputs(fn)
    spans = fn.span_params()
    nv = len(variants)
    lines = [f"static int check_{index}(uint64_t seed, int cases, const int32_t *lengths, int nlengths, "
             f"int dump, int32_t only_len, int only_case, uint64_t *digest)",
             "{", f"{INDENT}const char *fn = \"{fn.name}\";", f"{INDENT}int failed[{nv}] = {{0}};",
             f"{INDENT}*digest = NU_FNV_OFFSET;",
             f"{INDENT}for (int li = 0; li < nlengths; ++li)",
             f"{INDENT}for (int c = 0; c < cases; ++c) {{",
             f"{INDENT * 2}int32_t len = lengths[li];",
             f"{INDENT * 2}if (only_len >= 0 && (len != only_len || c != only_case)) continue;",
             f"{INDENT * 2}nu_rng g = nu_case_rng(seed, {index}, len, c);",
             f"{INDENT * 2}int32_t other = (c % 4 == 3) ? len + 1 : len;  /* spans after the first */", f"{INDENT * 2}(void)other;"]
    I = INDENT * 2
    for k, p in enumerate(spans):
        c_name, fields = ctx.structs[p.type.struct]
        s = ctx.module.struct(p.type.struct)
        trip = ", ".join("1" if (p.name, f) in loads else "0" for f, _ in s.fields) or "0"
        lines += [f"{I}int32_t n_{k} = {'len' if k == 0 else 'other'};",
                  f"{I}{c_name} *in_{k} = nu_alloc(n_{k}, sizeof *in_{k}), *b_{k}[{nv}];"]
        if s.fields:
            lines += [f"{I}{{ static const int trip[] = {{{trip}}}; fill_{c_name}(in_{k}, n_{k}, &g, trip); }}"]
        lines += [f"{I}for (int v = 0; v < {nv}; ++v) {{ b_{k}[v] = nu_alloc(n_{k}, sizeof *in_{k}); "
                  f"memcpy(b_{k}[v], in_{k}, (size_t)n_{k} * sizeof *in_{k}); }}"]
    scalars = [p for p in fn.params if not isinstance(p.type, ir.SpanType)]
    for k, p in enumerate(scalars):
        lines.append(f"{I}{C_TYPES[p.type]} a_{k} = nu_gen_{WIDTH_KINDS[p.type]}(&g, {int(p.name in steering)});")
    result_type = C_TYPES[fn.result] if fn.result is not None else "int"
    lines.append(f"{I}{result_type} res[{nv}]; int32_t st[{nv}]; memset(res, 0, sizeof res);")
    for v, (prefix, _, _) in enumerate(variants):
        args, sk, ak = [], 0, 0
        for p in fn.params:
            if isinstance(p.type, ir.SpanType):
                args += [f"b_{sk}[{v}]", f"n_{sk}"]
                sk += 1
            else:
                args.append(f"a_{ak}")
                ak += 1
        if fn.result is not None:
            args.append(f"&res[{v}]")
        lines.append(f"{I}st[{v}] = {prefix}{fn.name}({', '.join(args)});")
        if v > 0:
            lines.append(f"#ifdef NU_PLANT_FLIP\n{I}if ({v} == {nv - 1}) nu_plant_flip(b_0[{v}], n_0 * (int32_t)sizeof *b_0[{v}], "
                         f"(int32_t)sizeof *b_0[{v}]);\n#endif" if spans else "")
    # compare each lane variant with the scalar C
    lines.append(f"{I}for (int v = 1; v < {nv}; ++v) {{")
    lines.append(f"{I}{INDENT}if (failed[v]) continue;")
    lines.append(f"{I}{INDENT}const char *e0 = nu_error(nu_errors[0], st[0]), *ev = nu_error(nu_errors[v], st[v]);")
    lines.append(f"{I}{INDENT}if (strcmp(e0, ev) != 0) {{ failed[v] = 1; printf(\"mismatch\\t%s\\t%d\\t%d\\t%d\\tstatus\\t%s\\t%s\\n\", "
                 f"fn, nu_gangs[v], (int)len, c, st[0] ? e0 : \"0 (no error)\", st[v] ? ev : \"0 (no error)\"); continue; }}")
    if fn.result is not None:
        kind = WIDTH_KINDS[fn.result]
        bits_a, bits_b, _, differs = _value_bits(kind, "res[0]", "res[v]")
        lines.append(f"{I}{INDENT}if (st[0] == 0 && {differs}) {{ failed[v] = 1; "
                     f"printf(\"mismatch\\t%s\\t%d\\t%d\\t%d\\tresult\\t0x%llx\\t0x%llx\\n\", fn, nu_gangs[v], (int)len, c, "
                     f"(unsigned long long){bits_a}, (unsigned long long){bits_b}); continue; }}")
    for k, p in enumerate(spans):
        c_name = ctx.structs[p.type.struct][0]
        if not ctx.module.struct(p.type.struct).fields:
            continue
        lines.append(f"{I}{INDENT}{{ const char *field; uint64_t x, y; int32_t at = same_{c_name}(b_{k}[0], b_{k}[v], n_{k}, &field, &x, &y);")
        lines.append(f"{I}{INDENT}  if (at >= 0) {{ failed[v] = 1; printf(\"mismatch\\t%s\\t%d\\t%d\\t%d\\t{p.name}[%d].%s\\t0x%llx\\t0x%llx\\n\", "
                     f"fn, nu_gangs[v], (int)len, c, (int)at + 1, field, (unsigned long long)x, (unsigned long long)y); continue; }} }}")
    lines.append(f"{I}}}")
    # the digest of the scalar C's outcome
    if spans:
        lines.append(f"#if defined(NU_PLANT_DIGEST) && defined(__clang__)\n{I}nu_plant_flip(b_0[0], n_0 * (int32_t)sizeof *b_0[0], "
                     f"(int32_t)sizeof *b_0[0]);\n#endif")
    lines.append(f"{I}uint64_t h = nu_text_hash(NU_FNV_OFFSET, nu_error(nu_errors[0], st[0]));")
    if fn.result is not None:
        key = _value_bits(WIDTH_KINDS[fn.result], "res[0]", "res[0]")[2]
        lines.append(f"{I}if (st[0] == 0) h = nu_fnv(h, {key}, 8);")
    for k, p in enumerate(spans):
        c_name = ctx.structs[p.type.struct][0]
        if ctx.module.struct(p.type.struct).fields:
            lines.append(f"{I}h = hash_{c_name}(h, b_{k}[0], n_{k});")
            lines.append(f"{I}if (only_len >= 0) show_{c_name}(fn, \"{p.name}\", len, c, b_{k}[0], n_{k});")
    if fn.result is not None:
        lines.append(f"{I}if (only_len >= 0 && st[0] == 0) printf(\"value\\t%s\\t%d\\t%d\\tresult\\t0x%llx\\n\", fn, (int)len, c, "
                     f"(unsigned long long){_value_bits(WIDTH_KINDS[fn.result], 'res[0]', 'res[0]')[0]});")
    lines.append(f"{I}if (only_len >= 0) printf(\"value\\t%s\\t%d\\t%d\\tstatus\\t%s\\n\", fn, (int)len, c, "
                 f"st[0] ? nu_error(nu_errors[0], st[0]) : \"0 (no error)\");")
    lines.append(f"{I}if (dump) printf(\"case\\t%s\\t%d\\t%d\\t%016llx\\n\", fn, (int)len, c, (unsigned long long)h);")
    lines.append(f"{I}*digest = nu_fnv(*digest, h, 8);")
    for k, _ in enumerate(spans):
        lines.append(f"{I}free(in_{k}); for (int v = 0; v < {nv}; ++v) free(b_{k}[v]);")
    lines += [f"{INDENT}}}", f"{INDENT}int any = 0;", f"{INDENT}for (int v = 1; v < {nv}; ++v) any |= failed[v];",
              f"{INDENT}return any;", "}", ""]
    return "\n".join(line for line in lines if line)


def _main(module: ir.Module) -> str:
    only = "\n".join(f"{INDENT}if (only_fn && strcmp(only_fn, \"{fn.name}\") == 0) only_index = {k};"
                     for k, fn in enumerate(module.functions))
    checks = "\n".join(
        f"{INDENT}if (only_index < 0 || only_index == {k}) {{\n"
        f"{INDENT * 2}failed |= check_{k}(seed, cases, lengths, nlengths, dump, only_len, only_case, &digest);\n"
        f"{INDENT * 2}if (only_len < 0) printf(\"digest\\t{fn.name}\\t%016llx\\t%d\\n\", (unsigned long long)digest, cases * nlengths);\n"
        f"{INDENT * 2}total += (long long)cases * nlengths;\n{INDENT}}}"
        for k, fn in enumerate(module.functions))
    return f"""int main(int argc, char **argv)
{{
    if (argc < 3) {{
        fprintf(stderr, "usage: %s SEED CASES [dump | show FUNCTION LENGTH CASE]\\n", argv[0]);
        return 2;
    }}
    uint64_t seed = strtoull(argv[1], NULL, 10);
    int cases = atoi(argv[2]), dump = argc > 3 && strcmp(argv[3], "dump") == 0;
    const char *only_fn = argc > 6 && strcmp(argv[3], "show") == 0 ? argv[4] : NULL;
    int32_t only_len = only_fn ? (int32_t)atoi(argv[5]) : -1;
    int only_case = only_fn ? atoi(argv[6]) : -1, only_index = only_fn ? {len(module.functions)} : -1;
{only}
    int32_t lengths[2 * NU_MAX_GANG + 3];
    int nlengths = 0;
    for (int32_t n = 0; n <= 2 * NU_MAX_GANG + 1; ++n)
        lengths[nlengths++] = n;
    lengths[nlengths++] = NU_LONG_LENGTH;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int failed = 0;
    long long total = 0;
    uint64_t digest;
{checks}
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (only_len < 0)
        printf("time\\t%.6f\\t%lld\\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), total);
    return failed;
}}
"""
