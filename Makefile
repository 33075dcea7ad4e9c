# Two entry points: `make demo` (set up, then the main job) and `make test` (set up, then every check).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SYSTEM_PACKAGES := nginx wrk openssh-server chromium chromium-driver
KERNEL := nginx-sizing

.PHONY: demo test lint typecheck pytest system-packages fits catalog bench lab clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet -e .
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python ($(KERNEL))" >/dev/null
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(PY) -m sizing recommend --rps 1e6

# nginx, wrk, sshd and chromium from Debian's packages, installed only when one is missing.
system-packages:
	@missing=""; \
	command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$$missing nginx"; \
	command -v wrk >/dev/null 2>&1 || missing="$$missing wrk"; \
	[ -x /usr/sbin/sshd ] || missing="$$missing openssh-server"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES); \
	fi

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check .

typecheck: $(VENV)/.installed-dev
	$(PY) -m mypy

pytest: $(VENV)/.installed-dev
	$(PY) -m pytest

test: system-packages lint typecheck pytest

# Rebuild data/catalog/ from the providers' public files, read unchanged (a test compares).
UPSTREAM ?= ../shared/facts/upstream
catalog: $(VENV)/.installed
	$(PY) -m sizing catalog build --aws-dir $(UPSTREAM)/aws --gcp-dir $(UPSTREAM)/gcp \
		--out data/catalog/instances.csv

# Refit the reference tables into data/fits/ (a test checks the file against a fresh fit).
fits: $(VENV)/.installed
	$(PY) -m sizing precompute

# JupyterLab on the project's environment and kernel, opened on the notebooks.
# LAB_ARGS adds JupyterLab options, e.g. make lab LAB_ARGS="--no-browser --ServerApp.port=9999".
# As root (a container, a fresh VM) JupyterLab needs --allow-root: it is added only then.
# Kernels talk over Unix sockets (ipc): no TCP ports, no "TCP without encryption" warning.
LAB_ROOT_ARG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
lab: $(VENV)/.installed
	$(PY) -m jupyter lab --ServerApp.root_dir=notebooks --KernelManager.transport=ipc \
	  $(LAB_ROOT_ARG) $(LAB_ARGS)

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/bench_recommend.py
	$(PY) benchmarks/bench_runner.py
	$(PY) benchmarks/bench_search.py
	$(PY) benchmarks/bench_report.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
