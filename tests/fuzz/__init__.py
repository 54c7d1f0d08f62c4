"""A fuzzer for nupp: generated programs run in every execution, compared bit for bit.

    make fuzz MINUTES=5                 # python -m tests.fuzz --minutes 5 (see --help)

The pieces, in the order a run uses them:

    generator.py    seeded programs covering every construct of the AOT subset (and the shapes
                    that once broke lane C); `program.py` is their tree and its Nupp text
    coverage.py     the constructs a program uses, measured from its syntax, IR and lane IR
    runs.py         the executions (interp, scalar C, lane C x tier x gang, GCC and Clang), the
                    calls (edge inputs, every tail length) and how outcomes compare
    worker.py       executions in child processes, every call under a timeout
    runner.py       the loop: batches of programs in one module, failures, the report
    minimize.py     a failure reduced to a small program and one call
    regressions.py  failures saved under tests/fuzz_regressions/, rerun by the test suite

tests/test_fuzz.py checks the generator's coverage and runs a short fuzz (a
five-minute one under CI=true); tests/test_fuzz_regressions.py reruns the
saved failures in every execution.
"""
