"""Lane C's loads and stores: how a gang of G elements moves between memory and vectors.

A struct of one field is a contiguous array: a gang's field is one vector
load or store (memcpy) per vector of the gang.  A struct whose fields all have one size is read as
F vectors of the gang's G elements and shuffled into fields
(`__builtin_shufflevector`; lane by lane with a GCC before 12); when the gang
body writes every field of such a span exactly once at its top level and
never reads the span, the field vectors are interleaved and written the same
way (writing later is invisible: the span is disjoint from every other, the
rewrite checked).  Other structs are read lane by lane, each lane's element
in the vector's initializer, and written lane by lane, a masked lane's store
skipped.  A stored binary32 value has its NaNs made canonical by a vector blend.
What a load read stays in scope for the loads after it (`loaded`: the block's
vectors, the field's vector) until a store to its span or the end of its
block; the emitter drops it before a statement whose blocks store to the span.

`LaneMemory` is a mixin of the lane function emitter (emit_c/lane.py), whose
state it uses: the gang's base index, mask, counter, spans, and the vector
being written (`part`, lanes `width` each).
"""

from __future__ import annotations

from typing import Optional

from nupp.emit_c.helpers import FIELD_C_TYPES, c_type
from nupp.emit_c.lane_helpers import block_load_form
from nupp.emit_c.lane_vectors import BLEND, LANE, SIZES
from nupp.emit_c.function_c import bare
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.walk import own_exprs, statements, subexprs
from nupp.scalar_ir.widths import FIELD_STORAGE, Width


class LaneMemory:
    def stmt_Store(self, s: ir.Store) -> None:
        """Lane by lane (guarded by the mask's lane), or, unmasked into a struct
        of that one field, the gang's G values built as a vector and copied
        into the G consecutive elements at once.  What loads read of the span
        before is stale after it."""
        if self.varying_names is None:
            return super().stmt_Store(s)
        self.store(s)
        self.loaded = {key: value for key, value in self.loaded.items() if key[0] != s.span}

    def store(self, s: ir.Store) -> None:
        pointer = self.spans[s.span][0]
        self.reads.add(pointer)
        field, storage, whole = self.field_of(s.span, s.field)
        element = f"{pointer}[{self.part_base()} + {LANE} - 1].{field}"
        mask = self.active()
        if whole and mask is None:
            t = self.stored_vector(s.value, storage)
            self.line(f"memcpy(&{element.replace(LANE, '0')}, &{t}, sizeof {t});")
            return
        if id(s) in self.block_stores:
            return self.pend_store(s, storage)
        value = self.store_value(s.value, self.lane(s.value), storage)
        guard = "" if mask is None else f"if ({mask}[l]) "
        self.line(f"for (int l = 0; l < {self.width}; l++) "
                  f"{guard}{element.replace(LANE, 'l')} = {bare(value.replace(LANE, 'l'))};")

    def part_base(self) -> str:
        """C for the index of the first element of the vector being written."""
        offset = self.part * self.width
        return f"{self.read(self.base)} + {offset}" if offset else self.read(self.base)

    def whole_element_stores(self, gang: ir.Gang) -> dict[int, str]:
        """The stores that may wait for one another to write the gang's elements
        whole: stores at the top of the body into a span of a block struct
        (block_of) that get every field exactly once, of a span the body never
        loads (so writing later is invisible: the span is disjoint from all
        others, the rewrite checked)."""
        loaded = {x.span for st in statements(gang.body) for e in own_exprs(st) for x in subexprs(e)
                  if isinstance(x, ir.Load)}
        chosen: dict[int, str] = {}
        for span in {st.span for st in gang.body if isinstance(st, ir.Store)} - loaded:
            stores = [st for st in statements(gang.body) if isinstance(st, ir.Store) and st.span == span]
            fields = [n for n, _ in self.mod.module.struct(self.spans[span][2].struct).fields]
            top = [st for st in gang.body if isinstance(st, ir.Store) and st.span == span]
            if (len(stores) == len(top) == len(fields) and sorted(st.field for st in stores) == sorted(fields)
                    and self.block_of(span, fields[0]) is not None):
                chosen.update({id(st): span for st in stores})
        return chosen

    def pend_store(self, s: ir.Store, storage) -> None:
        """Keep a field's vector (as the signed integers of its size); with the
        last field of the span, interleave them and write the G elements."""
        vector = self.stored_vector(s.value, storage)
        bits = self.vector_of(BLEND[SIZES[FIELD_C_TYPES[storage.name]]])
        pending = self.pending.setdefault((s.span, self.part), {})
        pending[s.field] = self.named_typed(BLEND[SIZES[FIELD_C_TYPES[storage.name]]], f"({bits}){vector}")
        fields = [n for n, _ in self.mod.module.struct(self.spans[s.span][2].struct).fields]
        if len(pending) == len(fields):
            del self.pending[(s.span, self.part)]
            self.write_block(s.span, [pending[n] for n in fields], bits)

    def write_block(self, span: str, vectors: list[str], bits: str) -> None:
        """Interleave F field vectors into the gang's F vectors of elements and copy them out."""
        pointer, count, g, base = self.spans[span][0], len(vectors), self.width, self.part_base()
        self.reads.add(pointer)
        self.line("#if defined(__clang__) || __GNUC__ >= 12")
        for k in range(count):
            picks = [divmod(k * g + j, count)[::-1] for j in range(g)]  # (field, element) of each lane
            t = self.temp()
            self.line(f"const {bits} {t} = {self.shuffled(vectors, picks, bits)};")
            self.line(f"memcpy((char *)&{pointer}[{base} - 1] + {k} * sizeof {t}, &{t}, sizeof {t});")
        self.line("#else")
        fields = self.mod.structs[self.spans[span][2].struct][1]
        names = [n for n, _ in self.mod.module.struct(self.spans[span][2].struct).fields]
        for name, vector in zip(names, vectors):
            self.line(f"for (int l = 0; l < {g}; l++) memcpy(&{pointer}[{base} + l - 1].{fields[name]}, "
                      f"(const char *)&{vector} + l * sizeof {vector}[0], sizeof {vector}[0]);")
        self.line("#endif")

    def stored_vector(self, e, storage) -> str:
        """The vector of e's lanes as its field stores them (store_value's rule):
        a float field takes binary32, binary64 narrowed, a binary32 value's NaNs
        made canonical (a blend with 0x7FC00000 where `x != x`); a double field
        binary64; an integer field each lane reduced modulo 2^bits: a C
        conversion to the unsigned type of its size (lane by lane for 8- and
        16-bit fields, as store_value)."""
        stored = FIELD_C_TYPES[storage.name]
        if not storage.is_float:
            if stored not in SIZES:
                return self.per_lane_typed(stored, self.store_value(e, self.lane(e), storage))
            vector = self.vector_expr(e)
            if c_type(e.width) == stored:
                return vector
            unsigned = self.converted(vector, c_type(e.width), f"uint{storage.bits}_t")
            return self.named_typed(stored, f"({self.vector_of(stored)}){unsigned}")
        if storage.bits == 32 and e.width is Width.F64:
            return self.narrowed(e)  # ordinary arithmetic's NaN stays "a NaN" (stores_canonical_nan)
        vector = self.vector_expr(e)  # the field's own width (the verifier's store-width)
        if isinstance(e, ir.Const) or not storage.stores_canonical_nan(e.width):
            return vector
        bits = self.vector_of("int32_t")
        nan = self.named_typed("int32_t", "{" + ", ".join(["0x7FC00000"] * self.width) + "}")
        return self.named_typed(stored, f"({self.vector_of(stored)})((({bits}){vector} & ~({vector} != {vector}))"
                                        f" | ({nan} & ({vector} != {vector})))")

    def field_of(self, span: str, name: str):
        """(C field name, storage, whether the struct is that one field alone:
        then G consecutive elements are one contiguous vector)."""
        span_type = self.spans[span][2]
        fields = self.mod.structs[span_type.struct][1]
        struct = self.mod.module.struct(span_type.struct)
        storage = FIELD_STORAGE[dict(struct.fields)[name]]
        whole = len(struct.fields) == 1 and FIELD_C_TYPES[storage.name] in SIZES
        return fields[name], storage, whole

    def block_of(self, span: str, name: str) -> Optional[tuple[int, int]]:
        """(the field's index, the number of fields) when every field of the span's
        struct has the field's size, one of the vector element sizes: then the
        gang's G elements are F vectors of G lanes, field f of element l at
        lane l * F + f of their concatenation."""
        struct = self.mod.module.struct(self.spans[span][2].struct)
        sizes = [SIZES.get(FIELD_C_TYPES[FIELD_STORAGE[t].name]) for _, t in struct.fields]
        if len(sizes) < 2 or None in sizes or len(set(sizes)) != 1:
            return None
        return [n for n, _ in struct.fields].index(name), len(sizes)

    def block_load(self, span: str, name: str, element: str, per_lane_c: str) -> str:
        """One field of the gang's block of elements: F vector loads of the
        size's signed integers (once for every field of the block in scope;
        lane_helpers.block_load_form: kept in registers),
        then shuffles picking the field's lanes (`__builtin_shufflevector`:
        Clang, GCC 12 on; an older GCC reads the lanes one by one)."""
        index, count = self.block_of(span, name)
        pointer, vector, g = self.spans[span][0], self.vector_of(element), self.width
        bits = self.vector_of(BLEND[SIZES[element]])
        parts = self.loaded.get((span, self.part))
        fresh = parts is None
        if fresh:
            parts = self.loaded[(span, self.part)] = [self.temp("v") for _ in range(count)]
        t = self.temp()
        self.line("#if defined(__clang__) || __GNUC__ >= 12")
        if fresh:
            load = block_load_form(BLEND[SIZES[element]], g)
            self.preamble.use_form(load, g)
            for k, part in enumerate(parts):
                self.line(f"{bits} {part};")
                self.line(f"{load.name}(&{part}, (const char *)&{pointer}[{self.part_base()} - 1]"
                          f" + {k} * sizeof {part});")
        picks = [divmod(lane * count + index, g) for lane in range(g)]
        cast = "" if bits == vector else f"({vector})"
        self.line(f"const {vector} {t} = {cast}{self.shuffled(parts, picks, bits)};")
        self.line("#else")
        self.line(f"const {vector} {t} = {self.lanes_of(per_lane_c)};")
        self.line("#endif")
        self.reads.add(t)
        return t

    def shuffled(self, sources: list[str], picks: list[tuple[int, int]], vector: str) -> str:
        """C for the vector whose lane l is lane picks[l][1] of sources[picks[l][0]]:
        a two-source shuffle of the first two sources used, merged with each
        further one in turn."""
        g = self.width
        used = sorted({src for src, _ in picks})
        if len(used) == 1:
            used.append(used[0])
        first, second = used[0], used[1]
        indices = [x if src == first else g + x if src == second else 0 for src, x in picks]
        text = f"__builtin_shufflevector({sources[first]}, {sources[second]}, {', '.join(map(str, indices))})"
        for later in used[2:]:
            t = self.temp()
            self.line(f"const {vector} {t} = {text};")
            indices = [g + x if src == later else lane for lane, (src, x) in enumerate(picks)]
            text = f"__builtin_shufflevector({t}, {sources[later]}, {', '.join(map(str, indices))})"
        return text

    def gather(self, e: ir.Load) -> str:
        """A field of the gang's G elements at its load width (a float field
        widens to binary64 exactly)."""
        if e.index != self.counter:  # a uniform index: every lane reads the same element
            return self.broadcast(self.expr(e), e.width)
        t, stored = self.gather_stored(e)
        if stored == c_type(e.width):
            return t
        widened = self.converted(t, stored, c_type(e.width))
        if stored == "float":
            self.promoted[widened] = t
        return widened

    def gather_stored(self, e: ir.Load) -> tuple[str, str]:
        """(the vector of a field of the gang's G elements as stored, its element
        C type): one contiguous vector load when the struct is that field alone,
        block loads and shuffles when its fields have one size, else element by
        element."""
        key = (e.span, self.part, e.field)
        if key not in self.loaded:
            self.loaded[key] = self.load_field(e)
        return self.loaded[key]

    def load_field(self, e: ir.Load) -> tuple[str, str]:
        pointer = self.spans[e.span][0]
        self.reads.add(pointer)
        field, storage, whole = self.field_of(e.span, e.field)
        stored = FIELD_C_TYPES[storage.name]
        if whole:
            t = self.temp()
            self.line(f"{self.vector_of(stored)} {t};")
            self.line(f"memcpy(&{t}, &{pointer}[{self.part_base()} - 1].{field}, sizeof {t});")
            self.reads.add(t)
            return t, stored
        access = f"{pointer}[{self.part_base()} + {LANE} - 1].{field}"
        if self.block_of(e.span, e.field) is not None:
            return self.block_load(e.span, e.field, stored, access), stored
        if stored in SIZES:
            return self.per_lane_typed(stored, access), stored
        return self.per_lane(e.width, f"(({c_type(e.width)}){access})"), c_type(e.width)
