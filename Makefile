# The course's commands: `make help` lists them (each `##` note); CONTRIBUTING.md explains them.

SHELL := /bin/sh
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Set-up stamps are named by their inputs' content, not times (tools/stamps.py), as ci.yml's caches are.
key = $(shell $(PYTHON) tools/stamps.py $(1))
INSTALL_STAMP := $(VENV)/.chainrule-install-$(call key,requirements.lock pyproject.toml course/pyproject.toml)
# Makes this venv's JupyterLab open the .md chapters as notebooks (jupytext).
LAB_OVERRIDES := $(VENV)/etc/jupyter/labconfig/default_setting_overrides.json
# uv fills every venv from the user's cache; torch's CPU build is in pip's find-links, else on PyTorch's page.
UV := $(VENV)/bin/uv
PIP_LINKS = $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null),https://download.pytorch.org/whl/cpu/torch/)
UV_OPTIONS = --python $(PY) --compile-bytecode $(addprefix --find-links ,$(PIP_LINKS))
# The wheels of the tests' offline venvs (tests/offline.py), downloaded by make test only.
WHEELHOUSE := .cache/wheelhouse
WHEELHOUSE_STAMP := $(WHEELHOUSE)/.complete-$(call key,tests/wheelhouse.lock)
# package-lock.json's packages (Pyodide, Graphviz, CodeMirror) for Live code.
NPM_STAMP := node_modules/.chainrule-npm-$(call key,package.json package-lock.json)
CHROMIUM := /usr/bin/chromium
BOOK_HTML := _build/html
STUDENT_HTML := _build/html-student
# The modules compiled once before each build, not in each kernel (PYTHONDONTWRITEBYTECODE is set).
BUILD := $(PY) -m compileall -q src course tools _ext tests && $(PY) -m tools.book.build_book
JOBS := $(shell nproc 2>/dev/null || echo 2)

# The book build's kernel, jupyter and dot come from the venv first.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

# A process per core: multithreaded BLAS in each would oversubscribe the cores (35 times slower once).
book book-html book-student assignments test-fast test-full test-colab check: export OMP_NUM_THREADS = 1
book book-html book-student assignments test-fast test-full test-colab check: export OPENBLAS_NUM_THREADS = 1

.PHONY: help setup setup-steps lock check system-packages grade-packages notebooks book book-html book-student student-site assignments pdf grade progress test test-steps test-fast test-full test-colab bench differential figures clean distclean

help:  ## list the targets
	@awk '/^[a-z-]+:[^#]*## / { name = $$0; sub(/:.*/, "", name); note = $$0; sub(/^[^#]*## /, "", note); \
	  printf "make %-14s %s\n", name, note }' $(firstword $(MAKEFILE_LIST))

# The set-up's independent parts side by side, each one's output printed whole when it ends.
setup:  ## only the set-up step: .venv (with uv), the Debian and npm packages
	@$(MAKE) --no-print-directory $(if $(findstring jobserver,$(MAKEFLAGS)),,-j4) --output-sync=target setup-steps
setup-steps: system-packages $(INSTALL_STAMP) $(LAB_OVERRIDES) $(NPM_STAMP)

# dot draws figures, chromium runs browser tests, bwrap the grading sandbox, npm Live code's packages, pdftotext reads PDFs.
system-packages: PACKAGES = dot:graphviz $(CHROMIUM):chromium bwrap:bubblewrap node:nodejs npm:npm pdftotext:poppler-utils
grade-packages: PACKAGES = bwrap:bubblewrap
system-packages grade-packages:
	@sh tools/system-packages.sh "$(PYTHON)" $(PACKAGES)

# Exactly the lock's versions, integrity hashes checked, no install scripts run.
$(NPM_STAMP): | system-packages
	npm ci --ignore-scripts --no-audit --no-fund --cache .cache/npm && touch $@

# The venv waits for Debian's packages only where python3 cannot create one without them.
VENV_NEEDS := $(if $(shell $(PYTHON) -c "import ensurepip, venv" 2>/dev/null && echo yes),,system-packages)

$(UV): | $(VENV_NEEDS)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c requirements.txt uv

# Exactly the lock, hashes checked, then the local packages, editable, every module compiled (the grading sandbox cannot write
# into the venv). rfc3987-syntax builds a grammar in every process importing nbformat: it goes (the lock keeps it, for pip).
$(INSTALL_STAMP): | $(UV)
	$(UV) pip sync $(UV_OPTIONS) --require-hashes requirements.lock
	$(UV) pip install $(UV_OPTIONS) --no-deps -e . -e course
	$(UV) pip uninstall --python $(PY) --quiet rfc3987-syntax && $(UV) pip check --python $(PY)
	rm -f $(VENV)/.chainrule-install-* && touch $@

lock: | $(UV)  ## [UPGRADE='name ...'] make the lock files again from requirements.txt and the other lists (tools/lock.py)
	$(PYTHON) tools/lock.py $(UV) "$(PIP_LINKS)" $$UPGRADE

$(LAB_OVERRIDES): $(INSTALL_STAMP)
	$(VENV)/bin/jupytext-config --settings-file $@ set-default-viewer markdown myst && touch $@

# pip downloads (uv has no download command); the handout's set-up cell installs from here too.
$(WHEELHOUSE_STAMP): | setup
	rm -rf $(WHEELHOUSE)
	$(PY) -m pip download --quiet --no-deps --require-hashes $(addprefix --find-links ,$(PIP_LINKS)) --dest $(WHEELHOUSE) -r tests/wheelhouse.lock && touch $@

notebooks: book  ## the same as make book (the editions print the numbers the book build gave)
book: setup  ## build the book into _build/html (any warning fails; changed chapters execute), write the notebooks
	$(BUILD) --editions . -W -n --keep-going
	@printf '\nBook built in %s: serve it with `python3 -m http.server --directory %s`, then open http://127.0.0.1:8000/\n' "$(BOOK_HTML)" "$(BOOK_HTML)"

book-html: setup  ## only the site build, without writing the notebooks
	$(BUILD) . -W -n --keep-going

# The student site, the assignments and the PDF are made again only when the site was (tools/book/after_site.py).
book-student: book-html  ## build the site without solutions into _build/html-student
	@$(PY) -m tools.book.after_site student-site $(STUDENT_HTML)/index.html -- $(MAKE) --no-print-directory student-site
student-site:  # the book build's executed notebooks without solutions; one Sphinx process (15 % less CPU than two)
	rm -rf $(STUDENT_HTML)
	$(PY) -m tools.book.student_book _build/student-book
	$(BUILD) --jobs 1 _build/student-book -W -n --keep-going
	rm -rf $(STUDENT_HTML) && mv _build/student-book/_build/html $(STUDENT_HTML) && $(PY) -m tools.book.pdf --student-site
	@printf '\nStudent book built in %s: serve it with `python3 -m http.server --directory %s`\n' "$(STUDENT_HTML)" "$(STUDENT_HTML)"

assignments: book-html  ## write the otter-grader assignments into _build/assignments/<name>/
	@$(PY) -m tools.book.after_site assignments _build/assignments -- $(PY) -m tools.grader.assignments

pdf: book-html  ## the book as one PDF, and the student's without solutions, in _build/pdf/ and linked from the sites (run it after a site build to publish)
	@$(PY) -m tools.book.after_site pdf _build/pdf/backprop-book.pdf _build/pdf/backprop-book-student.pdf $(BOOK_HTML)/_downloads/backprop-book.pdf -- $(PY) -m tools.book.pdf .

# Values reach the shell as environment variables ("$$ONLY"), never spliced in: an id with `, $(...) or spaces stays text.
GRADE_OPTIONS = $(if $(filter command line environment,$(origin JOBS)),--jobs "$$JOBS") $(if $(TIMEOUT),--timeout "$$TIMEOUT") \
	$(if $(ROSTER),--roster "$$ROSTER") $(if $(ONLY),--only "$$ONLY")
GRADE_VENV := .venv-grade
grade: grade-packages  ## ASSIGNMENT=<name> SUBMISSIONS=<dir>: grade its notebooks, sandboxed, into <dir>/grades.csv
	@if [ -z "$$ASSIGNMENT" ] || [ -z "$$SUBMISSIONS" ]; then \
	  echo "usage: make grade ASSIGNMENT=<name> SUBMISSIONS=<folder> [JOBS=n] [TIMEOUT=s] [ROSTER=csv] [ONLY='id,id ...']" >&2; \
	  echo "assignments: $$(ls _build/assignments 2>/dev/null | tr '\n' ' ')" >&2; exit 2; fi
	@ls -d _build/assignments/*/ >/dev/null 2>&1 || $(MAKE) assignments
	@$(PYTHON) -m tools.grader.grading_env "_build/assignments/$$ASSIGNMENT/autograder/$$ASSIGNMENT-autograder.zip" $(GRADE_VENV) $(if $(wildcard $(UV)),--uv $(UV)) >/dev/null
	$(GRADE_VENV)/bin/python -m chainrule_course.grading.grade "$$ASSIGNMENT" "$$SUBMISSIONS" $(GRADE_OPTIONS)

test:  ## build the book, then run the fast and the full tiers; prints its wall and CPU time, and the tests' own
	@rm -f $(TEST_CPU); sh tools/timed.sh "make test" $(MAKE) --no-print-directory -j$(JOBS) --output-sync=target test-steps; s=$$?; $(PY) -m tools.cpu_time $(TEST_CPU); exit $$s
# The fast tier runs beside the full tier's builds, not the site build (it slowed it); each logs its CPU (tools/cpu_time.py).
TEST_CPU := _build/test-cpu.log
# A test that passed is not run again while nothing it reads changed (tests/results_cache.py): FRESH=1 runs them all.
CACHED = $(if $(FRESH),,--results-cache)
test-steps: test-fast test-full
test-fast: book-html
	+$(PY) -m tools.cpu_time $(TEST_CPU) fast -- $(PY) -m pytest -p no:cacheprovider $(CACHED) -q tests/engine tests/course tests/repo
test-full: pdf book-student assignments $(WHEELHOUSE_STAMP)
	+$(PY) -m tools.cpu_time $(TEST_CPU) full -- $(PY) -m pytest -p no:cacheprovider $(CACHED) -n $(JOBS) --dist loadfile --no-loadscope-reorder --durations=20 tests/built tests/browser
test-colab: $(WHEELHOUSE_STAMP) assignments  ## the notebooks run as students run them, in a simulated Colab: every chapter again, so outside make test's CPU budget (CI runs it after make test)
	@sh tools/timed.sh "make test-colab" $(PY) -m pytest -p no:cacheprovider $(CACHED) -n $(JOBS) --dist loadfile tests/colab
check: setup  ## the fast tier, tests/{engine,course,repo} (no build, no browser): the loop for code changes
	@sh tools/timed.sh "make check" $(PY) -m pytest -p no:cacheprovider $(CACHED) -n $(JOBS) -q tests/engine tests/course tests/repo

bench: setup  ## run the benchmarks (benchmarks/run.py)
	$(PY) benchmarks/run.py
differential: $(INSTALL_STAMP)  ## compare chainrule with PyTorch: its OpInfo samples, random programs, probes
	$(PY) -m tools.differential
figures: setup  ## regenerate the committed figures in img/
	$(PY) -m tools.book.make_figures
progress: $(INSTALL_STAMP)  ## RECORDS=<folder>: the class's practice records (exported from the book's pages) in one page, <folder>/progress.html
	@$(PY) -m tools.progress "$$RECORDS" $(if $(OUT),--out "$$OUT")

clean:  ## remove build output and caches (keeps .venv)
	rm -rf _build .jupyter_cache .pytest_cache .hypothesis
	find src course tools _ext tests benchmarks chapters -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true

distclean: clean  ## also remove .venv, the wheelhouse and npm's packages
	rm -rf $(VENV) $(WHEELHOUSE) $(GRADE_VENV) node_modules .cache/npm
