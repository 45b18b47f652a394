"""Benchmark: what exactly-once costs. The stateless and the stateful-count topologies of
``stateless.py`` and ``stateful_count.py`` run with ``processing.guarantee`` at_least_once
and exactly_once_v2, at the default trigger size (``max.offsets.per.trigger`` 200,000), in
one run on one broker; the report gives records/s of each and EOS's overhead.

    .venv/bin/python benchmarks/eos_overhead.py [--records 1000000] [--partitions 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from _common import local_broker, produce
from stateful_count import kspark_count
from stateful_count import records as count_records
from stateless import kspark_run
from stateless import records as stateless_records

from kspark import spark_session

GUARANTEES = ("at_least_once", "exactly_once_v2")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=2)
    args = ap.parse_args()
    n = args.records
    topics = ["in", "count-in", "warm-in", "warm-out"] + [f"out-{g}" for g in GUARANTEES] + [
        f"count-out-{g}" for g in GUARANTEES]
    with local_broker(topics, args.partitions) as (bootstrap, work):
        produce(bootstrap, "in", stateless_records(n), **{"compression.type": "lz4"})
        produce(bootstrap, "count-in", count_records(n, args.keys))
        produce(bootstrap, "warm-in", stateless_records(10_000))
        spark = spark_session({"spark.master": f"local[{args.partitions}]",
                               "spark.ui.enabled": "false",
                               "spark.sql.shuffle.partitions": str(args.partitions)})
        for g in GUARANTEES:  # warm up Python workers and both code paths
            kspark_run(bootstrap, "warm-in", "warm-out", spark, os.path.join(work, f"warm-{g}"),
                       **{"processing.guarantee": g})
        secs: dict[tuple[str, str], float] = {}
        for g in GUARANTEES:
            cfg = {"processing.guarantee": g, "max.offsets.per.trigger": 200_000}
            secs[("stateless", g)] = kspark_run(bootstrap, "in", f"out-{g}", spark,
                                                os.path.join(work, f"s-{g}"), **cfg)
            secs[("count", g)] = kspark_count(bootstrap, "count-in", f"count-out-{g}", spark,
                                              os.path.join(work, f"c-{g}"), **cfg)
        for topo in ("stateless", "count"):
            for g in GUARANTEES:
                t = secs[(topo, g)]
                print(f"{topo:<10} {g:<16} {t:7.1f}s {n / t:10,.0f} records/s")
            over = secs[(topo, "exactly_once_v2")] / secs[(topo, "at_least_once")] - 1
            print(f"{topo:<10} exactly_once_v2 overhead: {over * 100:+.1f}% time")
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
