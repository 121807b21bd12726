# Agent-RL 代码填空. The first two targets do all the set-up on a fresh machine:
#   make book   create .venv, install, build the site into _build/html
#   make test   create/refresh .venv and run every test
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8000
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
AS_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)  # Jupyter refuses root without it (containers, CI)

.PHONY: venv vendor book linkcheck test serve lab lab-instructor release bench bench-grading grade clean

venv: $(STAMP)

# The venv is rebuilt when requirements.txt or pyproject.toml changes. The course package is
# installed from this checkout in editable mode (pyproject.toml), so `import agentrl_ref` works in
# the book, JupyterLab and nbgrader, and edits to agentrl_ref/ take effect at once.
$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	rm -f "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/agentrl_course.pth"
	$(PY) -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e .
	touch $@

# MathJax, require.js and the ipywidgets embed manager, pinned, fetched once with npm into _vendor/
# (git-ignored) and served by the site itself. The book build also runs this (book/_ext).
vendor: venv
	$(PY) book/_ext/offline_assets.py

book: vendor
	$(VENV)/bin/jupyter-book build --all -W -n --keep-going .
	@echo
	@echo "网站已生成 / site built: file://$(CURDIR)/_build/html/index.html  (或 make serve)"

# Check every external link of the book (needs the network, so not part of `make test`).
linkcheck: vendor
	$(VENV)/bin/jupyter-book build --builder linkcheck .

# pytest exits 5 when it collected no tests: that is a failure here, never a pass.
test: venv
	@$(PY) -m pytest tests -ra; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; \
	exit $$rc

serve:
	@test -f _build/html/index.html || $(MAKE) book
	@echo "http://127.0.0.1:$(PORT)/"
	$(PY) -m http.server --bind 127.0.0.1 --directory _build/html $(PORT)

# Students: JupyterLab on notebooks/ with nbgrader's Validate button and nothing of its instructor or
# exchange tools (grader/student-lab: the formgrader, assignment and course lists are switched off).
lab: venv
	JUPYTER_CONFIG_PATH=$(CURDIR)/grader/student-lab $(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 $(AS_ROOT) --notebook-dir=notebooks

# Instructors: JupyterLab on the course folder (grader/) with nbgrader's formgrader and assignment tools.
lab-instructor: venv
	$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 $(AS_ROOT) --notebook-dir=grader

# Instructor notebooks (grader/source) -> student notebooks (notebooks/) and book pages (book/).
release: venv
	$(PY) grader/release.py

bench: venv
	$(PY) bench/run.py
	$(PY) bench/capstone.py

# A simulated class of 30 students x every assignment, graded serially (SQLite) and in parallel (PostgreSQL).
bench-grading: venv
	$(PY) bench/grading.py

# Instructors: autograde a folder of returned notebooks (see README). OUT, DB_URL, JOBS optional.
OUT ?= grading-output
grade: venv
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=<folder> [OUT=grading-output] [DB_URL=postgresql://…] [JOBS=2]" >&2; exit 2; }
	$(PY) grader/grade.py "$(SUBMISSIONS)" --out "$(OUT)" $(if $(DB_URL),--db-url "$(DB_URL)") $(if $(JOBS),--jobs $(JOBS))

clean:
	rm -rf _build .pytest_cache .hypothesis
