# Topic Forest — every target sets up what it needs (venv, npm packages, Debian packages).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# aider's real ChatSummary, the eval's baseline, lives in its own venv (never in the project's).
AIDER_VENV := .venv-aider
AIDER_STAMP := $(AIDER_VENV)/.installed
AIDER_VERSION := 0.86.2
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: all venv test test-python lint demo bench soak eval vsix test-client test-e2e clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check server tests
	$(VENV)/bin/ruff format --check server tests
	$(VENV)/bin/mypy

test-python: $(STAMP)
	$(PY) -m pytest -q

test: lint test-python test-client test-e2e

demo: $(STAMP)
	$(PY) -m topicforest.demo

bench: $(STAMP)
	@for f in tests/bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# kill -9 durability at length: 200 seeded trials instead of the suite's 20 (several minutes)
soak: $(STAMP)
	TOPICFOREST_KILL_TRIALS=200 $(PY) -m pytest -q tests/server/test_kill.py

# Built once (the stamp); if it cannot be built (no registry), the eval says so and leaves
# aider's column out.
$(AIDER_STAMP):
	$(PYTHON) -m venv $(AIDER_VENV)
	$(AIDER_VENV)/bin/python -m pip install --quiet aider-chat==$(AIDER_VERSION)
	touch $(AIDER_STAMP)

eval: $(STAMP)
	@$(MAKE) --no-print-directory $(AIDER_STAMP) || echo "note: $(AIDER_VENV) could not be built (aider-chat==$(AIDER_VERSION)); the eval omits aider's column"
	$(PY) -m topicforest.eval $(ARGS)

# --- VS Code client (clients/vscode) -------------------------------------------------------
test-client:
	@if [ -f clients/vscode/package.json ]; then $(MAKE) -C clients/vscode test; fi

test-e2e:
	@if [ -f clients/vscode/Makefile ]; then $(MAKE) -C clients/vscode e2e; fi

vsix:
	$(MAKE) -C clients/vscode vsix

clean:
	rm -rf $(VENV) $(AIDER_VENV) .mypy_cache .pytest_cache .ruff_cache
