"""A streaming count on Spark local-cluster (two executors, a disk each), queried by its
own driver while it runs; used by test_interactive_queries.py.

``python -m tests.integration.iq_cluster_app BOOTSTRAP SRC APP_ID STATE_DIR MODE OUT_DIR``

Every round (about 5 a second) it reads every key of ``KEYS`` through ``KafkaStreams.store``
and through a stale-enabled store, and appends one JSON line to ``OUT_DIR/rounds.jsonl``:
``{"values": {key: count or null}, "errors": {key: "ErrorClass"}, "stale": {...},
"stale_errors": {...}}``. Stops when ``OUT_DIR/stop`` exists.
"""

from __future__ import annotations

import json
import os
import sys
import time

from kspark import (KafkaStreams, Materialized, QueryableStoreTypes, Serdes,
                    StoreQueryParameters, StreamsBuilder, spark_session)

S, L = Serdes.String(), Serdes.Long()
KEYS = [f"k{i}" for i in range(12)]


def topology(src: str):
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).group_by_key().count(Materialized.as_("counts"))
    return b.build()


def _read(store, errors: dict) -> dict:
    values = {}
    for k in KEYS:
        try:
            values[k] = store.get(k)
        except Exception as e:  # noqa: BLE001 - recorded for the test to judge
            errors[k] = f"{type(e).__name__}: {e}"
    return values


def main(bootstrap: str, src: str, app_id: str, state_dir: str, mode: str, out: str) -> int:
    spark = spark_session({"spark.master": "local-cluster[2,1,1024]", "spark.ui.enabled": "false",
                           "spark.task.maxFailures": "8"})
    streams = KafkaStreams(topology(src), {
        "application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": state_dir,
        "autostop.at": "none", "execution.mode": mode, "commit.interval.ms": 200,
        "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
        "query.timeout.ms": 2000} | ({"num.stream.threads": 2} if mode == "real_time" else
                                     {"placement.replacement.wait.ms": 2000}), spark=spark)
    streams.start()
    kv = QueryableStoreTypes.key_value_store()
    params = StoreQueryParameters.from_name_and_type("counts", kv)
    fresh, stale = streams.store(params), streams.store(params.enable_stale_stores())
    with open(os.path.join(out, "rounds.jsonl"), "a") as f:
        while not os.path.exists(os.path.join(out, "stop")):
            errors: dict = {}
            stale_errors: dict = {}
            row = {"values": _read(fresh, errors), "errors": errors,
                   "stale": _read(stale, stale_errors), "stale_errors": stale_errors}
            f.write(json.dumps(row) + "\n")
            f.flush()
            time.sleep(0.2)
    streams.close()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:7]))
