"""Minimizing a failure: the smallest program and input that still fail the same way.

A greedy delta pass over the program tree (program.py), to a fixed point or
the time budget:

  1. the input: the one failing call, its spans as short as still fails;
  2. whole helper functions dropped;
  3. runs of statements dropped (halves, quarters, ... single ones), compound
     statements replaced by one of their blocks, elseif and else clauses
     dropped (outer blocks first: big cuts first);
  4. expressions replaced by an operand of the same width or a plain leaf.

An edit is kept when the front end still accepts the program (so every
reduced program is a well-typed program) and it still fails with the same
signature (runner.Failure.signature: kind, execution family, message) in
the execution it failed in; only that execution and the reference run.
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import Callable

from .generator import renamed_twin
from .program import Expr, For, If, Line, Program, Repeat, SwitchLocal, While, statements
from .runner import Failure, Runner, compile_in_process, front_end
from .runs import FRONT_END, REFERENCE, CallSpec

# a plain value of each width, to stand for an expression
LEAVES = {"i32": ("0", "nupp.math.i32.wrap(0.5)"), "u32": ("nupp.math.u32.fromI32(0)",), "i64": ("0LL",),
          "u64": ("0ULL",), "f64": ("0.5",), "f32": ("nupp.math.f32.narrow(0.5)",), "bool": ("true", "false")}
ROW_COUNTS = (0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 20, 33, 50)


def minimize(failure: Failure, runner: Runner, seconds: float, log: Callable[[str], None] = print) -> Failure:
    """A smaller failure of the same signature (the failure itself when nothing smaller fails)."""
    reducer = _Reducer(failure, runner, time.monotonic() + seconds)
    start = len(reducer.text(failure.program))
    if not reducer.fails(failure.program, failure.call):
        log("  minimize: the program alone does not fail the same way; saved as found")
        return failure
    call = reducer.reduce_call()
    program = reducer.reduce_program()
    log(f"  minimized {start} -> {len(reducer.text(program))} characters in {reducer.tries} tries")
    return replace(failure, program=program, call=call)


class _Reducer:
    def __init__(self, failure: Failure, runner: Runner, deadline: float):
        self.failure = failure
        self.runner = runner
        self.deadline = deadline
        self.program = failure.program
        self.call = failure.call
        self.tries = 0
        self.rejected: set[str] = set()

    def text(self, program: Program) -> str:
        return "\n".join(program.render())

    def fails(self, program: Program, call) -> bool:
        """Whether `program` fails with the failure's signature: in process when nupp fails on it
        before any C compiler runs (compile_in_process), else in the failure's execution."""
        self.tries += 1
        f = self.failure
        if program.isolated:
            program.twin = renamed_twin(program)
            if front_end(program.twin, "twin.nupp"):
                return False
            return self.same(self.runner.check_isolated(program, "minimizing"))
        early = compile_in_process(program, "minimizing.nupp", self.runner.emitters)
        if early or f.execution == FRONT_END:
            return bool(early) and self.same([Failure(program, *early)])
        if f.kind == "load":  # no calls, no reference: only whether it loads there
            return self.same(self.runner.check([program], [], [f.execution], "minimizing"))
        return self.same(self.runner.check([program], [call] if call else None, [REFERENCE, f.execution],
                                           "minimizing"))

    def same(self, found: list[Failure]) -> bool:
        return any(g.signature == self.failure.signature and g.execution == self.failure.execution for g in found)

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def reduce_call(self) -> CallSpec:
        """The failing call with as few rows (and no random ones) as still fails."""
        if self.call is None:
            return None
        for rows in [n for n in ROW_COUNTS if n < self.call.rows + self.call.random_rows]:
            smaller = replace(self.call, rows=rows, random_rows=0, offset=self.call.offset if rows else 0)
            if self.out_of_time():
                break
            if self.fails(self.program, smaller):
                self.call = smaller
                break
        return self.call

    def reduce_program(self) -> Program:
        changed = True
        while changed and not self.out_of_time():
            changed = False
            k = 0
            while k < len(_edits(self.program)) and not self.out_of_time():
                candidate = copy.deepcopy(self.program)
                _edits(candidate)[k]()
                text = self.text(candidate)
                if text == self.text(self.program) or text in self.rejected or not self.fails(candidate, self.call):
                    self.rejected.add(text)
                    k += 1
                    continue
                self.program = candidate
                changed = True
        return self.program


# ---- the edits of a program (closures over that very tree) --------------------------------------

def _edits(program: Program) -> list[Callable[[], None]]:
    edits = [lambda k=k: program.functions.pop(k) for k in range(len(program.functions) - 1)]
    blocks = [f.body for f in program.functions]
    blocks += [b for f in program.functions for s in statements(f.body) for b in s.blocks()]
    for block in blocks:  # runs of statements, halves first (a while's step stays: it keeps the loop finite)
        size = len(block) // 2
        while size >= 1:
            edits += [lambda block=block, k=k, size=size: block.__delitem__(slice(k, k + size))
                      for k in range(0, len(block) - size + 1, size)
                      if all(s.kind != "step" for s in block[k:k + size])]
            size //= 2
    for block in blocks:
        for k, s in enumerate(block):
            edits += [lambda block=block, k=k, inner=inner: block.__setitem__(slice(k, k + 1), inner)
                      for inner in s.blocks()]
            if isinstance(s, If):
                edits += [lambda s=s, c=c: s.clauses.pop(c) for c in range(len(s.clauses))
                          if len(s.clauses) > 1]
                if s.orelse is not None:
                    edits.append(lambda s=s: setattr(s, "orelse", None))
    for holder, key in _expression_slots(program):
        node = holder[key] if isinstance(key, int) else getattr(holder, key)
        if node.bounds:
            continue
        replacements = [kid for kid in node.kids if kid.width == node.width]
        replacements += [Expr(node.width, leaf) for leaf in LEAVES[node.width] if node.kids or node.form != leaf]
        edits += [lambda holder=holder, key=key, r=r: _put(holder, key, r) for r in replacements]
    return edits


def _put(holder, key, value) -> None:
    if isinstance(key, int):
        holder[key] = value
    else:
        setattr(holder, key, value)


def _expression_slots(program: Program):
    """(holder, key) of every expression, outer ones first."""
    roots = []
    for f in program.functions:
        for s in statements(f.body):
            if isinstance(s, Line):
                roots += [(s.exprs, k) for k in range(len(s.exprs))]
            elif isinstance(s, If):
                roots += [(clause, 0) for clause in s.clauses]
            elif isinstance(s, For):
                roots += [(s, "start"), (s, "stop")]
            elif isinstance(s, (While, Repeat)):
                roots.append((s, "cond"))
            elif isinstance(s, SwitchLocal):
                roots += [(s, "selector"), *((arm, 1) for arm in s.arms), (s, "otherwise")]
    for holder, key in roots:
        yield from _slots_under(holder, key)


def _slots_under(holder, key):
    yield holder, key
    node = holder[key] if isinstance(key, int) else getattr(holder, key)
    for k in range(len(node.kids)):
        yield from _slots_under(node.kids, k)
