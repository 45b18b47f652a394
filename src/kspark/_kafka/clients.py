"""Consumer and producer plumbing used inside tasks: read an offset range, write with a task's producer."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kspark._engine.collector import RecordCollector
from kspark.errors import SinkWriteError, SourceReadError

__all__ = ["read_range", "TaskProducer", "task_producer"]


class _Quiet:
    def log(self, *args: object, **kwargs: object) -> None:
        pass


def read_range(bootstrap: str, topic: str, partition: int, start: int, end: int,
               timeout_ms: int, extra: Mapping[str, Any] | None = None,
               batch_size: int = 5000) -> Iterator[list]:
    """Yield lists of messages of ``topic``/``partition`` with ``start <= offset < end``, read_committed.

    Control records and aborted records occupy offsets but are never returned, so the read
    also ends when the consumer's position reaches ``end``. No progress for ``timeout_ms``
    raises SourceReadError naming the topic-partition.
    """
    if start >= end:
        return
    conf = {"bootstrap.servers": bootstrap, "group.id": "kspark-range-reader",
            "enable.auto.commit": False, "enable.auto.offset.store": False,
            "isolation.level": "read_committed", "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 52428800, "logger": _Quiet()}
    conf.update(extra or {})
    consumer = Consumer(conf)
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        position, last_progress = start, time.monotonic()
        while position < end:
            msgs = consumer.consume(num_messages=batch_size, timeout=0.5)
            batch = []
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        position = max(position, _position(consumer, topic, partition, position))
                        continue
                    raise SourceReadError(f"reading topic {topic!r} partition {partition} at "
                                          f"offset {position} failed: {err.str()}")
                if m.offset() >= end:
                    position = end
                    break
                batch.append(m)
                position = m.offset() + 1
            if batch:
                last_progress = time.monotonic()
                yield batch
            elif msgs:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > timeout_ms / 1000:
                raise SourceReadError(
                    f"no progress reading topic {topic!r} partition {partition} for "
                    f"{timeout_ms} ms (at offset {position}, planned end {end}); is the broker "
                    "up? Raise source.read.timeout.ms if it is only slow"
                )
    finally:
        consumer.close()


def _position(consumer: Consumer, topic: str, partition: int, default: int) -> int:
    pos = consumer.position([TopicPartition(topic, partition)])[0].offset
    return pos if pos >= 0 else default


class TaskProducer(RecordCollector):
    """A task's own producer; every delivery failure fails the task at :meth:`flush`."""

    def __init__(self, bootstrap: str, client_id: str, extra: Mapping[str, Any] | None = None,
                 flush_timeout_s: float = 120.0):
        conf = {"bootstrap.servers": bootstrap, "client.id": client_id,
                "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                "partitioner": "murmur2_random", "logger": _Quiet()}
        conf.update(extra or {})
        self.client_id = client_id
        self._producer = Producer(conf)
        self._errors: list[str] = []
        self._flush_timeout_s = flush_timeout_s
        self.sent = 0

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self._errors.append(f"topic {msg.topic()!r} partition {msg.partition()}: {err.str()}")

    def send(self, topic, key, value, timestamp, headers, partition) -> None:
        kwargs: dict[str, Any] = {"key": key, "value": value, "timestamp": timestamp,
                                  "on_delivery": self._on_delivery}
        if headers:
            kwargs["headers"] = list(headers)
        if partition is not None:
            kwargs["partition"] = partition
        while True:
            try:
                self._producer.produce(topic, **kwargs)
                break
            except BufferError:
                self._producer.poll(0.1)
        self.sent += 1
        if self.sent % 10000 == 0:
            self._producer.poll(0)

    def flush(self) -> None:
        remaining = self._producer.flush(self._flush_timeout_s)
        if remaining:
            self._errors.append(f"{remaining} record(s) still undelivered after "
                                f"{self._flush_timeout_s:g}s")
        if self._errors:
            errors, self._errors = self._errors, []
            raise SinkWriteError(
                f"producer {self.client_id!r} failed to write {len(errors)} record(s), first: "
                f"{errors[0]}. The task fails so that Spark retries it; nothing is dropped."
            )


_PRODUCERS: dict[tuple, TaskProducer] = {}


def task_producer(bootstrap: str, client_id: str, extra: Mapping[str, Any] | None = None) -> TaskProducer:
    """The producer of one task, created once per Python worker process and reused."""
    key = (bootstrap, client_id, tuple(sorted((extra or {}).items())))
    p = _PRODUCERS.get(key)
    if p is None:
        p = _PRODUCERS[key] = TaskProducer(bootstrap, client_id, extra)
    return p
