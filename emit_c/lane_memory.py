"""Lane C's loads and stores: how a gang of G elements moves between memory and vectors.

A struct of one field is a contiguous array: a gang's field is one vector
load or store (memcpy) per vector of the gang.  A struct of two fields or more,
each of 4 or 8 bytes (block_place), is a block: the gang's G elements are U
vectors of G units (the widest field's size; padding included), loaded once
and shuffled into the vector of each word a field lies in
(`__builtin_shufflevector`; lane by lane with a GCC before 12, and with GCC
where fields differ in size in vectors of two words: block_condition), a
4-byte field in an 8-byte word shifted out of it.  An unmasked store sets its word's
vector (a 4-byte field merged into its word's other half); the block's
vectors holding a stored word are rebuilt from the word vectors and written
back whole, by the span's last store of a body that stores it only at its
top level, else by each store: padding and fields not stored are written with
what they held (the span is exclusive: no other span sees it).  When the gang
body writes every field of a one-size block exactly once at its top level
and never reads the span, the field vectors are interleaved and written
without a load (writing later is invisible: the span is disjoint from every
other, the rewrite checked).  Other structs are read lane by lane, each lane's
element in the vector's initializer, and written lane by lane, as is every
store under a mask (a masked lane's skipped).  A stored binary32 value has
its NaNs made canonical by a vector blend.  What a load read stays in scope
for the loads after it (`loaded`: the Block, the field's vector) until a
store to its span's elements (a block store leaves its Block) or the end of
its block; the emitter drops it before a statement whose blocks store to the span.

`LaneMemory` is a mixin of the lane function emitter (emit_c/lane.py), whose
state it uses: the gang's base index, mask, counter, spans, and the vector
being written (`part`, lanes `width` each).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from nupp.emit_c.helpers import FIELD_C_TYPES, c_type
from nupp.emit_c.lane_helpers import block_load_form
from nupp.emit_c.lane_vectors import BLEND, LANE, SIZES
from nupp.emit_c.function_c import bare
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.walk import own_exprs, statements, subexprs
from nupp.scalar_ir.widths import FIELD_STORAGE, Width, struct_layout

# Block code needs __builtin_shufflevector (Clang, GCC 12 on); a struct with a
# 4-byte field in an 8-byte word also the little-endian order of its halves.
BLOCKS = "defined(__clang__) || __GNUC__ >= 12"
LITTLE_ENDIAN = "__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__"
HALVES = f"({BLOCKS}) && {LITTLE_ENDIAN}"
# In vectors of at most NARROW_BYTES (two 8-byte words), a struct whose fields
# differ in size moves as blocks under Clang only: GCC 12 merges a 4-byte field
# into its words through general registers and keeps each block vector live, so
# its lane-by-lane moves (two lanes: movsd/movhpd, movss/extractps) are faster.
# simd (Body: two binary64, a binary32, padding) at 10^5, a C harness, medians of
# 9 interleaved rounds, blocks -> lane by lane: GCC 1.14x-1.61x at baseline and v2
# (gangs 4..32) and at v3/v4 in 128-bit vectors; Clang 0.75x-1.04x (blocks kept).
# With the merge as one shuffle (merged_half), lane by lane is still faster under
# GCC at baseline and v2 in 7 of 8 gangs (0.96x-1.9x; blocks 1.2x at v2, gang 16).
NARROW_BYTES = 16
CLANG_HALVES = f"defined(__clang__) && {LITTLE_ENDIAN}"


@dataclass(frozen=True)
class BlockPlace:
    """Where a field lies in a gang's block of G elements, read as `units`
    vectors of G `unit`-byte integers (the struct's widest field): lane l of
    the field is in unit l * units + word of their concatenation, all of it, or
    for a 4-byte field in an 8-byte unit the 32 bits at `half` (0: the lower
    addresses; `halves`: some field of the struct is such a half)."""

    word: int
    units: int
    unit: int
    half: Optional[int]
    halves: bool


@dataclass(frozen=True)
class WriteBack:
    """A block store's write-back: the last store of the span writes the
    block's changed vectors; the others leave them to it."""

    last: bool


@dataclass(frozen=True)
class Block:
    """A gang's block of elements in scope (lane_memory's `loaded`): its vectors
    as last loaded or written, the vector of each word extracted or stored
    (word -> C), and the words stored since (not yet in the vectors)."""

    vectors: tuple[str, ...]
    words: dict = field(default_factory=dict)
    changed: frozenset = frozenset()


def block_place(struct: ir.StructDef, name: str) -> Optional[BlockPlace]:
    """The field's place when the struct moves as blocks: two fields or more,
    each of a vector element size (4 or 8 bytes); padding moves with them."""
    sizes = {n: SIZES.get(FIELD_C_TYPES[FIELD_STORAGE[t].name]) for n, t in struct.fields}
    if len(sizes) < 2 or None in sizes.values():
        return None
    unit, layout = max(sizes.values()), struct_layout(struct.fields)
    word, within = divmod(layout.offsets[name], unit)
    return BlockPlace(word, layout.size // unit, unit, None if sizes[name] == unit else within // 4,
                      len(set(sizes.values())) > 1)


def gcc_moves_blocks(place: BlockPlace, vector_bytes: int) -> bool:
    """Whether GCC moves the struct as blocks in vectors of `vector_bytes`
    (Clang does at every width): not a struct whose fields differ in size in
    vectors of at most NARROW_BYTES."""
    return not place.halves or vector_bytes > NARROW_BYTES


def block_condition(place: BlockPlace, vector_bytes: int) -> str:
    """The preprocessor condition under which lane C moves the struct as blocks
    in vectors of `vector_bytes`, else lane by lane (the #else)."""
    if not place.halves:
        return BLOCKS
    return HALVES if gcc_moves_blocks(place, vector_bytes) else CLANG_HALVES


def moves_whole(struct: ir.StructDef, vector_bytes: int) -> bool:
    """Whether lane C moves a gang's elements of the struct as whole vectors
    in vectors of `vector_bytes` (one field of a vector element size, or
    blocks: block_place, under GCC too: gcc_moves_blocks) rather than lane by
    lane: what the cost model (targets/gang_choice.py) reads."""
    fields = [n for n, _ in struct.fields]
    if len(fields) == 1:
        return FIELD_C_TYPES[FIELD_STORAGE[struct.field_type(fields[0])].name] in SIZES
    place = block_place(struct, fields[0])
    return place is not None and gcc_moves_blocks(place, vector_bytes)


class LaneMemory:
    def stmt_Store(self, s: ir.Store) -> None:
        """Lane by lane (guarded by the mask's lane), or, unmasked into a struct
        of that one field, the gang's G values built as a vector and copied
        into the G consecutive elements at once, or, unmasked into a block
        struct, merged into the block's vectors written back.  What loads read
        of the span before is stale after it, but for the merged block."""
        if self.varying_names is None:
            return super().stmt_Store(s)
        merged = self.store(s)
        # a store writes only the elements of its vector of the gang (`part`)
        self.loaded = {key: value for key, value in self.loaded.items() if key[:2] != (s.span, self.part)}
        if merged is not None:
            self.loaded[(s.span, self.part)] = merged

    def store(self, s: ir.Store) -> Optional[list[str]]:
        """The store's C; the block vectors it left equal to memory, if any."""
        pointer = self.spans[s.span][0]
        self.reads.add(pointer)
        field, storage, whole = self.field_of(s.span, s.field)
        element = f"{pointer}[{self.part_base()} + {LANE} - 1].{field}"
        mask = self.active()
        if whole and mask is None:
            t = self.stored_vector(s.value, storage)
            self.line(f"memcpy(&{element.replace(LANE, '0')}, &{t}, sizeof {t});")
            return None
        plan = self.block_stores.get(id(s))
        if isinstance(plan, str):
            return self.pend_store(s, storage)
        place = self.block_of(s.span, s.field)
        if place is not None and mask is None and not self.in_tail:
            return self.block_store(s, storage, place, element, plan is None or plan.last)
        value = self.store_value(s.value, self.lane(s.value), storage)
        guard = "" if mask is None else f"if ({mask}[l]) "
        self.line(f"for (int l = 0; l < {self.width}; l++) "
                  f"{guard}{element.replace(LANE, 'l')} = {bare(value.replace(LANE, 'l'))};")
        return None

    def block_store(self, s: ir.Store, storage, place: BlockPlace, element: str, write: bool) -> Block:
        """The field's G lanes become its word's vector in the block in scope (a
        4-byte field merged into its words, the other half kept), and with
        `write` (WriteBack) the block's vectors holding a changed word are
        rebuilt and written back whole: every other byte, padding too, is
        written with what it held (the span is exclusive: no other span sees
        it).  Lane by lane where the compiler has no shuffles."""
        vector = self.stored_vector(s.value, storage)
        self.line(f"#if {self.block_condition(place)}")
        bits = self.vector_of(BLEND[place.unit])
        if place.half is None:
            self.gang_block(s.span, place)
            word = self.named_typed(BLEND[place.unit], f"({bits}){vector}")
        else:
            word = self.merged_half(self.block_word(s.span, place), place, vector)
        block = self.loaded[(s.span, self.part)]
        block = self.loaded[(s.span, self.part)] = replace(
            block, words={**block.words, place.word: word}, changed=block.changed | {place.word})
        if write:
            block = self.write_back(s.span, place, block)
        self.line("#else")
        self.line(f"for (int l = 0; l < {self.width}; l++) {element.replace(LANE, 'l')} = {vector}[l];")
        self.line("#endif")
        return block

    def write_back(self, span: str, place: BlockPlace, block: Block) -> Block:
        """Each block vector holding a changed word rebuilt (its other lanes as
        they are) and copied to memory: the block with nothing left to write."""
        g, bits, vectors = self.width, self.vector_of(BLEND[place.unit]), list(block.vectors)
        changed = sorted(block.changed)
        for k, old in enumerate(block.vectors):
            units = [divmod(k * g + j, place.units) for j in range(g)]  # (element, word) of each lane
            if not any(w in block.changed for _, w in units):
                continue
            sources = [old, *(block.words[w] for w in changed)]
            picks = [(1 + changed.index(w), e) if w in block.changed else (0, j) for j, (e, w) in enumerate(units)]
            t = vectors[k] = self.named_typed(BLEND[place.unit], self.shuffled(sources, picks, bits))
            self.line(f"memcpy((char *)&{self.spans[span][0]}[{self.part_base()} - 1] + {k} * sizeof {t}, "
                      f"&{t}, sizeof {t});")
        return Block(tuple(vectors), block.words, frozenset())

    def merged_half(self, words: str, place: BlockPlace, vector: str) -> str:
        """The field's 8-byte words (G lanes) with its 32 bits replaced by the
        vector's lanes, the other 32 kept: one shuffle of the words as 2G
        32-bit lanes with the vector's lanes (widened to 2G).  GCC 12 lowers
        the mask-and-or of zero-extended lanes to five instructions at 512
        bits (simd at v4, gang 8: 1.20x as a shuffle, Clang unchanged)."""
        g = self.width
        halves = self.preamble.vector("int32_t", 2 * g)
        lanes = self.temp()
        self.line(f"const {self.vector_of('int32_t')} {lanes} = ({self.vector_of('int32_t')}){vector};")
        widened = self.temp()
        self.line(f"const {halves} {widened} = __builtin_shufflevector({lanes}, {lanes}, "
                  f"{', '.join(str(l % g) for l in range(2 * g))});")
        picks = [2 * g + j // 2 if j % 2 == place.half else j for j in range(2 * g)]
        return self.named_typed("int64_t", f"({self.vector_of('int64_t')})__builtin_shufflevector(({halves}){words}, "
                                           f"{widened}, {', '.join(map(str, picks))})")

    def block_condition(self, place: BlockPlace) -> str:
        return block_condition(place, self.width * place.unit)

    def part_base(self) -> str:
        """C for the index of the first element of the vector being written."""
        offset = self.part * self.width
        return f"{self.read(self.base)} + {offset}" if offset else self.read(self.base)

    def block_store_plan(self, gang: ir.Gang) -> dict[int, object]:
        """How the stores of an unmasked gang body move blocks (id of a store ->):
        the span, for stores that wait for one another to write the gang's
        elements whole (whole_element_stores); a WriteBack, for a span of a
        block struct (block_of) stored only by statements at the top of the
        body: each store merges its field into the block's vectors, and the
        last one writes back every vector a store changed (the vectors stay in
        scope between: no nested block stores the span)."""
        plan: dict[int, object] = dict(self.whole_element_stores(gang))
        stores = [st for st in statements(gang.body) if isinstance(st, ir.Store) and id(st) not in plan]
        for span in {st.span for st in stores}:
            mine = [st for st in stores if st.span == span]
            if (self.block_of(span, mine[0].field) is None
                    or not all(any(st is top for top in gang.body) for st in mine)):
                continue
            plan.update({id(st): WriteBack(st is mine[-1]) for st in mine})
        return plan

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
            place = self.block_of(span, fields[0])  # every field of one size: F vectors interleaved
            if (len(stores) == len(top) == len(fields) and sorted(st.field for st in stores) == sorted(fields)
                    and place is not None and not place.halves):
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
        return None

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

    def block_of(self, span: str, name: str) -> Optional[BlockPlace]:
        """The field's place in the gang's block when the span's struct moves
        as blocks (block_place)."""
        return block_place(self.mod.module.struct(self.spans[span][2].struct), name)

    def gang_block(self, span: str, place: BlockPlace) -> Block:
        """The gang's block of elements in scope, else loaded: `units` vectors of
        G unit-sized integers (lane_helpers.block_load_form: kept in
        registers); inside the block condition's #if."""
        block = self.loaded.get((span, self.part))
        if block is not None:
            return block
        element, g = BLEND[place.unit], self.width
        vectors = tuple(self.temp("v") for _ in range(place.units))
        load = block_load_form(element, g)
        self.preamble.use_form(load, g)
        for k, vector in enumerate(vectors):
            self.line(f"{self.vector_of(element)} {vector};")
            self.line(f"{load.name}(&{vector}, (const char *)&{self.spans[span][0]}[{self.part_base()} - 1]"
                      f" + {k} * sizeof {vector});")
        block = self.loaded[(span, self.part)] = Block(vectors)
        return block

    def block_word(self, span: str, place: BlockPlace) -> str:
        """The vector of the field's word in each of the G elements, kept in the block."""
        block = self.gang_block(span, place)
        if place.word not in block.words:
            t = self.named_typed(BLEND[place.unit], self.word_shuffle(block, place))
            self.loaded[(span, self.part)] = replace(block, words={**block.words, place.word: t})
            return t
        return block.words[place.word]

    def word_shuffle(self, block: Block, place: BlockPlace) -> str:
        picks = [divmod(lane * place.units + place.word, self.width) for lane in range(self.width)]
        return self.shuffled(list(block.vectors), picks, self.vector_of(BLEND[place.unit]))

    def block_load(self, span: str, name: str, element: str, per_lane_c: str) -> str:
        """One field of the gang's block of elements: its word's vector (shuffles
        of the block's vectors, once while in scope), a 4-byte field in an
        8-byte unit shifted to the low half and narrowed
        (`__builtin_shufflevector`: Clang, GCC 12 on; an older GCC reads the
        lanes one by one)."""
        place = self.block_of(span, name)
        self.line(f"#if {self.block_condition(place)}")
        block = self.gang_block(span, place)
        vector, t = self.vector_of(element), self.temp()
        bits = self.vector_of(BLEND[place.unit])
        if place.half is None:
            words = block.words.get(place.word) or self.word_shuffle(block, place)
        else:
            words = self.block_word(span, place)
            high = f"{words} >> 32" if place.half else words
            words = f"__builtin_convertvector({high}, {self.vector_of('int32_t')})"
        cast = "" if self.vector_of(BLEND[SIZES[element]]) == vector else f"({vector})"
        self.line(f"const {vector} {t} = {cast}{words};")
        if place.half is None and place.word not in block.words:  # the word is the field: keep it
            word = t if not cast else f"(({bits}){t})"
            self.loaded[(span, self.part)] = replace(block, words={**block.words, place.word: word})
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
