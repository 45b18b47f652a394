"""The cost of a Delta sink (issue 44), and its exactness at scale, in the same run.

W1 of the peers benchmark (filter + map on JSON values, ``benchmarks/peers/workload.py``)
as an incremental batch run (``autostop.at=eol``) in each execution mode, writing to Kafka
only, then the same topology also writing its output to a Delta table
(``KStream.to_spark("delta")``, key a string, value JSON text): whole-run throughput
(records/s, start to stop: the run ends once the Delta table holds everything) and the
ratio. ``--check``: one more run per mode with a Delta and a Parquet sink, whose rows, and
the Kafka output topic's read back with ``read_topic``, are compared with the
TopologyTestDriver's over the same input.

    python benchmarks/spark_sinks.py [--records 1000000] [--modes real_time micro_batch] [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
PEERS = str(Path(__file__).resolve().parent / "peers")
sys.path.insert(0, PEERS)
os.environ["PYTHONPATH"] = PEERS  # Spark's Python workers import workload.w1 too

from _common import local_broker, produce, timed_run  # noqa: E402
from workload import Expected, generate, w1  # noqa: E402

from kspark import Serdes, StreamsBuilder, spark_session  # noqa: E402

S, RAW, J = Serdes.String(), Serdes.ByteArray(), Serdes.Json()


def topology(src: str, dst: str, delta: str | None = None, parquet: str | None = None):
    b = StreamsBuilder()
    out = (b.stream(src, key_serde=S, value_serde=RAW).map_values(w1)
           .filter(lambda k, v: v is not None))
    out.to(dst, key_serde=S, value_serde=RAW)
    rows = out.map_values(json.loads) if delta or parquet else None
    if delta:
        rows.to_spark("delta", path=delta, value_serde=J, name="w1-delta")
    if parquet:
        rows.to_spark("parquet", path=parquet, value_serde=J, name="w1-parquet")
    return b.build()


def config(bootstrap: str, work: str, mode: str, label: str) -> dict:
    return {"application.id": f"w1-{label}-{mode}-{time.time_ns()}",
            "bootstrap.servers": bootstrap, "state.dir": os.path.join(work, f"state-{label}"),
            "execution.mode": mode, "producer.linger.ms": 20,
            "producer.batch.num.messages": 10000, "processing.guarantee": "exactly_once_v2",
            **({"max.offsets.per.trigger": 100_000} if mode == "micro_batch" else {})}


def run(bootstrap: str, spark, work: str, mode: str, records: int, delta: bool) -> float:
    label = "delta" if delta else "kafka"
    path = os.path.join(work, f"delta-{mode}") if delta else None
    seconds = timed_run(topology("w1-in", f"w1-out-{label}-{mode}", path),
                        config(bootstrap, work, mode, label), spark)
    rate = records / seconds
    print(f"{label:6} {mode:11} {seconds:6.1f} s  {rate:9,.0f} records/s", flush=True)
    return rate


def driver_rows(records: int) -> Counter:
    """The TopologyTestDriver's rows of the Delta sink over the same input."""
    from kspark.testing import TopologyTestDriver

    with TopologyTestDriver(topology("w1-in", "w1-out", "/unused"),
                            {"application.id": "w1-check"}) as d:
        topic = d.create_input_topic("w1-in", S, RAW)
        for k, v in generate(records, Expected()):
            topic.pipe_input(k.decode(), v)
        return Counter((r["key"], r["value"]) for r in d.get_spark_sink_rows("w1-delta"))


def check(bootstrap: str, spark, work: str, mode: str, want: Counter) -> None:
    from deltalake import DeltaTable

    from kspark.spark import read_topic

    delta, parquet = os.path.join(work, f"check-delta-{mode}"), os.path.join(
        work, f"check-parquet-{mode}")
    dst = f"w1-out-check-{mode}"
    seconds = timed_run(topology("w1-in", dst, delta, parquet),
                        config(bootstrap, work, mode, "check"), spark)
    table = DeltaTable(delta).to_pyarrow_table(columns=["key", "value"])
    got = {"delta": Counter(zip(table.column("key").to_pylist(),
                                table.column("value").to_pylist(), strict=True)),
           "parquet": Counter((r.key, r.value) for r in
                              spark.read.parquet(parquet).select("key", "value").collect())}
    back = read_topic(spark, dst, S, J, config={"bootstrap.servers": bootstrap})
    got["topic"] = Counter((r.key, r.value) for r in back.select("key", "value").collect())
    types = dict(spark.read.parquet(parquet).dtypes)
    for name, rows in got.items():
        verdict = "exact" if rows == want else (
            f"DIFFERS: {sum((rows - want).values())} extra, {sum((want - rows).values())} "
            "missing")
        print(f"check {mode:11} {name:8} {sum(rows.values()):,} rows: {verdict}", flush=True)
    print(f"check {mode:11} run {seconds:.1f} s; columns {types}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--modes", nargs="+", default=["real_time", "micro_batch"])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    outs = [f"w1-out-{label}-{m}" for label in ("kafka", "delta", "check") for m in a.modes]
    with local_broker(["w1-in", *outs], 2) as (bootstrap, work):
        produce(bootstrap, "w1-in", generate(a.records, Expected()))
        spark = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false",
                               "spark.sql.shuffle.partitions": "2"})
        rates = {m: (run(bootstrap, spark, work, m, a.records, False),
                     run(bootstrap, spark, work, m, a.records, True)) for m in a.modes}
        for m, (kafka, delta) in rates.items():
            print(f"{m}: with a Delta sink / Kafka only: {delta / kafka:.2f}", flush=True)
        if a.check:
            want = driver_rows(a.records)
            for m in a.modes:
                check(bootstrap, spark, work, m, want)
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
