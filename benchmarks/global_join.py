"""Benchmark: enrich a stream from a reference table. kspark's stream-GlobalKTable join
against the same enrichment as a broadcast join in plain PySpark (Spark's Kafka connector).

Both run in one Spark session (``local[P]``), against the same local broker and records,
in one run; every output is counted. Memory: the peak RSS of the JVM and of the Python
workers (each kspark worker holds its own copy of the global store), sampled during each
run. Not a test: run it on purpose:

    .venv/bin/python benchmarks/global_join.py [--records 1000000] [--table 100000]
        [--partitions 2] [--spark-kafka-version 4.2.0]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import psutil
from _common import local_broker, produce, timed_run

from kspark import Serdes, StreamsBuilder, spark_session


def orders(n: int, table: int):
    return ((b"o%d" % i, json.dumps({"id": i, "c": f"c{i % table}"}).encode()) for i in range(n))


def countries(table: int):
    return ((f"c{k}".encode(), f"country-{k:06d}-payload".encode()) for k in range(table))


class PeakRss:
    """Peak RSS of this process's JVM child and of its Python workers, sampled every 0.2 s."""

    def __init__(self) -> None:
        self.jvm = self.workers = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.2):
            jvm = workers = 0
            for p in me.children(recursive=True):
                try:
                    rss, cmd = p.memory_info().rss, " ".join(p.cmdline())
                except psutil.Error:
                    continue
                if "java" in cmd and "SparkSubmit" in cmd:
                    jvm += rss
                elif "daemon" in cmd or "pyspark.worker" in cmd:
                    workers += rss
            self.jvm, self.workers = max(self.jvm, jvm), max(self.workers, workers)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def kspark_run(bootstrap: str, spark, state_dir: str) -> float:
    S = Serdes.String()
    b = StreamsBuilder()
    table = b.global_table("bench-table", key_serde=S, value_serde=S)
    (b.stream("bench-orders", key_serde=S, value_serde=Serdes.Json())
      .join(table, lambda k, o: o["c"], lambda o, c: f"{o['id']}:{c}")
      .to("bench-out-kspark", key_serde=S, value_serde=S))
    return timed_run(b.build(), {
        "application.id": f"bench-global-{time.time_ns()}", "bootstrap.servers": bootstrap,
        "state.dir": state_dir, "execution.mode": "micro_batch", "max.offsets.per.trigger": 500_000,
        "producer.linger.ms": 20, "producer.batch.num.messages": 10000}, spark)


def native_run(bootstrap: str, spark) -> float:
    """Batch: read both topics with Spark's Kafka source, broadcast-join, write with its sink."""
    from pyspark.sql import functions as F

    start = time.perf_counter()
    read = lambda topic: (spark.read.format("kafka")  # noqa: E731
                          .option("kafka.bootstrap.servers", bootstrap)
                          .option("subscribe", topic).load())
    table = read("bench-table").select(F.col("key").cast("string").alias("c"),
                                        F.col("value").cast("string").alias("country"))
    o = read("bench-orders").select("key", F.col("value").cast("string").alias("v"))
    o = o.select("key", F.get_json_object("v", "$.id").alias("id"),
                 F.get_json_object("v", "$.c").alias("c"))
    out = (o.join(F.broadcast(table), "c")
            .select("key", F.concat_ws(":", "id", "country").alias("value")))
    (out.write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        .option("topic", "bench-out-native").save())
    return time.perf_counter() - start


def count(bootstrap: str, topic: str, partitions: int) -> int:
    from kspark._kafka.admin import Admin

    ends = Admin(bootstrap).end_offsets([(topic, p) for p in range(partitions)])
    return sum(ends.values())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--table", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--spark-kafka-version", default="4.2.0",
                    help="spark-sql-kafka-0-10 from Maven Central (4.3.0 is not published yet)")
    a = ap.parse_args()
    topics = ["bench-orders", "bench-table", "bench-out-kspark", "bench-out-native"]
    with local_broker(topics, a.partitions) as (bootstrap, work):
        t = time.perf_counter()
        produce(bootstrap, "bench-table", countries(a.table))
        produce(bootstrap, "bench-orders", orders(a.records, a.table), **{"compression.type": "lz4"})
        print(f"loaded {a.table:,} table rows and {a.records:,} orders in "
              f"{time.perf_counter() - t:.1f}s", flush=True)
        spark = spark_session({
            "spark.master": f"local[{a.partitions}]", "spark.ui.enabled": "false",
            "spark.jars.packages": f"org.apache.spark:spark-sql-kafka-0-10_2.13:{a.spark_kafka_version}"})
        with PeakRss() as ks_mem:
            ks = kspark_run(bootstrap, spark, os.path.join(work, "state"))
        with PeakRss() as nat_mem:
            nat = native_run(bootstrap, spark)
        n_ks = count(bootstrap, "bench-out-kspark", a.partitions)
        n_nat = count(bootstrap, "bench-out-native", a.partitions)
        mb = 1 / 2**20
        print(f"kspark stream-GlobalKTable join (AvailableNow, incl. query start and global "
              f"store bootstrap): {ks:7.1f}s {a.records / ks:10,.0f} records/s; {n_ks:,} out; "
              f"peak RSS JVM {ks_mem.jvm * mb:,.0f} MB, Python workers {ks_mem.workers * mb:,.0f} MB")
        print(f"plain PySpark broadcast join (batch, Spark's Kafka source and sink): {nat:7.1f}s "
              f"{a.records / nat:10,.0f} records/s; {n_nat:,} out; peak RSS JVM "
              f"{nat_mem.jvm * mb:,.0f} MB, Python workers {nat_mem.workers * mb:,.0f} MB")
        ok = n_ks == n_nat == a.records
        print("outputs verified: every order enriched once by both" if ok else
              f"OUTPUT MISMATCH: expected {a.records:,}")
        spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
