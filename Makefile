# The two commands of the README: `make workshop` and `make test`. Everything installs into .venv.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
# pip prints a warning per package for the machine's unused local index paths: keep them out of the way.
QUIET_PIP := 2>&1 | { grep -v "^WARNING: Location" || true; }
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The versions CI last passed with (see the file's header). They were resolved on Python 3.11, the
# workshop's version: another interpreter resolves freely within pyproject.toml's ranges instead
# (numpy 2.4 has no wheel for 3.10, for one).
CONSTRAINTS := .ci/constraints.txt
PIN := $(shell $(PYTHON) -c 'import sys; print("-c $(CONSTRAINTS)" if sys.version_info[:2] == (3, 11) else "")' 2>/dev/null)
RUN_DIR ?= runs/workshop

.PHONY: setup workshop test lint lab bench browser-deps clean constraints-refresh

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip $(QUIET_PIP)

# torch is installed first with its exact pin: on the workshop machines that takes the local CPU
# wheel, and megatron-core's `torch` requirement is then already satisfied.
$(STAMP): $(BIN)/python pyproject.toml $(CONSTRAINTS)
	$(BIN)/python -m pip install -q torch==2.13.0 $(QUIET_PIP)
	$(BIN)/python -m pip install -q -e '.[dev]' $(PIN) $(QUIET_PIP)
	touch $(STAMP)

# Newest versions within pyproject.toml's ranges, then write them down as the new constraints.
constraints-refresh: $(BIN)/python
	$(BIN)/python -m pip install -q torch==2.13.0 $(QUIET_PIP)
	$(BIN)/python -m pip install -q --upgrade -e '.[dev]' $(QUIET_PIP)
	{ grep '^#' $(CONSTRAINTS); $(BIN)/python -m pip freeze --exclude-editable 2>/dev/null \
	  | grep -iv '^torch==' | sort -f; } > $(CONSTRAINTS).new && mv $(CONSTRAINTS).new $(CONSTRAINTS)

setup: $(STAMP)

workshop: setup
	$(BIN)/workshop run-notebooks --backend local --output-dir $(RUN_DIR)

test: setup browser-deps
	$(BIN)/ruff check workshop_lib tests benchmarks
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check workshop_lib tests benchmarks
	$(BIN)/ruff format --check workshop_lib tests benchmarks

lab: setup
	$(BIN)/jupyter lab notebooks/

bench: setup
	$(BIN)/python -m benchmarks.run_all

# The real-browser test drives Debian's chromium. Installing it needs root and apt; where that is
# not possible the browser test skips and says why.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1) \
	  || echo "note: chromium not installed; the browser test will be skipped"; }

clean:
	rm -rf $(RUN_DIR) .pytest_cache build *.egg-info
