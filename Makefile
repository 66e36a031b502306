# lakewatch: `make demo` and `make test` are all a fresh machine needs.
# Each bootstraps the virtualenv (.venv) and Delta's jars (.cache/jars) once, idempotently.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
JARS := .cache/jars/.complete

.PHONY: setup demo test test-unit test-integration bench clean clean-state

setup: $(INSTALLED) $(JARS)

$(INSTALLED): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[local,dev]'
	@touch $@

$(JARS): $(INSTALLED) pipelines/local/jars.py
	$(BIN)/python -m pipelines.local.jars
	@touch $@

demo: setup
	$(BIN)/lakewatch demo

test: setup
	$(BIN)/python -m pytest

test-unit: setup
	$(BIN)/python -m pytest tests/unit

test-integration: setup
	$(BIN)/python -m pytest tests/integration

bench: setup
	$(BIN)/python bench/run_update.py

clean-state:
	rm -rf .lakewatch

clean: clean-state
	rm -rf $(VENV) .cache build *.egg-info
