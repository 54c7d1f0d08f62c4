"""Lane C: the C of lane IR, each `Gang` run as SIMD vectors of its G lanes.

    emit_lane_module(module, "kernels.nupp", "nupp_", gang=8) -> CModule

Takes lane IR (the lane rewrite's, lane_rewrite/rewrite.py: admitted span
loops become `Gang`s, sized by lane_rewrite/gang_size.py, verified) and
emits C with the same `CModule` / `CFunction` and ABI as `emit_c.scalar`
(emit_c/__init__.py), so the host binds either the same way.  The unit is
emit_c/unit.py's, this module's variant adding its `vectors` section
(`LanePreamble`: the vector typedefs and lane forms its functions used).
Everything outside a Gang is the shared function emitter's
(emit_c/function_c.py `FunctionEmitter`, whose hooks the lane one overrides);
a Gang becomes

    {
        int64_t c1 = <start>;
        for (; c1 + (G - 1) <= <stop>; c1 += G) {      the gangs: G iterations each
            const int32_t b2 = (int32_t)c1;            the gang's first index
            const nu_i32x8 v_i = {(int32_t)c1 + 0, ..., (int32_t)c1 + 7};
            nu_f64x8 t3 = {0};                          a load gathers one field of G elements
            for (int l = 0; l < 8; l++) t3[l] = p_in[b2 + l - 1].f_value;
            const nu_f64x8 v_w = (t3 + t3);            native where bit-identical per lane
            ...
        }
        for (; c1 <= <stop>; ++c1) {                   the tail: the unchanged scalar body
            ...
        }
    }

or, where `masked_tail` says so (a masked while or for: the tail's lanes
would each run its rounds one after another), a tail of more than
SCALAR_TAIL iterations is one more gang under a mask of the lanes up to
<stop>, the smallest that holds them of one vector of a narrower register,
1, 2, 4 ... vectors of the gang's, or the whole gang (`masked_tails`), the
fewest left still the scalar loop:

        if (c1 <= <stop> && <stop> - c1 >= 4 && <stop> - c1 < 8) {   a gang of 8 lanes
        if (c1 <= <stop> && <stop> - c1 >= 8 && <stop> - c1 < 16) {  of 16
        if (c1 <= <stop> && <stop> - c1 >= 16) {                     the whole gang
            const int32_t r4 = (int32_t)(<stop> - c1);       the last active lane
            nu_i32x8 a5 = ({0, ..., 7} <= {r4, ...});        the gang's mask
            const nu_i32x8 v_i = <lane, or r4 past it> + (int32_t)c1;
            t6 = {p_in[v_i[0] - 1].f_value, ...};            loads lane by lane at the counter
            ...                                              the body under the mask a5
        }

An inactive lane computes with the last element's index and value, so it
never reads past the span; its stores are skipped, it adds the identity to
a reduction and never raises (what can raise does only for active lanes).

Registers.  Every vector fits one register of the target (`REGISTERS` in
lane_vectors.py): a gang whose vectors would be wider runs as P vectors of
W = G / P lanes each, lanes k*W .. k*W + W - 1 in vector k, and its body is
written once with every statement of varying values repeated for each
vector in lane order (`v_x_p0`, `v_x_p1`: independent work that overlaps,
which hides the latency of a masked while), control (ifs, whiles, breaks)
once over all of them.  W is the most lanes of the gang's widest element a
register holds; where that differs between targets, the gang loop is
written once per register width under the target's predefined macros
(`#if defined(__AVX512F__)` ... `#elif defined(__AVX2__)` ... `#else`), so
one text serves every tier.

Values.  A varying local is a GCC/Clang vector (`typedef double nu_f64x8
__attribute__((vector_size(64)))`), one per vector of the gang; a uniform one
stays the scalar C, broadcast where it meets a varying operand.  A varying
boolean is a *mask*: `nu_i32xW` lanes of 0 or -1 (all bits), what a vector
comparison gives, so masks combine with & | ~ and select with bitwise blends.
Each op computes exactly its scalar rule per lane: as a native vector
operator or `__builtin_convertvector` where that is the same IEEE / modular /
C conversion per lane (`NATIVE`, `COMPARE`, `CONVERT` in lane_vectors.py:
binary64 and binary32 + - * / and negation, built with -ffp-contract=off;
integer + - * in the unsigned vector type; bitwise ops; comparisons;
conversions that are C casts), as its lane form (lane_helpers.py: the
scalar helper's rule on whole vectors), and otherwise by `r = {<the C_OPS
scalar template over a[0], b[0]>, ...}`, the very helper the scalar C calls.

Memory: emit_c/lane_memory.py (block loads and shuffles where the struct allows).

Masks, ISPC style.  The gang body starts with every lane active (no mask).
`if.masked c` runs `then` under mask & c and `else` under mask & ~c, each
skipped when no lane is active in it, or, when both arms are a few
assignments that cannot raise, run without a branch as selects (an elif
chain is nested ifs; a switch on a varying selector is emitted as its
chain).  `while.masked c` keeps a mask of the lanes still looping: each
round it becomes mask & c, the loop ends when no lane is left, and the body
runs under it, so a lane that has left is frozen while the others go on.
In a gang of several vectors whose while only computes (`vector_by_vector`)
the vectors go on one by one once one vector's lanes have all left, each
stopping when its own lanes have.
Under a mask an assignment to a varying local is a per-lane select (the
inactive lanes keep their value) and a store a per-lane guarded store; a
local declared under a mask lives only there, so its inactive lanes are
never observed.  Every value is still computed in every lane: loads are in
bounds for the whole loop (the verifier), so a pure op in an inactive lane
computes a result nobody reads.  What can raise (an integer // or % by a
divisor that may be zero, a call) raises only for active lanes, and the
right operand of an `and` / `or` that can raise runs under the mask of the
lanes its left operand leaves undecided, so a lane the short circuit
decided never raises in it.
"""

from __future__ import annotations

from typing import Callable, Optional

from nupp.emit_c import intrinsics
from nupp.emit_c.function_c import FunctionEmitter, bare, rendering_of
from nupp.emit_c.helpers import C_OPS, FIELD_C_TYPES, c_const, c_type
from nupp.emit_c.lane_helpers import (CANONICAL_NAN_RESULTS, LANE_FORMS, LaneForm, conversion_form, lane_form,
                                      lanes_helper)
from nupp.emit_c.lane_memory import LaneMemory
from nupp.emit_c.lane_threads import THREADS_C, LaneThreads
from nupp.emit_c.lane_vectors import (BLEND, COMPARE, CONVERT, ELEMENTS, LANE, NATIVE, REGISTERS, SHORT,
                                      SIZES)
from nupp.emit_c.unit import CModule, ModuleContext, TranslationUnit, emit_unit
from nupp.errors import InternalError
from nupp.lane_rewrite.threads import thread_refusal
from nupp.scalar_ir.lanes import is_varying
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.ops import OPS, SHORT_CIRCUIT, combining_op
from nupp.scalar_ir.walk import (blocks, breaks_leaving, fails_itself, own_exprs, raises, statements, subexprs,
                                  var_names)
from nupp.scalar_ir.widths import Width, holds_in_binary32

# A masked if whose arms cost at most this many vector operations (and cannot
# raise or store) runs both arms as selects: cheaper than testing the mask's
# lanes and a branch the data decides.
SELECT_BUDGET = 16

# A masked while of a gang of several vectors whose rounds only compute, at
# least this many vector operations each (select_cost of its condition and
# body), goes on vector by vector once the lanes of one vector have all left
# (`rounds_by_vector`).  Measured at v4 (gang 32 as 4 x 256 bits), 10^5
# elements, the fastest of 40 interleaved rounds, GCC 12 / Clang 14, against
# the gang's rounds to the last lane: mandelbrot (19 operations; rows of 316
# pixels, whose neighbours escape alike) 97.3 -> 107.1 / 93.8 -> 102.8 M/s
# (+10%; at 10^7 pixels, rows of 3162, 0 to +4%); rounds of 16 (int32) with
# every trip count 40: -5% / -1%, at random in 20..60: -2% / -1%; of 14
# (binary32): -8% / -2%, +2% / +2%; of 12: -8% / -1% at random; of 6:
# -11% / -5% at 40, -12% / -7% at random (the second loop's tests and code
# cost about what skipping saves).  Each vector on its own from the first
# round measured +15% / +14% on mandelbrot, but -16% to -19% under GCC on the
# 16-operation round (whose counter, unread after the loop, GCC computed once
# for every vector while the vectors' rounds went together).
BY_VECTOR_OPS = 16

# A masked tail of at most this many iterations runs as the scalar loop: a tail
# gang's fixed cost (its mask, loads and guarded stores lane by lane) is more
# than that many scalar iterations of a light element (`masked_tail`).
SCALAR_TAIL = 4
# What `nupp emit --report` says of a masked tail (targets/gang_choice.py).
MASKED_TAIL_WORDS = (f"the scalar loop up to {SCALAR_TAIL} iterations, else masked: "
                     "the fewest vectors that hold them")


def _outer_varying(gang: ir.Gang) -> dict[str, Width]:
    """Varying locals declared outside the gang other than its reductions
    (assigned in it, never read before that in an iteration nor after the
    loop: the rewrite's rules), by width."""
    inside = list(statements(gang.body))
    declared = {s.name for s in inside if isinstance(s, ir.Let)} | {s.var for s in inside if isinstance(s, ir.For)}
    declared |= {name for name, _ in gang.reductions}
    return {s.name: s.value.width for s in inside
            if isinstance(s, ir.Assign) and s.name in gang.varying and s.name not in declared}


def binary32_operands(e: ir.Op) -> Optional[tuple]:
    """The binary32 operands of a binary64 comparison whose operands are both
    binary32 values promoted (or binary64 constants a binary32 holds exactly),
    at least one of them varying: comparing them as binary32 gives the same
    answer for every input, NaN included, because promotion is exact and keeps
    the order."""
    if not e.op.endswith(".f64"):
        return None
    out = []
    for a in e.args:
        if isinstance(a, ir.Op) and a.op == "promote.f32.f64":
            out.append(a.args[0])
        elif isinstance(a, ir.Const) and holds_in_binary32(a.value):
            out.append(ir.Const(a.value, Width.F32, a.loc))
        else:
            return None
    return tuple(out) if not all(isinstance(a, ir.Const) for a in out) else None


def select_cost(body, varying) -> Optional[int]:
    """The vector operations of running a block as selects under a mask (each
    assignment a blend, each op with a vector form one, a load a few: a
    gather or a shuffle), or None when it cannot run that way: a store, a
    loop, a break, a call, an op that can raise, or an op computed lane by
    lane."""
    cost = 0
    for s in body:
        if isinstance(s, ir.If) and s.masked:
            arms = [select_cost(arm, varying) for arm in (s.then, s.orelse)]
            if None in arms:
                return None
            cost += sum(arms) + 2  # the arms' masks
        elif not (isinstance(s, (ir.Let, ir.Assign)) and s.name in varying):
            return None
        cost += 1
        for e in own_exprs(s):
            for x in subexprs(e):
                x_cost = _vector_cost(x)
                if x_cost is None:
                    return None
                cost += x_cost
    return cost


def _vector_cost(x) -> Optional[int]:
    """The vector operations of one node of an expression computed under a
    mask (an op with a vector form one, a load a few), or None for a call, an
    op that can raise or one computed lane by lane."""
    if isinstance(x, ir.Call) or (isinstance(x, ir.Op) and raises(x)):
        return None
    if isinstance(x, ir.Op):
        return 1 if x.op in NATIVE or x.op in COMPARE or x.op in CONVERT or x.op in LANE_FORMS else None
    return 3 if isinstance(x, ir.Load) else 0


def vector_by_vector(s: ir.While, varying) -> bool:
    """Whether a masked while of a gang of several vectors goes on vector by
    vector once one vector's lanes have all left (`rounds_by_vector`): its
    condition and body only compute (select_cost) and load nothing (a load's
    vectors are the gang's, lane_memory.py), so the vectors' rounds are
    independent and a vector whose lanes have left computes nothing anyone
    reads; and a round costs at least BY_VECTOR_OPS vector operations."""
    body = select_cost(s.body, varying)
    cond = [_vector_cost(x) for x in subexprs(s.cond)]
    loads = any(isinstance(x, ir.Load) for e in [s.cond] + [e for st in statements(s.body) for e in own_exprs(st)]
                for x in subexprs(e))
    return body is not None and None not in cond and not loads and body + sum(cond) >= BY_VECTOR_OPS


def select_chain(s: ir.If) -> Optional[tuple[list, tuple]]:
    """A masked if / else-if chain as its (condition, arm) pairs and its last
    else, when running the last else and then the arms from the last to the
    first, each under its own condition alone, is exact (the hand-written
    `v = e; v = c2 ? a2 : v; v = c1 ? a1 : v`): each arm surely assigns (at
    its top level) every local an arm after it may assign, so it overwrites
    what they left in its lanes, and reads none of them.  The arms must run
    as selects (select_cost).  None when the chain is not like that."""
    arms = [(s.cond, s.then)]
    rest = s.orelse
    while len(rest) == 1 and isinstance(rest[0], ir.If) and rest[0].masked:
        arms.append((rest[0].cond, rest[0].then))
        rest = rest[0].orelse
    later: set[str] = set()  # what the arms after the one checked may assign
    for body in [rest] + [body for _, body in reversed(arms)]:
        surely = {x.name for x in body if isinstance(x, ir.Assign)}
        reads = {n for x in statements(body) for e in own_exprs(x) for n in var_names(e)}
        if not later <= surely or reads & later:
            return None
        later |= {x.name for x in statements(body) if isinstance(x, ir.Assign)}
    return arms, rest


def dead_after_loops(body) -> dict[int, frozenset[str]]:
    """For each masked while and for of a gang body (by id): the locals declared
    before it in its block that nothing after it there reads.  A lane its mask
    leaves out never reads them again (it has left the loop, or never entered
    it, and they die with the block), so an assignment at the top of the
    loop's body needs no select."""
    dead: dict[int, frozenset[str]] = {}

    def visit(stmts) -> None:
        declared: set[str] = set()
        for k, s in enumerate(stmts):
            if isinstance(s, (ir.While, ir.For)) and s.masked:
                later = {n for st in statements(stmts[k + 1:]) for e in own_exprs(st) for n in var_names(e)}
                dead[id(s)] = frozenset(declared - later)
            if isinstance(s, ir.Let):
                declared.add(s.name)
            for block in blocks(s):
                visit(block)
    visit(body)
    return dead


def masked_tail(gang: ir.Gang) -> bool:
    """Whether a loop's last n mod G iterations run masked (`masked_tails`: the
    fewest as the scalar loop, else one gang under a mask, lanes past the end
    inactive, of one vector where they fit one) rather than as the scalar loop:
    where it has a masked while or for, whose rounds a lane of the scalar loop
    would run one after another.  Measured on mandelbrot (`nupp bench`'s short
    spans, lengths 1..3G, scalar C's time per call over lane C's, fastest of 9
    interleaved samples; AVX-512 EPYC, GCC 12, 2 shared cores at load 2),
    mean / lowest, the whole masked gang -> these tails: gang 32 v4 (2 x 16
    lanes) 6.32 / 0.44 -> 6.66 / 0.72 (the scalar tail 2.67 / 0.81); gang 16
    v4 (1 x 16) 2.59 / 0.67 -> 2.64 / 0.75; gang 16 v3 (2 x 8) 2.77 / 0.68 ->
    2.91 / 0.83; gang 32 v3 (4 x 8) 3.00 / 0.28 (5 samples) -> 4.07 / 0.38;
    gang 8 v4 1.19 / 0.82 -> 1.20 / 0.91.  At v4 a 16-lane (zmm) masked round
    costs about 1.4x a scalar round, an 8-lane (ymm) one about the same: so 5-8
    left run as 8 lanes (1.10-1.52 at gang 32 v4; 0.85-1.15 as one zmm
    vector), 9-16 at gang 32 v3 as 2 x 8 (0.88-1.02; 0.36-0.42 as 4 x 8).
    Still slower than the scalar loop: about 0.72-0.89 at lengths 9-20 at gang
    32 v4 and 16 v4, where one lane of the tail runs about all the rounds (the
    heavy element: scalar 680 ns, one zmm vector 970-1020 ns, one ymm vector
    690 ns, 2 x ymm 840 ns), and 0.38-0.47 at lengths 17-21 at gang 32 v3 (the
    whole 4-vector gang); at length 1 the scalar tail too is 0.8-0.9 (the lane
    library's call).  What the scalar loop for the fewest costs: lengths
    G+2..G+4 whose elements are heavy, 4.4-4.9 -> 2.8-3.8 (gang 32 v4).  What
    the smaller gangs cost: mandelbrot's lane C at gang 32 grows 2,485 -> 2,988
    lines, GCC compiles its v4 library in 146 ms, not 109 (Clang 157, not 129),
    and its cold load (nupp.load, this CPU's tier) takes 712 ms, not 654.
    The streaming kernels keep the scalar tail, their lanes' work being a few
    operations (a masked gang there: tecsbits 1.08 -> 0.80, mixedwidth 0.98 ->
    0.83, simd 0.95 -> 0.82, corrected 3.60 -> 3.62).  At 10^5 elements the
    tail never mattered."""
    return any(isinstance(s, (ir.While, ir.For)) and s.masked for s in statements(gang.body))


def tail_gangs(widths: list[int], gang: int) -> list[tuple[int, int]]:
    """The gangs smaller than `gang` a masked tail may run as, as (lanes, lanes
    per vector), fewest lanes first: one vector of each narrower register
    (widths[1:]), and 1, 2, 4 ... vectors of widths[0] lanes."""
    sizes = {w: w for w in widths[1:] if w < widths[0]}
    size = widths[0]
    while size < gang:
        sizes[size] = widths[0]
        size *= 2
    return sorted(sizes.items())


def emit_lane_module(module: ir.Module, path: str, symbol_prefix: str = "nupp_") -> CModule:
    """The lane C of a lane IR module (rewritten and sized, verified): each Gang
    runs in gangs of its size with an n mod G scalar tail."""
    return emit_unit(module, path, symbol_prefix, _LaneC(_gang_sizes(module)))


def _gang_sizes(module: ir.Module) -> tuple[int, ...]:
    """The sizes of the module's Gangs (each loop's own: lane_rewrite/gang_size.py), sorted."""
    sizes = {s.size for fn in module.functions for s in statements(fn.body) if isinstance(s, ir.Gang)}
    if None in sizes:
        raise InternalError("emit_c", "lane C needs every gang sized, and one is not")
    return tuple(sorted(sizes))


class _LaneC:
    """The lane variant of a C unit (emit_c/unit.py `Variant`): the lane
    function emitter, and the `vectors` section of what its functions used."""

    def __init__(self, gangs: tuple[int, ...]):
        sizes = ", ".join(map(str, gangs))
        self.kind = f"lane C ({f'gangs of {sizes}' if gangs else 'no loop in gangs'})"
        self.preamble = LanePreamble()

    def function_emitter(self, mod: ModuleContext, fn: ir.Function) -> "_LaneFunctionEmitter":
        return _LaneFunctionEmitter(mod, fn, self.preamble)

    def add_sections(self, unit: TranslationUnit) -> None:
        section = self.preamble.section()
        if section:
            unit.add("vectors", section)
        if self.preamble.threaded:
            unit.add("vectors", THREADS_C)


class LanePreamble:
    """What lane C's functions use of the vector machinery, for the unit's
    `vectors` section: the vector typedefs (an element type at a lane count),
    the mask-lanes helpers, the lane forms (emit_c/lane_helpers.py), and the
    includes those need.  `elements` collects the element types used since a
    gang's emitter last cleared it: what decides its vectors' lanes."""

    def __init__(self):
        self.vector_types: set[tuple[str, int]] = set()  # (element C type, lanes) of each vector used
        self.lanes_used: set[int] = set()  # nu_lanes_xW (which lanes of a mask are set) is called
        self.lane_forms: dict[str, str] = {}  # a form's name -> its C, callees first
        self.elements: set[str] = set()
        self.threaded = False  # a gang loop may run on threads (lane_threads.py)

    def vector(self, element: str, lanes: int) -> str:
        """The vector type of `lanes` `element` lanes, its typedef recorded."""
        self.vector_types.add((element, lanes))
        self.elements.add(element)
        return vector_name(element, lanes)

    def use_lanes(self, lanes: int) -> str:
        """The name of the mask-lanes helper of `lanes` lanes, recorded."""
        self.vector("int32_t", lanes)
        self.lanes_used.add(lanes)
        return f"nu_lanes_x{lanes}"

    def use_form(self, form: LaneForm, lanes: int) -> None:
        """Record a form of `lanes` lanes (lane_helpers.py) and what it uses."""
        for needed in form.needs:
            self.use_form(lane_form(needed, lanes), lanes)
        for element in form.vectors:
            self.vector(element, lanes)
        if form.lanes:
            self.use_lanes(lanes)
        self.lane_forms.setdefault(form.name, form.code)

    def state(self) -> tuple:
        """What `restore` goes back to (a gang's trial emission leaves nothing behind)."""
        return set(self.vector_types), set(self.lanes_used), dict(self.lane_forms)

    def restore(self, state: tuple) -> None:
        vector_types, lanes_used, lane_forms = state
        self.vector_types, self.lanes_used, self.lane_forms = set(vector_types), set(lanes_used), dict(lane_forms)

    def section(self) -> str:
        """The `vectors` section ("" when no vector is used): <string.h> (memcpy:
        a gang's block of elements), the vector typedefs, the x86 intrinsics the
        helpers call (emit_c/intrinsics.py: no <immintrin.h>, whose parse was
        most of a cold compile), then the mask-lanes helpers and the lane forms."""
        typedefs = [f"typedef {e} {vector_name(e, n)} __attribute__((vector_size({SIZES[e] * n})));\n"
                    for n in sorted({n for _, n in self.vector_types}) for e in SIZES
                    if (e, n) in self.vector_types]
        helpers = [lanes_helper(n) for n in sorted(self.lanes_used)] + list(self.lane_forms.values())
        if not typedefs and not helpers:
            return ""
        return "".join(["#include <string.h>\n", *typedefs, intrinsics.section("".join(helpers)), *helpers]
                       ).rstrip("\n") + "\n"


def vector_name(element: str, lanes: int) -> str:
    return f"nu_{SHORT[element]}x{lanes}"


class _LaneFunctionEmitter(LaneMemory, LaneThreads, FunctionEmitter):
    def __init__(self, mod: ModuleContext, fn: ir.Function, preamble: LanePreamble):
        super().__init__(mod, fn)
        self.preamble = preamble
        self.gang = 0  # the size of the gang being written (each Gang's own)
        self.width = 0  # lanes per vector in the gang loop being written
        # which vector of the gang a statement of varying values is being written
        # for (`each`); None while writing what all of them share
        self.part: Optional[int] = None
        self.varying_names: Optional[frozenset] = None  # in a gang body: its varying locals
        self.counter = ""     # the gang's counter (IR name)
        self.base = ""        # the C name of the gang's first index
        # masks are tuples, a C name per vector of the gang (an entry None: all its lanes)
        self.mask: Optional[tuple] = None   # the active lanes, None: all lanes
        self.gang_mask: Optional[tuple] = None  # the lanes a raise or break has not stopped
        self.masks: list[tuple] = []  # the masks of the blocks being emitted, outermost first
        # per masked block (as masks): the locals whose inactive lanes nothing reads
        # (declared in the block, or dead after its loop: dead_after_loops)
        self.unread: list[set[str]] = []
        self.dead_after: dict[int, frozenset[str]] = {}
        # ids of the gang body's stores written as whole elements, and the
        # field vectors of each span waiting for the rest (block_store_plan)
        self.block_stores: dict[int, object] = {}
        # binary64 vectors (C names) that are a binary32 vector promoted, and the
        # gang body's assigned locals (a Let of one of those keeps the fact
        # only if the local is never assigned)
        self.promoted: dict[str, str] = {}
        self.reassigned: set[str] = set()
        self.in_tail = False  # writing a masked tail's gang (tail_lanes)
        self.status: Optional[str] = None  # in a gang with ops that can raise: its C status
        self.pending: dict[tuple[str, int], dict[str, str]] = {}
        self.loaded: dict[tuple, object] = {}  # what a load left in scope (lane_memory.py)
        # per enclosing loop: (its mask or None, len(self.masks) inside it, for the gang
        # loop itself the C flag its break sets, else None)
        self.loops: list[tuple[Optional[tuple], int, Optional[str]]] = []

    @property
    def parts(self) -> int:
        """The vectors of one gang."""
        return self.gang // self.width

    # ---- the gang loop
    def stmt_Gang(self, s: ir.Gang) -> None:
        """`{ counter; accumulators; for (gangs) { body } combine; for (tail) { scalar body } }`,
        the gangs written for each register width whose lanes differ; where
        `masked_tail` says so, a tail of more than SCALAR_TAIL iterations is a
        gang under a mask instead (`masked_tails`: `if (tail) { accumulators;
        body; combine }`, after the gangs), the scalar loop only the fewest's."""
        self.gang = s.size
        tail = masked_tail(s)
        start = self.expr(s.start)
        stop = self.expr(s.stop)
        self.line("{")
        self.depth += 1
        if not isinstance(s.stop, (ir.Const, ir.Len)):
            bound = self.temp()
            self.line(f"const int32_t {bound} = {stop};")
            stop = bound
        counter = self.temp("c")
        self.line(f"int64_t {counter} = {start};")
        stopped = self.stop_flags(s)
        widths = self.register_widths(s, counter, stop, stopped)
        for k, (width, macro) in enumerate(widths):
            if len(widths) > 1:
                self.line("#else" if macro is None else f"#{'if' if k == 0 else 'elif'} {macro}")
            self.gangs(s, counter, stop, stopped, width)
            if tail:
                self.masked_tails(s, counter, stop, stopped, [w for w, _ in widths[k:]])
        if len(widths) > 1:
            self.line("#endif")
        if self.status:  # the first raising lane's error, once the lanes before it are done
            self.line(f"if ({self.status} != 0) return {self.status};")
            self.status = None
        # the tail: the n mod G iterations left as the scalar loop, or (masked tails) only the fewest
        few = f" && {stop} - {counter} < {SCALAR_TAIL}" if tail else ""
        self.line(f"for (; {self.not_stopped(stopped)}{counter} <= {stop}{few}; ++{counter}) {{")
        self.counted_body(s.scalar_loop(), counter)
        self.depth -= 1
        self.line("}")

    @staticmethod
    def not_stopped(stopped: Optional[str]) -> str:
        """The start of a tail's condition: no break or raise has ended the loop."""
        return f"!{stopped} && " if stopped else ""

    def register_widths(self, s: ir.Gang, counter: str, stop: str, stopped: Optional[str]) -> list:
        """The lanes per vector for each register width, as (lanes, the macro of the
        narrowest register taking them; None for the last): the most lanes of the
        gang's widest element one register holds, a register no wider than the
        gang's `vector_bits` (its cost model's choice).  That element is found by
        writing the gangs once and taking it back."""
        state = self.checkpoint()
        self.preamble.elements = set()
        self.gangs(s, counter, stop, stopped, self.gang)
        widest = max(SIZES[e] for e in self.preamble.elements) if self.preamble.elements else 4
        self.rollback(state)
        widths: list = []
        cap = (s.vector_bits or 8 * REGISTERS[0][0]) // 8
        for size, macro in REGISTERS:
            width = min(self.gang, min(size, cap) // widest)
            if widths and widths[-1][0] == width:
                widths[-1] = (width, macro)
            else:
                widths.append((width, macro))
        return widths

    def checkpoint(self) -> tuple:
        return (len(self.lines), len(self.decls), self.count, set(self.names.taken), set(self.reads),
                self.preamble.state(), set(self.mod.helpers), set(self.mod.headers))

    def rollback(self, state: tuple) -> None:
        """Drop everything written since `checkpoint` (the errors it named are kept:
        the same gang names them again)."""
        lines, decls, self.count, taken, self.reads, preamble, helpers, headers = state
        del self.lines[lines:]
        del self.decls[decls:]
        self.names.taken = taken
        self.preamble.restore(preamble)
        self.mod.helpers.clear()
        self.mod.helpers.update(helpers)
        self.mod.headers.clear()
        self.mod.headers.update(headers)

    def masked_tails(self, s: ir.Gang, counter: str, stop: str, stopped: Optional[str], widths: list[int]) -> None:
        """The masked tail at widths[0] lanes per vector (the rest: the narrower
        registers' lanes): the iterations left, if more than SCALAR_TAIL (the
        scalar loop after the gangs runs those), as a gang under a mask, the
        smallest of one vector of the narrowest register that holds them, or 1, 2,
        4 ... vectors of widths[0] lanes (a masked round costs what its vectors
        do, so a few lanes left never pay for the whole gang: `masked_tail`)."""
        full, last, lowest = self.gang, f"{stop} - {counter}", SCALAR_TAIL  # last: the last lane left
        for size, width in tail_gangs(widths, full):
            if size > lowest:
                self.gang = size
                self.gangs(s, counter, stop, stopped, width, tail=f"{last} >= {lowest} && {last} < {size}")
                self.gang, lowest = full, size
        if lowest <= full - 2:  # the last lane of a tail is at most G - 2
            self.gangs(s, counter, stop, stopped, widths[0], tail=f"{last} >= {lowest}")

    def gangs(self, s: ir.Gang, counter: str, stop: str, stopped: Optional[str], width: int,
              tail: Optional[str] = None) -> None:
        """The accumulators, the loop over whole gangs at `width` lanes per vector (also
        split between threads where the loop allows: lane_threads.py), and the combination;
        or, for a masked tail (`tail` not None), the one gang of the iterations left,
        if any and if `tail` (C: the condition on what is left that picks this gang)."""
        self.width = width
        locals_ = [self.lookup(name) for name, _ in s.reductions]  # the locals the reductions end in
        self.scopes.append({})  # the reductions' accumulators, across the gangs
        accumulators = [self.accumulator(name, op) for name, op in s.reductions]
        threaded = tail is None and thread_refusal(s) is None
        if threaded:
            self.threaded_gangs(s, counter, stop, locals_)
            self.depth += 1
        if tail is not None:
            self.line(f"if ({self.not_stopped(stopped)}{counter} <= {stop} && {tail}) {{")
        else:
            self.line(f"for (; {counter} + {self.gang - 1} <= {stop}; {counter} += {self.gang}) {{")
        self.gang_body(s, counter, stopped, stop if tail is not None else None)
        self.line("}")
        if threaded:
            self.depth -= 1
            self.line("}")
        self.scopes.pop()
        for (_, op), local, acc in zip(s.reductions, locals_, accumulators):
            self.combine(self.read(local), op, self.accumulated_lanes(acc))

    def stop_flags(self, s: ir.Gang) -> Optional[str]:
        """The C flag that ends the gangs early (a break leaves the loop, or an op
        raised: no later gang, no tail), and the status a raise leaves (self.status)."""
        can_raise = any(raises(e) for st in statements(s.body) for e in own_exprs(st))
        stopped = self.temp("stop") if breaks_leaving(s.body) or can_raise else None
        if stopped:
            self.line(f"int {stopped} = 0;")
        self.status = self.temp("st") if can_raise else None
        if self.status:
            self.line(f"int32_t {self.status} = 0;")
        return stopped

    def gang_body(self, s: ir.Gang, counter: str, stopped: Optional[str], tail_stop: Optional[str] = None) -> None:
        """One gang: the base index, the counter's lanes, per-lane copies of outside
        locals, then the body (under a mask of the lanes still going if it can stop,
        or of the lanes up to `tail_stop` in a masked tail)."""
        self.depth += 1
        self.scopes.append({})
        self.varying_names, self.counter, self.mask = frozenset(s.varying), s.var, None
        self.promoted, self.loaded = {}, {}
        self.dead_after = dead_after_loops(s.body)
        self.reassigned = {st.name for st in statements(s.body) if isinstance(st, ir.Assign)}
        self.base = self.temp("b")
        self.declare_line(f"const int32_t {self.base} = (int32_t){counter};", self.base, drop=True)
        self.in_tail = tail_stop is not None
        if self.in_tail:
            active = self.tail_lanes(s, counter, tail_stop)
        else:
            active = None
            for k, var in enumerate(self.bind_parts(s.var)):
                lanes = ", ".join(f"(int32_t){counter} + {k * self.width + n}" for n in range(self.width))
                self.declare_line(f"const {self.vec(Width.I32)} {var} = {{{lanes}}};", var, drop=True)
        for name, width in _outer_varying(s).items():  # each lane's own copy, unread after the loop
            for c_name in self.bind_parts(name):
                self.declare_line(f"{self.vec(width)} {c_name} = {{0}};", c_name)
        if stopped or active:
            self.masked_gang(s, stopped, active)
        else:
            self.block_stores = self.block_store_plan(s)
            for stmt in s.body:
                self.stmt(stmt)
            self.block_stores = {}
        self.varying_names = None
        self.in_tail = False
        self.scopes.pop()
        self.depth -= 1

    def tail_lanes(self, s: ir.Gang, counter: str, stop: str) -> tuple[str, ...]:
        """A masked tail's mask, its lanes up to `stop` active (a variable: a break
        clears lanes of it), and the counter's lanes, an inactive lane's the last
        active one's (`stop`): it computes with an index of the loop, and what it
        loads (at the counter: load_field) is an element of the span."""
        last = self.temp("r")  # the last active lane: 0 .. G - 2
        self.line(f"const int32_t {last} = (int32_t)({stop} - {counter});")
        last = self.broadcast(last, Width.I32)
        active = self.part_names("a")
        vector = self.vec(Width.I32)
        for k, var in enumerate(self.bind_parts(s.var)):
            lanes = self.named(Width.I32, "{" + ", ".join(str(k * self.width + n) for n in range(self.width)) + "}")
            self.line(f"{vector} {active[k]} = ({lanes} <= {last});")
            self.reads.add(active[k])
            clamped = self.select(active[k], lanes, last, Width.I32)
            self.declare_line(f"const {vector} {var} = {clamped} + (int32_t){counter};", var, drop=True)
        return active

    def masked_gang(self, s: ir.Gang, stopped: Optional[str], active: Optional[tuple[str, ...]]) -> None:
        """A gang body under a mask of the lanes still going: a masked tail's
        `active` lanes, or every lane of a gang a break or raise can stop, which
        clears the mask from its first stopping lane on (the scalar loop would
        never reach the later iterations); then no later gang runs."""
        if active is None:
            active = self.part_names("a")
            self.loop_mask(active)
        self.gang_mask = active
        self.loops.append((active, len(self.masks), stopped))
        self.under_mask(active, s.body)
        self.loops.pop()
        if stopped and not self.in_tail:  # a tail is the last gang
            self.line(f"if ({stopped}) break;")

    def accumulator(self, name: str, op: str) -> tuple[str, ...]:
        """A reduction's vectors of per-lane partial results, each starting at the op's identity."""
        width = OPS[op].result
        identity = c_const(OPS[op].identity, width)
        accumulators = self.bind_parts(name, "r_")
        for acc in accumulators:
            self.line(f"{self.vec(width)} {acc} = {{{', '.join([identity] * self.width)}}};")
            self.reads.add(acc)
        return accumulators

    def combine(self, target: str, op: str, partials: list[str]) -> None:
        """`target` (a local, a chunk's partial result) takes each partial result (C
        expressions: lanes of accumulators, chunks' results) by the op's scalar rule
        (sub: the partials are sums of negated terms, so they add).  For an exact op
        the order of the terms cannot change a bit."""
        rendering = C_OPS[combining_op(op)]
        self.mod.use(rendering)
        for partial in partials:
            self.line(f"{target} = {bare(rendering.scalar.format(target, partial))};")

    def accumulated_lanes(self, accumulators: tuple[str, ...]) -> list[str]:
        """Every lane of a reduction's accumulators, in lane order."""
        return [f"{acc}[{k}]" for acc in accumulators for k in range(self.width)]

    def load_field(self, e: ir.Load):
        """In a masked tail each lane reads the element at its counter's lane
        (an inactive lane's is the last active one's: tail_lanes), never past
        the end of the span; elsewhere lane_memory.py's loads of whole gangs."""
        if not self.in_tail:
            return super().load_field(e)
        field, storage, _ = self.field_of(e.span, e.field)
        stored = FIELD_C_TYPES[storage.name]
        access = f"{self.read(self.spans[e.span][0])}[{self.read(self.lookup(self.counter))}[{LANE}] - 1].{field}"
        if stored in SIZES:
            return self.per_lane_typed(stored, access), stored
        return self.per_lane(e.width, f"(({c_type(e.width)}){access})"), c_type(e.width)

    # ---- the vectors of a gang
    def each(self, emit: Callable[[], object]) -> list:
        """emit() once per vector of the gang, in lane order, `part` naming it."""
        assert self.part is None, "each() inside a vector's own statement"
        out = []
        for k in range(self.parts):
            self.part = k
            out.append(emit())
        self.part = None
        return out

    def part_names(self, stem: str) -> tuple[str, ...]:
        """A temporary for each vector of the gang: `m7`, or `m7_0`, `m7_1`, ..."""
        t = self.temp(stem)
        return (t,) if self.parts == 1 else tuple(f"{t}_{k}" for k in range(self.parts))

    def bind_parts(self, name: str, prefix: str = "v_") -> tuple[str, ...]:
        """Bind a varying local: a C name for each vector of the gang."""
        if self.parts == 1:
            names = (self.names.fresh(prefix, name),)
        else:
            names = tuple(self.names.fresh(prefix, f"{name}_p{k}") for k in range(self.parts))
        self.scopes[-1][name] = names
        return names

    def lookup(self, name: str) -> str:
        """A local's C name; a varying one's for the vector being written."""
        c_name = super().lookup(name)
        return c_name[self.part] if isinstance(c_name, tuple) else c_name

    def active(self) -> Optional[str]:
        """The mask of the active lanes of the vector being written (None: all)."""
        mask = None if self.mask is None else self.mask[self.part]
        return None if mask is None else self.read(mask)

    def lanes(self, masks: dict[int, str]) -> str:
        """C for the set lanes of a gang's masks (vector k -> its mask) as the
        bits of an unsigned: lane k*W + n at bit k*W + n."""
        helper = self.preamble.use_lanes(self.width)
        terms = [f"{helper}(&{self.read(m)})" + (f" << {k * self.width}" if k else "") for k, m in masks.items()]
        return terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"

    def all_lanes(self, mask: tuple) -> str:
        return self.lanes(dict(enumerate(mask)))

    # ---- statements of a gang body (uniform ones are the scalar emitter's)
    def vec(self, width: Width) -> str:
        return self.vector_of(ELEMENTS[width])

    def vector_of(self, element: str) -> str:
        """The vector type of `element` lanes in the gang being written."""
        return self.preamble.vector(element, self.width)

    def varying(self, e) -> bool:
        return self.varying_names is not None and is_varying(e, self.varying_names)

    def varying_local(self, name: str) -> bool:
        return self.varying_names is not None and name in self.varying_names

    def stmt(self, s) -> None:
        """In a gang body: a statement of one vector's values (an assignment of a
        varying local, a store, a call per lane) is written for each vector in
        turn; a statement with blocks once, knowing what a load left in scope."""
        if self.varying_names is None or self.part is not None:
            return super().stmt(s)
        if (isinstance(s, ir.Store) or (isinstance(s, ir.Assign) and self.varying_local(s.name))
                or (isinstance(s, ir.Eval) and self.varying(s.expr))):
            self.each(lambda: super(_LaneFunctionEmitter, self).stmt(s))
            return
        if not blocks(s):
            return super().stmt(s)
        self.forget_stored(blocks(s))  # a loop may store what a load before it read
        kept = dict(self.loaded)
        super().stmt(s)
        self.loaded = kept

    def forget_stored(self, bodies) -> None:
        """Drop what loads left in scope of the spans `bodies` store to."""
        stored = {x.span for body in bodies for x in statements(body) if isinstance(x, ir.Store)}
        self.loaded = {key: value for key, value in self.loaded.items() if key[0] not in stored}

    def block(self, stmts) -> None:
        """A nested block: what a load inside it leaves is out of scope after it
        (its statement has dropped what the block may store over: `stmt`)."""
        outer = dict(self.loaded)
        super().block(stmts)
        self.loaded = outer

    def stmt_Let(self, s: ir.Let) -> None:
        # Under a mask too: the local lives in the masked block, so what its
        # inactive lanes hold (pure ops of their own inputs) is never observed.
        if not self.varying_local(s.name):
            self.check_uniform(s)
            return super().stmt_Let(s)
        values = self.each(lambda: self.vector_expr(s.value) if s.value is not None else "{0}")
        if self.mask is not None:  # it lives in this masked block: no one reads its inactive lanes
            self.unread[-1].add(s.name)
        for c_name, value in zip(self.bind_parts(s.name), values):
            self.declare_line(f"{self.vec(s.width)} {c_name} = {value};", c_name)
            if value in self.promoted and s.name not in self.reassigned:
                self.promoted[c_name] = self.promoted[value]

    def stmt_Assign(self, s: ir.Assign) -> None:
        if not self.varying_local(s.name):
            self.check_uniform(s)
            return super().stmt_Assign(s)
        value = self.vector_expr(s.value)
        c_name = self.lookup(s.name)
        if value == c_name:
            return
        mask = self.active()
        if mask is None or (self.mask is self.masks[-1] and s.name in self.unread[-1]):
            self.line(f"{c_name} = {value};")
        else:  # the inactive lanes keep their value
            self.line(f"{c_name} = {self.select(mask, value, self.read(c_name), s.value.width)};")

    def check_uniform(self, s) -> None:
        """A uniform local takes the same value in every lane, so it stays scalar.
        The only mask it may be set under is the gang's own (the lanes still
        going after a raise or a break): a lane that stopped never reads it
        again.  Under any other mask the analysis makes the local varying."""
        assert self.mask is None or self.mask == self.gang_mask, s

    def select(self, mask: str, new: str, old: str, width: Width) -> str:
        """Lanes of `new` where `mask` is set, of `old` elsewhere: a bitwise blend."""
        if width is Width.BOOL:
            return f"(({new} & {mask}) | ({old} & ~{mask}))"
        element = ELEMENTS[width]
        blend = self.vector_of(BLEND[SIZES[element]])
        m = mask if SIZES[element] == 4 else self.converted(mask, "int32_t", BLEND[SIZES[element]])
        cast = "" if element == BLEND[SIZES[element]] else f"({self.vec(width)})"
        return f"{cast}((({blend}){new} & {m}) | (({blend}){old} & ~{m}))"

    def stmt_If(self, s: ir.If) -> None:
        if s.masked:
            return self.masked_if(s)
        if self.varying_names is None or s.labels is not None or not self.chain_varies(s.orelse):
            return super().stmt_If(s)  # all uniform: the scalar if / else if / switch
        # a uniform condition whose elif chain varies further down: no `else if` chaining
        self.line(f"if ({bare(self.expr(s.cond))}) {{")
        self.block(s.then)
        self.line("} else {")
        self.block(s.orelse)
        self.line("}")

    def one_line_each(self, stmts) -> bool:
        """In a gang body a store, and a varying value, take vector temporaries
        and lane loops: only an assignment of a uniform local is one line."""
        return super().one_line_each(stmts) and (self.varying_names is None or all(
            isinstance(s, ir.Assign) and not self.varying_local(s.name) for s in stmts))

    def chain_varies(self, rest) -> bool:
        while len(rest) == 1 and isinstance(rest[0], ir.If):
            if rest[0].masked:
                return True
            rest = rest[0].orelse
        return False

    def masked_if(self, s: ir.If) -> None:
        """`then` under mask & c, `orelse` under mask & ~c, each skipped when no
        lane is active in it, or both run as selects when that is cheaper."""
        cost = select_cost(s.then + s.orelse, self.varying_names)
        branch_free = cost is not None and cost <= SELECT_BUDGET
        chain = select_chain(s) if branch_free else None
        if chain is not None:
            return self.selects_last_first(*chain)
        conds = self.each(lambda: self.vector_expr(s.cond))
        outer = self.mask
        sides = [(body, self.arm_masks(conds, negate)) for body, negate in ((s.then, ""), (s.orelse, "~")) if body]
        for body, m in sides:
            if outer is not None and any(stopped for _, _, stopped in self.loops):
                for k, name in enumerate(m):  # a break in `then` may have stopped later lanes
                    if outer[k] is not None:
                        self.line(f"{name} &= {self.read(outer[k])};")
            self.line("{" if branch_free else f"if ({self.all_lanes(m)} != 0) {{")
            self.under_mask(m, body)
            self.line("}")

    def arm_masks(self, conds: list, negate: str) -> tuple:
        """A mask for each vector of the gang: its active lanes where `negate`
        applied to the condition (`conds`, one per vector) holds."""
        outer = self.mask
        m = self.part_names("m")
        for k, name in enumerate(m):
            test = negate + conds[k]
            active = test if outer is None or outer[k] is None else f"{self.read(outer[k])} & {test}"
            self.line(f"{self.vec(Width.BOOL)} {name} = {active};")  # a break clears lanes of it
        return m

    def selects_last_first(self, arms: list, last: tuple) -> None:
        """A chain `select_chain` accepts: every condition first, then the last
        else under the enclosing mask, then the arms from the last to the first,
        each under its own condition: no complemented masks, and an arm's
        selects overwrite what the arms after it left in its lanes."""
        masks = [self.arm_masks(self.each(lambda: self.vector_expr(cond)), "") for cond, _ in arms]
        runs = [(last, self.mask)] + [(body, m) for (_, body), m in reversed(list(zip(arms, masks)))]
        for body, m in runs:
            if body:
                self.line("{")
                self.under_mask(m, body)
                self.line("}")

    def under_mask(self, mask: Optional[tuple], body, unread: frozenset = frozenset()) -> None:
        """A block run under `mask` (None: every lane), which its breaks may clear
        lanes of; `unread`: locals whose inactive lanes nothing reads."""
        outer = self.mask
        self.mask = mask
        if mask is not None:
            self.masks.append(mask)
            self.unread.append(set(unread))
        self.block(body)
        if mask is not None:
            self.masks.pop()
            self.unread.pop()
        self.mask = outer

    def stmt_While(self, s: ir.While) -> None:
        """The lanes still looping are a mask, each round `mask &= cond`; the
        loop ends when none is left, and a break under a mask takes its lanes
        out of it.  While every lane loops (the common case) a body without
        breaks runs without selects, as ISPC does for coherent lanes.  Where
        the rounds only compute (`vector_by_vector`), the gang's rounds end
        when the lanes of one of its vectors have all left, and the vectors
        go on one by one (`rounds_by_vector`)."""
        if not s.masked:
            return self.in_loop(None, lambda: super(_LaneFunctionEmitter, self).stmt_While(s))
        by_vector = self.parts > 1 and vector_by_vector(s, self.varying_names)
        m, k = self.part_names("w"), self.temp("k")
        self.line("{")
        self.depth += 1
        self.loop_mask(m)
        if by_vector:
            self.line(f"unsigned {k};")
        self.line("for (;;) {")
        self.depth += 1
        conds = self.each(lambda: self.vector_expr(s.cond))
        for name, cond in zip(m, conds):
            self.line(f"{name} &= {cond};")  # lanes that leave stay out
        self.line(f"{'' if by_vector else 'const unsigned '}{k} = {self.all_lanes(m)};")
        if not by_vector:
            self.line(f"if ({k} == 0) break;")
        if breaks_leaving(s.body) or self.in_tail:  # a tail never has every lane
            self.line("{")
        else:
            self.line(f"if ({k} == {(1 << self.gang) - 1}u) {{")
            self.in_loop(m, lambda: self.under_mask(None, s.body))
            self.line("} else {")
        if by_vector:  # not every lane loops: has some vector none left?
            self.depth += 1
            self.line(f"if ({self.a_vector_left(k)}) break;")
            self.depth -= 1
        self.in_loop(m, lambda: self.under_mask(m, s.body, self.dead_after[id(s)]))
        self.line("}")
        self.depth -= 1
        self.line("}")
        if by_vector:
            self.rounds_by_vector(s, m, k)
        self.depth -= 1
        self.line("}")

    def a_vector_left(self, k: str) -> str:
        """C: whether the lanes of some vector have all left, in `k` (the gang's
        lanes, vector j's at bits j*W .. j*W + W - 1): a field of W zero bits,
        by the borrow it takes (SWAR: exact for whether any field is zero)."""
        low = sum(1 << (j * self.width) for j in range(self.parts))
        return f"(({k} - {low:#x}u) & ~{k} & {low << (self.width - 1):#x}u) != 0"

    def rounds_by_vector(self, s: ir.While, m: tuple, k: str) -> None:
        """The rounds of a masked while after the lanes of one of the gang's
        vectors have all left (its condition taken, its body not yet run): each
        vector on its own, its lanes still looping as bits (`k_j`), until they
        are none, rather than every vector until the gang's last lane leaves;
        a vector whose lanes all loop runs without selects.

            for (;;) {
                if (k_0 != 0) { body_0 (under w_0 unless k_0 == all); w_0 &= cond_0; k_0 = lanes(w_0); }
                ...
                if ((k_0 | k_1 | ...) == 0) break;
            }

        A vector whose lanes have all left would only compute values of
        inactive lanes, which nothing reads, so the bits are the same.  While
        every vector has lanes the gang runs its rounds together, and tests
        for a vector with none left only in rounds where not every lane loops
        (BY_VECTOR_OPS: what it measured)."""
        every = (1 << self.width) - 1
        live = self.part_names("k")
        for j, name in enumerate(live):
            lanes = f"({k} >> {j * self.width})" if j else k
            self.line(f"unsigned {name} = {lanes} & {every}u;")
        self.line("for (;;) {")
        self.depth += 1
        for j in range(self.parts):
            self.line(f"if ({live[j]} != 0) {{")
            self.depth += 1
            self.vector_round(s, j, m[j], live[j], f"{every}u")
            self.depth -= 1
            self.line("}")
        self.line(f"if (({' | '.join(live)}) == 0) break;")
        self.depth -= 1
        self.line("}")

    def vector_round(self, s: ir.While, j: int, m: str, live: str, every: str) -> None:
        """One round of rounds_by_vector for vector `j` alone, written as in a
        gang of that one vector: every varying local and the outer mask its
        j-th C name."""
        saved = self.gang, self.mask
        self.scopes.append({name: (c_name[j],) if isinstance(c_name, tuple) else c_name
                            for scope in self.scopes for name, c_name in scope.items()})
        self.gang, self.mask = self.width, None if self.mask is None else (self.mask[j],)
        self.line(f"if ({live} == {every}) {{")
        self.in_loop((m,), lambda: self.under_mask(None, s.body))
        self.line("} else {")
        self.in_loop((m,), lambda: self.under_mask((m,), s.body, self.dead_after[id(s)]))
        self.line("}")
        cond, = self.each(lambda: self.vector_expr(s.cond))
        self.line(f"{m} &= {cond};")
        self.line(f"{live} = {self.all_lanes((m,))};")
        self.scopes.pop()
        self.gang, self.mask = saved

    def loop_mask(self, m: tuple) -> None:
        """Declare a loop's mask: the lanes active where it starts (every lane, or the mask's)."""
        every = "{" + ", ".join(["-1"] * self.width) + "}"
        for k, name in enumerate(m):
            outer = None if self.mask is None else self.mask[k]
            self.line(f"{self.vec(Width.BOOL)} {name} = {self.read(outer) if outer else every};")
            self.reads.add(name)

    def in_loop(self, mask: Optional[tuple], emit) -> None:
        """Emit a loop's body knowing its loop: a masked while's mask, or None."""
        self.loops.append((mask, len(self.masks), None))
        emit()
        self.loops.pop()

    def stmt_For(self, s: ir.For) -> None:
        if self.varying_names is None:
            return super().stmt_For(s)
        if not s.masked:
            return self.in_loop(None, lambda: super(_LaneFunctionEmitter, self).stmt_For(s))
        self.masked_for(s)

    def masked_for(self, s: ir.For) -> None:
        """A for whose counter varies: an int64 counter per lane (as the scalar C's,
        so no lane overflows at INT32_MAX), bounds taken once, the lanes still
        counting a mask that each round keeps those within their bound; the
        loop ends when none is left."""
        i64, i32, mask = self.vec(Width.I64), self.vec(Width.I32), self.vec(Width.BOOL)
        starts = self.each(lambda: self.vector_expr(s.start))
        stops = self.each(lambda: self.vector_expr(s.stop))
        self.forget_stored([s.body])  # the bounds' loads run once, before rounds that follow a store
        c, last, step, m = self.part_names("c"), self.part_names("e"), self.temp("s"), self.part_names("w")
        self.line("{")
        self.depth += 1
        for k in range(self.parts):
            self.line(f"{i64} {c[k]} = {self.converted(starts[k], 'int32_t', 'int64_t')};")
            self.line(f"const {i64} {last[k]} = {self.converted(stops[k], 'int32_t', 'int64_t')};")
        self.line(f"const {i64} {step} = {{{', '.join([str(s.step)] * self.width)}}};")
        self.loop_mask(m)
        self.reads.update((*c, *last, step))
        self.line("for (;;) {")
        self.depth += 1
        test = "<=" if s.step > 0 else ">="
        for k in range(self.parts):
            self.line(f"{m[k]} &= {self.converted(f'({c[k]} {test} {last[k]})', 'int64_t', 'int32_t')};")
        self.line(f"if ({self.all_lanes(m)} == 0) break;")
        self.scopes.append({})
        for k, var in enumerate(self.bind_parts(s.var)):
            # one expression: the declaration goes when nothing reads the counter
            self.declare_line(f"const {i32} {var} = __builtin_convertvector({c[k]}, {i32});", var, drop=True)
        self.in_loop(m, lambda: self.under_mask(m, s.body, self.dead_after[id(s)]))
        self.scopes.pop()
        for k in range(self.parts):
            self.line(f"{c[k]} += {step};")
        self.depth -= 1
        self.line("}")
        self.depth -= 1
        self.line("}")

    def stmt_Break(self, s: ir.Break) -> None:
        """A break every active lane takes is C's; under a mask it takes the
        active lanes out of their while's mask and of every mask inside it."""
        loop_mask, first, stopped = self.loops[-1] if self.loops else (None, 0, None)
        if stopped:
            return self.gang_break(first, stopped)
        if self.varying_names is None or self.mask is None or loop_mask is None:
            return super().stmt_Break(s)
        leaving = self.part_names("x")
        for k, name in enumerate(leaving):
            self.line(f"const {self.vec(Width.BOOL)} {name} = {self.read(self.mask[k])};")
            self.reads.add(name)
        for m in self.masks[first:]:  # the while's own mask first
            for k, name in enumerate(leaving):
                self.line(f"{m[k]} &= ~{name};")

    def gang_break(self, first: int, stopped: str, leaving: Optional[dict[int, str]] = None,
                   status: Optional[Callable[[str], str]] = None) -> None:
        """The lanes `leaving` (vector k -> its mask of them; default: the active
        ones) leave the gang loop, by a break or an error (`status`): every lane
        from the lowest of them on stops (the rewrite has checked that no lane
        did anything observable before this point of its iteration), and the
        loop ends after this gang."""
        k, lowest = self.temp("k"), self.temp("f")
        mask = self.vec(Width.BOOL)
        self.line(f"const unsigned {k} = {self.lanes(leaving or dict(enumerate(self.mask)))};")
        self.line(f"if ({k} != 0) {{")
        self.depth += 1
        self.line(f"const int32_t {lowest} = __builtin_ctz({k});")
        for part, cut in enumerate(self.part_names("x")):
            lanes = ", ".join(str(part * self.width + n) for n in range(self.width))
            self.line(f"const {mask} {cut} = ({mask}){{{lanes}}} >= {lowest};")
            for m in self.masks[first:]:  # the gang's own mask first
                self.line(f"{m[part]} &= ~{cut};")
        self.line(f"{stopped} = 1;")
        if status is not None:  # a later raise is always at a lower lane: it overrides
            self.line(f"{self.status} = {status(lowest)};")
        self.depth -= 1
        self.line("}")

    def safe_divisor(self, e: ir.Op) -> str:
        """The divisor of an integer // or % that may be zero, lane LANE: the
        active lanes dividing by zero raise (gang_break with the op's error);
        every lane then divides by its divisor or, where that is zero, by 1, a
        value no one reads."""
        info = OPS[e.op]
        divisor = self.vector_expr(e.args[1])
        width = e.args[1].width
        zero = self.named(Width.BOOL, self.compare_text(divisor, "==", self.broadcast("0", width), width))
        failing = self.named(Width.BOOL, f"{zero} & {self.active()}")
        _, first, stopped = self.loops[-1]
        status = self.mod.error(f"{self.mod.path}:{e.loc.line}: {info.raises}")
        self.gang_break(first, stopped, {self.part: failing}, lambda _: str(status))
        one = self.broadcast("1", width)
        safe = self.named(width, self.select(zero, one, divisor, width))
        return f"{safe}[{LANE}]"

    # ---- varying expressions
    def lane(self, e) -> str:
        """C for lane LANE of e: `v[LANE]` of its vector (a mask lane as 0 or 1),
        or the scalar C of a uniform e (held in a temporary unless it is a name
        or a literal, since it is written once per lane)."""
        if not self.varying(e):
            c = self.expr(e)
            if isinstance(e, (ir.Var, ir.Const, ir.Len)):
                return c
            t = self.temp()
            self.line(f"const {c_type(e.width)} {t} = {bare(c)};")
            self.reads.add(t)
            return t
        if e.width is Width.BOOL:
            return f"({self.vector_expr(e)}[{LANE}] != 0)"
        return f"{self.vector_expr(e)}[{LANE}]"

    def lanes_of(self, lane_c: str) -> str:
        """A vector initializer: the C of lane LANE written out for each lane."""
        return "{" + ", ".join(bare(lane_c.replace(LANE, str(k))) for k in range(self.width)) + "}"

    def vector_expr(self, e) -> str:
        """A vector of e's lanes: the name of a vector local or temporary, or a
        broadcast of a uniform value."""
        if not self.varying(e):
            return self.broadcast(self.expr(e), e.width)
        if isinstance(e, ir.Var):
            return self.read(self.lookup(e.name))
        if isinstance(e, ir.Load):
            return self.gather(e)
        if isinstance(e, ir.Call):
            return self.call_per_lane(e)
        return self.op(e)

    def stmt_Eval(self, s: ir.Eval) -> None:
        if self.varying(s.expr):
            self.call_per_lane(s.expr)
        else:
            super().stmt_Eval(s)

    def call_per_lane(self, e: ir.Call) -> Optional[str]:
        """A call with varying arguments: the callee's C once per active lane; the
        lanes whose call fails raise as an op does (gang_break), the error the
        lowest failing lane's status."""
        args = [self.lane(a).replace(LANE, "l") for a in e.args]
        result = None
        statuses = self.temp("sts")
        self.line(f"{self.vec(Width.I32)} {statuses} = {{0}};")
        if e.width is not None:
            result = self.temp()
            self.line(f"{self.vec(e.width)} {result} = {{0}};")
            self.reads.add(result)
        self.line(f"for (int l = 0; l < {self.width}; l++) {{")
        self.depth += 1
        mask = self.active()
        if mask is not None:
            self.line(f"if (!{mask}[l]) continue;")
        if e.width is not None:
            value = self.temp()
            self.line(f"{c_type(e.width)} {value} = 0;")
            args.append(f"&{value}")
            lane_value = f"-(int32_t){value}" if e.width is Width.BOOL else value
        self.line(f"{statuses}[l] = {self.mod.impls[e.func]}({', '.join(bare(a) for a in args)});")
        if e.width is not None:
            self.line(f"{result}[l] = {lane_value};")
        self.depth -= 1
        self.line("}")
        failing = self.named(Width.BOOL, f"({statuses} != 0)")
        _, first, stopped = self.loops[-1]
        offset = self.part * self.width  # the failing lanes are this vector's

        def status(lowest: str) -> str:
            return f"{statuses}[{lowest} - {offset}]" if offset else f"{statuses}[{lowest}]"
        self.gang_break(first, stopped, {self.part: failing}, status)
        return result

    def broadcast(self, scalar: str, width: Width) -> str:
        t = self.temp()
        if width is Width.BOOL:
            scalar = f"-(int32_t)({bare(scalar)})"
        self.line(f"const {self.vec(width)} {t} = {{{', '.join([scalar] * self.width)}}};")
        self.reads.add(t)
        return t

    def per_lane(self, width: Width, lane_c: str) -> str:
        """A vector built from the scalar C of each lane (LANE replaced by its index)."""
        if width is Width.BOOL:
            lane_c = f"-(int32_t)({bare(lane_c)})"
        return self.named(width, self.lanes_of(lane_c))

    def per_lane_typed(self, element: str, lane_c: str) -> str:
        return self.named_typed(element, self.lanes_of(lane_c))

    def op(self, e: ir.Op) -> str:
        if OPS[e.op].lane == SHORT_CIRCUIT and raises(e.args[1]):
            return self.masked_short_circuit(e)
        if e.op in NATIVE:
            return self.native_op(e)
        if e.op in COMPARE:
            return self.compare(e)
        if e.op in CONVERT:
            return self.convert(e)
        if e.op == "bits.f32.u32" and isinstance(e.args[0], ir.Op) and e.args[0].op in CANONICAL_NAN_RESULTS:
            return self.named(e.width, f"({self.vec(e.width)}){self.vector_expr(e.args[0])}")
        form = lane_form(e.op, self.width)
        if form is not None:
            return self.lane_call(e, form)
        if fails_itself(e):
            args = [self.lane(e.args[0]), self.safe_divisor(e)]
        else:
            args = [self.lane(a) for a in e.args]
        return self.per_lane(e.width, self.scalar_rule(e).format(*args))

    def scalar_rule(self, e: ir.Op) -> str:
        """The op's scalar C template (its helpers recorded)."""
        rendering = rendering_of(e)
        self.mod.use(rendering)
        return rendering.scalar

    def masked_short_circuit(self, e: ir.Op) -> str:
        """`a and b` / `a or b` whose b can fail: b runs under the mask of the
        active lanes that a leaves undecided (a true for `and`, false for `or`),
        so a lane that a decided never raises in b."""
        left = self.vector_expr(e.args[0])
        undecided = left if OPS[e.op].base == "and" else f"~{left}"
        outer, mask = self.mask, self.active()
        mine = self.named(Width.BOOL, undecided if mask is None else f"{mask} & {undecided}")
        self.mask = tuple(mine if k == self.part else (outer[k] if outer else None) for k in range(self.parts))
        right = self.vector_expr(e.args[1])
        self.mask = outer
        return self.named(Width.BOOL, f"({left} {NATIVE[e.op][0]} {right})")

    def lane_call(self, e: ir.Op, form) -> str:
        """`nu_<op>xW(&r, &a, ...)`: the lane form of the op's helper (lane_helpers.py).
        A partial form that leaves some lane to the scalar rule returns 0: then
        every lane takes the scalar rule."""
        args = [self.vector_expr(a) for a in e.args]
        self.preamble.use_form(form, self.width)
        t = self.temp()
        self.line(f"{self.vec(e.width)} {t};")
        call = f"{form.name}(&{t}, {', '.join('&' + a for a in args)})"
        if form.partial:
            rule = self.scalar_rule(e).format(*(f"{a}[l]" for a in args))
            self.line(f"if (!{call}) for (int l = 0; l < {self.width}; l++) {t}[l] = {bare(rule)};")
        else:
            self.line(f"{call};")
        self.reads.add(t)
        return t

    def native_op(self, e: ir.Op) -> str:
        sym, unsigned = NATIVE[e.op]
        args = [self.vector_expr(a) for a in e.args]
        if unsigned is not None:
            u = self.vec(unsigned)
            args = [f"({u}){a}" for a in args]
        text = f"({sym}{args[0]})" if len(args) == 1 else f"({args[0]} {sym} {args[1]})"
        if unsigned is not None:
            text = f"({self.vec(e.width)}){text}"
        return self.named(e.width, text)

    def compare_text(self, a: str, sym: str, b: str, width: Width) -> str:
        """A vector comparison as a mask (0 / -1 int32 lanes): an expression, or
        the temporary of the narrowed 64-bit lanes."""
        text = f"({a} {sym} {b})"
        if SIZES[ELEMENTS[width]] != 4:  # 64-bit lanes: narrow the 0 / -1 lanes
            text = self.converted(text, BLEND[8], ELEMENTS[Width.BOOL])
        return text

    def compare(self, e: ir.Op) -> str:
        narrowed = binary32_operands(e)
        if narrowed is not None:  # compare binary32 values as binary32: half the lanes' width
            a, b = (self.vector_expr(x) for x in narrowed)
            return self.named(Width.BOOL, f"({a} {COMPARE[e.op]} {b})")
        a, b = (self.vector_expr(x) for x in e.args)
        text = self.compare_text(a, COMPARE[e.op], b, e.args[0].width)
        return text if text.isidentifier() else self.named(Width.BOOL, text)

    def convert(self, e: ir.Op) -> str:
        """A C conversion per lane (narrowing: `narrowed`)."""
        source = e.args[0]
        if e.op == "narrow.f64.f32":
            return self.narrowed(source)
        arg = self.vector_expr(source)
        t = self.converted(arg, ELEMENTS[source.width], ELEMENTS[e.width])
        if e.op == "promote.f32.f64":
            self.promoted[t] = arg
        return t

    def narrowed(self, source) -> str:
        """The binary32 lanes of a binary64 expression by C's conversion (narrow,
        and a store to a float field).  A binary64 vector that is a binary32
        vector promoted gives that vector back: exact but for a NaN's quiet bit,
        which no program observes (a NaN is "a NaN" or made canonical where it
        becomes visible).  Floats load as binary64, so narrowing a float field's
        load is common; the pair would cost two conversions."""
        if (isinstance(source, ir.Load) and source.index == self.counter
                and self.field_of(source.span, source.field)[1].name == "float"):
            return self.gather_stored(source)[0]  # the float field's binary32, never widened
        arg = self.vector_expr(source)
        if arg in self.promoted:
            return self.promoted[arg]
        return self.converted(arg, ELEMENTS[Width.F64], ELEMENTS[Width.F32])

    def converted(self, vector: str, source: str, target: str) -> str:
        """A temporary of `vector`'s lanes (C type `source`) converted to `target`
        by C's conversion: one instruction where the tier has it for these lanes
        (lane_helpers.conversion_form), else __builtin_convertvector."""
        form = conversion_form(source, target, self.width)
        if form is None:
            return self.named_typed(target, f"__builtin_convertvector({vector}, {self.vector_of(target)})")
        if not vector.isidentifier():
            vector = self.named_typed(source, vector)
        self.preamble.use_form(form, self.width)
        t = self.temp()
        self.line(f"{self.vector_of(target)} {t};")
        self.line(f"{form.name}(&{t}, &{self.read(vector)});")
        self.reads.add(t)
        return t

    def named(self, width: Width, text: str) -> str:
        return self.named_typed(ELEMENTS[width], text)

    def named_typed(self, element: str, text: str) -> str:
        """A const vector temporary of `element` lanes holding `text`."""
        t = self.temp()
        self.line(f"const {self.vector_of(element)} {t} = {text};")
        self.reads.add(t)
        return t
