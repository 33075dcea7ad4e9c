# Two entry points: `make demo` (set up, then the main job) and `make test` (set up, then every check).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Debian packages the project runs for real, each as PACKAGE:CHECK, where CHECK is a command
# on PATH or an absolute file the package installs; only the missing ones are installed.
SYSTEM_PACKAGES := nginx:/usr/sbin/nginx wrk:wrk nghttp2-client:h2load \
	openssh-server:/usr/sbin/sshd chromium:chromium chromium-driver:chromedriver \
	libnginx-mod-http-js:/usr/lib/nginx/modules/ngx_http_js_module.so poppler-utils:pdftotext hey:hey \
	libnginx-mod-http-lua:/usr/lib/nginx/modules/ngx_http_lua_module.so \
	lua-cjson:/usr/share/doc/lua-cjson
# setuptools prints a block about editable installs (folders shadowing the package) on every
# `pip install -e`; the checkout is the package, so it says nothing new here.
PIP_QUIET := PYTHONWARNINGS="ignore:Editable installation"
KERNEL := nginx-sizing

.PHONY: demo test lint typecheck pytest system-packages fits catalog bench lab docs clean

# Each setup step says what it does and when it started (pip itself is kept quiet).
STEP = @echo "[$$(date -u +%H:%M:%S)] setup"

$(VENV)/.installed: pyproject.toml
	$(STEP) "1/4: Python environment in $(VENV)"
	@$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	$(STEP) "2/4: the package and its dependencies (pip; a few minutes on a fresh machine)"
	@$(PIP_QUIET) $(PY) -m pip install --quiet -e .
	$(STEP) "3/4: Jupyter kernel $(KERNEL)"
	@$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python ($(KERNEL))" >/dev/null
	@touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(STEP) "4/4: test tools (pytest, pytest-xdist, ruff, mypy, nbval, hypothesis, selenium)"
	@$(PIP_QUIET) $(PY) -m pip install --quiet -e '.[dev]'
	@touch $@
	$(STEP) "done"

demo: $(VENV)/.installed
	$(PY) -m sizing recommend --rps 1e6

# System packages, each installed only when the command or file it provides is missing.
system-packages:
	@missing=""; \
	for entry in $(SYSTEM_PACKAGES); do \
	  pkg=$${entry%%:*}; check=$${entry#*:}; \
	  case "$$check" in \
	    /*) [ -e "$$check" ] ;; \
	    *) command -v "$$check" >/dev/null 2>&1 ;; \
	  esac || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "[$$(date -u +%H:%M:%S)] system packages: installing$$missing (apt; a few minutes)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing \
	  && echo "[$$(date -u +%H:%M:%S)] system packages: installed"; \
	else \
	  echo "system packages: all present"; \
	fi

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check .

typecheck: $(VENV)/.installed-dev
	$(PY) -m mypy

# PYTEST_STATUS_FILE (set by .ci/run) receives pytest's exit status, which make itself hides.
# PYTEST_WORKERS test files run at once (pytest-xdist, one file per worker at a time: a file's
# tests share their fixtures and run in order); 0 runs everything in this one process.
PYTEST_WORKERS ?= 2
pytest: $(VENV)/.installed-dev
	@status=0; $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS) || status=$$?; \
	if [ -n "$(PYTEST_STATUS_FILE)" ]; then echo $$status > "$(PYTEST_STATUS_FILE)"; fi; \
	exit $$status

test: system-packages lint typecheck pytest

# Rebuild data/catalog/ from the providers' public files, read unchanged (a test compares).
UPSTREAM ?= ../shared/facts/upstream
catalog: $(VENV)/.installed
	$(PY) -m sizing catalog build --upstream $(UPSTREAM) --out data/catalog/instances.csv

# Refit the reference tables into data/fits/ (a test checks the file against a fresh fit).
fits: $(VENV)/.installed
	$(PY) -m sizing precompute

# JupyterLab on the project's environment and kernel, opened on copies of the notebooks in
# LAB_DIR (each copied once, when missing: your outputs and edits stay there, and the tracked
# notebooks stay without outputs; delete a copy to get the current notebook again).
# LAB_ARGS adds JupyterLab options, e.g. make lab LAB_ARGS="--no-browser --ServerApp.port=9999".
# As root (a container, a fresh VM) JupyterLab needs --allow-root: it is added only then.
# Kernels talk over Unix sockets (ipc): no TCP ports, no "TCP without encryption" warning.
LAB_ROOT_ARG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
LAB_DIR ?= lab
lab: $(VENV)/.installed
	@mkdir -p $(LAB_DIR); for nb in notebooks/*.ipynb; do \
	  [ -e "$(LAB_DIR)/$${nb##*/}" ] || { cp "$$nb" "$(LAB_DIR)/" && echo "lab: copied $$nb to $(LAB_DIR)/"; }; \
	done
	$(PY) -m jupyter lab --ServerApp.root_dir=$(LAB_DIR) --KernelManager.transport=ipc \
	  $(LAB_ROOT_ARG) $(LAB_ARGS)

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/bench_recommend.py
	$(PY) benchmarks/bench_runner.py
	$(PY) benchmarks/bench_search.py
	$(PY) benchmarks/bench_report.py

# The documentation site (docs/, mkdocs.yml): every warning fails the build; build/ is not tracked.
docs: $(VENV)/.installed-dev
	$(PY) -m mkdocs build --strict --site-dir build/docs

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
