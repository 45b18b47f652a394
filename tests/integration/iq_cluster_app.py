"""A streaming count on Spark local-cluster (two executors, a disk each), queried by its
own driver while it runs; used by test_interactive_queries.py.

``python -m tests.integration.iq_cluster_app BOOTSTRAP SRC APP_ID STATE_DIR MODE OUT_DIR
[STANDBYS]``

Every round (about 5 a second) it reads every key of ``KEYS`` through ``KafkaStreams.store``
and through a stale-enabled store, and appends one JSON line to ``OUT_DIR/rounds.jsonl``:
``{"values": {key: count or null}, "errors": {key: "ErrorClass"}, "stale": {...},
"stale_errors": {...}}``. Stops when ``OUT_DIR/stop`` exists. With ``STANDBYS``
(``num.standby.replicas``) each round also has, per key, ``"meta"``: its partition, active
endpoint and standby endpoints (``query_metadata_for_key``), and ``"v2"``: an IQv2 key query
of that partition (not ``require_active``: a standby may answer), its value and position.
"""

from __future__ import annotations

import json
import os
import sys
import time

from kspark import (KafkaStreams, Materialized, QueryableStoreTypes, Serdes,
                    StoreQueryParameters, StreamsBuilder)
from tests.integration.app_base import base_config, end, local_session

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


def _standby_view(streams) -> tuple[dict, dict]:
    """Per key: (partition, active endpoint, standby endpoints); the IQv2 answer."""
    from kspark.query import KeyQuery, StateQueryRequest

    meta, v2 = {}, {}
    for k in KEYS:
        m = streams.query_metadata_for_key("counts", k, S)
        meta[k] = [m.partition, str(m.active_host) if m.active_host else None,
                   sorted(str(h) for h in m.standby_hosts)]
        r = streams.query(StateQueryRequest.in_store("counts").with_query(KeyQuery.with_key(k))
                          .with_partitions({m.partition})).get_only_partition_result()
        v2[k] = {"value": r.get_result(), "position": r.get_position().to_map()} \
            if r.is_success() else {"failure": r.get_failure_message()}
    return meta, v2


def main(bootstrap: str, src: str, app_id: str, state_dir: str, mode: str, out: str,
         standbys: str = "0") -> int:
    spark = local_session("local-cluster[2,1,1024]")
    streams = KafkaStreams(topology(src), {
        **base_config(bootstrap, app_id, state_dir, mode, "exactly_once_v2"),
        "autostop.at": "none", "commit.interval.ms": 200, "statestore.cache.max.bytes": 0,
        "query.timeout.ms": 2000} | ({"num.stream.threads": 2} if mode == "real_time" else
                                     {"placement.replacement.wait.ms": 2000})
        | ({"num.standby.replicas": int(standbys), "query.timeout.ms": 500}
           if int(standbys) else {}), spark=spark)
    if int(standbys):  # where tasks and copies move, for the test to read
        import logging

        handler = logging.FileHandler(os.path.join(out, "app.log"))
        logging.getLogger("kspark").addHandler(handler)
        logging.getLogger("kspark").setLevel(logging.INFO)
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
            if int(standbys):
                try:  # the store is unknown until a task announced it
                    row["meta"], row["v2"] = _standby_view(streams)
                except Exception as e:  # noqa: BLE001 - recorded for the test to judge
                    row["meta"], row["v2"] = {}, {"error": f"{type(e).__name__}: {e}"}
            f.write(json.dumps(row) + "\n")
            f.flush()
            time.sleep(0.2)
    streams.close()
    return end(spark)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:8]))
