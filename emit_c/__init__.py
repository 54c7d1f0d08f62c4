"""The C backends: scalar C and lane C from verified IR, and the C helper library.

`emit_c.scalar.emit_module(module, path)` turns a verified scalar IR module
into one plain C11 translation unit (`CModule`): its `source`, one
`CFunction` per `@aot` function, the `cdef` prototypes for LuaJIT's
`ffi.cdef` and cffi, and the `errors` its status codes name.
`emit_c.helpers` holds the opcode rendering table (`C_OPS`, every op of
`scalar_ir.ops.OPS`) and the C helper library, one `static inline` helper
per semantic rule, emitted only when used.  Both backends assemble one
translation unit from named sections (`emit_c.unit`: banner, includes,
vectors, helpers, types, functions) and emit statements and expressions
through one public function emitter (`emit_c.function_c.FunctionEmitter`),
which the lane emitter extends with the Gang and masked control.

Build: `-std=c11 -O2 -ffp-contract=off -lm` (never fast math).  The C
compiles warning-free under `-Wall -Wextra` (and `-Wpedantic`) with GCC and
Clang, for any verified program, and runs clean under
`-fsanitize=undefined -fno-sanitize-recover=all`.

ABI of each exported function (`CFunction.symbol`, `nupp_` + its name):

    int32_t nupp_NAME(<params>, <result type> *result)

  * returns 0, or a status k > 0: the run-time error `errors[k - 1]`, the
    exact text the interpreter raises (`kernels.nupp:18: length mismatch`,
    `kernels.nupp:22: integer division by zero`, with the line of the
    Assert / of the `//` or `%` op).  A function raising leaves its result
    unwritten; every store of an earlier statement has happened, none of a
    later one (nor of the raising statement itself).
  * scalars: f64 `double`, f32 `float`, i32 `int32_t`, u32 `uint32_t`, i64
    `int64_t`, u64 `uint64_t`, bool `_Bool` (LuaJIT and cffi pass a boolean
    to `_Bool` and read one back from a `_Bool` result).
  * a span parameter `s` is two parameters: the element pointer, then
    `int32_t` length.  `CFunction.params` names them `s` and `#s`; in `cdef`
    the pointer is `void *` (LuaJIT and cffi convert any pointer).  In C it
    is `T *restrict p_s` for a WriteSpan, `const T *restrict p_s` for a
    Span, `T` the struct with the natural C layout of its field types in
    order (float, double, int8_t .. uint64_t: runtime/lua/mem.lua's structs
    and NumPy structured arrays share that memory).
  * `restrict` exactly where the alias matrix justifies it.  C's restrict
    promises that memory *modified* during the call is reached through that
    one pointer; memory nobody modifies may be shared by restrict pointers.
    So a span is restrict when its fact with every other span is `disjoint`,
    or `shared-read` with another read-only span: an exclusive span
    (disjoint from all) and a borrows span (disjoint from every writer) both
    qualify; a missing or contrary fact withholds it.  (The verifier makes
    the matrix complete and the host refuses an exclusive span overlapping
    any other argument, so a verified module gets restrict on every span.)
  * the result out-pointer comes last and is omitted for a nil result;
    `CFunction.result` is its target's cdef type.  A float result leaves with
    a NaN the host can read: an f32 NaN as 0x7FC00000, an f64 NaN as
    0x7FF8000000000000 (LuaJIT misreads some NaN patterns).

Calls between `@aot` functions of the module call the `static`
implementation `nuppi_NAME` and pass a non-zero status on.

NaN canonicalization (nupp.math.f32's canonical 0x7FC00000) happens where a
binary32 NaN can be observed: a store to a `float` field, a float result,
`bits` (and min, max, exp, fromBits produce it themselves).  Elsewhere a
NaN may keep the hardware's pattern: every binary32 op gives a NaN for a NaN
operand and a promotion to binary64 shows no payload, so nothing can tell,
and no select sits on a loop-carried chain.

Loops: the C counter of a numeric `for` is `int64_t` (the int32 counter is
derived from it in the body), so a loop to INT32_MAX ends as Lua's does,
without overflow; the bound is evaluated once.

Lane C (`emit_c.lane.emit_lane_module`, same ABI) runs the lane rewrite's
gangs as GCC/Clang vectors, each at most one register wide (a wider gang is
several vectors); `emit_c.lane_helpers` holds the lane forms of the helpers
that have one (min/max, fma, exp, bits, shifts, floor/ceil/sqrt, the float
remainder, the wraps, ...), each beside its scalar rule's meaning; every
other op calls its scalar helper once per lane.
The targets (targets/tiers.py) build a module's lane C once per x86-64
feature tier and pick the tier at load time.
"""

from nupp.backend import Backend  # noqa: E402  (the package's docstring above says what it holds)
from nupp.emit_c.lane import emit_lane_module  # noqa: E402
from nupp.emit_c.scalar import emit_module  # noqa: E402

SCALAR_C = Backend("c", "scalar", emit_module, "plain C11, one statement at a time")
LANE_C = Backend("lane-c", "lanes", emit_lane_module, "C with GCC/Clang vectors, each Gang as SIMD lanes")
