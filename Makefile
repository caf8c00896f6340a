# `make demo` and `make test` are the two commands of the README; both create .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The delta-3 target is executed in a second virtualenv: PySpark 3.5 + delta-spark 3.3 (requirements-delta3.txt).
DELTA3_VENV ?= .venv-delta3

.PHONY: demo test test-exhaustive test-unity-matrix lint typecheck clean jars chromium delta3

# setuptools prints a 12-line warning box for every editable install, --quiet or not: the install's output is
# kept in the virtualenv's install.log and shown only when it fails.
$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' >$(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	touch $@

# delta-spark's jars, Derby's network server and client (a shared metastore's tests) and Unity Catalog's server and
# connector (copied from ../shared/unitycatalog, its runtime jars from Maven Central): resolved once from
# Maven Central into ~/.cache/delta-contracts, reused offline after.
jars: $(BIN)/.installed
	$(BIN)/delta-contracts jars delta-4 derby unitycatalog

$(DELTA3_VENV)/.installed: requirements-delta3.txt
	test -x $(DELTA3_VENV)/bin/python || $(PYTHON) -m venv $(DELTA3_VENV)
	$(DELTA3_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(DELTA3_VENV)/bin/python -m pip install --quiet -r requirements-delta3.txt
	touch $@

# Delta 3.3 on Spark 3.5 for tests/engine/test_delta3.py: the virtualenv and the Scala 2.12 jars.
delta3: $(BIN)/.installed $(DELTA3_VENV)/.installed
	$(BIN)/delta-contracts jars delta-3

# The demo's project (the example contracts and migrations) and warehouse, kept in warehouse/demo.
demo: $(BIN)/.installed jars
	rm -rf warehouse/demo
	$(BIN)/delta-contracts demo --folder warehouse/demo

# The import graph (tests/test_import_graph.py: no cycle, a pure core) is read from the source in a second:
# checked with the linters, not only in the test run.
lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest -q -p no:cacheprovider tests/test_import_graph.py

typecheck: $(BIN)/.installed
	$(BIN)/mypy

# The telemetry report's HTML is checked in headless Chromium: Debian's package, installed once when missing.
chromium:
	command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium)

PYTEST := DELTA_CONTRACTS_DELTA3_VENV=$(DELTA3_VENV) $(BIN)/pytest -q --durations=40 -n 2 --dist loadgroup --no-loadscope-reorder

# The suite in two tiers (tests/tiers.py): `make test` executes every kind of op in every phase on delta-4,
# on the embedded engine and on delta-3 where its SQL differs; `make test-exhaustive` the rest of the engine
# matrices. CI (.ci/run) runs `make test`.
# The checks and installs before it run two at a time (the two virtualenvs, mypy beside the delta-3 install).
test:
	$(MAKE) --no-print-directory -j2 lint typecheck jars chromium delta3
	$(PYTEST) -m "not exhaustive"

test-exhaustive: $(BIN)/.installed jars chromium delta3
	$(PYTEST) -m "exhaustive and not unity_matrix"

# Every recipe through the CLI on a Unity Catalog OSS server, managed and external (tests/engine/test_unity_recipes.py):
# hours on two cores, so a tier of its own, for a scheduled job and before a release.
test-unity-matrix: $(BIN)/.installed jars
	$(PYTEST) -m unity_matrix

clean:
	rm -rf $(VENV) $(DELTA3_VENV) warehouse .pytest_cache .mypy_cache .ruff_cache .hypothesis
