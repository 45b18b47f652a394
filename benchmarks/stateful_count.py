"""Benchmark: group_by_key().count(), Kafka -> Kafka, 1M records over 100k keys, 2 partitions.

Compared in one run on this machine, against the same local broker and the same records:
  (a) a plain confluent-kafka loop: consume -> dict count -> produce (one process);
  (b) the same count with PySpark's own transformWithStateInPandas (RocksDB state store
      provider), reading through kspark's Kafka source, results to the noop sink;
  (c) kspark: group_by_key().count() with a persistent (RocksDB) store, logged, AvailableNow.
A 10,000-record warm-up query runs first so (b) and (c) find Spark's Python workers started.

    .venv/bin/python benchmarks/stateful_count.py [--records 1000000] [--keys 100000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from _common import consume_loop, local_broker, produce, send, timed_run

from kspark import Serdes, StreamsBuilder, spark_session


def records(n: int, keys: int):
    return ((b"key-%d" % (i * 7919 % keys), b"v") for i in range(n))


def baseline(bootstrap: str, src: str, dst: str, n: int, partitions: int) -> float:
    counts: dict[bytes, int] = {}

    def handle(p, m):
        k = m.key()
        counts[k] = counts.get(k, 0) + 1
        send(p, dst, k, counts[k].to_bytes(8, "big"))

    return consume_loop(bootstrap, src, partitions, n, handle)


def kspark_count(bootstrap: str, src: str, dst: str, spark, state_dir: str,
                 **config: object) -> float:
    b = StreamsBuilder()
    (b.stream(src, key_serde=Serdes.Bytes(), value_serde=Serdes.Bytes()).group_by_key().count()
      .to_stream().to(dst, value_serde=Serdes.Long()))
    return timed_run(b.build(), {
        "application.id": f"bench-count-{time.time_ns()}", "bootstrap.servers": bootstrap,
        "state.dir": state_dir, "execution.mode": "micro_batch",
        "max.offsets.per.trigger": 500_000, "producer.linger.ms": 20,
        **config}, spark)


def tws_count(bootstrap: str, src: str, spark, checkpoint: str) -> float:
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor

    class CountProcessor(StatefulProcessor):
        def init(self, handle):
            self.count = handle.getValueState("count", "count long")

        def handleInputRows(self, key, rows, timerValues):
            n = self.count.get()[0] if self.count.exists() else 0
            for pdf in rows:
                n += len(pdf)
            self.count.update((n,))
            yield pd.DataFrame({"key": [key[0]], "count": [n]})

        def close(self):
            pass

    spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                   "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    from kspark._plan.options import OPTION, SourceOptions
    from kspark._spark.session import ensure_registered

    ensure_registered(spark)  # spark_session() registers kspark_kafka in the background

    options = SourceOptions((src,), bootstrap, max_offsets=500000, timeout_ms=30000,
                            read_timeout_ms=60000)
    df = spark.readStream.format("kspark_kafka").option(OPTION, options.to_json()).load()
    out = df.select("key").groupBy("key").transformWithStateInPandas(
        statefulProcessor=CountProcessor(), outputStructType="key binary, count long",
        outputMode="Update", timeMode="None")
    start = time.perf_counter()
    q = (out.writeStream.format("noop").outputMode("update").option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=2)
    args = ap.parse_args()
    n = args.records
    topics = ["count-in", "count-out-base", "count-out-kspark", "warm-in", "warm-out"]
    with local_broker(topics, args.partitions) as (bootstrap, work):
        t = time.perf_counter()
        produce(bootstrap, "count-in", records(n, args.keys))
        produce(bootstrap, "warm-in", records(10_000, 1000))
        print(f"loaded {n} records over {args.keys} keys in {time.perf_counter() - t:.1f}s", flush=True)
        spark = spark_session({"spark.master": f"local[{args.partitions}]", "spark.ui.enabled": "false",
                               "spark.sql.shuffle.partitions": str(args.partitions)})
        base = baseline(bootstrap, "count-in", "count-out-base", n, args.partitions)
        warm = kspark_count(bootstrap, "warm-in", "warm-out", spark, os.path.join(work, "warm"))
        ks = kspark_count(bootstrap, "count-in", "count-out-kspark", spark, os.path.join(work, "ks"))
        tws = tws_count(bootstrap, "count-in", spark, os.path.join(work, "tws"))
        print(f"kspark warm-up query (10,000 records): {warm:.1f}s")
        for label, secs in (("(a) confluent-kafka loop, dict count", base),
                            ("(b) PySpark transformWithStateInPandas (RocksDB), noop sink", tws),
                            ("(c) kspark group_by_key().count(), RocksDB, logged", ks)):
            print(f"{label:<62} {secs:7.1f}s {n / secs:10,.0f} records/s")
        print(f"ratio kspark / loop throughput: {base / ks:.2f}")
        print(f"ratio kspark / transformWithStateInPandas throughput: {tws / ks:.2f}")
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
