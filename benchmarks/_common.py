"""What the benchmarks share: a throwaway local broker, producing, a baseline consume loop,
and timing a kspark application."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator

from confluent_kafka import Consumer, Message, Producer, TopicPartition

from kspark import KafkaStreams
from kspark._kafka.admin import Admin
from kspark._local.broker import LocalBroker, free_port


@contextlib.contextmanager
def local_broker(topics: list[str], partitions: int) -> Iterator[tuple[str, str]]:
    """A fresh broker with ``topics`` created; yields (bootstrap, work directory)."""
    work = tempfile.mkdtemp(prefix="kspark-bench-")
    broker = LocalBroker(os.path.join(work, "broker"), port=free_port(), heap="1g")
    bootstrap = broker.start()
    try:
        Admin(bootstrap).create_topics({t: partitions for t in topics})
        yield bootstrap, work
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def producer(bootstrap: str, **extra: object) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                     "partitioner": "murmur2_random", **extra})


def send(p: Producer, topic: str, key: bytes, value: bytes, timestamp: int | None = None) -> None:
    """Produce, waiting for room when the local queue is full."""
    kwargs = {} if timestamp is None else {"timestamp": timestamp}
    while True:
        try:
            p.produce(topic, key=key, value=value, **kwargs)
            return
        except BufferError:
            p.poll(0.05)


def produce(bootstrap: str, topic: str, records: Iterator[tuple[bytes, bytes]], **extra) -> None:
    """Write ``(key, value)`` records with increasing timestamps."""
    p = producer(bootstrap, **extra)
    for i, (key, value) in enumerate(records):
        send(p, topic, key, value, 1_700_000_000_000 + i)
        if i % 100_000 == 0:
            p.poll(0)
    p.flush(120)


def consume_loop(bootstrap: str, src: str, partitions: int, n: int,
                 handle: Callable[[Producer, Message], None]) -> float:
    """The baseline: consume ``n`` records of ``src`` from the start in one process, calling
    ``handle(producer, message)`` on each; returns the seconds taken (incl. the final flush)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time_ns()}",
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(src, p, 0) for p in range(partitions)])
    p = producer(bootstrap)
    seen, start = 0, time.perf_counter()
    while seen < n:
        for m in c.consume(10000, 1.0):
            if m.error():
                continue
            seen += 1
            handle(p, m)
        p.poll(0)
    p.flush(120)
    c.close()
    return time.perf_counter() - start


def timed_run(topology, config: dict, spark) -> float:
    """Seconds from ``start()`` until an ``autostop.at=eol`` application has stopped."""
    streams = KafkaStreams(topology, {"autostop.at": "eol", **config}, spark=spark)
    start = time.perf_counter()
    streams.start()
    streams.await_termination()
    elapsed = time.perf_counter() - start
    streams.close()
    return elapsed
