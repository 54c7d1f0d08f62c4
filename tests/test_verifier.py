"""The IR verifier: for each rule a minimal valid function and broken variants,
built from scalar_ir nodes directly; the BENCH mandelbrot and the seed's
classify verify clean; check() turns errors into an InternalError."""

from __future__ import annotations

import math

import pytest

from nupp.errors import InternalError
from nupp.scalar_ir import nodes as ir
from nupp.scalar_ir.nodes import (Assert, Assign, Break, Call, Const, Eval, For, If, Len, Let, Load,
                                  Loc, Op, Return, Store, SwitchLabels, Var, While)
from nupp.scalar_ir.widths import Width
from nupp.verifier import VerifyError, check, verify_function, verify_module

F64, F32, I32, U32, I64, U64, BOOL = (Width.F64, Width.F32, Width.I32, Width.U32,
                                      Width.I64, Width.U64, Width.BOOL)


# ---- builders ----------------------------------------------------------------------

def c(value, width=I32):
    return Const(value, width)


def v(name, width=I32):
    return Var(name, width)


def op(name, *args):
    return Op(name, tuple(args))


def load(span, fname, width=I32, index="i"):
    return Load(span, index, fname, width)


def store(span, fname, value, index="i"):
    return Store(span, index, fname, value)


def loop(*body, var="i", start=None, stop=None, step=1):
    return For(var, start if start is not None else c(1), stop if stop is not None else Len("out"),
               step, tuple(body))


def span(name, struct="Rec", writable=False, qualifier=None):
    return ir.Param(name, ir.SpanType(struct, writable),
                    qualifier or ("exclusive" if writable else "borrows"))


REC = ir.StructDef("Rec", (("a", "int32"), ("f", "float"), ("d", "number"), ("b", "uint8"),
                           ("w", "uint64")))
OUT, INP, N = span("out", writable=True), span("inp"), ir.Param("n", I32)
SAME_LENGTH = Assert(op("eq.i32", Len("out"), Len("inp")), "length mismatch")


def matrix(params):
    """The complete, correct alias matrix of these parameters."""
    spans = [p for p in params if isinstance(p.type, ir.SpanType)]
    return tuple(ir.AliasFact(a.name, b.name,
                              ir.DISJOINT if "exclusive" in (a.qualifier, b.qualifier) else ir.SHARED_READ)
                 for k, a in enumerate(spans) for b in spans[k + 1:])


def function(*body, name="k", params=(OUT, INP, N), result=None, aliases=None):
    return ir.Function(name, tuple(params), result, tuple(body),
                       matrix(params) if aliases is None else tuple(aliases))


def module(*functions, structs=(REC,)):
    return ir.Module(tuple(structs), tuple(functions))


def kernel(*loop_body, before=(), after=(), **kw):
    """assert #out == #inp; for i = 1, #out do LOOP_BODY end, as one module."""
    return module(function(SAME_LENGTH, *before, loop(*loop_body), *after, **kw))


def scalar(*body, result=None, params=(N,), **kw):
    return module(function(*body, params=params, result=result, **kw))


COPY = (Let("x", I32, load("inp", "a")), store("out", "a", op("add.i32", v("x"), v("n"))))


def errors_of(mod) -> list[VerifyError]:
    return verify_module(mod)


def assert_clean(mod):
    errors = errors_of(mod)
    assert errors == [], "\n".join(map(str, errors))


def expect(mod, rule, *words, count=1):
    """Exactly `count` errors, all of `rule`, the first naming every word."""
    errors = errors_of(mod)
    assert [e.rule for e in errors] == [rule] * count, "\n".join(map(str, errors))
    for word in words:
        assert word in errors[0].message, f"{word!r} not in {errors[0].message!r}"
    return errors[0]


def test_baseline_kernel_is_clean():
    assert_clean(kernel(*COPY))


# ---- widths --------------------------------------------------------------------------

def test_widths_valid_conversions_are_clean():
    assert_clean(kernel(
        Let("wide", F64, load("inp", "f", F64)),
        Let("narrow", F32, op("narrow.f64.f32", v("wide", F64))),
        Let("sum", F64, op("add.f64", op("promote.f32.f64", v("narrow", F32)), v("wide", F64))),
        store("out", "f", op("narrow.f64.f32", v("sum", F64))),
        store("out", "d", op("add.f64", v("sum", F64), c(0.5, F64))),
        store("out", "b", op("widen.i32.i64", load("inp", "a"))),        # any integer width
        store("out", "w", load("inp", "w", U64)),
        store("out", "a", op("band.i32", load("inp", "b"), c(255))),
    ))


def test_unknown_opcode():
    expect(kernel(Let("x", I32, op("add.i16", c(1), c(2)))), "op-known", "add.i16")


def test_op_arity():
    expect(kernel(Let("x", I32, op("add.i32", c(1)))), "op-arity", "add.i32", "2", "given 1")


def test_implicit_widening_is_an_op_width_error():
    # add.f64 of an f32 operand: the promotion was not written down.
    err = expect(scalar(Let("a", F32, c(1.5, F32)), Let("b", F64, op("add.f64", v("a", F32), c(1.0, F64)))),
                 "op-width", "operand 1 of add.f64", "f32", "f64")
    assert isinstance(err.node, Op)


def test_op_width_of_call_returning_nothing():
    helper = ir.Function("h", (), None, ())
    mod = module(function(Let("x", I32, op("neg.i32", Call("h", (), None))), params=(N,)), helper)
    expect(mod, "op-width", "neg.i32", "returning nothing")


@pytest.mark.parametrize("value,width", [
    (2 ** 31 - 1, I32), (-2 ** 31, I32), (2 ** 32 - 1, U32), (2 ** 63 - 1, I64), (0, U64),
    (0.5, F32), (math.inf, F32), (math.nan, F32), (3.4028234663852886e38, F32), (0.1, F64),
    (0, F32), (3, F64), (True, BOOL), (False, BOOL),
])
def test_const_fits(value, width):
    assert_clean(scalar(Let("x", width, c(value, width))))


@pytest.mark.parametrize("value,width,words", [
    (2 ** 31, I32, "outside"), (-1, U32, "outside"), (2 ** 64, U64, "outside"),
    (1.5, I32, "not an integer"), (True, I32, "not a number"), (0.1, F32, "binary32"),
    (1e39, F32, "binary32"), (1, BOOL, "not a boolean"), (2 ** 53 + 1, F64, "exactly"),
])
def test_const_does_not_fit(value, width, words):
    expect(scalar(Let("x", width, c(value, width))), "const-fits", words)


def test_var_width():
    expect(scalar(Let("x", I64, v("n", I64))), "var-width", "%n", "i64", "i32")


def test_let_width():
    expect(scalar(Let("x", I32, c(1.0, F64))), "let-width", "%x", "i32", "f64")


def test_assign_width():
    expect(scalar(Let("x", I32, c(0)), Assign("x", c(1, I64))), "assign-width", "%x", "i64")


@pytest.mark.parametrize("stmt", [
    If(c(1), ()), While(c(1.0, F64), (Break(),)), Assert(v("n"), "m"),
])
def test_conditions_are_bool(stmt):
    expect(scalar(stmt), "cond-bool", "not bool")


def test_return_width():
    assert_clean(scalar(Return(v("n")), result=I32))
    expect(scalar(Return(c(1.0, F64)), result=I32), "return-width", "f64", "returns i32")
    expect(scalar(Return(c(1)), result=None), "return-width", "returns nothing")
    expect(scalar(Return(None), result=I32), "return-width", "without a value")


def test_missing_return():
    cond = op("lt.i32", v("n"), c(0))
    assert_clean(scalar(If(cond, (Return(c(1)),), (Return(c(2)),)), result=I32))
    assert_clean(scalar(While(c(True, BOOL), (Return(c(1)),)), result=I32))
    expect(scalar(If(cond, (Return(c(1)),)), result=I32), "missing-return", "@k", "end")


def test_load_width():
    expect(kernel(Let("x", F32, load("inp", "f", F32))), "load-width", "float field", "f64")
    expect(kernel(Let("x", I32, load("inp", "w", I32))), "load-width", "uint64", "u64")


@pytest.mark.parametrize("fname,value,words", [
    ("f", c(1, I32), "takes f64 or f32"),
    ("d", c(1.0, F32), "takes f64"),
    ("a", c(1.0, F64), "integer width"),
    ("b", c(True, BOOL), "integer width"),
])
def test_store_width(fname, value, words):
    expect(kernel(store("out", fname, value)), "store-width", f".{fname}", words)


def test_a_float_field_takes_binary64_and_narrows_it_itself():
    assert_clean(kernel(store("out", "f", load("inp", "d", F64)), store("out", "f", c(1.0, F32))))


def test_calls():
    add1 = ir.Function("add1", (ir.Param("x", I32),), I32, (Return(op("add.i32", v("x"), c(1))),))
    noop = ir.Function("noop", (), None, ())
    good = function(Let("y", I32, Call("add1", (v("n"),), I32)), Eval(Call("noop", (), None)),
                    Eval(Call("add1", (c(2),), I32)), params=(N,))
    assert_clean(module(good, add1, noop))

    def caller(call):
        return module(function(Eval(call), params=(N,)), add1, noop)

    expect(caller(Call("add1", (v("n"), v("n")), I32)), "call-args", "@add1", "2 argument")
    expect(caller(Call("add1", (c(1, I64),), I32)), "call-args", "%x", "i64")
    expect(caller(Call("add1", (v("n"),), F64)), "call-width", "returns i32")
    expect(caller(Call("noop", (), I32)), "call-width", "nothing")
    expect(caller(Call("gone", (), None)), "call-target", "@gone")
    takes_span = ir.Function("ts", (INP,), None, (), ())
    expect(module(function(Eval(Call("ts", (), None)), params=(N,)), takes_span),
           "call-args", "span")


def test_node_kind():
    expect(scalar(Eval(v("n"))), "node-kind", "Var")
    expect(scalar("print(1)"), "node-kind", "str")


# ---- span access -----------------------------------------------------------------------

def test_span_param():
    expect(kernel(Let("x", I32, load("n", "a"))), "span-param", "%n", "a parameter")
    expect(kernel(Let("x", I32, Len("nope"))), "span-param", "%nope", "nothing")


def test_span_value():
    expect(kernel(Let("x", I32, v("out"))), "span-value", "%out")
    expect(kernel(Assign("inp", c(1))), "span-value", "%inp")


def test_index_counter():
    err = expect(kernel(Let("j", I32, c(1)), Let("x", I32, load("inp", "a", index="j"))),
                 "index-counter", "load of %inp indexes %j, which is not a loop counter", "a local")
    assert isinstance(err.node, Load)
    expect(kernel(store("out", "a", c(1), index="n")), "index-counter", "store to %out", "a parameter")
    expect(module(function(SAME_LENGTH, Let("x", I32, load("inp", "a")))), "index-counter", "%i", "nothing")


def test_index_of_an_outer_counter_is_fine():
    inner = loop(store("out", "a", load("inp", "a", index="i")), var="j", stop=v("n"))
    assert_clean(kernel(inner))


def test_field_exists():
    expect(kernel(Let("x", I32, load("inp", "zz"))), "field-exists", "%inp", "zz", "Rec")
    expect(kernel(store("out", "zz", c(1))), "field-exists", "zz")


def test_store_writable():
    expect(kernel(store("inp", "a", c(1))), "store-writable", "%inp", "read-only")


def test_counter_write():
    expect(kernel(Assign("i", c(3))), "counter-write", "%i")
    expect(kernel(Let("i", I32, c(3))), "counter-write", "%i")


def test_for_counter():
    expect(scalar(loop(start=c(1, I64), stop=v("n"))), "for-counter", "start", "i64")
    expect(scalar(loop(stop=c(1.0, F64))), "for-counter", "stop", "f64")
    expect(scalar(loop(stop=v("n"), step=0)), "for-counter", "step")


# ---- bounds -------------------------------------------------------------------------------

A, B, C = span("a", writable=True), span("b"), span("c")


def test_bounds_proven_by_the_loop_itself_and_by_asserts():
    only_out = function(loop(store("out", "a", c(1))), params=(OUT,))
    assert_clean(module(only_out))
    # The loop's bound is #inp; out is related by the assert (either direction).
    assert_clean(module(function(
        SAME_LENGTH, loop(store("out", "a", load("inp", "a")), stop=Len("inp")))))
    # A chain: #a == #b, #c == #b relate a and c.
    chain = function(Assert(op("eq.i32", Len("a"), Len("b")), "m"),
                     Assert(op("eq.i32", Len("c"), Len("b")), "m"),
                     loop(store("a", "a", load("c", "a")), stop=Len("a")), params=(A, B, C))
    assert_clean(module(chain))
    both = function(Assert(op("and.bool", op("eq.i32", Len("a"), Len("b")),
                                        op("eq.i32", Len("b"), Len("c"))), "m"),
                    loop(store("a", "a", load("c", "a")), stop=Len("c")), params=(A, B, C))
    assert_clean(module(both))
    # Counting down from #out to 1, and from a start above 1.
    assert_clean(module(function(
        SAME_LENGTH, loop(store("out", "a", load("inp", "a")), start=Len("out"), stop=c(1), step=-1))))
    assert_clean(module(function(SAME_LENGTH, loop(*COPY, start=c(2), step=2))))


def test_bounds_without_assert():
    mod = module(function(loop(store("out", "a", load("inp", "a")))))
    err = expect(mod, "bounds", "%inp", "loop over %i", "len(%out)")
    assert isinstance(err.node, Load)


def test_bounds_reported_once_per_span_and_loop():
    mod = module(function(loop(store("out", "a", load("inp", "a")), store("out", "b", load("inp", "b")))))
    expect(mod, "bounds", "%inp")


@pytest.mark.parametrize("start,stop,step", [
    (c(1), v("n"), 1),                       # bound is not a length
    (c(0), Len("out"), 1),                   # starts below 1
    (v("n"), Len("out"), 1),                 # start not a constant
    (Len("out"), c(0), -1),                  # counts down below 1
    (c(1), Len("out"), -1),                  # counts down from a constant
])
def test_bounds_loop_shape(start, stop, step):
    mod = module(function(SAME_LENGTH, loop(*COPY, start=start, stop=stop, step=step)))
    expect(mod, "bounds", "load of %inp", "loop over %i", "not proven", count=2)  # and the store


def test_bounds_assert_inside_a_block_does_not_count():
    cond = op("lt.i32", v("n"), c(0))
    mod = module(function(If(cond, (SAME_LENGTH,)), loop(*COPY)))
    errors = errors_of(mod)
    assert [e.rule for e in errors] == ["assert-placement", "bounds"]


# ---- alias matrix ----------------------------------------------------------------------------

def test_alias_matrix_valid():
    assert_clean(module(function(params=(A, B, C))))
    assert ir.AliasFact("b", "c", ir.SHARED_READ) in matrix((A, B, C))
    # Reversed order is the same unordered pair.
    assert_clean(module(function(params=(A, B), aliases=(ir.AliasFact("b", "a", ir.DISJOINT),))))


def test_alias_matrix_incomplete():
    facts = matrix((A, B, C))[:2]
    expect(module(function(params=(A, B, C), aliases=facts)), "alias-matrix", "%b", "%c", "incomplete")


def test_alias_matrix_extra_facts():
    facts = matrix((A, B))
    expect(module(function(params=(A, B), aliases=facts + (ir.AliasFact("b", "a", ir.DISJOINT),))),
           "alias-matrix", "more than one")
    expect(module(function(params=(A, B, N), aliases=facts + (ir.AliasFact("a", "n", ir.DISJOINT),))),
           "alias-matrix", "%n", "not a span parameter")
    expect(module(function(params=(A, B), aliases=facts + (ir.AliasFact("a", "a", ir.DISJOINT),))),
           "alias-matrix", "itself")


def test_alias_fact_value():
    expect(module(function(params=(A, B), aliases=(ir.AliasFact("a", "b", ir.SHARED_READ),))),
           "alias-fact", "'disjoint'", "exclusive")
    expect(module(function(params=(B, C), aliases=(ir.AliasFact("b", "c", ir.DISJOINT),))),
           "alias-fact", "'shared-read'", "both borrow")


def test_span_qualifiers():
    expect(module(function(params=(span("o", writable=True, qualifier="borrows"),))),
           "span-qualifier", "%o", "must be exclusive")
    expect(module(function(params=(span("r", qualifier="exclusive"),))),
           "span-qualifier", "%r", "must be borrows")
    expect(module(function(params=(ir.Param("n", I32, "borrows"),))), "span-qualifier", "scalar")


def test_param_type():
    expect(module(function(params=(span("s", struct="Nope"),))), "param-type", "Nope")
    expect(module(function(params=(ir.Param("n", "int32"),))), "param-type", "neither")


# ---- switch labels ---------------------------------------------------------------------------

def eq(sel, label, width=I32):
    return op(f"eq.{width}", v(sel, width), c(label, width))


def switch(cases, default=True, width=I32, sel="code", labels=None, conds=None):
    """The If chain of `local result = switch sel do case ... end`, result = 10, 20, ..."""
    conds = conds or []
    if not conds:
        for case in cases:
            cond = eq(sel, case[0], width)
            for label in case[1:]:
                cond = op("or.bool", cond, eq(sel, label, width))
            conds.append(cond)
    tail = (Assign("result", c(99)),) if default else ()
    for k in reversed(range(len(conds))):
        arm = If(conds[k], (Assign("result", c(10 * (k + 1))),), tail)
        tail = (arm,)
    first = tail[0]
    return If(first.cond, first.then, first.orelse,
              labels if labels is not None else SwitchLabels(sel, width, tuple(map(tuple, cases)), default))


def switch_fn(chain, width=I32, sel="code"):
    return scalar(Let(sel, width, c(0, width)), Let("result", I32, None), chain,
                  Return(v("result")), result=I32)


CASES = [(-2 ** 31,), (1, 2, 3)]


def test_switch_valid():
    assert_clean(switch_fn(switch(CASES)))
    assert_clean(switch_fn(switch([(0,), (2 ** 32 - 1,)], width=U32), width=U32))


def test_switch_labels_width_and_selector():
    expect(switch_fn(switch([(1,)], width=F64), width=F64), "switch-labels", "f64")
    chain = switch(CASES, labels=SwitchLabels("code", U32, tuple(CASES), True))
    expect(switch_fn(chain), "switch-labels", "%code", "i32", "u32")
    chain = switch([(1,)], sel="nope", labels=SwitchLabels("nope", I32, ((1,),), True))
    errors = errors_of(switch_fn(chain))
    assert "switch-labels" in [e.rule for e in errors]


def test_switch_labels_values():
    bad_fit = SwitchLabels("code", U32, ((-1,),), True)
    expect(switch_fn(switch([(0,)], width=U32, labels=bad_fit), width=U32), "switch-labels", "-1", "fit")
    repeat = [(1,), (2, 1)]
    expect(switch_fn(switch(repeat)), "switch-labels", "repeats")
    expect(switch_fn(switch([(1,)], labels=SwitchLabels("code", I32, ((),), True))), "switch-labels",
           "no labels")


def test_switch_chain_shape():
    # Conditions in the wrong order of labels.
    swapped = [op("or.bool", eq("code", 2), eq("code", 1))]
    expect(switch_fn(switch([(1, 2)], conds=swapped)), "switch-labels", "arm 1", "1, 2", "label order")
    # Labels claim a default the chain lacks, and the reverse.
    no_else = switch(CASES, default=False, labels=SwitchLabels("code", I32, tuple(CASES), True))
    errors = errors_of(switch_fn(no_else))
    assert [e.rule for e in errors][0] == "switch-labels" and "no else" in errors[0].message
    extra = switch(CASES, default=True, labels=SwitchLabels("code", I32, tuple(CASES), False))
    expect(switch_fn(extra), "switch-labels", "no default")
    # The chain stops early: the second arm is not an If.
    short = If(eq("code", 1), (Assign("result", c(1)),), (Assign("result", c(2)),),
               SwitchLabels("code", I32, ((1,), (2,)), True))
    expect(switch_fn(short), "switch-labels", "arm 1", "arm 2")
    # A condition testing another width or a non-equality.
    wrong = [op("lt.i32", v("code"), c(1)), eq("code", 2)]
    expect(switch_fn(switch([(1,), (2,)], conds=wrong)), "switch-labels", "lt.i32")


# ---- scopes and definite assignment -----------------------------------------------------------

COND = op("lt.i32", v("n"), c(0))


def test_definite_assignment_valid():
    assert_clean(scalar(Let("x", I32, None), If(COND, (Assign("x", c(1)),), (Assign("x", c(2)),)),
                        Return(v("x")), result=I32))
    # A path that returns does not need the assignment.
    assert_clean(scalar(Let("x", I32, None), If(COND, (Assign("x", c(1)),), (Return(c(0)),)),
                        Return(v("x")), result=I32))
    # repeat x = ... until ...: only breaking paths leave `while true`.
    assert_clean(scalar(Let("x", I32, None),
                        While(c(True, BOOL), (Assign("x", v("n")), If(COND, (Break(),)))),
                        Return(v("x")), result=I32))
    # Shadowing in an inner block is a new local.
    assert_clean(scalar(Let("x", I32, c(1)), If(COND, (Let("x", F64, c(1.0, F64)),)),
                        Return(v("x")), result=I32))


def test_read_after_one_armed_if():
    err = expect(scalar(Let("x", I32, None), If(COND, (Assign("x", c(1)),)), Return(v("x")), result=I32),
                 "definite-assignment", "%x", "every path")
    assert isinstance(err.node, Var)


def test_read_after_loop_that_may_not_run():
    expect(scalar(Let("x", I32, None), loop(Assign("x", c(1)), stop=v("n")), Return(v("x")), result=I32),
           "definite-assignment", "%x")
    expect(scalar(Let("x", I32, None), While(COND, (Assign("x", c(1)),)), Return(v("x")), result=I32),
           "definite-assignment", "%x")


def test_read_in_loop_before_assignment():
    body = (Let("y", I32, v("x")), Assign("x", c(1)))
    expect(scalar(Let("x", I32, None), loop(*body, stop=v("n"))), "definite-assignment", "%x")


def test_undeclared():
    expect(scalar(Return(v("x")), result=I32), "undeclared", "%x")
    expect(scalar(Assign("x", c(1))), "undeclared", "%x")
    # Out of scope after its block.
    expect(scalar(If(COND, (Let("x", I32, c(1)),)), Return(v("x")), result=I32), "undeclared", "%x")


def test_redeclared():
    expect(scalar(Let("x", I32, c(1)), Let("x", I32, c(2))), "redeclared", "%x")
    expect(module(function(params=(N, N))), "unique-name", "%n")


def test_break_outside_loop():
    expect(scalar(Break()), "break-outside-loop")
    assert_clean(scalar(While(COND, (If(COND, (Break(),)),))))


# ---- placement ---------------------------------------------------------------------------------

def test_return_inside_loop_over_spans():
    err = expect(kernel(*COPY, If(COND, (Return(None),))), "return-in-span-loop", "loop over spans", "%i")
    assert isinstance(err.node, Return)
    # Also from a while nested in it.
    expect(kernel(*COPY, While(COND, (Return(None),))), "return-in-span-loop")
    # A counted loop over no span may return.
    assert_clean(scalar(loop(If(COND, (Return(c(1)),)), stop=v("n")), Return(c(0)), result=I32))


def test_assert_placement():
    expect(kernel(*COPY, after=(Assert(COND, "late"),)), "assert-placement", "after the first loop")
    expect(scalar(If(COND, (Assert(COND, "m"),))), "assert-placement", "function level")
    expect(scalar(While(COND, (Break(),)), Assert(COND, "m")), "assert-placement", "after")


# ---- module rules --------------------------------------------------------------------------------

def test_module_names():
    f = function(params=(N,))
    expect(module(f, f), "unique-name", "@k")
    expect(module(structs=(REC, REC)), "unique-name", "struct Rec")
    dup_field = ir.StructDef("P", (("x", "int32"), ("x", "float")))
    expect(module(structs=(dup_field,)), "unique-name", "field x")


def test_field_type():
    expect(module(structs=(ir.StructDef("P", (("x", "int128"),)),)), "field-type", "P.x", "int128")


def test_recursion():
    def calls(name, callee):
        return ir.Function(name, (), None, (Eval(Call(callee, (), None)),))
    expect(module(calls("f", "f")), "recursion", "@f -> @f")
    errors = errors_of(module(calls("f", "g"), calls("g", "h"), calls("h", "f"), calls("x", "f")))
    assert [e.rule for e in errors] == ["recursion"] * 3
    assert "@f -> @g -> @h -> @f" in errors[0].message
    assert_clean(module(calls("f", "g"), calls("g", "h"), ir.Function("h", (), None, ())))


# ---- whole kernels ---------------------------------------------------------------------------------

PIXEL = ir.StructDef("Pixel", (("cx", "float"), ("cy", "float")))
ESCAPE = ir.StructDef("Escape", (("n", "int32"),))


def f32(name, *args):
    return op(f"{name}.f32", *args)


def fv(name):
    return v(name, F32)


def mandelbrot() -> ir.Module:
    """BENCH.md's mandelbrot, lowered by hand."""
    params = (span("out", "Escape", writable=True), span("pixels", "Pixel"), ir.Param("maxIter", I32))
    sq = f32("add", f32("mul", fv("zx"), fv("zx")), f32("mul", fv("zy"), fv("zy")))
    keep_going = op("and.bool", op("lt.i32", v("n"), v("maxIter")),
                    op("le.f64", op("promote.f32.f64", sq), c(4.0, F64)))
    escape = While(keep_going, (
        Let("nx", F32, f32("add", f32("sub", f32("mul", fv("zx"), fv("zx")), f32("mul", fv("zy"), fv("zy"))),
                           fv("cx"))),
        Assign("zy", f32("add", f32("mul", f32("add", fv("zx"), fv("zx")), fv("zy")), fv("cy"))),
        Assign("zx", fv("nx")),
        Assign("n", op("add.i32", v("n"), c(1))),
    ))
    body = (
        Assert(op("eq.i32", Len("out"), Len("pixels")), "length mismatch"),
        loop(
            Let("cx", F32, op("narrow.f64.f32", load("pixels", "cx", F64))),
            Let("cy", F32, op("narrow.f64.f32", load("pixels", "cy", F64))),
            Let("zx", F32, c(0.0, F32)),
            Let("zy", F32, c(0.0, F32)),
            Let("n", I32, c(0)),
            escape,
            store("out", "n", v("n")),
        ),
    )
    return module(function(*body, name="mandelbrot", params=params), structs=(PIXEL, ESCAPE))


def classify() -> ir.Module:
    """The seed's classify, lowered by hand: selector Let, result Let, labelled If chain."""
    code = ir.StructDef("Code", (("value", "int32"),))
    params = (span("output", "Code", writable=True), span("input", "Code"))
    chain = If(eq("code", -2 ** 31), (Assign("result", c(10)),),
               (If(op("or.bool", eq("code", 1), eq("code", 2)), (Assign("result", c(20)),),
                   (Assign("result", c(30)),)),),
               SwitchLabels("code", I32, ((-2 ** 31,), (1, 2)), True))
    body = (
        Assert(op("eq.i32", Len("output"), Len("input")), "length mismatch"),
        loop(Let("code", I32, load("input", "value")),
             Let("result", I32, None),
             chain,
             store("output", "value", v("result")),
             stop=Len("output")),
    )
    return module(function(*body, name="classify", params=params), structs=(code,))


def mixedwidth() -> ir.Module:
    """BENCH.md's mixedwidth module: mix, add and choose."""
    params = (span("outputs", writable=True), span("inputs"))
    mix = function(
        Assert(op("eq.i32", Len("outputs"), Len("inputs")), "length mismatch"),
        loop(Let("wide", F64, load("inputs", "f", F64)),
             Let("doubled", F64, op("add.f64", v("wide", F64), v("wide", F64))),
             Let("narrow", F32, f32("add", op("narrow.f64.f32", v("wide", F64)),
                                    op("narrow.f64.f32", v("wide", F64)))),
             store("outputs", "f", op("narrow.f64.f32", op("add.f64", op("promote.f32.f64", fv("narrow")),
                                                             v("doubled", F64)))),
             stop=Len("outputs")),
        name="mix", params=params)
    add = ir.Function("add", (ir.Param("left", F32), ir.Param("right", F32)), F32,
                      (Return(f32("add", fv("left"), fv("right"))),), vectorize=False)
    choose = ir.Function("choose", tuple(ir.Param(n, I32) for n in "efg"), I32,
                         (Return(op("bxor.i32", op("band.i32", v("e"), v("f")),
                                    op("band.i32", op("bnot.i32", v("e")), v("g")))),))
    return module(mix, add, choose)


@pytest.mark.parametrize("build", [mandelbrot, classify, mixedwidth])
def test_bench_kernels_verify_clean(build):
    assert_clean(build())


def test_verify_function_alone():
    mod = mandelbrot()
    assert verify_function(mod.functions[0], mod) == []


def test_errors_carry_the_statement_loc():
    bad = Let("x", I32, c(1.0, F64), loc=Loc(7, 9))
    mod = module(function(SAME_LENGTH, For("i", c(1), Len("out"), 1, (bad,), loc=Loc(6, 5))))
    [err] = errors_of(mod)
    assert (err.function, err.loc, err.rule) == ("k", Loc(7, 9), "let-width")
    assert err == VerifyError("k", Loc(7, 9), "let-width", err.message, node=None)


def test_check_raises_internal_error_naming_stage_and_rule():
    check(mandelbrot(), "lower")  # clean: no exception
    with pytest.raises(InternalError) as info:
        check(module(function(loop(store("out", "a", load("inp", "a"))))), "lane_rewrite")
    text = str(info.value)
    assert info.value.stage == "lane_rewrite"
    assert "bounds" in text and "%inp" in text and "bug in nupp" in text


# ---- inline rendering ------------------------------------------------------------------------------

def test_render_inline_puts_each_error_under_its_statement():
    text = pytest.importorskip("nupp.scalar_ir.text")
    from nupp.verifier import render_inline
    body = (
        loop(Let("x", I32, load("inp", "a"), loc=Loc(3, 9)),
             Let("y", F64, c(1), loc=Loc(4, 9)),                    # let-width
             store("out", "a", v("x")),
             Assign("x", c(2), loc=Loc(4, 9)),                       # shares 4:9 with the let
             Assign("x", c(2, I64), loc=Loc(4, 9)),                  # assign-width: under the let
             ),
    )
    body = (replace_loc(body[0], Loc(2, 5)),)
    fn = ir.Function("k", (OUT, INP), None, body, (), loc=Loc(1, 1))  # no alias fact
    mod = module(fn)
    errors = errors_of(mod)
    assert [e.rule for e in errors] == ["alias-matrix", "bounds", "let-width", "assign-width"]
    lines = render_inline(mod, errors).splitlines()

    def after(prefix):
        k = next(k for k, line in enumerate(lines) if line.lstrip().startswith(prefix))
        return lines[k + 1]

    assert after("func k(").startswith("; error: alias-matrix: no alias fact for span parameters %out and %inp")
    assert after("let %x").startswith("    ; error: bounds: load of %inp in the loop over %i at 2:5")
    let_y = lines.index(next(line for line in lines if line.lstrip().startswith("let %y")))
    assert lines[let_y + 1] == "    ; error: let-width: let %y: f64 is initialized with i32"
    assert lines[let_y + 2].startswith("    ; error: assign-width: assignment of i64 to %x")
    assert len(lines) == len(text.print_module(mod).splitlines()) + 4
    # The errors are comments: the annotated text still parses to the same module.
    assert text.parse_module("\n".join(lines)) == mod


def test_render_inline_struct_errors_follow_their_struct():
    pytest.importorskip("nupp.scalar_ir.text")
    from nupp.verifier import render_inline
    bad = ir.StructDef("P", (("x", "int128"),))
    mod = module(structs=(REC, bad))
    lines = render_inline(mod, errors_of(mod)).splitlines()
    k = next(k for k, line in enumerate(lines) if line.startswith("struct P"))
    assert lines[k + 1] == "; error: field-type: field P.x has type int128, which is not a storage type"


def replace_loc(node, loc):
    from dataclasses import replace
    return replace(node, loc=loc)
