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

from kspark import KafkaStreams, Serdes, StreamsBuilder
from tests.integration.app_base import (base_config, end, local_session, run_printing_batches,
                                        start)

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
    spark = local_session("local-cluster[2,1,1024]")
    streams = KafkaStreams(topology(orders, countries, out), {
        **base_config(bootstrap, app_id, state_dir, mode, "exactly_once_v2"),
        "commit.interval.ms": 300, "request.timeout.ms": 20000,
        **({"checkpoint.location": checkpoint} if checkpoint and mode == "micro_batch"
           else {})}, spark=spark)
    start(streams)
    run_printing_batches(streams)
    return end(spark)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:9]))
