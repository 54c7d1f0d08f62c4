"""Lane C's threads: the whole gangs of a span loop split between threads.

A Gang that lane_rewrite/threads.py admits (no break leaves it, nothing in it
can raise, nothing carries between iterations but exact reductions) has its
gang loop written twice: as always, and split into contiguous chunks of
whole gangs, one per thread, through OpenMP (`schedule(static)`: chunk k
runs on one thread, the chunks partition the gangs in order).  Which one
runs is decided at each call:

    {
        int64_t c1 = <start>;
        nu_i32x8 r_acc = {0, ...};                          the reduction's accumulators
        const int64_t c1_gangs = (<stop> - c1 + 1) / 8;     the whole gangs
        const int32_t c1_threads = nu_threads_for(c1_gangs * 8);   the threads they take
        if (c1_threads > 1) {
            int32_t q3[c1_threads];                         each chunk's partial result
    #ifdef _OPENMP
    #pragma omp parallel for num_threads(c1_threads) schedule(static)
    #endif
            for (int32_t k2 = 0; k2 < c1_threads; ++k2) {  chunk k: gangs g*k/n .. g*(k+1)/n - 1
                nu_i32x8 r_acc_2 = {0, ...};                its own accumulators
                const int64_t e4 = c1 + 8 * (c1_gangs * (k2 + 1) / c1_threads);
                for (int64_t c5 = c1 + 8 * (c1_gangs * k2 / c1_threads); c5 < e4; c5 += 8) {
                    <the gang body>
                }
                q3[k2] = 0;
                q3[k2] = <q3[k2] + each lane of r_acc_2>;
            }
            for (int32_t k2 = 0; k2 < c1_threads; ++k2) {  the partial results, in chunk order
                v_acc = <v_acc + q3[k2]>;
            }
            c1 += 8 * c1_gangs;
        } else {
            for (; c1 + 7 <= <stop>; c1 += 8) {            the gangs on this thread, as without
                <the gang body>                             threads (the chunk's names again:
            }                                               each block declares its own)
        }
        v_acc = <v_acc + each lane of r_acc>;               (the op's identity after threads)
        for (; c1 <= <stop>; ++c1) { <the scalar body> }    the tail, on this thread
    }

The chunks' bounds depend on the gangs and the thread count only, and an
exact op combines to the same bits in any order, so every count gives the
bits of one thread.  Without OpenMP (a compiler without it, `-fopenmp`
absent) the text still compiles: `nu_threads_for` answers 1.

The thread count is a run-time setting, not part of the code: a library with
such a loop exports `nu_set_threads(count, min_iterations)` (THREADS_SETTER),
which whoever calls its functions calls first, on the calling thread
(runtime/lua/native.lua, runtime/fast_call.c): one library serves every
count, and two callers with different counts never disturb each other.  A
loop of fewer whole-gang iterations than `min_iterations` stays on the
calling thread (starting threads costs more than it saves:
runtime/threads.py says what was measured).  Every unit of a library
shares one setting (weak definitions: a tiered library links a unit per
tier, an execution library one per gang).

A process forked from one that ran a loop on threads never starts threads
again: libgomp's threads are not copied into the child, and it would wait
for them forever.  There the loops run on the calling thread.
"""

from __future__ import annotations

from nupp.emit_c.helpers import c_const, c_type
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import OPS

THREADS_SETTER = "nu_set_threads"  # runtime/lua/native.lua looks it up by this name

THREADS_C = f"""/* Threads (emit_c/lane_threads.py): how many threads the whole gangs of a loop take.
 * The caller sets its count and minimum of iterations per call ({THREADS_SETTER}, on its own
 * thread: one thread-local pair, one lookup of a thread-local address per call); a process
 * forked from one that ran threads runs on one. */
typedef struct {{ int32_t count; int64_t min_iterations; }} nu_thread_setting;
__attribute__((weak, visibility("hidden"))) _Thread_local nu_thread_setting nu_threads = {{1, 0}};
__attribute__((weak, visibility("hidden"))) int nu_forked = 0;
void {THREADS_SETTER}(int32_t count, int64_t min_iterations);
__attribute__((weak)) void {THREADS_SETTER}(int32_t count, int64_t min_iterations)
{{
    nu_thread_setting *setting = &nu_threads;
    setting->count = count;
    setting->min_iterations = min_iterations;
}}
#ifdef _OPENMP
#include <pthread.h>
static void nu_mark_forked(void) {{ nu_forked = 1; }}
__attribute__((constructor)) static void nu_watch_forks(void) {{ pthread_atfork(0, 0, nu_mark_forked); }}
#endif
static inline int32_t nu_threads_for(int64_t iterations)
{{
#ifdef _OPENMP
    const nu_thread_setting *setting = &nu_threads;
    return iterations > 0 && iterations >= setting->min_iterations && !nu_forked ? setting->count : 1;
#else
    (void)iterations;
    return 1;
#endif
}}
"""


class LaneThreads:
    """The lane function emitter's threaded gangs (a mixin of emit_c/lane.py's
    emitter, whose primitives it uses: line, temp, accumulator, gang_body, combine)."""

    def threaded_gangs(self, s: ir.Gang, counter: str, stop: str, locals_: list[str]) -> None:
        """`if (threads > 1) { <the whole gangs split between them> } else {`: the
        caller writes the gangs of one thread after it and closes the brace.
        `locals_`: the C names of the locals the reductions end in."""
        self.preamble.threaded = True
        g = self.gang
        gangs, threads = f"{counter}_gangs", f"{counter}_threads"
        names = self.count, set(self.names.taken)
        chunk = self.temp("k")
        self.line(f"const int64_t {gangs} = ({stop} - {counter} + 1) / {g};")
        self.line(f"const int32_t {threads} = nu_threads_for({gangs} * {g});")
        self.reads.update((gangs, threads))
        self.line(f"if ({threads} > 1) {{")
        self.depth += 1
        partials = [(self.temp("q"), local, op) for (_, op), local in zip(s.reductions, locals_)]
        for q, _, op in partials:
            self.line(f"{c_type(OPS[op].result)} {q}[{threads}];")
        self.line("#ifdef _OPENMP")
        self.line(f"#pragma omp parallel for num_threads({threads}) schedule(static)")
        self.line("#endif")
        self.line(f"for (int32_t {chunk} = 0; {chunk} < {threads}; ++{chunk}) {{")
        self.depth += 1
        self.chunk(s, counter, gangs, threads, chunk, partials)
        self.depth -= 1
        self.line("}")
        for q, local, op in partials:  # in chunk order
            self.line(f"for (int32_t {chunk} = 0; {chunk} < {threads}; ++{chunk}) {{")
            self.depth += 1
            self.combine(self.read(local), op, [f"{q}[{chunk}]"])
            self.depth -= 1
            self.line("}")
        self.line(f"{counter} += {g} * {gangs};")
        self.depth -= 1
        self.line("} else {")
        # The gangs of one thread, in a block of their own, take the names the chunk took
        # (each block declares its own): their C is as it is without threads.
        self.count, self.names.taken = names

    def chunk(self, s: ir.Gang, counter: str, gangs: str, threads: str, chunk: str, partials: list) -> None:
        """One thread's chunk: its accumulators, its gangs, its partial results."""
        g = self.gang
        self.scopes.append({})
        accumulators = [self.accumulator(name, op) for name, op in s.reductions]
        end, c = self.temp("e"), self.temp("c")
        self.line(f"const int64_t {end} = {counter} + {g} * ({gangs} * ({chunk} + 1) / {threads});")
        self.line(f"for (int64_t {c} = {counter} + {g} * ({gangs} * {chunk} / {threads}); {c} < {end}; "
                  f"{c} += {g}) {{")
        self.gang_body(s, c, None)
        self.line("}")
        self.scopes.pop()
        for (q, _, op), acc in zip(partials, accumulators):
            self.line(f"{q}[{chunk}] = {c_const(OPS[op].identity, OPS[op].result)};")
            self.combine(f"{q}[{chunk}]", op, self.accumulated_lanes(acc))
