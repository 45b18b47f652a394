"""Benchmark: a stateless Kafka -> Kafka topology on kspark vs a plain confluent-kafka loop.

Both run on the same machine, against the same local broker, over the same records, in
one run; the report gives records/s of each and their ratio. Not a test: run it on purpose:

    .venv/bin/python benchmarks/stateless.py [--records 1000000] [--partitions 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from _common import consume_loop, local_broker, produce, send, timed_run

from kspark import Serdes, StreamsBuilder, spark_session


def keep(value: bytes) -> bool:
    return value[0] % 10 != 0  # drops about a tenth


def transform(value: bytes) -> bytes:
    return value.upper()


def records(n: int):
    payload = os.urandom(50).hex().encode()  # 100 bytes
    return ((b"key-%d" % (i % 10000), bytes([i % 256]) + payload[1:]) for i in range(n))


def baseline(bootstrap: str, src: str, dst: str, n: int, partitions: int) -> float:
    """consume -> filter + transform -> produce, in one Python process, as fast as it goes."""
    def handle(p, m):
        v = m.value()
        if keep(v):
            send(p, dst, m.key(), transform(v), m.timestamp()[1])

    return consume_loop(bootstrap, src, partitions, n, handle)


def kspark_run(bootstrap: str, src: str, dst: str, spark, state_dir: str,
               **config: object) -> float:
    b = StreamsBuilder()
    (b.stream(src, key_serde=Serdes.ByteArray(), value_serde=Serdes.ByteArray())
      .filter(lambda k, v: keep(v)).map_values(transform)
      .to(dst, value_serde=Serdes.ByteArray()))
    return timed_run(b.build(), {
        "application.id": f"bench-{time.time_ns()}", "bootstrap.servers": bootstrap,
        "state.dir": state_dir, "execution.mode": "micro_batch",
        "max.offsets.per.trigger": 500_000,
        "producer.linger.ms": 20, "producer.batch.num.messages": 10000, **config}, spark)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    args = ap.parse_args()
    n = args.records
    topics = ["bench-in", "bench-out-base", "bench-out-kspark", "warm-in", "warm-out"]
    with local_broker(topics, args.partitions) as (bootstrap, work):
        produce(bootstrap, "warm-in", records(10_000), **{"compression.type": "lz4"})
        t = time.perf_counter()
        produce(bootstrap, "bench-in", records(n), **{"compression.type": "lz4"})
        print(f"loaded {n} records of 100 bytes in {time.perf_counter() - t:.1f}s", flush=True)
        spark = spark_session({"spark.master": f"local[{args.partitions}]",
                               "spark.ui.enabled": "false"})
        base = baseline(bootstrap, "bench-in", "bench-out-base", n, args.partitions)
        warm = kspark_run(bootstrap, "warm-in", "warm-out", spark, os.path.join(work, "warm"))
        ks = kspark_run(bootstrap, "bench-in", "bench-out-kspark", spark,
                        os.path.join(work, "state"))
        print(f"kspark warm-up query over 10,000 records (Python workers start): {warm:7.1f}s")
        print(f"baseline (confluent-kafka loop, 1 process): {base:7.1f}s  {n / base:10,.0f} records/s")
        print(f"kspark on Spark local[{args.partitions}] (AvailableNow, warm session, incl. query start): "
              f"{ks:7.1f}s  {n / ks:10,.0f} records/s")
        print(f"ratio kspark / baseline throughput: {base / ks:.2f}")
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
