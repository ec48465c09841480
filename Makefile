# Backpropagation course: build the book and run the tests.
#
# `make help` lists the targets, each with the note after `##` on its own line below: that
# note is the one description of a target.
#
# The set-up step is shared by every target. Its independent parts run side by side (make -j):
# Debian's packages (then npm ci, which needs node), and uv, which creates .venv with python3 and
# installs requirements.txt and this package (editable) into it, again only when requirements.txt
# or pyproject.toml changed. The tests' wheelhouse (.cache/wheelhouse) is downloaded by make test
# only: make book does not need it.

SHELL := /bin/sh
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Written after a successful install; newer than requirements.txt and pyproject.toml
# means the installed packages are current.
INSTALL_STAMP := $(VENV)/.chainrule-install-stamp
# Makes JupyterLab (from this venv) open the .md chapters as notebooks, via jupytext.
LAB_OVERRIDES := $(VENV)/etc/jupyter/labconfig/default_setting_overrides.json
# uv (pinned in requirements.txt, installed from PyPI into .venv by the venv's own pip) creates and
# fills every venv: this one, and the tests' offline venvs (tests/offline.py). Its cache is the
# user's (~/.cache/uv), shared by every checkout on the machine; a venv's files are links into it.
UV := $(VENV)/bin/uv
# uv does not read pip's configuration. pip's find-links (where this machine's disk holds the CPU
# build of torch) are given to uv too: torch==2.13.0 from PyPI alone would be a CUDA build of
# several GB.
PIP_LINKS = $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
UV_INSTALL = $(UV) pip install --python $(PY) --compile-bytecode $(addprefix --find-links ,$(PIP_LINKS))
# Wheels for the tests that build venvs offline (tests/offline.py), written by make test.
WHEELHOUSE := .cache/wheelhouse
WHEELHOUSE_STAMP := $(WHEELHOUSE)/.complete
# npm's packages of package-lock.json (Pyodide, Graphviz in WebAssembly), for the live-code
# mode of the scalar chapters (_ext/live_code.py); installed again when the lock changes.
NPM_STAMP := node_modules/.chainrule-npm-stamp
CHROMIUM := /usr/bin/chromium
BOOK_HTML := _build/html
STUDENT_HTML := _build/html-student
# jupyter-book build, with Sphinx's parallel reading: chapters execute side by side.
BUILD := $(PY) tools/build_book.py
JOBS := $(shell nproc 2>/dev/null || echo 2)

# Tools started by the book build (the notebook kernel, jupyter, dot) come from the venv first.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

# The book build and the tests run a process per core at once; multithreaded BLAS in each
# oversubscribes the cores (in one CI run a (8, 512) matrix product took 35 times as long
# as alone, and the tensors chapter's timing check failed). One thread per process there;
# make bench keeps the default.
book book-html book-student assignments test-steps check: export OMP_NUM_THREADS = 1
book book-html book-student assignments test-steps check: export OPENBLAS_NUM_THREADS = 1

.PHONY: help setup setup-steps check system-packages grade-packages notebooks notebooks-check book book-html book-student assignments pdf grade test test-steps bench figures clean distclean

help:  ## list the targets
	@awk '/^[a-z-]+:[^#]*## / { name = $$0; sub(/:.*/, "", name); note = $$0; sub(/^[^#]*## /, "", note); \
	  printf "make %-14s %s\n", name, note }' $(firstword $(MAKEFILE_LIST))

# The set-up's independent parts side by side, each one's output printed whole when it ends
# (in the jobs of a parallel make that asks for it, such as make test's; -j4 otherwise).
setup:  ## only the set-up step: .venv (with uv), the Debian and npm packages
	@$(MAKE) --no-print-directory $(if $(findstring jobserver,$(MAKEFLAGS)),,-j4) --output-sync=target setup-steps

setup-steps: system-packages $(INSTALL_STAMP) $(LAB_OVERRIDES) $(NPM_STAMP)

# Debian packages: graphviz for `dot` (chainrule.figures.dot runs it to draw figures), chromium for
# the browser tests, bubblewrap for the grading sandbox (chainrule.grading.grade), nodejs and npm for
# the live-code mode's npm packages, poppler-utils for `pdftotext` (tests/test_pdf.py reads the
# book's PDF with it), python3-venv when python3 cannot create a venv.
# Installed only when missing: as root, or with sudo where sudo needs no password (a CI
# runner, such as GitHub's ubuntu-latest); otherwise print the command to run and stop.
# `make grade` needs only bubblewrap and python3-venv.
system-packages: PACKAGES = dot:graphviz $(CHROMIUM):chromium bwrap:bubblewrap node:nodejs npm:npm pdftotext:poppler-utils
grade-packages: PACKAGES = bwrap:bubblewrap
system-packages grade-packages:
	@missing=""; \
	for pair in $(PACKAGES); do \
	  found=$${pair%%:*}; [ -x "$$found" ] || command -v "$$found" >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; \
	done; \
	$(PYTHON) -c "import ensurepip, venv" >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" -eq 0 ]; then \
	    sudo=""; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	    sudo="sudo"; \
	  else \
	    echo "Missing Debian packages:$$missing. Install them with:" >&2; \
	    echo "" >&2; \
	    echo "    sudo apt-get update && sudo apt-get install -y$$missing" >&2; \
	    echo "" >&2; \
	    echo "then run make again." >&2; \
	    exit 1; \
	  fi; \
	  echo "Installing Debian packages:$$missing$${sudo:+ (with sudo)}"; \
	  $$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	fi

# npm ci installs exactly the lock file's versions and checks their integrity hashes;
# --ignore-scripts runs no package's install script. npm's cache lives in .cache/npm.
$(NPM_STAMP): package.json package-lock.json | system-packages
	npm ci --ignore-scripts --no-audit --no-fund --cache .cache/npm
	touch $@

# The venv needs Debian's python3-venv only where python3 cannot create one without it; then it
# waits for the Debian packages, and otherwise is made while they install.
VENV_NEEDS := $(if $(shell $(PYTHON) -c "import ensurepip, venv" 2>/dev/null && echo yes),,system-packages)

# The venv, with pip (the wheelhouse below, and what students run: the notebooks' %pip) and uv.
$(UV): | $(VENV_NEEDS)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c requirements.txt uv

# uv installs requirements.txt and chainrule (editable) in parallel from its cache, and
# compiles every module on every core (--compile-bytecode). Every module is compiled here, not
# when first imported: the grading sandbox cannot write into the venv, so there an uncompiled
# module is compiled again by every run (the tests' grading of 45 notebooks took 468 s instead of
# 197 s when pip installed without compiling).
# rfc3987-syntax comes with jsonschema[format-nongpl] (through jupyter-events). jsonschema
# imports it, when present, to check the "iri" string format, which nothing here uses, and
# it builds a Lark grammar when imported: 0.5-3 s in every process that imports nbformat
# (each build, each graded submission, each test worker). Without it, `uv pip check` is clean.
$(INSTALL_STAMP): requirements.txt pyproject.toml | $(UV)
	$(UV_INSTALL) -r requirements.txt -e .
	$(UV) pip uninstall --python $(PY) --quiet rfc3987-syntax
	$(UV) pip check --python $(PY)
	touch $@

$(LAB_OVERRIDES): $(INSTALL_STAMP)
	$(VENV)/bin/jupytext-config --settings-file $@ set-default-viewer markdown myst
	touch $@

# The wheels the tests' offline venvs install (tests/offline_requirements.txt and
# tests/colab_requirements.txt, at the versions of requirements.txt, with every dependency).
# uv builds those venvs from this folder alone (--offline --no-index). pip downloads it: uv has
# no download command, and the handout's set-up cell, which the tests run in a bare venv, installs
# with pip from this folder, as a student's %pip would. Downloaded again only when one of the
# files changes; make test downloads it while it builds the student site and the rest.
$(WHEELHOUSE_STAMP): tests/offline_requirements.txt tests/colab_requirements.txt requirements.txt | setup
	rm -rf $(WHEELHOUSE)
	$(PY) -m pip download --quiet --dest $(WHEELHOUSE) -r tests/offline_requirements.txt -r tests/colab_requirements.txt
	touch $@

# The notebook editions are generated from chapters/*.md (see tools/notebooks.py) and
# committed, so that GitHub serves them to Colab. They print the numbers the book build
# gave (_build/numbers.json), so they are written after it. notebooks-check fails when the
# committed files are stale: make test runs it right after the build, so a commit that
# forgot `make notebooks` fails.
notebooks: book  ## the same as make book (the editions print the numbers the book build gave)

notebooks-check: book-html
	$(PY) tools/notebooks.py --check

# Incremental: Sphinx reads again only the pages that changed, and a chapter executes only
# when its code cells changed, or when src/chainrule or the requirements changed (the
# execution cache, _config.yml and _ext/incremental.py). Chapters execute in
# parallel (tools/build_book.py), and a failed build forgets what Sphinx read, so that the
# next build reads every page again and reports every warning again. --editions then
# writes the notebooks (building again when one was new, for its page's Colab button).
book: setup  ## build the book into _build/html (any warning fails; changed chapters execute), write the notebooks
	$(BUILD) --editions . -W -n --keep-going
	@echo ""
	@echo "Book built: file://$(CURDIR)/$(BOOK_HTML)/index.html"

# The site without solutions: tools/student_book.py writes a copy of the book whose
# chapters are the book build's executed notebooks without solution cells (nothing is
# executed again) into _build/student-book, then builds it.
# The build alone, which leaves the numbers the editions print in _build/numbers.json.
book-html: setup  ## only the site build, without writing the notebooks
	$(BUILD) . -W -n --keep-going

book-student: book-html  ## build the site without solutions into _build/html-student
	rm -rf $(STUDENT_HTML)
	$(PY) tools/student_book.py _build/student-book
	$(BUILD) _build/student-book -W -n --keep-going
	rm -rf $(STUDENT_HTML) && mv _build/student-book/_build/html $(STUDENT_HTML)
	@echo ""
	@echo "Student book built: file://$(CURDIR)/$(STUDENT_HTML)/index.html"

# One otter-grader assignment per chapter with checked exercises (tools/assignments.py);
# otter assign runs every test against the solution, so a broken check fails here. The
# exercise numbers come from the book build.
assignments: book-html  ## write the otter-grader assignments into _build/assignments/<name>/
	$(PY) tools/assignments.py

# The whole book as one PDF (tools/pdf.py): Sphinx's singlehtml build of the site's pages
# (nothing executes or is read again after book-html), printed by headless Chromium with
# MathJax typeset, solutions open, code wrapped. A copy goes to $(BOOK_HTML)/_downloads/,
# and the first page's Download PDF link, which the site build writes hidden, is shown:
# run it after any site build that is to be published. About 40 s on 2 cores; 3 MB.
pdf: book-html  ## the whole book as one PDF, _build/pdf/backprop-book.pdf (linked from the site's first page), and the student's without solutions
	$(PY) tools/pdf.py .

# Grades with the autograder zip that `make assignments` wrote, each notebook in a bubblewrap
# sandbox (chainrule.grading.grade); no Docker needed. The assignments are built only when there are
# none yet, so that a misspelt name fails at once, naming the ones there are. Grading runs
# in its own venv, built from the zip's requirements.txt as Gradescope builds it
# (tools/grading_env.py): it needs no book toolchain. uv builds it where the book's venv has uv,
# pip otherwise.
# The values reach the shell as environment variables ("$$ONLY"), never spliced into the command:
# a student id with backticks, $(...) or spaces stays text (make exports command-line variables).
GRADE_OPTIONS = $(if $(filter command line environment,$(origin JOBS)),--jobs "$$JOBS") $(if $(TIMEOUT),--timeout "$$TIMEOUT") \
	$(if $(ROSTER),--roster "$$ROSTER") $(if $(ONLY),--only "$$ONLY")
GRADE_VENV := .venv-grade
grade: grade-packages  ## ASSIGNMENT=<name> SUBMISSIONS=<dir>: grade its notebooks, sandboxed, into <dir>/grades.csv
	@if [ -z "$$ASSIGNMENT" ] || [ -z "$$SUBMISSIONS" ]; then \
	  echo "usage: make grade ASSIGNMENT=<name> SUBMISSIONS=<folder> [JOBS=n] [TIMEOUT=s] [ROSTER=csv] [ONLY='id,id ...']" >&2; \
	  echo "assignments: $$(ls _build/assignments 2>/dev/null | tr '\n' ' ')" >&2; exit 2; fi
	@ls -d _build/assignments/*/ >/dev/null 2>&1 || $(MAKE) assignments
	@$(PYTHON) tools/grading_env.py "_build/assignments/$$ASSIGNMENT/autograder/$$ASSIGNMENT-autograder.zip" $(GRADE_VENV) $(if $(wildcard $(UV)),--uv $(UV)) >/dev/null
	$(GRADE_VENV)/bin/python -m chainrule.grading.grade "$$ASSIGNMENT" "$$SUBMISSIONS" $(GRADE_OPTIONS)

# Prints its total time. The steps before the tests run two at a time (-j), each one's
# output printed whole when it ends: the tests' wheelhouse beside notebooks-check, book-student,
# assignments and pdf, which only read the site build. The tests run on every core
# (pytest-xdist), a test file per worker at a time (--dist loadfile), so that each module-scoped
# fixture is set up once.
test:  ## build the book, then run the whole test suite, both tiers; prints its time
	@start=$$(date +%s); status=0; \
	$(MAKE) --no-print-directory -j$(JOBS) --output-sync=target test-steps || status=$$?; \
	seconds=$$(( $$(date +%s) - start )); \
	echo "make test: $$((seconds / 60)) min $$((seconds % 60)) s (exit $$status)"; \
	exit $$status

# The + lets pytest print as it goes: make does not hold back a line marked like a sub-make.
test-steps: notebooks-check book-student assignments pdf $(WHEELHOUSE_STAMP)
	+$(PY) -m pytest -p no:cacheprovider -n $(JOBS) --dist loadfile --no-loadscope-reorder --durations=20 tests

# The fast tier: every test not marked `full` (tests/conftest.py says which are), on every core,
# without building anything. A test that needs the book, a browser or an offline venv is marked
# `full`; conftest refuses an unmarked test that asks for the built book or the simulated Colab.
check: setup  ## the fast tier (no build, no browser): the loop for code changes
	@start=$$(date +%s); status=0; \
	$(PY) -m pytest -p no:cacheprovider -n $(JOBS) -m "not full" -q tests || status=$$?; \
	seconds=$$(( $$(date +%s) - start )); \
	echo "make check: $$((seconds / 60)) min $$((seconds % 60)) s (exit $$status)"; \
	exit $$status

bench: setup  ## run the benchmarks (benchmarks/run.py)
	$(PY) benchmarks/run.py

figures: setup  ## regenerate the committed figures in img/
	$(PY) tools/make_figures.py

clean:  ## remove build output and caches (keeps .venv)
	rm -rf _build .jupyter_cache .pytest_cache .hypothesis
	find src tests tools _ext benchmarks chapters -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true

distclean: clean  ## also remove .venv, the wheelhouse and npm's packages
	rm -rf $(VENV) $(WHEELHOUSE) $(GRADE_VENV) node_modules .cache/npm
