"""Scalar C and lane C on AArch64: cross-built with GCC and Clang, run under QEMU.

Each module's scalar C and its lane C at gangs 4, 8 and 16 are linked into one
standalone program with a small C driver written here (no LuaJIT, no Python
in it): the driver reads call cases from a file (span contents and scalar
arguments, made from the edge sets of tests/kernelgen.py), runs every case
through every variant on fresh copies of the spans, and prints each variant's
status, result bits and every span's bytes.  The program is built for
AArch64 (targets/cross.py MACHINES["aarch64"]: `aarch64-linux-gnu-gcc`, or
Clang with `--target`, at the "neon" tier) and run under `qemu-aarch64`, and
built natively for x86-64 at baseline; every AArch64 variant's output must
equal the x86-64 scalar C's (binary64 fields: any NaN equals any NaN,
LANGUAGE.md section 3; everything else to the bit), and so must the x86-64
lane variants'.

  * fast: mandelbrot, scalar C and lane C at gang 8, GCC;
  * slow: every committed kernel and the lane test kernels, gangs 4, 8, 16,
    GCC and Clang;
  * an object built for AArch64 is an AArch64 ELF (e_machine 183);
  * `nupp crosscheck --target aarch64` runs a kernel there (GCC and Clang), and
    reports a difference planted by building with -ffp-contract=fast.

Locally the tests skip when the cross GCC or QEMU is missing; under CI
nothing skips (.ci/run installs gcc-aarch64-linux-gnu and qemu-user).
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from nupp.crosscheck import Options, crosscheck
from nupp.emit_c.helpers import C_TYPES, FIELD_C_TYPES
from nupp.errors import Source
from nupp.pipeline import compile_module, emit
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.widths import Width
from nupp.targets.cross import MACHINES
from nupp.targets.toolchain import BASE_FLAGS

from .conftest import UNDER_CI
from .kernelgen import edge_array
from .test_lane_c import TEST_KERNELS
from .test_native_differential import FULL_ROWS, KERNELS, RANDOM_ROWS, field_differences

AARCH64, X86_64 = MACHINES["aarch64"], MACHINES["x86_64"]
GANGS = (4, 8, 16)
LENGTHS = range(2 * max(GANGS) + 2)  # every span length 0..2G+1 of every gang
EM_AARCH64 = 183                     # ELF e_machine of AArch64
RUN_SECONDS = 300
WARNINGS = ("-Wall", "-Wextra", "-Wpedantic", "-Werror")  # nupp's C compiles warning-free (emit_c/__init__.py)

# ---- the modules and their calls -------------------------------------------------------------


@dataclass(frozen=True)
class Module:
    path: Path
    functions: tuple[tuple[str, tuple[tuple, ...]], ...]  # (function, its scalar argument tuples)


def _bench_modules() -> dict[str, Module]:
    return {name: Module(k.path, ((k.function, k.scalars),)) for name, k in KERNELS.items()}


def _lane_test_modules(folder: Path) -> dict[str, Module]:
    """The lane test kernels (tests/test_lane_c.py), one module per file, its functions together."""
    found: dict[str, Module] = {}
    for stem, text, function, _, scalars in TEST_KERNELS.values():
        path = folder / f"{stem}.nupp"
        path.write_text(text)
        before = found.get(stem, Module(path, ()))
        found[stem] = Module(path, before.functions + ((function, scalars),))
    return found


_NUMPY = {"double": "<f8", "float": "<f4", "int8_t": "i1", "uint8_t": "u1", "int16_t": "<i2", "uint16_t": "<u2",
          "int32_t": "<i4", "uint32_t": "<u4", "int64_t": "<i8", "uint64_t": "<u8"}
_PACK = {Width.F64: "<d", Width.F32: "<f", Width.I32: "<i", Width.U32: "<I", Width.I64: "<q", Width.U64: "<Q",
         Width.BOOL: "<?"}


def struct_dtype(module: ir.Module, name: str) -> np.dtype:
    """The struct's natural C layout (what nupp's C and NumPy structured arrays share)."""
    fields = module.struct(name).fields
    return np.dtype({"names": [n for n, _ in fields], "formats": [_NUMPY[FIELD_C_TYPES[t]] for _, t in fields]},
                    align=True)


@dataclass(frozen=True)
class Case:
    label: str
    function: int                     # index into Module.functions
    spans: tuple[np.ndarray, ...]
    scalars: tuple

    def encode(self, fn: ir.Function) -> bytes:
        """The driver's input: function index, each span (int32 length, its bytes), each scalar in 8 bytes."""
        out = struct.pack("<I", self.function)
        for array in self.spans:
            out += struct.pack("<i", len(array)) + array.tobytes()
        scalars = [p.type for p in fn.params if not isinstance(p.type, ir.SpanType)]
        for width, value in zip(scalars, self.scalars):
            out += struct.pack(_PACK[width], value).ljust(8, b"\0")
        return out


def cases(module: ir.Module, spec: Module):
    """Every function at every span length of LENGTHS with each scalar tuple, then the full
    edge set (every pair of the first two fields' edges, then random bits), and spans of
    different lengths (an assert)."""
    for index, (name, scalar_sets) in enumerate(spec.functions):
        dtypes = [struct_dtype(module, p.type.struct) for p in module.function(name).span_params()]

        def spans(n, random_rows=0, offset=0):
            return tuple(edge_array(d, n, offset=offset + 5 * k, random_rows=random_rows, seed=k + 1)
                         for k, d in enumerate(dtypes))
        for n in LENGTHS:
            for scalars in scalar_sets:
                yield Case(f"{name} length {n} {scalars}", index, spans(n, offset=7 * n), scalars)
        full = spans(FULL_ROWS, RANDOM_ROWS)
        for scalars in scalar_sets:
            yield Case(f"{name} full {scalars}", index, full, scalars)
        if len(dtypes) > 1:
            mismatched = spans(3)[:-1] + spans(4)[-1:]
            yield Case(f"{name} length mismatch", index, mismatched, scalar_sets[0])


# ---- the standalone program -------------------------------------------------------------------

DRIVER_HEAD = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char *at;  /* the next unread input byte */

static void take(void *to, size_t n) { memcpy(to, at, n); at += n; }

static void *span_copy(int32_t *n, size_t size)
{
    take(n, sizeof *n);
    void *p = malloc((size_t)*n * size + 1);
    memcpy(p, at, (size_t)*n * size);
    at += (size_t)*n * size;
    return p;
}

static void put_hex(const void *p, size_t n)
{
    putchar(' ');
    for (size_t k = 0; k < n; k++) printf("%02x", ((const unsigned char *)p)[k]);
    if (n == 0) putchar('-');
}
"""

DRIVER_MAIN = r"""
int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *input = malloc((size_t)size + 1);
    if (fread(input, 1, (size_t)size, f) != (size_t)size) return 2;
    fclose(f);
    at = input;
    while (at < input + size) {
        uint32_t function;
        take(&function, sizeof function);
        const unsigned char *start = at;
        for (int v = 0; v < VARIANTS; v++) {
            at = start;  /* every variant reads the case afresh */
            printf("%d %u", v, function);
            switch (function) {
%s
            default: return 3;
            }
            putchar('\n');
        }
    }
    return 0;
}
"""


def _caller(module: ir.Module, name: str, index: int, prefixes: list[str]) -> str:
    """C running one case of function `name` through variant v and printing what it left."""
    fn = module.function(name)
    decls, args, outs = [], [], []
    for k, p in enumerate(fn.params):
        if isinstance(p.type, ir.SpanType):
            decls.append(f"int32_t n{k}; void *s{k} = span_copy(&n{k}, SIZE_{index}_{k});")
            args += [f"s{k}", f"n{k}"]
            outs.append(f"put_hex(s{k}, (size_t)n{k} * SIZE_{index}_{k}); free(s{k});")
        else:
            decls.append(f"{C_TYPES[p.type]} a{k}; memcpy(&a{k}, at, sizeof a{k}); at += 8;")
            args.append(f"a{k}")
    if fn.result is not None:
        decls.append(f"{C_TYPES[fn.result]} result; memset(&result, 0, sizeof result);")
        args.append("&result")
        outs.insert(0, "if (status == 0) put_hex(&result, sizeof result); else put_hex(0, 0);")
    calls = "\n".join(f"                case {v}: status = {prefix}{name}({', '.join(args)}); break;"
                      for v, prefix in enumerate(prefixes))
    body = "\n".join("                " + d for d in decls)
    after = "\n".join("                " + o for o in outs)
    return (f"            case {index}: {{\n{body}\n                int32_t status = 0;\n"
            f"                switch (v) {{\n{calls}\n                }}\n"
            f"                printf(\" %d\", (int)status);\n{after}\n                break;\n            }}")


@dataclass(frozen=True)
class Variant:
    name: str            # "scalar", "lane4", ...
    gang: int | None     # None: scalar C

    @property
    def prefix(self) -> str:
        return f"nupp_{self.name}_"


def variants(gangs) -> tuple[Variant, ...]:
    return (Variant("scalar", None),) + tuple(Variant(f"lane{g}", g) for g in gangs)


def program(spec: Module, chosen: tuple[Variant, ...]) -> dict[str, str]:
    """The C files of the standalone program: one unit per variant, and the driver."""
    source = Source(str(spec.path), spec.path.read_text())
    module = compile_module(source)
    files, prototypes = {}, []
    for v in chosen:
        c = emit(source, "c", symbol_prefix=v.prefix) if v.gang is None else emit(source, "lane-c", v.gang, v.prefix)
        files[f"{v.name}.c"] = c.source
        prototypes.append(c.cdef)
    sizes = [f"#define SIZE_{i}_{k} {struct_dtype(module, p.type.struct).itemsize}"
             for i, (name, _) in enumerate(spec.functions)
             for k, p in enumerate(module.function(name).params) if isinstance(p.type, ir.SpanType)]
    callers = "\n".join(_caller(module, name, i, [v.prefix for v in chosen])
                        for i, (name, _) in enumerate(spec.functions))
    files["driver.c"] = (DRIVER_HEAD + "\n".join(prototypes) + "\n" + "\n".join(sizes)
                         + f"\n#define VARIANTS {len(chosen)}\n" + DRIVER_MAIN.replace("%s", callers))
    return files


def build(files: dict[str, str], machine, cc: str, folder: Path, extra: tuple[str, ...] = ()) -> Path:
    """Compile each unit (nupp's flags, warnings as errors, the machine's first tier, then
    `extra`) and link the program."""
    folder.mkdir(parents=True, exist_ok=True)
    command = [*machine.compile_command(cc), *BASE_FLAGS, *WARNINGS, *machine.tiers()[0][1], *extra]
    objects, running = [], []
    for name, text in files.items():
        (folder / name).write_text(text)
        objects.append(str(folder / (name[:-2] + ".o")))
        running.append(subprocess.Popen([*command, "-c", "-o", objects[-1], str(folder / name)],
                                        stderr=subprocess.PIPE, text=True))
    for process, name in zip(running, files):
        _, err = process.communicate()
        assert process.returncode == 0, f"{' '.join(command)} failed on {folder / name}:\n{err[:4000]}"
    exe = folder / "program"
    linked = subprocess.run([*command, "-o", str(exe), *objects, "-lm"], capture_output=True, text=True)
    assert linked.returncode == 0, f"linking for {machine.name} with {cc} failed:\n{linked.stderr[:4000]}"
    return exe


def run(exe: Path, machine, inputs: Path, count: int) -> dict[tuple[int, int], list[str]]:
    """(case number, variant) -> [status, result hex or '-', each span's hex]: the driver
    prints one line per variant of each case, in order."""
    done = subprocess.run([*machine.run_prefix(), str(exe), str(inputs)], capture_output=True, text=True,
                          timeout=RUN_SECONDS)
    assert done.returncode == 0, f"{exe} on {machine.name} exited {done.returncode}:\n{done.stderr[:2000]}"
    lines = done.stdout.splitlines()
    return {(n // count, int(variant)): rest
            for n, (variant, _, *rest) in enumerate(line.split(" ") for line in lines)}


# ---- comparing ------------------------------------------------------------------------------


def differences(module: ir.Module, spec: Module, case: Case, reference: list[str], other: list[str]) -> list[str]:
    """What differs between two outputs of one case (binary64 fields: NaN equals NaN)."""
    fn = module.function(spec.functions[case.function][0])
    if reference[0] != other[0]:
        return [f"status {reference[0]} vs {other[0]}"]
    problems, spans = [], 1
    if fn.result is not None:
        spans, a, b = 2, reference[1], other[1]
        if a != b and not (fn.result is Width.F64 and _both_nan(a, b)):
            problems.append(f"result {a} vs {b}")
    for p, a, b in zip(fn.span_params(), reference[spans:], other[spans:]):
        dtype = struct_dtype(module, p.type.struct)
        problems += [f"span {p.name}: {d}" for d in field_differences(_array(a, dtype), _array(b, dtype))]
    return problems


def _both_nan(a: str, b: str) -> bool:
    return all(np.isnan(np.frombuffer(bytes.fromhex(x), "<f8"))[0] for x in (a, b))


def _array(text: str, dtype: np.dtype) -> np.ndarray:
    return np.frombuffer(b"" if text == "-" else bytes.fromhex(text), dtype=dtype)


# ---- the checks -----------------------------------------------------------------------------


def require_aarch64(cc: str) -> None:
    """Skip locally (fail under CI) when what AArch64 needs is not installed."""
    missing = AARCH64.missing(cc) or (None if AARCH64.runnable_tiers() else "qemu-aarch64 is not installed")
    if missing:
        if UNDER_CI:
            pytest.fail(f"under CI the AArch64 tests need it: {missing}")
        pytest.skip(missing)


def check_on_aarch64(spec: Module, cc: str, gangs, folder: Path, extra: tuple[str, ...] = ()) -> int:
    """Run every case on AArch64 (built with `extra` flags too) and x86-64; every variant
    must give the x86-64 scalar C's output.  Returns the number of (case, variant)
    outputs compared."""
    require_aarch64(cc)
    chosen = variants(gangs)
    module = compile_module(Source(str(spec.path), spec.path.read_text()))
    all_cases = list(cases(module, spec))
    inputs = folder / "cases.bin"
    inputs.write_bytes(b"".join(c.encode(module.function(spec.functions[c.function][0])) for c in all_cases))
    files = program(spec, chosen)
    native = run(build(files, X86_64, "gcc", folder / "x86_64-gcc"), X86_64, inputs, len(chosen))
    emulated = run(build(files, AARCH64, cc, folder / f"aarch64-{cc}", extra), AARCH64, inputs, len(chosen))
    problems = []
    for number, case in enumerate(all_cases):
        reference = native[(number, 0)]
        for v, variant in enumerate(chosen):
            for where, outputs in (("x86-64", native), (f"aarch64 {cc}", emulated)):
                found = differences(module, spec, case, reference, outputs[(number, v)])
                problems += [f"{spec.path.name} {case.label} {where} {variant.name}: {d}" for d in found[:3]]
    assert not problems, f"{len(problems)} differences from x86-64 scalar C:\n" + "\n".join(problems[:20])
    return len(all_cases) * len(chosen)


def test_mandelbrot_on_aarch64_agrees_with_x86_64(tmp_path):
    spec = _bench_modules()["mandelbrot"]
    assert check_on_aarch64(spec, "gcc", (8,), tmp_path) > 0


def test_a_difference_on_aarch64_is_caught(tmp_path):
    """Lane C built with contraction (an FMA where the rule rounds twice) must fail the check."""
    with pytest.raises(AssertionError, match=r"simd.nupp advance .* aarch64 gcc lane8: span bodies: row \d+ field"):
        check_on_aarch64(_bench_modules()["simd"], "gcc", (8,), tmp_path, extra=("-ffp-contract=fast",))


@pytest.fixture(scope="module")
def lane_test_modules(tmp_path_factory) -> dict[str, Module]:
    return _lane_test_modules(tmp_path_factory.mktemp("aarch64-kernels"))


_ALL_MODULES = sorted(_bench_modules()) + sorted({stem for stem, *_ in TEST_KERNELS.values()})


@pytest.mark.slow
@pytest.mark.parametrize("cc", ("gcc", "clang"))
@pytest.mark.parametrize("name", _ALL_MODULES)
def test_every_kernel_on_aarch64_agrees_with_x86_64(name, cc, lane_test_modules, tmp_path):
    spec = _bench_modules().get(name) or lane_test_modules[name]
    check_on_aarch64(spec, cc, GANGS, tmp_path)


@pytest.mark.parametrize("cc", ("gcc", "clang"))
def test_a_cross_built_object_is_an_aarch64_elf(cc, tmp_path):
    require_aarch64(cc)
    files = program(_bench_modules()["mandelbrot"], variants((16,)))
    c_file = tmp_path / "lane16.c"
    c_file.write_text(files["lane16.c"])
    command = [*AARCH64.compile_command(cc), *BASE_FLAGS, *WARNINGS, *AARCH64.tiers()[0][1], "-c", "-o", str(tmp_path / "lane16.o"), str(c_file)]
    subprocess.run(command, check=True)
    header = (tmp_path / "lane16.o").read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and header[4] == 2  # 64-bit
    assert struct.unpack_from("<H", header, 18)[0] == EM_AARCH64


# ---- nupp crosscheck --target aarch64 (nupp/crosscheck.py through MACHINES["aarch64"]) ----------


def test_nupp_crosscheck_runs_a_kernel_on_aarch64(tmp_path):
    require_aarch64("gcc")
    require_aarch64("clang")
    done = subprocess.run([sys.executable, "-m", "nupp", "crosscheck", str(KERNELS["mandelbrot"].path),
                           "--target", "aarch64", "--cc", "gcc,clang", "--gang", "4,8,16", "--verbose"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "aarch64-linux-gnu-gcc " in done.stdout and "clang --target=aarch64-linux-gnu " in done.stdout
    assert "(2 builds: clang, gcc x neon; gangs 4, 8, 16 and each tier's default shapes)" in done.stdout


def test_nupp_crosscheck_on_aarch64_reports_a_planted_difference():
    require_aarch64("gcc")
    said: list[str] = []
    options = Options(compilers=("gcc",), gangs=(8,), target="aarch64", extra_flags=("-ffp-contract=fast",))
    assert crosscheck([str(KERNELS["simd"].path)], options, said.append) == 1
    report = "\n".join(said)
    assert re.search(r"simd\.nupp: mismatch in advance \(gcc, tier neon, gang 8\): length \d+, case \d+, "
                     r"bodies\[\d+\]\.\w+ .*: scalar C 0x[0-9a-f]{16}, lane C 0x[0-9a-f]{16}", report), report
    assert "--target aarch64" in report


def test_nupp_crosscheck_sanitizes_on_aarch64_with_both_compilers():
    """Debian's Clang has no UBSan runtime for aarch64: its cross build traps instead
    (targets/cross.py CrossMachine.sanitize_flags); GCC's reports."""
    from nupp.targets.cross import MACHINES
    require_aarch64("gcc")
    require_aarch64("clang")
    assert "-fsanitize-trap=undefined" in MACHINES["aarch64"].sanitize_flags("clang")
    assert "-fno-sanitize-recover=all" in MACHINES["aarch64"].sanitize_flags("gcc")
    options = Options(compilers=("gcc", "clang"), gangs=(8,), target="aarch64", sanitize=True)
    said: list[str] = []
    assert crosscheck([str(KERNELS["mandelbrot"].path)], options, said.append) == 0, "\n".join(said)
