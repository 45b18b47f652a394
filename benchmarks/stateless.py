"""Benchmark: a stateless Kafka -> Kafka topology on kspark vs a plain confluent-kafka loop.

Both run on the same machine, against the same local broker, over the same records, in
one run; the report gives records/s of each and their ratio. Not a test: run it on purpose:

    .venv/bin/python benchmarks/stateless.py [--records 1000000] [--partitions 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kspark import KafkaStreams, Serdes, StreamsBuilder, spark_session
from kspark._kafka.admin import Admin
from kspark._kafka.broker import LocalBroker, free_port


def keep(value: bytes) -> bool:
    return value[0] % 10 != 0  # drops about a tenth


def transform(value: bytes) -> bytes:
    return value.upper()


def produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                  "partitioner": "murmur2_random", "compression.type": "lz4"})
    payload = os.urandom(50).hex().encode()  # 100 bytes
    for i in range(n):
        while True:
            try:
                p.produce(topic, key=b"key-%d" % (i % 10000), value=bytes([i % 256]) + payload[1:],
                          timestamp=1_700_000_000_000 + i)
                break
            except BufferError:
                p.poll(0.05)
        if i % 100_000 == 0:
            p.poll(0)
    p.flush(120)


def baseline(bootstrap: str, src: str, dst: str, n: int, partitions: int) -> float:
    """consume -> filter + transform -> produce, in one Python process, as fast as it goes."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-baseline",
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(src, p, 0) for p in range(partitions)])
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                  "partitioner": "murmur2_random"})
    seen = 0
    start = time.perf_counter()
    while seen < n:
        for m in c.consume(10000, 1.0):
            if m.error():
                continue
            seen += 1
            v = m.value()
            if keep(v):
                while True:
                    try:
                        p.produce(dst, key=m.key(), value=transform(v), timestamp=m.timestamp()[1])
                        break
                    except BufferError:
                        p.poll(0.05)
        p.poll(0)
    p.flush(120)
    c.close()
    return time.perf_counter() - start


def kspark_run(bootstrap: str, src: str, dst: str, spark, state_dir: str) -> float:
    b = StreamsBuilder()
    (b.stream(src, key_serde=Serdes.ByteArray(), value_serde=Serdes.ByteArray())
      .filter(lambda k, v: keep(v)).map_values(transform)
      .to(dst, value_serde=Serdes.ByteArray()))
    streams = KafkaStreams(b.build(), {
        "application.id": f"bench-{int(time.time())}", "bootstrap.servers": bootstrap,
        "autostop.at": "eol", "state.dir": state_dir, "max.offsets.per.trigger": 500_000,
        "producer.linger.ms": 20, "producer.batch.num.messages": 10000}, spark=spark)
    start = time.perf_counter()
    streams.start()
    streams.await_termination()
    elapsed = time.perf_counter() - start
    streams.close()
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=2)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kspark-bench-")
    broker = LocalBroker(os.path.join(work, "broker"), port=free_port(), heap="1g")
    bootstrap = broker.start()
    try:
        admin = Admin(bootstrap)
        admin.create_topics({"bench-in": args.partitions, "bench-out-base": args.partitions,
                             "bench-out-kspark": args.partitions, "warm-in": args.partitions,
                             "warm-out": args.partitions})
        produce(bootstrap, "warm-in", 10_000)
        t = time.perf_counter()
        produce(bootstrap, "bench-in", args.records)
        print(f"loaded {args.records} records of 100 bytes in {time.perf_counter() - t:.1f}s",
              flush=True)
        spark = spark_session({"spark.master": f"local[{args.partitions}]",
                               "spark.ui.enabled": "false"})
        base = baseline(bootstrap, "bench-in", "bench-out-base", args.records, args.partitions)
        warm = kspark_run(bootstrap, "warm-in", "warm-out", spark, os.path.join(work, "warm"))
        ks = kspark_run(bootstrap, "bench-in", "bench-out-kspark", spark,
                        os.path.join(work, "state"))
        n = args.records
        print(f"kspark warm-up query over 10,000 records (Python workers start): {warm:7.1f}s")
        print(f"baseline (confluent-kafka loop, 1 process): {base:7.1f}s  {n / base:10,.0f} records/s")
        print(f"kspark on Spark local[{args.partitions}] (AvailableNow, warm session, incl. query start): "
              f"{ks:7.1f}s  {n / ks:10,.0f} records/s")
        print(f"ratio kspark / baseline throughput: {base / ks:.2f}")
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
