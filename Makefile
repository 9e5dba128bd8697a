# The two commands of the README. Each builds .venv itself on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow test-cluster lint bench java clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

java:
	@$(BIN)/python -m scenarios.java_check

demo: $(STAMP) java
	$(BIN)/python -m scenarios.demo

# Test tiers (markers in pyproject.toml): the default tier, then the long sweeps, then a real Spark cluster.
# The default tier on every core (pytest-xdist): each worker builds its own shared runs, so the CPU total stays
# about the same and the wall time halves on two cores.
test: $(STAMP) java
	$(BIN)/python -m pytest -n auto -m "not slow and not cluster"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m "slow and not cluster"

test-cluster: $(STAMP)
	$(BIN)/python -m pytest -m cluster

lint: $(STAMP)
	$(BIN)/ruff check store sim model scenarios reports tests

bench: $(STAMP)
	$(BIN)/python benchmarks/store_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
