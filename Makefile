# The course's entry points. Every target bootstraps .venv from python3 alone.
#   make course   the main job (see README)
#   make test     the whole test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: course test lint bench tour clean-venv

# (Re)build the virtual environment when it is missing or older than the package metadata.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

course: $(STAMP)
	$(PY) -m dplib

tour: $(STAMP)
	$(PY) -m dplib

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check dplib tests bench

bench: $(STAMP)
	$(PY) bench/bench_mechanisms.py

clean-venv:
	rm -rf $(VENV)
