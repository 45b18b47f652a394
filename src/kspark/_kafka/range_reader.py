"""Read an offset range of one topic-partition, read_committed, with a consumer each worker
process keeps from range to range.

Example (needs a broker, so not run as a doctest)::

    for batch in read_range(config, "orders", 0, start=100, end=200, timeout_ms=60_000):
        for message in batch:
            print(message.offset(), message.value())
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kspark._graph.resources import reader_group
from kspark._kafka.factory import new_consumer
from kspark._kafka.retry import Stall, transient
from kspark._kafka.security_errors import authorization_for, check_client
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._worker import registry
from kspark.errors import SourceReadError

__all__ = ["read_range"]

# what librdkafka's error callback says while the brokers are away (restarting, down)
_AWAY = ("brokers are down", "Connection refused", "Disconnected", "timed out", "Timed out",
         "Connection reset")


def _range_reader(conf: Mapping[str, Any]) -> tuple[Consumer, list[str]]:
    """This worker process's range-reading consumer for ``conf`` and its list of client
    errors: reused from range to range (a new consumer costs a connection and a metadata
    round trip per range)."""
    key = ("", *sorted((k, repr(v)) for k, v in conf.items()))  # shared by applications

    def make() -> tuple[Consumer, list[str]]:
        errors: list[str] = []
        consumer = new_consumer({**conf, "error_cb": lambda err: errors.append(err.str())},
                                "range-reader")
        return consumer, errors

    return registry().get("range_readers", key, make)


def _drop_range_reader(consumer: Consumer) -> None:
    for key, (c, _) in registry().items("range_readers"):
        if c is consumer:
            registry().pop("range_readers", key)
    consumer.close()


def _reader_conf(settings: ClientSettings, kind: str,
                 extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings of a range reader of ``kind`` (``consumer`` or ``restore.consumer``)."""
    # Restores read with a consumer of their own; a range that ends at a log end leaves a
    # fetch parked there for fetch.wait.max.ms, which the next range's fetch on the same
    # connection waits behind: a range reader knows what it reads and never needs to wait.
    conf = settings.conf(kind, "restorer" if kind == "restore.consumer" else "reader",
                         dict(extra or {}), {"fetch.max.bytes": 52428800,
                                             "auto.offset.reset": "earliest",
                                             "fetch.wait.max.ms": 10})
    conf.update({"group.id": reader_group(settings.app_id),
                 "enable.auto.commit": False, "enable.auto.offset.store": False,
                 "isolation.level": "read_committed", "enable.partition.eof": True})
    return conf


def read_range(where: ClientSettings | str, topic: str, partition: int, start: int, end: int,
               timeout_ms: int, extra: Mapping[str, Any] | None = None,
               batch_size: int = 5000, retry_after_s: float = 10.0,
               kind: str = "consumer") -> Iterator[list]:
    """Yield lists of messages of ``topic``/``partition`` with ``start <= offset < end``,
    read_committed.

    Control records and aborted records occupy offsets but are never returned, so the read
    also ends when the consumer's position reaches ``end``. A consumer that makes no progress
    for ``retry_after_s`` is replaced by a new one at the same position; no progress at all for
    ``timeout_ms`` raises SourceReadError naming the topic-partition and the last client error.
    The consumer stays with the worker process for the next range (unassigned in between).
    ``where``: the client settings (``kind`` picks the per-kind overrides: ``consumer`` or
    ``restore.consumer``); ``extra``: settings of this read over them. The consumer is in
    the group ``<application.id>-kspark-reader`` but never joins it nor commits.
    """
    if start >= end:
        return
    settings = as_settings(where)
    conf = _reader_conf(settings, kind, extra)
    position, last_progress = start, time.monotonic()
    while position < end:
        consumer, errors = _range_reader(conf)
        errors.clear()
        healthy = False
        try:
            consumer.assign([TopicPartition(topic, partition, position)])
            attempt_start = time.monotonic()
            while (position < end
                   and time.monotonic() - max(attempt_start, last_progress) < retry_after_s):
                batch, position, progressed = _consume_some(consumer, topic, partition, position,
                                                            end, batch_size, settings)
                if progressed:
                    last_progress = time.monotonic()
                else:  # nothing came: a refused login or certificate fails the read at once
                    check_client(settings, consumer, attempt_start)
                if batch:
                    try:
                        yield batch
                    except GeneratorExit:  # the caller has read enough: the consumer is fine
                        healthy = True
                        raise
            healthy = position >= end
        finally:
            if healthy:
                consumer.unassign()  # no prefetching for a range nobody reads
            else:  # stuck, failed or abandoned: the next attempt starts from a new consumer
                _drop_range_reader(consumer)
        bound_ms = _stall_bound_ms(settings, errors, timeout_ms)
        if position < end and time.monotonic() - last_progress > bound_ms / 1000:
            _fail_stalled(settings, consumer, errors, last_progress, topic, partition,
                          position, end, bound_ms)


def _stall_bound_ms(settings: ClientSettings, errors: list[str], timeout_ms: int) -> int:
    """How long a read may make no progress: ``source.read.timeout.ms``, or, while the
    client reports the brokers away (a restart), ``task.timeout.ms`` if that is longer."""
    away = any(w in e for e in errors[-3:] for w in _AWAY)
    return max(timeout_ms, settings.task_timeout_ms) if away else timeout_ms


def _fail_stalled(settings: ClientSettings, consumer: Consumer, errors: list[str],
                  last_progress: float, topic: str, partition: int, position: int, end: int,
                  timeout_ms: int) -> None:
    """No progress for ``timeout_ms``: raise what the client says (a refused login, a bad
    CA), else a SourceReadError naming the topic-partition and the last client error."""
    check_client(settings, consumer, last_progress)
    if timeout_ms == settings.task_timeout_ms and timeout_ms > 0 and errors:
        stall = Stall(f"reading topic {topic!r} partition {partition} (at offset {position})",
                      settings.bootstrap, timeout_ms)
        stall.began = last_progress
        raise stall.timeout_error(errors[-1])
    last_error = f"; last client error: {errors[-1]}" if errors else ""
    raise SourceReadError(
        f"no progress reading topic {topic!r} partition {partition} for "
        f"{timeout_ms} ms (at offset {position}, planned end {end}){last_error}; is the "
        "broker up? Raise source.read.timeout.ms if it is only slow"
    )


def _consume_some(consumer: Consumer, topic: str, partition: int, position: int, end: int,
                  batch_size: int, settings: ClientSettings) -> tuple[list, int, bool]:
    """One poll: the messages below ``end``, the new position, and whether anything arrived."""
    # librdkafka returns when it has num_messages or the timeout passed: ask for no more
    # than the range holds, so a short range returns as soon as its records are in
    msgs = consumer.consume(num_messages=max(1, min(batch_size, end - position)), timeout=0.05)
    batch = []
    for m in msgs:
        err = m.error()
        if err is None:
            offset = m.offset()
            if offset >= end:
                position = end
                break
            batch.append(m)
            position = offset + 1
        else:
            if err.code() == KafkaError._PARTITION_EOF:
                position = max(position, _position(consumer, topic, partition, position))
                continue
            denied = authorization_for(settings, err.code(), err.str(),
                                       {"TOPIC": (topic, "READ", False),
                                        "GROUP": (reader_group(settings.app_id),
                                                  "DESCRIBE", False)})
            if denied is not None:
                raise denied
            if transient(err):  # a broker restarting: the consumer reconnects by itself
                continue
            raise SourceReadError(f"reading topic {topic!r} partition {partition} at "
                                  f"offset {position} failed: {err.str()}")
    return batch, position, bool(msgs)


def _position(consumer: Consumer, topic: str, partition: int, default: int) -> int:
    pos = consumer.position([TopicPartition(topic, partition)])[0].offset
    return pos if pos >= 0 else default
