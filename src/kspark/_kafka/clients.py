"""Consumer and producer plumbing used inside tasks: read an offset range, write with a
task's producer."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kspark._engine.collector import RecordCollector
from kspark._engine.partitioner import default_partition
from kspark._kafka.factory import errors_of, new_consumer, new_producer
from kspark._kafka.security_errors import authorization_for, check_client, classify
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._worker import registry
from kspark.errors import SinkWriteError, SourceReadError

__all__ = ["read_range", "TaskProducer", "task_producer", "group_reader", "commit_offsets",
           "committed_offsets", "check_client_configs"]

log = logging.getLogger("kspark")


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
    # Restores read with a consumer of their own; a range that ends at a log end leaves a
    # fetch parked there for fetch.wait.max.ms, which the next range's fetch on the same
    # connection waits behind: a range reader knows what it reads and never needs to wait.
    conf = settings.conf(kind, "restorer" if kind == "restore.consumer" else "reader",
                         dict(extra or {}), {"fetch.max.bytes": 52428800,
                                             "auto.offset.reset": "earliest",
                                             "fetch.wait.max.ms": 10})
    conf.update({"group.id": f"{settings.app_id}-kspark-reader",
                 "enable.auto.commit": False, "enable.auto.offset.store": False,
                 "isolation.level": "read_committed", "enable.partition.eof": True})
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
        if position < end and time.monotonic() - last_progress > timeout_ms / 1000:
            check_client(settings, consumer, last_progress)  # a refused login, a bad CA
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
                                        "GROUP": (f"{settings.app_id}-kspark-reader",
                                                  "DESCRIBE", False)})
            if denied is not None:
                raise denied
            raise SourceReadError(f"reading topic {topic!r} partition {partition} at "
                                  f"offset {position} failed: {err.str()}")
    return batch, position, bool(msgs)


def _position(consumer: Consumer, topic: str, partition: int, default: int) -> int:
    pos = consumer.position([TopicPartition(topic, partition)])[0].offset
    return pos if pos >= 0 else default


_ADD_PARTITION_DENIED = re.compile(
    r'Failed to add partition "([^"]+)" \[\d+\] to transaction: (.*[Aa]uthorization failed)')


class TaskProducer(RecordCollector):
    """A task's own producer; every delivery failure fails the task at :meth:`flush`."""

    def __init__(self, where: ClientSettings | str, client_id: str,
                 extra: Mapping[str, Any] | None = None,
                 flush_timeout_s: float = 120.0, skip_failed: bool = False):
        self.settings = as_settings(where)
        conf = self.settings.conf("producer", None, {
            "client.id": client_id, "enable.idempotence": True, "acks": "all",
            "partitioner": "murmur2_random",
            # Only failed deliveries call back: no Python call per record written.
            "delivery.report.only.error": True, "on_delivery": self._on_delivery,
            **(extra or {})}, {"linger.ms": 5})
        self.client_id = client_id
        self._producer = new_producer(conf, client_id)
        self._errors: list[str] = []
        self._failed: list[tuple[Any, Any]] = []
        self.fatal_error: Any = None  # a fatal client error (a fenced transactional producer)
        self._flush_timeout_s = flush_timeout_s
        self._skip_failed = skip_failed  # production.exception.handler=log_and_continue
        self.sent = 0
        self.skipped = 0

    @property
    def client(self) -> Producer:
        """The confluent-kafka producer underneath (a task's transactions drive it)."""
        return self._producer

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:  # no calls here: librdkafka may be raising an error meanwhile
            self._failed.append((err, msg))

    def send(self, topic, key, value, timestamp, headers, partition) -> None:
        produce = self._producer.produce
        while True:
            try:
                if partition is None and not headers:
                    produce(topic, value, key, timestamp=timestamp)
                else:
                    produce(topic, value, key, partition=-1 if partition is None else partition,
                            timestamp=timestamp, headers=list(headers) if headers else None)
                break
            except BufferError:
                self._producer.poll(0.1)
            except KafkaException as e:  # refused (too large), or a fatal state (fenced)
                err = e.args[0]
                denied = self.denied(err, topic)
                if denied is not None:
                    raise denied from None
                if err.fatal():
                    self.fatal_error = err
                size = len(key or b"") + len(value or b"")
                hint = (" Raise producer.message.max.bytes (and the topic's max.message.bytes), "
                        "or set production.exception.handler=log_and_continue to skip such "
                        "records" if err.code() == KafkaError.MSG_SIZE_TOO_LARGE else "")
                error = SinkWriteError(
                    f"producer {self.client_id!r} cannot write a record of {size} bytes to "
                    f"topic {topic!r} partition {self._partition_of(topic, key, partition)}: "
                    f"{err.str()}.{hint}")
                error.fatal = err.fatal()
                raise error from None
        self.sent += 1
        if self.sent % 10000 == 0:
            self._producer.poll(0)

    def _partition_of(self, topic: str, key: bytes | None, partition: int | None) -> str:
        """The partition a refused record was bound for (asked of the cluster; error path only)."""
        if partition is not None:
            return str(partition)
        if key is None:
            return "(any: null key)"
        try:
            n = len(self._producer.list_topics(topic, timeout=5).topics[topic].partitions)
            return str(default_partition(key, n))
        except Exception:  # noqa: BLE001 - the message is still useful without it
            return "(unknown)"

    def denied(self, err: Any, topic: str | None = None) -> Exception | None:
        """The AuthorizationError a failure means (WRITE on the topic, IDEMPOTENT_WRITE on
        the cluster, WRITE on the transactional id), or a refused login or certificate."""
        code, detail = err.code(), err.str()
        if code == KafkaError._FATAL:  # the cause is the client's error behind the fatal one
            record = errors_of(self._producer)
            if record is not None and record.errors:
                code, detail = record.errors[-1][1], record.errors[-1][2]
        txn = getattr(self, "transactional_id", None) or "(none)"
        error = authorization_for(self.settings, code, detail, {
            "TOPIC": (topic or "?", "WRITE", False), "TRANSACTIONAL_ID": (txn, "WRITE", False),
            "CLUSTER": ("kafka-cluster", "IDEMPOTENT_WRITE", False)})
        return error or classify(self.settings, code, detail)

    def logged_denial(self) -> Exception | None:
        """An authorization failure librdkafka only logged (a transaction that could not add
        a partition it writes to), as an AuthorizationError naming the topic."""
        record = errors_of(self._producer)
        for line in reversed(record.log_lines if record is not None else ()):
            m = _ADD_PARTITION_DENIED.search(line)
            if m:
                return authorization_for(self.settings, KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                         m.group(2), {"TOPIC": (m.group(1), "WRITE", False)})
        return None

    def flush(self) -> None:
        started = time.monotonic()
        remaining = self._producer.flush(min(1.0, self._flush_timeout_s))
        while remaining and time.monotonic() - started < self._flush_timeout_s:
            # in steps: a refused login or certificate is named at once, not after the timeout
            check_client(self.settings, self._producer, started - 1)
            if self._failed and any(self.denied(e, m.topic()) for e, m in self._failed):
                break
            remaining = self._producer.flush(min(1.0, started + self._flush_timeout_s
                                                 - time.monotonic()))
        if remaining:
            check_client(self.settings, self._producer, started - 1)
        for err, msg in self._failed:
            denied = self.denied(err, msg.topic())
            if denied is not None:
                self._failed = []
                raise denied
            if err.fatal() and self.fatal_error is None:
                self.fatal_error = err
            where = f"topic {msg.topic()!r} partition {msg.partition()}: {err.str()}"
            if self._skip_failed and not err.fatal():
                self.skipped += 1
                log.warning("producer %r: skips a record the broker refused (%s); "
                            "production.exception.handler=log_and_continue", self.client_id, where)
                continue
            self._errors.append(where)
        self._failed = []
        if remaining:
            self._errors.append(f"{remaining} record(s) still undelivered after "
                                f"{self._flush_timeout_s:g}s")
        if self._errors:
            errors, self._errors = self._errors, []
            raise SinkWriteError(
                f"producer {self.client_id!r} failed to write {len(errors)} record(s), first: "
                f"{errors[0]}. The task fails so that Spark retries it; nothing is dropped."
            )


def task_producer(where: ClientSettings | str, client_id: str,
                  extra: Mapping[str, Any] | None = None,
                  skip_failed: bool = False) -> TaskProducer:
    """The producer of one task, created once per Python worker process and reused."""
    settings = as_settings(where)
    key = ("", settings, client_id, tuple(sorted((extra or {}).items())), skip_failed)
    return registry().get("producers", key, lambda: TaskProducer(settings, client_id, extra,
                                                                 skip_failed=skip_failed))


def group_reader(where: ClientSettings | str, app_id: str) -> Consumer:
    """A consumer of the group ``app_id`` (never subscribed), one per worker process: reads
    committed markers (read_committed, so a pending transaction's offsets are waited for)
    and gives the group metadata that transactions commit offsets with."""
    settings = as_settings(where)
    return registry().get("groups", (app_id, settings), lambda: new_consumer(settings.conf(
        "consumer", "group", {"group.id": app_id, "enable.auto.commit": False,
                              "isolation.level": "read_committed"}), f"group {app_id}"))


def commit_offsets(where: ClientSettings | str, app_id: str,
                   offsets: Mapping[tuple[str, int], int],
                   marker: tuple[tuple[str, int], str] | None = None) -> None:
    """Commit a task's input offsets to the group ``app_id`` (at-least-once: after the
    batch's output is written; exactly-once commits them in the task's transaction), and
    with them ``marker``: (its topic-partition, the encoded marker with the task's progress)
    as offset metadata, in the same request."""
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    if marker is not None:
        tps.append(TopicPartition(*marker[0], 0, metadata=marker[1]))
    if not tps:
        return
    settings = as_settings(where)
    try:
        group_reader(settings, app_id).commit(offsets=tps, asynchronous=False)
    except KafkaException as e:
        err = e.args[0]
        denied = authorization_for(settings, err.code(), err.str(),
                                   {"GROUP": (app_id, "READ", False),
                                    "TOPIC": (tps[0].topic, "READ", False)})
        if denied is not None:
            raise denied from None
        raise SinkWriteError(f"committing input offsets {dict(offsets)} to consumer group "
                             f"{app_id!r} failed: {e.args[0].str()}") from None


def committed_offsets(where: ClientSettings | str, app_id: str,
                      partitions: list[tuple[str, int]],
                      timeout_s: float = 30.0, stable: bool = True) -> dict[tuple[str, int], int]:
    """The offsets the group ``app_id`` has committed for ``partitions`` (those it has).

    ``stable``: wait for an open transaction that commits offsets of the group to end (else
    the offsets before it are returned at once)."""
    settings = as_settings(where)
    c = new_consumer(settings.conf("consumer", "offsets", {
        "group.id": app_id, "enable.auto.commit": False,
        "isolation.level": "read_committed" if stable else "read_uncommitted"}),
        f"group {app_id}")
    started = time.monotonic()
    try:
        found = c.committed([TopicPartition(t, p) for t, p in partitions], timeout=timeout_s)
    except KafkaException as e:
        err = e.args[0]
        denied = authorization_for(settings, err.code(), err.str(),
                                   {"GROUP": (app_id, "DESCRIBE", False)})
        if denied is not None:
            raise denied from None
        check_client(settings, c, started)
        raise
    finally:
        c.close()
    return {(tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0}


def check_client_configs(config: Mapping[str, Any]) -> None:
    """Build each kind of client once from the application's settings, so a bad librdkafka
    setting fails at start, naming the keys, not in the first task."""
    from confluent_kafka.admin import AdminClient

    from kspark.errors import ConfigError

    settings = as_settings(config)
    for kind, make, owned in (("producer", Producer, {}),
                              ("consumer", Consumer, {"group.id": f"{settings.app_id}-check"}),
                              ("restore.consumer", Consumer,
                               {"group.id": f"{settings.app_id}-check"}),
                              ("admin", AdminClient, {})):
        conf = settings.conf(kind, "config-check", owned)
        try:
            client = make({**conf, "logger": _Silent()})
        except (KafkaException, ValueError, TypeError) as e:
            detail = e.args[0].str() if isinstance(e, KafkaException) else str(e)
            keys = sorted(k for k in config if k.startswith(f"{kind}.") or
                          k in dict(settings.common))
            raise ConfigError(f"invalid Kafka client setting for kspark's {kind} clients "
                              f"among {keys}: {detail}") from None
        if isinstance(client, Consumer):
            client.close()


class _Silent:
    """A logger for throw-away clients built only to validate settings."""

    def log(self, *args: object, **kwargs: object) -> None:
        pass
