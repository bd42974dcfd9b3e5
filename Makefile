# One-command set-up: every target creates .venv and installs what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
SHELL  := /bin/bash
.SHELLFLAGS := -o pipefail -c  # a failing pip fails the target even through its filter

.PHONY: demo test lint bench browser-test clean ci-install

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

# CI's install (.github/workflows): accelfleet and its policy pack's extra, with no torch or
# jax (no CUDA wheel, no NVIDIA packages): `fleet validate`, `plan`, `pulumi up`/`preview`,
# `smoke run`/`render`/`report` import neither (the probes run in the cluster's image;
# tests/ci/test_ci_install.py holds it). `smoke local` needs `make` (the torch/jax extras).
CI_STAMP := $(VENV)/.installed-ci-stamp
$(CI_STAMP): pyproject.toml
	@echo "==> creating $(VENV) for CI with $$($(PYTHON) --version): accelfleet[policy], no torch, no jax"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar off -e '.[policy]' \
		| { grep --line-buffered -E '^(Collecting|Installing|Successfully)' || true; }
	touch $(CI_STAMP)

ci-install: $(CI_STAMP)

demo: $(STAMP)
	$(VENV)/bin/accelfleet fleet validate stacks/Pulumi.example.yaml
	$(VENV)/bin/accelfleet plan stacks/Pulumi.example.yaml
	$(VENV)/bin/accelfleet smoke local

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache

test: lint
	$(PY) -m pytest -q

# The HTML report opened in headless Chromium (Debian's chromium package, installed here if
# missing); the default test run skips that test where no Chromium is installed.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser-test: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
		echo "==> installing chromium (apt-get)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium; }
	$(PY) -m pytest -q -rs tests/smoke/test_html_browser.py

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
