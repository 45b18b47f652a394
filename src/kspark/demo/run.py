"""``kspark demo``: load bundled page views into Kafka, keep the long reads, print them."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections import Counter
from importlib import resources

from kspark import KafkaStreams, Serdes, StreamsBuilder, Topology
from kspark._local.broker import LocalBroker

__all__ = ["demo_topology", "run_demo", "INPUT_TOPIC", "OUTPUT_TOPIC"]

INPUT_TOPIC = "demo-pageviews"
OUTPUT_TOPIC = "demo-long-reads"
PARTITIONS = 3
MIN_SECONDS = 60


def demo_topology() -> Topology:
    """Page views keyed by user; keep views of at least a minute and describe them.

    Example:
        >>> from kspark.testing import TopologyTestDriver
        >>> from kspark import Serdes
        >>> with TopologyTestDriver(demo_topology()) as d:
        ...     i = d.create_input_topic(INPUT_TOPIC, Serdes.String(), Serdes.Json())
        ...     o = d.create_output_topic(OUTPUT_TOPIC, Serdes.String(), Serdes.String())
        ...     i.pipe_input("ann", {"page": "/docs", "duration_s": 90})
        ...     i.pipe_input("bob", {"page": "/home", "duration_s": 5})
        ...     o.read_key_values_to_list()
        [('ann', 'ann read /docs for 90s')]
    """
    b = StreamsBuilder()
    (b.stream(INPUT_TOPIC, key_serde=Serdes.String(), value_serde=Serdes.Json())
      .filter(lambda user, view: view["duration_s"] >= MIN_SECONDS)
      .map_values(lambda user, view: f"{user} read {view['page']} for {view['duration_s']}s",
                  with_key=True)
      .to(OUTPUT_TOPIC, value_serde=Serdes.String()))
    return b.build()


def _load(bootstrap: str) -> int:
    from kspark._kafka.admin import Admin
    from confluent_kafka import Producer

    admin = Admin(bootstrap)
    admin.delete_topics([INPUT_TOPIC, OUTPUT_TOPIC])
    admin.create_topics({INPUT_TOPIC: PARTITIONS, OUTPUT_TOPIC: PARTITIONS})
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    n = 0
    data = resources.files("kspark.demo").joinpath("pageviews.jsonl").read_text()
    for line in data.splitlines():
        view = json.loads(line)
        producer.produce(INPUT_TOPIC, key=view["user"].encode(), value=line.encode(),
                         timestamp=view["ts"])
        n += 1
    producer.flush(30)
    return n


def _read_back(bootstrap: str, expected_min: int, timeout_s: float = 30) -> list[tuple[str, str]]:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kspark-demo-{time.time_ns()}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.subscribe([OUTPUT_TOPIC])
    out: list[tuple[str, str]] = []
    deadline = time.monotonic() + timeout_s
    idle = 0
    while time.monotonic() < deadline and (len(out) < expected_min or idle < 2):
        msgs = c.consume(1000, 1.0)
        idle = 0 if msgs else idle + 1
        out.extend((m.key().decode(), m.value().decode()) for m in msgs if m.error() is None)
    c.close()
    return out


def run_demo(bootstrap: str | None = None, spark_conf: dict | None = None) -> int:
    """Run the demo end to end; starts (and afterwards stops) a local broker if none is given."""
    broker = None
    if bootstrap is None:
        broker = LocalBroker()
        if broker.status().running:
            bootstrap, broker = broker.status().bootstrap, None
        else:
            print("kspark demo: starting a local Kafka broker ...", flush=True)
            bootstrap = broker.start()
    try:
        return _run(bootstrap, spark_conf or {})
    finally:
        if broker is not None:
            print("kspark demo: stopping the local broker", flush=True)
            broker.stop()


def _run(bootstrap: str, spark_conf: dict) -> int:
    print(f"kspark demo: broker at {bootstrap}; loading page views into {INPUT_TOPIC!r}",
          flush=True)
    total = _load(bootstrap)
    print(f"kspark demo: {total} page views loaded; starting Spark", flush=True)
    config = {"application.id": f"kspark-demo-{int(time.time())}", "bootstrap.servers": bootstrap,
              "autostop.at": "eol", "state.dir": tempfile.mkdtemp(prefix="kspark-demo-")}
    # execution.mode: the default, real_time; a Spark Connect server (SPARK_REMOTE) keeps
    # its own UI setting, which a client cannot change
    if not (spark_conf.get("spark.remote") or os.environ.get("SPARK_REMOTE")):
        config["spark.ui.enabled"] = "false"
    config.update(spark_conf)
    streams = KafkaStreams(demo_topology(), config)
    started = time.monotonic()
    streams.start()
    shown = None
    while shown is None or not streams.await_termination(0.5):
        p = streams.progress()
        if p["position"] != shown:
            shown = p["position"]
            _bar(p["position"], total)
    p = streams.progress()
    _bar(p["position"], total)
    print(f"\nkspark demo: processed in {time.monotonic() - started:.1f}s", flush=True)
    streams.close()
    rows = _read_back(bootstrap, 1)
    _report(total, rows)
    return 0


def _bar(done: int, total: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    end = "\r" if sys.stdout.isatty() else "\n"
    sys.stdout.write(f"{end}  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} records "
                     "committed")
    sys.stdout.flush()


def _report(total: int, rows: list[tuple[str, str]]) -> None:
    print(f"kspark demo: {len(rows)} of {total} page views were long reads "
          f"(>= {MIN_SECONDS}s), written to {OUTPUT_TOPIC!r}. A few of them:")
    for _, line in rows[:5]:
        print(f"  {line}")
    pages = Counter(line.split(" read ")[1].split(" for ")[0] for _, line in rows)
    print("kspark demo: long reads per page:")
    for page, n in pages.most_common():
        print(f"  {page:<22} {n}")
