# lakewatch: `make demo` and `make test` are all a fresh machine needs.
# Each bootstraps the virtualenv (.venv), Delta's jars and a class data sharing archive once,
# idempotently: Spark resolves the jars (spark.jars.packages, Ivy) into .cache/ivy, and later engine
# starts use them offline.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
JARS := .cache/ivy/.complete
CDS := .cache/cds/.complete
JAVA := .cache/java/.complete

.PHONY: setup browser demo test test-fast test-unit test-sql test-integration bench docs-images docs-tables clean clean-state

setup: $(INSTALLED) $(JARS) $(JAVA) $(CDS)

# Headless Chromium for the dashboard page test (Debian's package; installed once if missing).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the dashboard page test"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

$(INSTALLED): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "setup: installing the Python packages into $(VENV) (pip, a few minutes the first time) ..." >&2
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install $$(test -t 1 || echo --quiet) -e '.[local,dev]'
	@echo "setup: Python packages installed" >&2
	@touch $@

$(JARS): $(INSTALLED) pipelines/local/jars.py
	$(BIN)/python -m pipelines.local.jars
	@touch $@

# lakewatch's engine patches (pipelines/local/patches.py lists them), one jar each, compiled once with
# the JDK's javac (javalib.py): Hadoop's local file system without a chmod or readlink process per
# file (localfs.py), Delta's catalog without a commit for an ALTER TABLE that changes nothing
# (delta_catalog.py), and SDP's classes rewritten so that it waits without spinning or oversleeping,
# refreshes a materialized view in one overwrite and starts a flow that reads no table without
# analysing it again (sdp_classes.py). A patch that cannot be built is left out on its own.
$(JAVA): $(INSTALLED) $(JARS) pipelines/local/javalib.py pipelines/local/patches.py pipelines/local/localfs.py pipelines/local/delta_catalog.py pipelines/local/sdp_classes.py $(shell find pipelines/local/java -name '*.java')
	$(BIN)/python -m pipelines.local.patches
	@touch $@

# Java's class data sharing archive of the engine's classes (pipelines/local/cds.py): later engine starts
# map the classes instead of parsing and verifying them again. Recorded once, by a real engine on a
# throwaway state folder (pipelines/local/cds_record.py).
$(CDS): $(JARS) $(JAVA) pipelines/local/cds.py pipelines/local/cds_record.py
	$(BIN)/python -m pipelines.local.cds_record
	@touch $@

demo: setup
	$(BIN)/lakewatch demo

# Two pytest workers (one per core); a module's tests stay on one worker, so its state folder, engine
# and fixtures are set up once, and modules that share a costly session fixture run on one worker
# together (tests/conftest.py, SHARED_FIXTURE_GROUPS). pytest-xdist 3.8 hands out the files with the
# most tests first. Longest first (--no-loadscope-reorder, with the two longest scenario modules first) is
# not measurably faster and starts those two modules' engines together on both cores, which can make
# CI fail (see bench/RESULTS.md).
PYTEST_WORKERS ?= 2

test: setup browser
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile

# The tiers on their own (tests/conftest.py): unit needs no JVM, so no jars either.
test-fast: $(INSTALLED)
	$(BIN)/python -m pytest tests/unit -q -n $(PYTEST_WORKERS)

test-unit: test-fast

test-sql: setup
	$(BIN)/python -m pytest tests/sql -n $(PYTEST_WORKERS) --dist loadfile

test-integration: setup browser
	$(BIN)/python -m pytest tests/integration -n $(PYTEST_WORKERS) --dist loadfile

bench: setup
	$(BIN)/python bench/run_update.py

# The dashboard pictures of the docs (docs/images/): the demo on a throwaway state folder, its
# dashboard page opened in headless Chromium (docs/tools/screenshots.py).
docs-images: setup browser
	$(BIN)/python docs/tools/screenshots.py

# The table reference of docs/observability.md, from the observability definitions.
docs-tables: $(INSTALLED)
	$(BIN)/python docs/tools/observability_tables.py

clean-state:
	rm -rf .lakewatch .lakewatch-demo

clean: clean-state
	rm -rf $(VENV) .cache build *.egg-info
