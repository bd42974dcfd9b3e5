# One-command set-up: every target creates .venv and installs what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
SHELL  := /bin/bash
.SHELLFLAGS := -o pipefail -c  # a failing pip fails the target even through its filter

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	@echo "==> [1/3] creating $(VENV) with $$($(PYTHON) --version)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> [2/3] upgrading pip"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "==> [3/3] installing accelfleet with its dev, torch (CPU 2.13.0) and jax extras:"
	@echo "    about 2 minutes on a fresh machine; pip names each package as it goes"
	$(PY) -m pip install --progress-bar off -e '.[dev,torch,jax]' \
		| { grep --line-buffered -E '^(Collecting|Installing|Successfully)' || true; }
	touch $(STAMP)
	@echo "==> ready: $(VENV)"

demo: $(STAMP)
	$(VENV)/bin/accelfleet fleet validate stacks/Pulumi.example.yaml
	$(VENV)/bin/accelfleet plan stacks/Pulumi.example.yaml
	$(VENV)/bin/accelfleet smoke local

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

test: lint
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
