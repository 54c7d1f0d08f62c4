"""Generated programs against the checker: well-typed ones check (and run),
ill-typed ones get a diagnostic, and nothing ever raises anything else."""

from __future__ import annotations

from functools import lru_cache

from hypothesis import HealthCheck, given, settings, strategies as st

from nupp.frontend.checker import check_module
from nupp.errors import NuppError, Source
from nupp.frontend.parser import parse
from nupp.frontend.validate import validate
from nupp.runtime.host import Host, LuaRunError

PARAMS = "a: int32, b: uint32, x: number, y: float, w: int64, z: uint64"
VARS = {"i32": "a", "u32": "b", "f64": "x", "f32": "y", "i64": "w", "u64": "z"}
NUMERIC = ["i32", "u32", "f64", "f32", "i64", "u64"]


@lru_cache(maxsize=None)  # strategies are reusable; building them anew each time is exponential
def typed(width: str, depth: int):
    """Nupp expression text of the given width, well-typed by construction."""
    leaf = st.just(VARS[width])
    if width == "i32":
        # a literal alone is binary64; next to an int32 it takes that width
        leaf = st.one_of(leaf, st.integers(-2**31, 2**31 - 1).map(lambda v: f"(a ~ ({v}))"))
    elif width == "f64":
        leaf = st.one_of(leaf, st.sampled_from(["0.5", "1e300", "(-0.0)", "3.0"]))
    if depth <= 0:
        return leaf
    sub = lambda w: typed(w, depth - 1)  # noqa: E731
    options = {
        "i32": [st.tuples(sub("i32"), st.sampled_from(["+", "-", "*", "&", "|", "~", "<<", ">>"]), sub("i32")).map(" ".join),
                st.tuples(sub("u32"), st.sampled_from(["&", "~"]), sub("i32")).map(" ".join),
                sub("f64").map(lambda e: f"nupp.math.i32.wrap({e})"),
                sub("u32").map(lambda e: f"nupp.math.i32.fromU32({e})"),
                sub("i32").map(lambda e: f"-({e})")],
        "u32": [st.tuples(sub("u32"), st.sampled_from(["+", "-", "*"]), sub("u32")).map(" ".join),
                sub("f64").map(lambda e: f"nupp.math.u32.wrap({e})"),
                sub("i32").map(lambda e: f"nupp.math.u32.fromI32({e})"),
                sub("f32").map(lambda e: f"nupp.math.f32.bits({e})")],
        "f64": [st.tuples(sub("f64"), st.sampled_from(["+", "-", "*", "/", "//", "%"]),
                          st.sampled_from(NUMERIC).flatmap(sub)).map(" ".join),
                st.tuples(sub("i32"), st.just("/"), sub("u32")).map(" ".join),
                sub("f64").map(lambda e: f"math.sqrt({e})"),
                st.tuples(sub("f64"), sub("f64")).map(lambda p: f"math.max({p[0]}, {p[1]})"),
                sub("f64").map(lambda e: f"({e}) ^ 3")],
        "f32": [st.tuples(sub("f32"), sub("f32")).map(lambda p: f"nupp.math.f32.mul({p[0]}, {p[1]})"),
                sub("f64").map(lambda e: f"nupp.math.f32.narrow({e})"),
                sub("u32").map(lambda e: f"nupp.math.f32.fromBits({e})"),
                sub("f32").map(lambda e: f"nupp.math.f32.exp({e})")],
        "i64": [st.tuples(sub("i64"), st.sampled_from(["+", "-", "*", "&"]), sub("i64")).map(" ".join),
                st.tuples(sub("i64"), st.just("+"), sub("i32")).map(" ".join),
                sub("f64").map(lambda e: f"nupp.math.i64.wrap({e})")],
        "u64": [st.tuples(sub("u64"), st.sampled_from(["+", "*", "|"]), sub("u64")).map(" ".join),
                st.tuples(sub("u64"), st.just("-"), sub("u32")).map(" ".join)],
    }[width]
    return st.one_of(leaf, *[o.map(lambda e: f"({e})") for o in options])


@lru_cache(maxsize=None)
def comparisons(depth: int):
    return st.tuples(st.sampled_from(NUMERIC).flatmap(lambda w: typed(w, depth)),
                     st.sampled_from(["<", "<=", ">", ">=", "==", "~="]),
                     st.sampled_from(NUMERIC).flatmap(lambda w: typed(w, depth))).map(" ".join)


def module_text(width: str, expr: str, cond: str) -> str:
    ret = {"i32": "int32", "u32": "uint32", "f64": "number", "f32": "float", "i64": "int64", "u64": "uint64"}[width]
    return (f"@aot\nlocal function k({PARAMS}): {ret}\n"
            f"    local r: {ret} = {expr}\n    if {cond} then\n        r = {expr}\n    end\n    return r\nend\n"
            f"return k\n")


def check(text: str):
    source = Source("gen.nupp", text)
    chunk = parse(source)
    validate(source, chunk)
    return check_module(source, chunk)


@given(st.sampled_from(NUMERIC).flatmap(lambda w: st.tuples(st.just(w), typed(w, 3))), comparisons(2))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_well_typed_programs_check_and_run(width_expr, cond):
    width, expr = width_expr
    text = module_text(width, expr, cond)
    module = check(text)
    assert module.functions[0].result.value == width
    host = Host()
    try:
        host.run_source(Source("gen.nupp", text.replace("return k\n", "k(-1, 4294967295, 0.1, 0.5, -9LL, 7ULL)\n")))
    except LuaRunError as err:
        assert "integer division by zero" in err.message


ILL_TYPED = ["a + b", "w + z", "x & 1", "nupp.math.f32.add(x, y)", "nupp.math.i32.fromU32(a)",
             "nupp.math.u32.fromI32(b)", "a .. a", "x ^ a", "y < true", "(a < 1) + 1"]


@given(st.sampled_from(NUMERIC).flatmap(lambda w: st.tuples(st.just(w), typed(w, 2))),
       st.sampled_from(ILL_TYPED), comparisons(1))
@settings(max_examples=100, deadline=None)
def test_ill_typed_programs_get_a_diagnostic(width_expr, bad, cond):
    width, expr = width_expr
    text = module_text(width, expr, cond).replace("    return r\n", f"    local bad = {bad}\n    return r\n")
    try:
        check(text)
    except NuppError as err:
        assert any(d.line == 7 for d in err.diagnostics), str(err)
    else:
        raise AssertionError(f"no diagnostic for {bad}")


TOKENS = ["a", "b", "x", "y", "w", "z", "1", "2.5", "-", "+", "*", "/", "//", "%", "&", "|", "~", "<<",
          ">>", "<", "==", "and", "or", "not", "(", ")", "nupp.math.f32.add(y, y)", "#", "true", "^", ".."]


@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12).map(" ".join))
@settings(max_examples=300, deadline=None)
def test_any_expression_gives_ir_or_diagnostics(expr):
    text = f"@aot\nlocal function k({PARAMS}): nil\n    local r = {expr}\nend\n"
    try:
        check(text)
    except NuppError as err:
        assert err.diagnostics and all(d.render() for d in err.diagnostics)
