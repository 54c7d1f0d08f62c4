# Two entry points (see README): `make showcase` and `make test`.
# Both create .venv on first use and install nupp into it in editable mode.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup showcase test test-all clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

showcase: $(STAMP)
	$(BIN)/nupp run bench/kernel-subset-spike/mandelbrot_main.nupp

# Quick subset locally; everything (slow tests included) under CI=true.
test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

test-all: $(STAMP)
	$(BIN)/python -m pytest -q --runslow $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
