"""A stream-GlobalKTable enrichment on Spark local-cluster (two executor processes), run as
a script until killed.

``python -m tests.integration.global_app BOOTSTRAP ORDERS COUNTRIES OUT APP_ID STATE_DIR
[CHECKPOINT [MODE]]``: orders (JSON ``{"id": i, "country": "c<k>"}``) join the countries
table by the order's country; the result, ``"<id>:<country value>"``, goes to OUT. Prints
``batches N`` as micro-batches (real time: epochs) complete. MODE is the
``execution.mode`` (``micro_batch`` by default; ``real_time`` has no CHECKPOINT).
"""

from __future__ import annotations

import sys

from kspark import KafkaStreams, Serdes, StreamsBuilder, spark_session
from tests.integration.eos_app import run_printing_batches

S = Serdes.String()


def topology(orders: str, countries: str, out: str):
    b = StreamsBuilder()
    table = b.global_table(countries, key_serde=S, value_serde=S)
    (b.stream(orders, key_serde=S, value_serde=Serdes.Json())
      .left_join(table, lambda k, order: order["country"], lambda order, c: f"{order['id']}:{c}")
      .to(out, key_serde=S, value_serde=S))
    return b.build()


def main(bootstrap: str, orders: str, countries: str, out: str, app_id: str, state_dir: str,
         checkpoint: str | None = None, mode: str = "micro_batch") -> int:
    spark = spark_session({"spark.master": "local-cluster[2,1,1024]", "spark.ui.enabled": "false",
                           "spark.task.maxFailures": "8"})
    streams = KafkaStreams(topology(orders, countries, out), {
        "application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": state_dir,
        "processing.guarantee": "exactly_once_v2", "commit.interval.ms": 300,
        "request.timeout.ms": 20000, "execution.mode": mode,
        **({"checkpoint.location": checkpoint} if checkpoint and mode == "micro_batch"
           else {})}, spark=spark)
    streams.start()
    print("started", flush=True)
    run_printing_batches(streams)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:9]))
