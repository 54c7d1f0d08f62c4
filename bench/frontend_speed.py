"""How fast the frontend parses and translates Nupp.

    .venv/bin/python bench/frontend_speed.py [--runs N] [--lines N] [--dump FILE]

Measures, in one process:

* grammar construction: the first parse builds the lark LALR parser (once
  per process); reported on its own and excluded from everything else;
* the BENCH programs: parse, and parse + translate (`translate` runs the
  front end, verifies and folds the IR, and writes Lua), of the five kernel-subset-spike kernels
  and their `_main.nupp` host scripts together, median of --runs passes;
* a generated module of about --lines lines (default 5000) of varied,
  realistic Nupp: parse alone and parse + translate, in lines per second.

This is a benchmark, not a test: it prints a table and exits 0.
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import lark

from nupp.errors import Source
from nupp.frontend.parser import parse
from nupp.pipeline import translate

ROOT = Path(__file__).resolve().parent.parent
SPIKE = ROOT / "bench" / "kernel-subset-spike"
KERNELS = ("mandelbrot", "corrected", "tecsbits", "mixedwidth", "simd")


def bench_sources() -> list[Source]:
    """The five kernels and their host scripts (those that exist yet)."""
    paths = []
    for name in KERNELS:
        paths.append(SPIKE / f"{name}.nupp")
        main = SPIKE / f"{name}_main.nupp"
        if main.is_file():
            paths.append(main)
    return [Source(str(p.relative_to(ROOT)), p.read_text()) for p in paths]


def line_count(sources: list[Source]) -> int:
    return sum(s.text.count("\n") + (not s.text.endswith("\n")) for s in sources)


def median_seconds(work, runs: int) -> float:
    """Median wall time of `runs` calls of work(), each after a full collection."""
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ---- a generated module ------------------------------------------------------
#
# Each template returns the lines of one top-level item.  The module keeps
# its top-level locals (structs, @aot functions) well under Lua's limit of 200
# per function, so it also loads in LuaJIT.

WORDS = ("alpha", "beta", "gamma", "delta", "pos", "vel", "mass", "flags", "seed", "count", "level",
         "weight", "phase", "mask", "tag", "score", "limit", "offset", "scale", "bias")
FIELD_TYPES = ("float", "float", "number", "int32", "int32", "uint32", "int16", "uint8")
MAX_TOP_LOCALS = 150


class ModuleGenerator:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.serial = 0
        self.structs: list[tuple[str, list[tuple[str, str]]]] = []
        self.top_locals = 0

    def next_id(self) -> int:
        self.serial += 1
        return self.serial

    def number(self) -> str:
        r = self.rng
        return r.choice([str(r.randint(0, 99)), f"{r.uniform(0, 10):.3f}", f"0x{r.randint(0, 0xFFFF):04X}",
                         f"{r.randint(1, 9)}e{r.randint(-3, 3)}", str(r.randint(2, 1000))])

    def generate(self, target_lines: int) -> str:
        lines = [
            "-- A synthetic module written by bench/frontend_speed.py to time the frontend.",
            "-- It mixes ordinary Nupp (tables, closures, strings, switch) with structs",
            "-- and @aot kernels over spans.",
            "local span = nupp.mem.span",
            "local f32 = nupp.math.f32",
            "local u32 = nupp.math.u32",
            "local i32 = nupp.math.i32",
            "",
            "local M = {}",
            "",
        ]
        self.top_locals = 5
        # two structs first, so the first kernel has something to use
        lines += self.struct_decl()
        lines += self.struct_decl()
        templates = [
            (self.struct_decl, 2), (self.aot_kernel, 3), (self.aot_scalar, 2), (self.summarize, 3),
            (self.dispatch, 3), (self.hash_fn, 2), (self.loops, 2), (self.config_table, 2),
            (self.class_like, 2), (self.closures, 2), (self.text_block, 1),
        ]
        funcs = [t for t, _ in templates]
        weights = [w for _, w in templates]
        while len(lines) < target_lines - 2:
            template = self.rng.choices(funcs, weights)[0]
            if template in (self.struct_decl, self.aot_kernel, self.aot_scalar) and \
                    self.top_locals >= MAX_TOP_LOCALS:
                continue
            lines += template()
        lines.append("return M")
        return "\n".join(lines) + "\n"

    # ---- structs and @aot functions
    def struct_decl(self) -> list[str]:
        i = self.next_id()
        name = f"Rec{i}"
        count = self.rng.randint(2, 5)
        names = self.rng.sample(WORDS, count)
        fields = [(n, self.rng.choice(FIELD_TYPES)) for n in names]
        fields[0] = (fields[0][0], "float")
        fields[1] = (fields[1][0], "int32")
        self.structs.append((name, fields))
        self.top_locals += 1
        lines = [f"-- record {i}: {', '.join(n for n, _ in fields)}", f"local struct {name}"]
        if self.rng.random() < 0.3:
            lines.append("    " + ", ".join(f"{n}: {t}" for n, t in fields))
        else:
            lines += [f"    {n}: {t}" for n, t in fields]
        return lines + ["end", ""]

    def aot_kernel(self) -> list[str]:
        i = self.next_id()
        r = self.rng
        in_name, in_fields = r.choice(self.structs)
        out_name, out_fields = r.choice(self.structs)
        fin = next(n for n, t in in_fields if t == "float")
        iin = next(n for n, t in in_fields if t == "int32")
        self.top_locals += 1
        attr = "@aot(vectorize = false)" if r.random() < 0.2 else "@aot"
        lines = [
            f"-- kernel {i}: {out_name} from {in_name}",
            attr,
            f"local function kernel{i}(exclusive out: span.WriteSpan<{out_name}>, "
            f"borrows inp: span.Span<{in_name}>, scale: float, limit: int32): nil",
            '    assert(#out == #inp, "length mismatch")',
            "    for i = 1, #out do",
            "        local e = inp[i]",
            f"        local w = f32.mul(f32.narrow(e.{fin}), scale)",
            f"        local n: int32 = e.{iin} & 0x{r.randint(1, 0xFFFF):X}",
            "        while n < limit and f32.abs(w) <= 4 do",
            f"            w = f32.add(f32.mul(w, w), f32.narrow({r.uniform(-1, 1):.4f}))",
            "            n = n + 1",
            "        end",
            "        local class: int32 = switch n do",
            f"            case 0 -> {r.randint(1, 9)}",
            f"            case 1, 2, {r.randint(3, 30)} -> {r.randint(10, 99)}",
            "            else -> 0",
            "        end",
        ]
        for fname, ftype in out_fields:
            if ftype == "float":
                value = "w"
            elif ftype == "number":
                value = f"w * {self.number()} + n"
            elif ftype == "uint32":
                value = f"u32.fromI32((n << {r.randint(1, 20)}) ~ class)"
            elif ftype == "int32":
                value = r.choice(["class", "n ~ class", f"(n >> {r.randint(1, 5)}) | class"])
            else:
                value = f"class & 0x{r.choice(['7F', '3F', '0F'])}"
            lines.append(f"        out[i].{fname} = {value}")
        return lines + ["    end", "end", ""]

    def aot_scalar(self) -> list[str]:
        i = self.next_id()
        r = self.rng
        self.top_locals += 1
        if r.random() < 0.5:
            return [
                "@aot(vectorize = false)",
                f"local function blend{i}(a: int32, b: int32, c: int32): int32",
                "    local x = (a & b) ~ ((~a) & c)",
                "    if x < 0 then",
                "        x = -x",
                f"    elseif x > {r.randint(100, 5000)} then",
                f"        x = x >> {r.randint(1, 7)}",
                "    else",
                f"        x = (x << {r.randint(1, 4)}) | {r.randint(0, 15)}",
                "    end",
                "    return x",
                "end",
                "",
            ]
        return [
            "@aot",
            f"local function poly{i}(x: number, y: float): number",
            f"    local t = x * {self.number()} + y",
            f"    local acc: number = {r.randint(1, 9)}",
            f"    for k = 1, {r.randint(2, 12)} do",
            f"        acc = acc * t + {r.uniform(0, 1):.5f}",
            "    end",
            "    return math.sqrt(math.abs(acc)) + math.floor(t)",
            "end",
            "",
        ]

    # ---- ordinary code
    def summarize(self) -> list[str]:
        i = self.next_id()
        r = self.rng
        return [
            "-- Summarize the readings in `items`, skipping those within `threshold` of zero.",
            f"function M.summarize{i}(items: table, threshold: number, label: string): table",
            "    local total: number = 0",
            "    local count = 0",
            "    local worst = nil",
            "    for idx, item in ipairs(items) do",
            "        if item.value >= threshold then",
            f"            total = total + item.value * {self.number()}",
            "            count = count + 1",
            "        elseif item.value < -threshold then",
            "            if worst == nil or item.value < worst.value then worst = item end",
            "        else",
            "            -- small values count for nothing",
            "        end",
            "    end",
            "    local kind = switch count do",
            '        case 0 -> "empty"',
            f'        case 1, 2, {r.randint(3, 9)} -> "few"',
            '        else -> "many"',
            "    end",
            '    return {label = label .. ":" .. kind, mean = count > 0 and total / count or 0, worst = worst}',
            "end",
            "",
        ]

    def dispatch(self) -> list[str]:
        i = self.next_id()
        r = self.rng
        a, b, c = r.sample(["move", "stop", "halt", "jump", "wait", "turn", "fire", "load"], 3)
        return [
            f"function M.dispatch{i}(msg: table, log: table): string",
            "    switch msg.kind do",
            f'        case "{a}" do',
            f"            msg.x = (msg.x or 0) + (msg.dx or {r.randint(1, 5)})",
            '            log[#log + 1] = "moved to " .. tostring(msg.x)',
            "        end",
            f'        case "{b}", "{c}" do',
            "            msg.dx = 0",
            f'            return "{b}ped"',
            "        end",
            "        case is number do",
            f"            msg.count = (msg.count or 0) + {r.randint(1, 3)}",
            "        end",
            "        else do",
            '            log[#log + 1] = string.format("unknown message %s", tostring(msg.kind))',
            "        end",
            "    end",
            "    local size = switch type(msg.payload) do",
            "        case is nil -> 0",
            '        case "string" -> #msg.payload',
            "        else -> -1",
            "    end",
            '    return "ok:" .. size',
            "end",
            "",
        ]

    def hash_fn(self) -> list[str]:
        i = self.next_id()
        r = self.rng
        return [
            f"-- a small string hash ({r.choice(['FNV-like', 'shift-xor', 'rotating'])})",
            f"function M.hash{i}(s: string, seed: number): number",
            f"    local h = seed ~ 0x{r.randint(0, 0xFFFFFFF):07X}",
            "    for p = 1, #s do",
            f"        h = ((h ~ s:byte(p)) * {r.choice([31, 33, 131, 257])}) & 0x7FFFFFFF",
            f"        h = h ~ (h >> {r.randint(3, 15)}) | ((h << {r.randint(1, 5)}) & 0xFFFF)",
            "    end",
            "    return h % 65536",
            "end",
            "",
        ]

    def loops(self) -> list[str]:
        i = self.next_id()
        r = self.rng
        return [
            f"function M.gcd{i}(a: number, b: number): number",
            "    while b ~= 0 do",
            "        a, b = b, a % b",
            "    end",
            "    return a",
            "end",
            "",
            f"function M.digits{i}(n: number): number",
            "    local d = 0",
            "    repeat",
            f"        n = n // {r.choice([2, 8, 10, 16])}",
            "        d = d + 1",
            "    until n == 0",
            "    return d",
            "end",
            "",
            f"function M.table{i}(rows: number, cols: number): table",
            "    local grid = {}",
            "    for y = 1, rows do",
            "        local row = {}",
            f"        for x = cols, 1, -{r.randint(1, 2)} do",
            "            row[#row + 1] = (x * y) % " + str(r.randint(3, 17)),
            "        end",
            "        grid[y] = row",
            "    end",
            "    return grid",
            "end",
            "",
        ]

    def config_table(self) -> list[str]:
        i = self.next_id()
        r = self.rng
        sizes = ", ".join(str(2 ** k) for k in range(r.randint(2, 6)))
        tags = ", ".join(f'"{w}"' for w in r.sample(WORDS, 3))
        return [
            f"M.config{i} = {{",
            f'    name = "config {i}",',
            f"    sizes = {{{sizes}}},",
            f'    ["key {i}"] = {r.choice(["true", "false", "nil"])},',
            f"    nested = {{depth = {r.randint(1, 9)}, ratio = {r.uniform(0, 1):.3f}, tags = {{{tags}}}}};",
            f"    limits = {{lo = -{self.number()}, hi = {self.number()}}},",
            "}",
            "",
        ]

    def class_like(self) -> list[str]:
        i = self.next_id()
        r = self.rng
        return [
            f"M.Counter{i} = {{}}",
            f"M.Counter{i}.__index = M.Counter{i}",
            "",
            f"function M.Counter{i}.new(start: number)",
            f"    return setmetatable({{n = start or 0, history = {{}}}}, M.Counter{i})",
            "end",
            "",
            f"function M.Counter{i}:bump(by)",
            f"    self.n = self.n + (by or {r.randint(1, 4)})",
            "    self.history[#self.history + 1] = self.n",
            "    return self",
            "end",
            "",
            f"function M.Counter{i}:report(): string",
            f'    return ("counter %d: %d after %d steps"):format({i}, self.n, #self.history)',
            "end",
            "",
        ]

    def closures(self) -> list[str]:
        i = self.next_id()
        return [
            f"function M.compose{i}(...)",
            "    local fns = {...}",
            "    return function(x)",
            "        for j = #fns, 1, -1 do",
            "            x = fns[j](x)",
            "        end",
            "        return x",
            "    end",
            "end",
            "",
            f"M.adders{i} = {{}}",
            f"for k = 1, {self.rng.randint(3, 8)} do",
            f"    M.adders{i}[k] = function(x) return x + k * {self.number()} end",
            "end",
            "",
        ]

    def text_block(self) -> list[str]:
        i = self.next_id()
        r = self.rng
        words = " ".join(r.choice(WORDS) for _ in range(8))
        return [
            "--[[",
            f"  Notes {i}: {words}.",
            "  A long comment spans lines and is skipped by the lexer.",
            "]]",
            f"M.template{i} = [[",
            f"header {i}",
            f"  {words}",
            "]]",
            f'M.escaped{i} = "tab\\tquote\\"newline\\n{i}"',
            "",
        ]


def generated_module(lines: int, seed: int = 2024) -> Source:
    return Source("<generated>", ModuleGenerator(seed).generate(lines))


# ---- main ---------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="passes per measurement (median reported)")
    parser.add_argument("--lines", type=int, default=5000, help="size of the generated module")
    parser.add_argument("--dump", metavar="FILE", help="also write the generated module to FILE")
    args = parser.parse_args(argv)

    # The first parse builds the lark grammar: time it apart from the rest.
    start = time.perf_counter()
    parse(Source("<empty>", ""))
    grammar_s = time.perf_counter() - start

    corpus = bench_sources()
    module = generated_module(args.lines)
    if args.dump:
        Path(args.dump).write_text(module.text)

    rows = []
    for label, sources in (("BENCH kernels + main scripts", corpus), ("generated module", [module])):
        # one untimed pass warms caches and shows the inputs are valid
        for s in sources:
            translate(s)
        parse_s = median_seconds(lambda: [parse(s) for s in sources], args.runs)
        translate_s = median_seconds(lambda: [translate(s) for s in sources], args.runs)
        rows.append((label, len(sources), line_count(sources), parse_s, translate_s))

    print(f"nupp frontend speed: Python {platform.python_version()}, lark {lark.__version__}, "
          f"median of {args.runs} runs")
    print(f"grammar construction (first parse in a process, excluded below): {grammar_s * 1e3:.1f} ms")
    print()
    header = (f"{'input':<30} {'files':>5} {'lines':>6}  {'parse ms':>9} {'lines/s':>9}  "
              f"{'parse+translate ms':>18} {'lines/s':>9}")
    print(header)
    print("-" * len(header))
    for label, files, lines, parse_s, translate_s in rows:
        print(f"{label:<30} {files:>5} {lines:>6}  {parse_s * 1e3:>9.1f} {lines / parse_s:>9.0f}  "
              f"{translate_s * 1e3:>18.1f} {lines / translate_s:>9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
