# The README's commands, runnable as make targets. Each target installs what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
OUT ?= build

.PHONY: synth test test-fast lint golden bench

# 1) set up and synth the staging stack offline
synth:
	$(PYTHON) -m venv $(VENV) && $(PY) -m pip install -q -r requirements.txt && $(PY) synth.py --stack staging --out $(OUT)/staging

# 2) set up and run all tests
test:
	$(PYTHON) -m venv $(VENV) && $(PY) -m pip install -q -r requirements-dev.txt && $(PY) -m pytest -q

# the tests that run no whole program, need no synthesized plan and start no subprocess (see tests/conftest.py)
test-fast:
	$(PY) -m pytest -q -m "not slow"

lint:
	$(PY) -m ruff check . && $(PY) -m ruff format --check . && $(PY) -m mypy

golden:
	$(PY) -m tests.support.golden

bench:
	$(PY) bench/run.py
