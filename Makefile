# Agent-RL 代码填空. The first two targets do all the set-up on a fresh machine:
#   make book   create .venv, install, build the site into _build/html
#   make test   create/refresh .venv and run every test (make test-quick: the quick lane, for the edit-run loop)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8000
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
AS_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)  # Jupyter refuses root without it (containers, CI)

.PHONY: venv deps fonts vendor book linkcheck test test-quick serve lab lab-instructor release bench bench-grading bench-serve bench-site grade grade-report grade-service doctor clean

venv: $(STAMP)

# The venv is rebuilt when requirements.txt or a pyproject.toml changes. The course package
# (pyproject.toml) and the grading tools (grader/pyproject.toml, import name `grader`) are installed from
# this checkout in editable mode, so `import agentrl_ref` works in the book, JupyterLab and nbgrader,
# `python -m grader` and the course's nbgrader_config.py work from any folder, and edits take effect at once.
# JupyterLab in Chinese (make lab, make lab-instructor, the lab tests): requirements.txt installs the Simplified-
# Chinese language pack; grader/lab-settings/agentrl-course.json (locale zh_CN, no news feed, no update check) goes
# where JupyterLab reads an administrator's default settings, <venv>/share/jupyter/lab/settings/overrides.d/.
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.d/agentrl-course.json
# Bytecode: pip compiles what it installs one file after the other (most of the files are torch's); the venv rule
# installs without that and compiles afterwards on every core, the same files (a file that does not compile, such as
# torch's Python 3.12 test helper, is skipped as pip skips it; tests/test_package.py checks nothing else is missing).
# Done before the stamp: the grading sandbox mounts the venv read-only, where a kernel cannot write a missing .pyc.

$(STAMP): requirements.txt pyproject.toml grader/pyproject.toml grader/lab-settings/agentrl-course.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt
	site="$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" && \
	  { $(PY) -m compileall -qq -j 0 "$$site" || true; } && rm -f "$$site/agentrl_course.pth"
	$(PY) -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e . -e grader
	mkdir -p $(dir $(LAB_OVERRIDES)) && cp grader/lab-settings/agentrl-course.json $(LAB_OVERRIDES)
	touch $@

# What `make test` needs from the system, besides Python: Debian packages (Chromium and its driver for the
# browser tests, CJK fonts for screenshots, PostgreSQL for the gradebook tests, bubblewrap for the grading
# sandbox, Slurm and munge for the cluster test, qemu, a Debian kernel and busybox to boot a real cgroup v2
# guest for the sandbox's v2 test) and npm (the site's offline assets). Installed with apt-get as root or
# through sudo when missing; otherwise the exact command to run is printed.
DEBIAN_PACKAGES := chromium chromium-driver fonts-noto-cjk postgresql bubblewrap slurmctld slurmd slurm-client munge \
                   qemu-system-x86 linux-image-amd64 busybox-static
deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done; \
	           command -v npm >/dev/null || echo npm); missing=$$(echo $$missing); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if ! command -v apt-get >/dev/null; then \
	  echo "make test needs these Debian packages (or their equivalents): $$missing" >&2; exit 1; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=; elif sudo -n true 2>/dev/null; then sudo=sudo; else \
	  echo "make test needs: sudo apt-get update && sudo apt-get install -y --no-install-recommends $$missing" >&2; \
	  exit 1; fi; \
	echo "installing what the tests need: $$missing"; \
	$$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing

# Chinese text in the figures needs a CJK font: Debian's fonts-noto-cjk, installed for `make book`, `make lab` and
# `make lab-instructor` (and by `make deps` for the tests) where apt-get can. Without one the figures fall back to
# English text (agentrl_ref/teaching/shared/cjk.py), never to empty boxes, and this says how to get Chinese ones.
CJK_FONT_PACKAGE := fonts-noto-cjk
fonts:
	@dpkg -s $(CJK_FONT_PACKAGE) >/dev/null 2>&1 && exit 0; \
	if ! command -v apt-get >/dev/null; then \
	  echo "图里的中文要一个 CJK 字体（Debian 的 $(CJK_FONT_PACKAGE)）；没有它，图上的文字用英文" >&2; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=; elif sudo -n true 2>/dev/null; then sudo=sudo; else \
	  echo "图里的中文要：sudo apt-get install -y --no-install-recommends $(CJK_FONT_PACKAGE)（没有它，图上的文字用英文）" >&2; \
	  exit 0; fi; \
	echo "installing the figures' CJK font: $(CJK_FONT_PACKAGE)"; \
	$$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends \
	  $(CJK_FONT_PACKAGE) || echo "没装上 $(CJK_FONT_PACKAGE)：图上的文字用英文" >&2

# MathJax, require.js and the ipywidgets embed manager, pinned, fetched once with npm into _vendor/
# (git-ignored) and served by the site itself. The book build also runs this (book/_ext).
vendor: venv
	$(PY) book/_ext/offline_assets.py

# jupyter-book build --all -W -n --keep-going . through book/_ext/site_build.py, which stamps a successful build
# with a hash of what it read: `make test` reuses that build when nothing it depends on changed.
book: vendor fonts
	$(PY) book/_ext/site_build.py
	@echo
	@echo "网站已生成 / site built: file://$(CURDIR)/_build/html/index.html  (或 make serve)"

# Check every external link of the book (needs the network, so not part of `make test`).
linkcheck: vendor
	$(VENV)/bin/jupyter-book build --builder linkcheck .

# pytest exits 5 when it collected no tests: that is a failure here, never a pass. `make test` runs every test and
# ends with the slowest ones and the time of each lane (tests/conftest.py); after `make book` it reuses the site.
# `make test-quick`: the quick lane only (unit and property tests, the reference package, its checks, the grader's
# pure parts; no kernel, browser or server), for the edit-run loop. Never instead of `make test`: CI runs that.
# TEST_WORKERS: pytest-xdist workers side by side, each test module whole in one of them (tests/conftest.py, FIRST).
# Three keep 2 cores busy from start to end (a worker waits on a guest, a server or a browser while the others
# compute); TEST_WORKERS=0 runs everything in one process (slower: a core idles whenever that process waits).
# The quick lane only computes, so two workers (one per core) are enough there: it takes about half the wall time of
# one process.
PYTEST_EXIT = rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc
TEST_WORKERS ?= 3
test: deps venv
	@$(PY) -m pytest tests -ra --durations=25 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder; $(PYTEST_EXIT)

test-quick: venv
	@$(PY) -m pytest tests -ra --durations=10 --lane quick -n 2 --dist loadfile; $(PYTEST_EXIT)

serve:
	@test -f _build/html/index.html || $(MAKE) book
	@echo "http://127.0.0.1:$(PORT)/"
	$(PY) -m http.server --bind 127.0.0.1 --directory _build/html $(PORT)

# Students: JupyterLab with nbgrader's Validate button and nothing of its instructor or exchange tools
# (grader/student-lab: the formgrader, assignment and course lists are switched off), on a working copy of
# notebooks/ in LAB_DIR (git-ignored): the first launch copies every notebook, later ones only newly released
# ones, and no file already there is ever overwritten (grader/publish/lab_copy.py). notebooks/ itself is what
# `make release` and `git pull` rewrite: answers saved there would be lost.
LAB_DIR ?= my-notebooks
lab: venv fonts
	$(PY) -m grader.publish.lab_copy "$(LAB_DIR)"
	JUPYTER_CONFIG_PATH=$(CURDIR)/grader/student-lab $(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 $(AS_ROOT) --notebook-dir="$(LAB_DIR)"

# Instructors: JupyterLab on the course folder (grader/) with nbgrader's formgrader and assignment tools.
lab-instructor: venv fonts
	$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 $(AS_ROOT) --notebook-dir=grader

# Instructor notebooks (grader/source) -> student notebooks (notebooks/) and book pages (book/); with
# EXCHANGE=<nbgrader Exchange.root> also released there for course agentrl-cloze (nbgrader release_assignment),
# from the instructor's course folder COURSE (default hub-course; its gradebook: DB_URL, else SQLite in it).
COURSE ?= hub-course
release: venv
	$(PY) -m grader release $(if $(EXCHANGE),--exchange "$(EXCHANGE)" --course "$(COURSE)")

# Every bench script prints its tables and writes them as records, bench/results/<name>.json (bench/record.py: the
# numbers plus command, commit, machine and load); book/benchmarks.md draws its tables and figures from them at every
# build. Commit the records a run changed to update that page.
# With BASE=<commit>, also the capstone engine of this commit against BASE's, side by side (bench/versus.py).
bench: venv
	$(PY) bench/run.py
	$(PY) bench/capstone.py
	$(if $(BASE),$(PY) bench/versus.py --base $(BASE))

# A simulated class of 30 students x every assignment graded side by side: this commit and BASE (a git
# worktree), sandboxed and not, on one machine and as Slurm shards (bench/grading.py); then the sandbox's own
# cost at each isolation level, here and on a real cgroup v2 kernel in a guest (bench/levels.py).
BASE ?=
bench-grading: deps venv
	PYTHONPATH=tests $(PY) bench/grading.py $(if $(BASE),--base $(BASE)) $(if $(REPEAT),--repeat $(REPEAT))
	PYTHONPATH=tests $(PY) bench/levels.py $(if $(REPEAT),--repeat $(REPEAT))

# Graded on arrival (grader/serve/): submit -> feedback on this machine, one submission at a time and a burst of
# 60 in a minute, with --jobs 1 and 2 side by side; then quiet against 100,000 junk folders + 20,000 pending rows
# (bench/serve_latency.py; exercise 1).
bench-serve: deps venv
	PYTHONPATH=tests $(PY) bench/serve_latency.py

# What a reader downloads: every page of the built site opened cold in Chromium, bytes by kind (bench/page_weight.py).
bench-site: deps venv
	$(PY) bench/page_weight.py

# Instructors: autograde a folder of returned notebooks (see book/guide_instructors.md). OUT, DB_URL, JOBS, SHARD, ISOLATION, FEEDBACK, NEW,
# CELL_TIMEOUT, NOTEBOOK_TIMEOUT (seconds), MEMORY_MB optional (every limit: the guide's "评分的限额"). OUT is never wiped: graded again into it, only new or changed hand-ins are graded (NEW=yes: a new dated folder).
# DB_URL reaches the grader in the environment (AGENTRL_DB_URL), never on a command line: it holds a password.
OUT ?= grading-output
ifneq ($(DB_URL),)
grade grade-report release grade-service doctor: export AGENTRL_DB_URL := $(DB_URL)
endif
grade: venv
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=<folder> [OUT=grading-output] [DB_URL=postgresql://…] [JOBS=2] [SHARD=K/N] [ISOLATION=auto|cgroup|job|none] [FEEDBACK=no] [NEW=yes] [CELL_TIMEOUT=60] [NOTEBOOK_TIMEOUT=600] [MEMORY_MB=2048]" >&2; exit 2; }
	$(PY) -m grader grade "$(SUBMISSIONS)" --out "$(OUT)" $(if $(JOBS),--jobs $(JOBS)) $(if $(SHARD),--shard $(SHARD)) $(if $(ISOLATION),--isolation $(ISOLATION)) $(if $(filter no,$(FEEDBACK)),--no-feedback) $(if $(filter yes,$(NEW)),--new) \
	  $(if $(CELL_TIMEOUT),--cell-timeout $(CELL_TIMEOUT)) $(if $(NOTEBOOK_TIMEOUT),--notebook-timeout $(NOTEBOOK_TIMEOUT)) $(if $(MEMORY_MB),--memory-mb $(MEMORY_MB))

# Instructors: grade each submission as it arrives in nbgrader's exchange (grader/serve/, book/guide_hub.md). The queue is in
# the gradebook: DB_URL=postgresql://… (several workers, several machines). JOBS, SHOW, DEADLINE, MIN_INTERVAL optional;
# IDENTITY (default accounts: one OS account per student), INBOUND_PER_USER, INSTRUCTOR: see book/guide_hub.md.
grade-service: venv
	@test -n "$(EXCHANGE)" || { echo "usage: make grade-service EXCHANGE=<nbgrader Exchange.root> [COURSE=hub-course] [DB_URL=postgresql://…] [JOBS=1] [SHOW=all|total|visible] [DEADLINE='2027-01-15 23:59:00 UTC'] [MIN_INTERVAL=seconds] [IDENTITY=accounts|per-user|names] [INBOUND_PER_USER=DIR] [INSTRUCTOR=account]" >&2; exit 2; }
	$(PY) -m grader serve --exchange "$(EXCHANGE)" --course "$(COURSE)" $(if $(JOBS),--jobs $(JOBS)) $(if $(SHOW),--show $(SHOW)) $(if $(DEADLINE),--deadline "$(DEADLINE)") $(if $(MIN_INTERVAL),--min-interval $(MIN_INTERVAL)) $(if $(IDENTITY),--identity $(IDENTITY)) $(if $(INBOUND_PER_USER),--inbound-per-user "$(INBOUND_PER_USER)") $(if $(INSTRUCTOR),--instructor $(INSTRUCTOR))

# Instructors: which isolation level this machine gives the grader, each guarantee at it, what fixes the rest;
# with EXCHANGE= (and COURSE=) also the hub's layout (the exact chown/chmod), identity and the service's health.
doctor: venv
	$(PY) -m grader doctor $(if $(EXCHANGE),--exchange "$(EXCHANGE)" --course "$(COURSE)") $(if $(IDENTITY),--identity $(IDENTITY)) $(if $(INBOUND_PER_USER),--inbound-per-user "$(INBOUND_PER_USER)") $(if $(INSTRUCTOR),--instructor $(INSTRUCTOR))

# After every shard (SHARD=0/N … N-1/N): the class's grades.csv, cells.csv, report.md and feedback in OUT.
grade-report: venv
	$(PY) -m grader report --out "$(OUT)"

clean:
	rm -rf _build .pytest_cache .hypothesis
