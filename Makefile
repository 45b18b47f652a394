# kspark: the two commands are `make demo` and `make test`; both set everything up first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: setup demo test lint check bench bench-peers soak soak-faults conformance clean
ROUNDS  ?= 20
RECORDS ?= 200000
# Both execution modes by default, real_time (the default mode) first; SOAK_MODES=micro_batch for one.
SOAK_MODES ?= real_time micro_batch

# Idempotent: the virtual environment is rebuilt only when pyproject.toml changes,
# and Kafka's jars are downloaded (no Maven needed) only when they are not cached yet.
$(VENV)/.installed: pyproject.toml constraints.txt setup.py src/kspark-zipless.pth
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]' -c constraints.txt
	touch $@

setup: $(VENV)/.installed
	$(VENV)/bin/kspark broker fetch >/dev/null
	$(VENV)/bin/kspark registry fetch >/dev/null

demo: setup
	$(VENV)/bin/kspark demo

test: setup lint
	$(PY) -m pytest -q --durations=40

# ruff (src/ and tests/) and mypy (_engine, _graph, _spark), both configured in pyproject.toml.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/mypy

# The edit loop, under 3 minutes: lint, unit tests, doctests and the driver's conformance to
# Java Kafka Streams' TopologyTestDriver (no broker, no Spark).
check: lint
	$(PY) -m pytest -q -p no:cacheprovider tests/unit src/kspark src/_kspark_zipless.py \
		tests/conformance/test_java_reference.py tests/conformance/test_describe_java.py \
		tests/conformance/test_json_java.py

bench: setup
	$(PY) -m pip install --quiet -e '.[dev,bench]' -c constraints.txt
	$(PY) benchmarks/stateless.py
	$(PY) benchmarks/stateful_count.py
	$(PY) benchmarks/global_join.py
	$(PY) benchmarks/async_enrich.py
	$(PY) benchmarks/eos_overhead.py
	$(PY) benchmarks/latency.py
	$(PY) benchmarks/range_stall.py
	$(PY) benchmarks/registry_serdes.py
	$(PY) benchmarks/driver_speed.py
	$(PY) benchmarks/record_path.py

# Optional, not part of test: kspark side by side with a confluent-kafka loop, Quix Streams,
# Bytewax and native PySpark (see benchmarks/README.md), e.g. PEERS_ARGS="--records 20000
# --repeat 1". Quix Streams and Bytewax go into benchmarks/peers/.venv, made on first use.
PEERS_ARGS ?=
bench-peers: setup
	$(PY) -m pip install --quiet -e '.[dev,peers]' -c constraints.txt
	$(PY) benchmarks/peers/run.py $(PEERS_ARGS)

# Exactly-once soak (KIP-129): R rounds of SIGKILLs of the driver or an executor; the last
# line of each run is "soak: rounds R, duplicates D, lost L, wrong aggregates W, open
# transactions T" (exactly_once_v2 also writes its echo to a Delta table, KStream.to_spark, and
# adds "; Delta table: rows N, duplicates D, lost L"). at_least_once runs too: it must show duplicates (the harness sees them).
# Each mode also runs exactly_once_v2 with a standby copy of every task (num.standby.replicas=1):
# a lost executor's tasks move to the thread (real time) or executor (micro-batch) keeping their copies.
soak: setup
	for m in $(SOAK_MODES); do \
	  $(PY) -m tests.integration.soak --rounds $(ROUNDS) --records $(RECORDS) --guarantee exactly_once_v2 --mode $$m --delta && \
	  $(PY) -m tests.integration.soak --rounds $(ROUNDS) --records $(RECORDS) --guarantee at_least_once --mode $$m && \
	  $(PY) -m tests.integration.soak --rounds $(ROUNDS) --records $(RECORDS) --guarantee exactly_once_v2 --mode $$m --standbys 1 || exit 1; \
	done

# The same soak on a three-node cluster of its own with Kafka's own faults added (issue 39): in
# every round a node SIGKILLed and started again after 0-10 s, or a rolling restart, while the
# app runs (and in two rounds out of three a process kill as above). Before the last line, one
# line per fault kind: "faults: KIND N, took ...; output paused ...". Not part of make test.
soak-faults: setup
	KSPARK_FULL_MATRIX=1 $(PY) -m pytest -q tests/integration/test_broker_faults.py
	for m in $(SOAK_MODES); do \
	  $(PY) -m tests.integration.soak --faults broker --rounds $(ROUNDS) --records $(RECORDS) --guarantee exactly_once_v2 --mode $$m && \
	  $(PY) -m tests.integration.soak --faults broker --rounds $(ROUNDS) --records $(RECORDS) --guarantee at_least_once --mode $$m || exit 1; \
	done

# kspark against Java Kafka Streams' TopologyTestDriver on COUNT generated scenarios
# (make test runs 300 of them); prints the first disagreements.
COUNT ?= 3000
SEED  ?= 0
conformance: setup
	$(PY) -m tests.conformance --count $(COUNT) --seed $(SEED)

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
