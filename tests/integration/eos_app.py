"""The exactly-once test application, run as a script (a driver process a test can kill).

Modelled on Kafka's EOS system test: from ``SRC`` (keys ``k<n>``, Long values) it echoes
every record to ``SRC-echo`` and, after a repartition (``group_by``), keeps per key the
count, sum, min and max of the values (a RocksDB store, caching off), emitted to
``SRC-agg`` as JSON on every update.

``python -m tests.integration.eos_app BOOTSTRAP SRC APP_ID STATE_DIR [options]``; prints
``started`` and then ``batches N`` as micro-batches complete; exits 0 when the input present
at start is consumed (``autostop.at=eol``).
"""

from __future__ import annotations

import argparse
import sys
import time

from kspark import KafkaStreams, Materialized, Serdes, StreamsBuilder, spark_session
from kspark.state import Stores

S, L, J = Serdes.String(), Serdes.Long(), Serdes.Json()


def _fold(slow_ms: float):
    def add(key, value, agg):
        if slow_ms:
            time.sleep(slow_ms / 1000)
        return {"count": agg["count"] + 1, "sum": agg["sum"] + value,
                "min": value if agg["min"] is None else min(agg["min"], value),
                "max": value if agg["max"] is None else max(agg["max"], value)}
    return add


def topology(src: str, slow_ms: float = 0.0):
    b = StreamsBuilder()
    s = b.stream(src, key_serde=S, value_serde=L)
    s.to(f"{src}-echo", key_serde=S, value_serde=L)
    (s.group_by(lambda k, v: k, key_serde=S, value_serde=L)
      .aggregate(lambda: {"count": 0, "sum": 0, "min": None, "max": None}, _fold(slow_ms),
                 Materialized.as_(Stores.persistent_key_value_store("aggs")).with_value_serde(J))
      .to_stream().to(f"{src}-agg", key_serde=S, value_serde=J))
    return b.build()


def config(bootstrap: str, app_id: str, state_dir: str, guarantee: str,
           max_offsets: int) -> dict:
    return {"application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": state_dir,
            "autostop.at": "eol", "processing.guarantee": guarantee,
            "statestore.cache.max.bytes": 0, "max.offsets.per.trigger": max_offsets,
            "request.timeout.ms": 20000}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    for name in ("bootstrap", "src", "app_id", "state_dir"):
        ap.add_argument(name)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--guarantee", default="exactly_once_v2")
    ap.add_argument("--max-offsets", type=int, default=2000)
    ap.add_argument("--slow-ms", type=float, default=0.0)
    ap.add_argument("--checkpoint", default=None, help="checkpoint.location (default: under "
                    "state.dir)")
    ap.add_argument("--fail-after-commit", default=None,
                    help="'<task id>:<batch id>': that task's first attempt fails after its commit")
    a = ap.parse_args(argv)
    spark = spark_session({"spark.master": a.master, "spark.ui.enabled": "false",
                           "spark.task.maxFailures": "8", "spark.sql.shuffle.partitions": "2"})
    if a.fail_after_commit:
        from kspark._spark.hooks import FailAfterCommit, TaskHooks, install_task_hooks

        install_task_hooks(TaskHooks(after_commit=FailAfterCommit(
            tuple(a.fail_after_commit.split(",")))))
    cfg = config(a.bootstrap, a.app_id, a.state_dir, a.guarantee, a.max_offsets)
    if a.checkpoint:
        cfg["checkpoint.location"] = a.checkpoint
    streams = KafkaStreams(topology(a.src, a.slow_ms), cfg, spark=spark)
    streams.start()
    print("started", flush=True)
    run_printing_batches(streams)
    spark.stop()
    return 0


def run_printing_batches(streams: KafkaStreams) -> None:
    """Wait for a started application, printing ``batches N`` as micro-batches complete
    (what the tests that kill processes watch), then close it."""
    shown = -1
    while not streams.await_termination(0.2):
        n = streams.progress()["batches"]
        if n != shown:
            shown = n
            print(f"batches {n}", flush=True)
    print(f"done {streams.progress()}", flush=True)
    streams.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
