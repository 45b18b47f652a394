"""Exactly-once for one task (KIP-129, ``exactly_once_v2``): a transactional producer and
the task's marker in the application's consumer group.

Per task and micro-batch one transaction holds the task's output and changelog records,
its input offsets (committed to the group ``application.id``, so Kafka's tooling shows the
application's lag) and its *marker*: a committed offset, in the same group, on the task's
own partition of the progress topic, whose metadata says which batch the task finished
and carries its progress (stream time, partition times, punctuation schedule) after that
batch and before it. A replayed batch finds the marker committed and writes nothing.

``transactional.id`` is ``<application.id>-<task id>``: each new attempt of a task fences
every older one (``init_transactions``), whose open transaction is aborted by the broker.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kspark._kafka import QuietLogger
from kspark._kafka.clients import TaskProducer
from kspark.errors import (
    TaskFencedError,
    TransactionTimeoutError,
    TransactionsUnavailableError,
)

__all__ = ["Marker", "TaskTransactions", "task_transactions", "progress_topic",
           "encode_marker", "decode_marker"]

log = logging.getLogger("kspark")
_PREFIX = "kspark1:"


def progress_topic(app_id: str) -> str:
    """The topic whose partitions (one per task) carry the tasks' markers (no records)."""
    return f"{app_id}-kspark-progress"


@dataclass(frozen=True)
class Marker:
    """What a task committed last: the batch (Spark query id, batch id), its progress after
    that batch and the progress the batch started from."""

    query: str
    batch: int
    progress: dict[str, Any] | None
    previous: dict[str, Any] | None
    producer: str = ""  # the producer instance that committed it

    def covers(self, batch: tuple[str, int] | None) -> bool:
        """True if ``batch`` of the same query is already committed (a replay)."""
        return batch is not None and self.query == batch[0] and self.batch >= batch[1]


def encode_marker(m: Marker) -> str:
    """Offset-commit metadata: compressed JSON (the broker's limit is 4096 bytes by default)."""
    raw = json.dumps({"q": m.query, "b": m.batch, "p": m.progress, "v": m.previous,
                      "i": m.producer},
                     separators=(",", ":")).encode()
    return _PREFIX + base64.b64encode(zlib.compress(raw, 6)).decode()


def decode_marker(metadata: str | None) -> Marker | None:
    if not metadata or not metadata.startswith(_PREFIX):
        return None
    d = json.loads(zlib.decompress(base64.b64decode(metadata[len(_PREFIX):])))
    return Marker(d["q"], int(d["b"]), d["p"], d["v"], d.get("i", ""))


class TaskTransactions:
    """One task's transactional producer and marker, kept per worker process.

    Example (needs a broker, so not run)::

        tx = task_transactions(bootstrap, "app", "1_0", ("app-kspark-progress", 3), {}, {})
        marker = tx.begin()               # fences older attempts; the last committed batch
        tx.producer.send("out", b"k", b"v", 0, (), None)
        tx.commit(Marker("query", 7, progress, previous, tx.instance), {("in", 0): 1234})
    """

    def __init__(self, bootstrap: str, app_id: str, task_id: str, marker_tp: tuple[str, int],
                 producer_conf: Mapping[str, Any], consumer_conf: Mapping[str, Any],
                 timeout_s: float = 60.0):
        self.app_id, self.task_id, self.marker_tp = app_id, task_id, marker_tp
        self.transactional_id = f"{app_id}-{task_id}"
        conf = dict(producer_conf)
        conf["transactional.id"] = self.transactional_id
        self.timeout_ms = int(conf.setdefault("transaction.timeout.ms", 60000))
        self.producer = TaskProducer(bootstrap, f"{app_id}-{task_id}-producer", conf)
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": app_id, "enable.auto.commit": False,
            "isolation.level": "read_committed", "logger": QuietLogger(), **consumer_conf})
        self._timeout_s = timeout_s
        self.instance = uuid.uuid4().hex
        self._initialized = False
        self._committed = False
        self._began = 0.0
        self.fenced = False

    def begin(self) -> Marker | None:
        """Fence older attempts of this task (once per producer), read the task's marker from
        the group, and begin the batch's transaction. Returns the marker (None: no batch yet)."""
        if not self._initialized:
            self._call("init_transactions", self._timeout_s)
            self._initialized = True
        tp = TopicPartition(*self.marker_tp)
        try:
            (committed,) = self._consumer.committed([tp], timeout=self._timeout_s)
        except KafkaException as e:
            raise TransactionsUnavailableError(
                f"task {self.task_id}: cannot read its committed marker from consumer group "
                f"{self.app_id!r} ({e.args[0].str()}); is the broker up?") from None
        marker = decode_marker(committed.metadata)
        if marker is not None and marker.producer != self.instance and self._committed:
            # Another worker committed this task since we did, so its init_transactions
            # fenced this producer: make way for a new one (which fences that worker).
            raise _StaleProducer()
        self._call("begin_transaction")
        self._began = time.monotonic()
        return marker

    def commit(self, marker: Marker, input_offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit everything sent since :meth:`begin`, the input offsets and the marker in
        one transaction."""
        self.producer.flush()  # raises SinkWriteError (naming topic and partition)
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(input_offsets.items())]
        offsets.append(TopicPartition(*self.marker_tp, 0, metadata=encode_marker(marker)))
        metadata = self._consumer.consumer_group_metadata()
        self._call("send_offsets_to_transaction", offsets, metadata, self._timeout_s)
        self._call("commit_transaction", self._timeout_s)
        self._committed = True

    def fail(self, error: BaseException) -> BaseException:
        """Abort the batch's transaction after ``error``; returns what the error means: the
        task was fenced (or its transaction timed out) if the producer is in that state,
        else ``error`` itself."""
        if isinstance(error, (TaskFencedError, TransactionTimeoutError)) or not self._initialized:
            return error
        try:
            self.producer._producer.abort_transaction(self._timeout_s)
        except KafkaException as e:
            err = e.args[0]
            if err.fatal():
                return self._explain("produce", err)
            log.warning("task %s: aborting its transaction failed (%s); the broker aborts it "
                        "when the next attempt starts", self.task_id, err.str())
        return error

    def close(self) -> None:
        self._consumer.close()
        self.producer._producer.flush(0)

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self.producer._producer, name)(*args)
        except KafkaException as e:
            raise self._explain(name, e.args[0]) from None

    def _explain(self, step: str, err: KafkaError) -> Exception:
        open_ms = (time.monotonic() - self._began) * 1000 if self._began else 0
        if err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                          KafkaError.INVALID_PRODUCER_EPOCH) or err.fatal():
            self.fenced = True
            _forget(self)
            if open_ms > self.timeout_ms:
                return TransactionTimeoutError(
                    f"task {self.task_id}: its transaction was open for {open_ms:.0f} ms, longer "
                    f"than transaction.timeout.ms={self.timeout_ms}, so the broker aborted it "
                    f"({err.str()}). Lower max.offsets.per.trigger so a micro-batch takes less "
                    "time, or raise producer.transaction.timeout.ms (up to the broker's "
                    "transaction.max.timeout.ms)")
            return TaskFencedError(
                f"task {self.task_id} was fenced during {step}: a newer attempt of the same "
                f"task (transactional.id {self.transactional_id!r}) started, and its "
                f"transaction is the one that counts; this attempt's writes are aborted "
                f"({err.str()})")
        if step == "init_transactions" or err.code() in (
                KafkaError._TIMED_OUT, KafkaError.COORDINATOR_NOT_AVAILABLE,
                KafkaError.NOT_COORDINATOR):
            return TransactionsUnavailableError(
                f"task {self.task_id}: the broker did not complete {step} ({err.str()}). "
                "Transactions need the transaction coordinator: check that the brokers' "
                "transaction.state.log.replication.factor and transaction.state.log.min.isr "
                "are at most the number of live brokers")
        return TransactionsUnavailableError(f"task {self.task_id}: {step} failed: {err.str()}")


class _StaleProducer(Exception):
    """This worker's producer for the task was fenced by another worker's."""


_TXNS: dict[tuple, TaskTransactions] = {}


def task_transactions(bootstrap: str, app_id: str, task_id: str, marker_tp: tuple[str, int],
                      producer_conf: Mapping[str, Any], consumer_conf: Mapping[str, Any]
                      ) -> tuple[TaskTransactions, Marker | None]:
    """The task's transactional producer (one per worker process; replaced when another
    worker's fenced it) with its transaction begun, and the task's last marker."""
    key = (bootstrap, app_id, task_id, marker_tp, tuple(sorted(producer_conf.items())))
    for _ in range(2):
        tx = _TXNS.get(key)
        if tx is None or tx.fenced:
            tx = _TXNS[key] = TaskTransactions(bootstrap, app_id, task_id, marker_tp,
                                               producer_conf, consumer_conf)
        try:
            return tx, tx.begin()
        except _StaleProducer:
            tx.close()
            del _TXNS[key]
    raise AssertionError("a new producer cannot be stale")


def _forget(tx: TaskTransactions) -> None:
    for key, value in list(_TXNS.items()):
        if value is tx:
            del _TXNS[key]
