# Two commands matter: `make run` and `make test`. Both bootstrap .venv from pyproject.toml.
PYTHON ?= python3
PORT ?= 8000
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast lint suite bench bench-record clean system-packages

# Independent steps run side by side: Debian's packages install while pip installs (a fresh
# machine's two downloads), and lint checks while the suite runs.
MAKEFLAGS += --jobs=2

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "burstmarket needs Python 3.11 or newer; try: make PYTHON=python3.11 ..." >&2; exit 1; }
	@echo "Installing burstmarket and its dependencies into $(VENV) (the first time takes a few minutes)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar off -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/burstmarket serve --simulate --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: lint suite

# The engine compiled once first (numba caches it beside the source; a second run only loads
# it), so the suite's workers and their servers load it rather than each compiling it at once.
WARM_UP := $(BIN)/python -c 'from burstmarket.auction.warmup import warm_up; warm_up()'

suite: $(STAMP) system-packages
	$(WARM_UP)
	$(BIN)/pytest

# The fast loop: every test that starts no server (tests/conftest.py marks the others e2e), on
# every core, property tests at a quarter of their examples (tests/conftest.py).
test-fast: $(STAMP)
	$(WARM_UP)
	$(BIN)/pytest -m "not e2e"

# What the suite needs from Debian, in one apt-get (two would wait on each other's lock): the
# browser tests drive Debian's chromium (never a browser download of Playwright's own), and the
# bus tests run redis-server, each on a free loopback port of its own, started and stopped by
# the tests (tests/conftest.py `redis_server`).
system-packages:
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	if [ -n "$$missing" ]; then \
		echo "Installing Debian's$$missing for the browser and bus tests (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing; \
	fi

# A whole tick of the 2,000- and the 10,000-node island first, and of the 2,000-node one with
# a day of billing behind it (three minutes), then the engine alone (twenty).
bench: $(STAMP)
	$(BIN)/python bench/bench_tick.py
	$(BIN)/python bench/bench_tick.py --nodes 10000 --clusters 5000
	$(BIN)/python bench/bench_tick.py --day-behind
	$(BIN)/python bench/bench_clear.py

# The record's commands over a cached simulated day (built once under data/bench/: an hour).
bench-record: $(STAMP)
	$(BIN)/python bench/bench_verify.py
	$(BIN)/python bench/bench_backtest.py
	$(BIN)/python bench/bench_replay.py

clean:
	rm -rf $(VENV) data/*
