"""A task's own producer: idempotent, ``acks=all``, murmur2 partitioner; every delivery
failure fails the task at :meth:`TaskProducer.flush`, unless
``production.exception.handler=log_and_continue`` skips it.

Example (needs a broker, so not run as a doctest)::

    producer = task_producer(config, "app-0_1-producer")
    producer.send("out", b"key", b"value", 1_700_000_000_000, (), None)
    producer.flush()   # raises SinkWriteError if any record was refused
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from kspark._engine.collector import RecordCollector
from kspark._engine.partitioner import default_partition
from kspark._kafka.factory import errors_of, new_producer
from kspark._kafka.security_errors import authorization_for, check_client, classify
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._worker import registry
from kspark._kafka.retry import Stall, transient
from kspark.errors import RetriableSinkWriteError, SinkWriteError, TransientKafkaError

__all__ = ["TaskProducer", "task_producer"]

log = logging.getLogger("kspark")


_ADD_PARTITION_DENIED = re.compile(
    r'Failed to add partition "([^"]+)" \[\d+\] to transaction: (.*[Aa]uthorization failed)')


class TaskProducer(RecordCollector):
    """A task's own producer; every delivery failure fails the task at :meth:`flush`."""

    def __init__(self, where: ClientSettings | str, client_id: str,
                 extra: Mapping[str, Any] | None = None,
                 flush_timeout_s: float | None = None, skip_failed: bool = False):
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
        # a broker restart holds records back: wait as long as task.timeout.ms allows
        self._flush_timeout_s = (self.settings.task_timeout_ms / 1000
                                 if flush_timeout_s is None else flush_timeout_s)
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
        timestamp = timestamp or 0  # None (a suppress buffer's, as Java's null): now
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
                # a refusal that can go away by itself is Java's RetriableException: the
                # production exception handler may answer RETRY to it
                kind = RetriableSinkWriteError if err.retriable() and not err.fatal() \
                    else SinkWriteError
                error = kind(
                    f"producer {self.client_id!r} cannot write a record of {size} bytes to "
                    f"topic {topic!r} partition {self._partition_of(topic, key, partition)}: "
                    f"{err.str()}.{hint}")
                error.fatal = err.fatal()
                raise error from None
        self.sent += 1
        if self.sent % 10000 == 0:
            self._producer.poll(0)

    def send_many(self, topic, records) -> None:
        """As :meth:`send` for each ``(key, value, timestamp, headers, partition)``, with
        less done per record; a record the producer refuses goes through :meth:`send`,
        which names the failure (its SinkWriteError's ``index``: the records before it
        were sent)."""
        produce, poll = self._producer.produce, self._producer.poll
        for i, (key, value, timestamp, headers, partition) in enumerate(records):
            try:
                if partition is None and not headers:
                    produce(topic, value, key, timestamp=timestamp or 0)
                else:
                    produce(topic, value, key, partition=-1 if partition is None else partition,
                            timestamp=timestamp or 0, headers=list(headers) if headers else None)
            except (BufferError, KafkaException):
                try:
                    self.send(topic, key, value, timestamp, headers, partition)
                except SinkWriteError as e:
                    e.index = i  # type: ignore[attr-defined]  # the records before it went
                    raise
                continue
            self.sent += 1
            if self.sent % 10000 == 0:
                poll(0)

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
        stall = Stall(f"producer {self.client_id!r}: delivering its records",
                      self.settings.bootstrap, int(self._flush_timeout_s * 1000), 1000)
        remaining = self._producer.flush(min(1.0, self._flush_timeout_s))
        while remaining and not stall.expired():
            # in steps: a refused login or certificate is named at once, not after the timeout
            check_client(self.settings, self._producer, started - 1)
            if self._failed and any(self.denied(e, m.topic()) for e, m in self._failed):
                break
            stall.note(f"{remaining} record(s) not yet acknowledged")
            remaining = self._producer.flush(min(1.0, stall.remaining_s()))
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
            if transient(err) and not self._skip_failed:
                self._failed = []
                raise TransientKafkaError(
                    f"producer {self.client_id!r}: a record for {where} was not delivered while "
                    f"the cluster at {self.settings.bootstrap} recovered; the batch is "
                    "replayed from the last commit")
            if self._skip_failed and not err.fatal():
                self.skipped += 1
                log.warning("producer %r: skips a record the broker refused (%s); "
                            "production.exception.handler=log_and_continue", self.client_id, where)
                continue
            self._errors.append(where)
        self._failed = []
        if remaining:
            raise stall.timeout_error(f"{remaining} record(s) still undelivered")
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
