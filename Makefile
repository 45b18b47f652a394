# kspark: the two commands are `make demo` and `make test`; both set everything up first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: setup demo test bench clean

# Idempotent: the virtual environment is rebuilt only when pyproject.toml changes,
# and Kafka's jars are fetched with Maven only when they are not cached yet.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed
	$(VENV)/bin/kspark broker fetch >/dev/null

demo: setup
	$(VENV)/bin/kspark demo

test: setup
	$(PY) -m pytest -q

bench: setup
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	$(PY) benchmarks/stateless.py
	$(PY) benchmarks/stateful_count.py

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
