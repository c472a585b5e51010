# The course's entry points. Every target bootstraps .venv from python3 alone.
#   make course   the main job (see README)
#   make test     the whole test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: course test lint bench tour clean-venv release grade lab

# (Re)build the virtual environment when it is missing or older than the package metadata.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

course: $(STAMP)
	$(PY) -m coursetools course

# Grading pipeline (docs/grading.md): solutions/ -> notebooks/, batch grading, JupyterLab.
SUBMISSIONS ?= submissions
GRADES ?= build/grades.csv
GRADE_ARGS ?=
LAB_ARGS ?=

release: $(STAMP)
	$(PY) -m coursetools release

grade: $(STAMP)
	$(PY) -m coursetools grade $(SUBMISSIONS) --grades $(GRADES) $(GRADE_ARGS)

lab: $(STAMP)
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks $(LAB_ARGS)

tour: $(STAMP)
	$(PY) -m dplib

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check dplib tests bench coursetools examples

# Benchmarks run beside the peers (OpenDP, diffprivlib, dp-accounting) in their own environment.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	@test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e '.[bench]'
	@touch $@

bench: $(BENCH_VENV)/.installed
	@for script in bench/bench_*.py; do echo "== $$script"; $(BENCH_VENV)/bin/python $$script || exit 1; done

clean-venv:
	rm -rf $(VENV)
