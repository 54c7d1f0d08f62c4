# Two entry points (see README): `make showcase` and `make test`.
# Both create .venv on first use and install nupp into it in editable mode.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup showcase test test-all fuzz docs clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

showcase: $(STAMP)
	$(BIN)/nupp run bench/kernel-subset-spike/mandelbrot_main.nupp

# Quick subset locally; everything (slow tests included) under CI=true.  One pytest
# worker per core (pytest-xdist): the tests are single-threaded compiles and runs.
XDIST ?= -n auto
test: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) $(PYTEST_ARGS)

test-all: $(STAMP)
	$(BIN)/python -m pytest -q --runslow $(XDIST) $(PYTEST_ARGS)

# Generated programs in every execution, compared bit for bit, for MINUTES minutes;
# failures are minimized into tests/fuzz_regressions/ (FUZZ_ARGS: see python -m tests.fuzz --help).
MINUTES ?= 3
JOBS ?= 1
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz --minutes $(MINUTES) --jobs $(JOBS) $(FUZZ_ARGS)

# The user documentation as HTML in site/ (docs/reference/ is rewritten from the code first).
docs: $(STAMP)
	$(BIN)/python docs/reference_pages.py
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) build *.egg-info
