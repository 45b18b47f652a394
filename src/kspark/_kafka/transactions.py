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

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kspark._engine.documents import Invalid, check_progress, need_dict, need_int, need_str
from kspark._kafka.group_offsets import group_reader, renew_group_reader
from kspark._kafka.factory import errors_of
from kspark._kafka.retry import TRANSIENT_CODES, CallHungError, Stall, bounded_call, transient
from kspark._kafka.security_errors import authorization_for
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._kafka.task_producer import TaskProducer
from kspark._worker import registry
from kspark.errors import (
    CorruptStateError,
    AuthorizationError,
    KafkaSecurityError,
    TaskFencedError,
    TaskTimeoutError,
    TransactionTimeoutError,
    TransactionsUnavailableError,
    TransientKafkaError,
)

__all__ = ["Marker", "TaskTransactions", "task_transactions", "read_marker",
           "encode_marker", "decode_marker"]

log = logging.getLogger("kspark")
_PREFIX = "kspark1:"
_COORDINATOR_MOVING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                       KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError._TIMED_OUT)


_GRACE_S = 5.0  # beyond a call's own timeout, before it counts as hung
# the abort after the cluster did not answer for task.timeout.ms: the broker aborts the
# transaction anyway when the next attempt starts, so a full wait would only delay the error
_ABORT_AFTER_OUTAGE_S = 1.0


def _requires_abort(err: KafkaError) -> bool:
    return bool(err.txn_requires_abort())


@dataclass(frozen=True)
class Marker:
    """What a task committed last: the batch (Spark query id, batch id), its progress after
    that batch and the progress the batch started from."""

    query: str
    batch: int
    progress: dict[str, Any] | None
    previous: dict[str, Any] | None
    producer: str = ""  # the producer instance that committed it
    where: str = ""  # where it was committed: the host and state directory (see state_location)

    def covers(self, batch: tuple[str, int] | None) -> bool:
        """True if ``batch`` of the same query is already committed (a replay)."""
        return batch is not None and self.query == batch[0] and self.batch >= batch[1]


def encode_marker(m: Marker) -> str:
    """Offset-commit metadata: compressed JSON (the broker's limit is 4096 bytes by default)."""
    raw = json.dumps({"q": m.query, "b": m.batch, "p": m.progress, "v": m.previous,
                      "i": m.producer, "w": m.where},
                     separators=(",", ":")).encode()
    return _PREFIX + base64.b64encode(zlib.compress(raw, 6)).decode()


def decode_marker(metadata: str | None, where: str = "a task's marker") -> Marker | None:
    """The marker in offset-commit ``metadata`` (None: no marker); one that does not parse
    is a CorruptStateError naming ``where`` it was read.

    >>> decode_marker(encode_marker(Marker("q", 3, {"stream_time": 5}, None))).batch
    3
    >>> decode_marker("kspark1:eJyrrgUAAXUA+Q==")
    Traceback (most recent call last):
    ...
    kspark.errors.CorruptStateError: a task's marker is malformed: the marker lacks 'b', ...
    """
    if not metadata:
        return None
    try:
        if not metadata.startswith(_PREFIX):
            raise Invalid(f"it does not start with {_PREFIX!r}")
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.b64decode(metadata[len(_PREFIX):], validate=True),
                                 1 << 20)
        if inflate.unconsumed_tail:
            raise Invalid("it inflates to more than 1 MiB")
        d = need_dict(json.loads(raw), "the marker")
        missing = sorted({"q", "b", "p", "v"} - set(d))
        if missing:
            raise Invalid(f"the marker lacks {', '.join(map(repr, missing))}")
        progress, previous = (None if d[k] is None else check_progress(d[k]) for k in "pv")
        return Marker(need_str(d["q"], "'q' (query)"), need_int(d["b"], "'b' (batch)"),
                      progress, previous, need_str(d.get("i", ""), "'i' (producer)"),
                      need_str(d.get("w", ""), "'w' (where)"))
    except (Invalid, ValueError, RecursionError, zlib.error) as e:
        raise CorruptStateError(
            f"{where} is malformed: {e}. It was damaged or not written by kspark; reset the "
            "application (kspark reset), which deletes the consumer group holding it") from None


class TaskTransactions:
    """One task's transactional producer and marker, kept per worker process.

    Example (needs a broker, so not run)::

        tx, marker = task_transactions(bootstrap, "app", "1_0", ("app-kspark-progress", 3),
                                       {}, {}, ("query", 7))
        if tx is not None:                # None: batch 7 is committed already (a replay)
            tx.producer.send("out", b"k", b"v", 0, (), None)
            tx.commit(Marker("query", 7, progress, previous, tx.instance), {("in", 0): 1234})
    """

    def __init__(self, where: ClientSettings | str, app_id: str, task_id: str,
                 marker_tp: tuple[str, int], extra: Mapping[str, Any] | None = None,
                 timeout_s: float = 10.0):
        self.settings = as_settings(where)
        self.app_id, self.task_id, self.marker_tp = app_id, task_id, marker_tp
        self.transactional_id = f"{app_id}-{task_id}"
        conf = dict(extra or {})
        conf["transactional.id"] = self.transactional_id
        configured = self.settings.conf("producer").get("transaction.timeout.ms", 60000)
        self.timeout_ms = int(conf.setdefault("transaction.timeout.ms", configured))
        self.producer = TaskProducer(self.settings, f"{app_id}-{task_id}-producer", conf)
        self.producer.transactional_id = self.transactional_id
        self._group = group_reader(self.settings, app_id)
        self._timeout_s = timeout_s
        self.instance = uuid.uuid4().hex
        self.initialized = False
        self._began = 0.0
        self.fenced = False
        self.abandoned = False  # a call hung in librdkafka: this producer is left behind

    def init(self) -> None:
        """Fence every older attempt of this task: their open transactions are aborted."""
        self._step("init_transactions", self._timeout_s)
        self.initialized = True

    def marker(self) -> Marker | None:
        """The task's last committed marker (None: it never committed a batch)."""
        return read_marker(self.settings, self.app_id, self.task_id, self.marker_tp,
                           self._timeout_s)

    def begin(self) -> None:
        self._call("begin_transaction")
        self._began = time.monotonic()

    def commit(self, marker: Marker, input_offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit everything sent since :meth:`begin`, the input offsets and the marker in
        one transaction."""
        self.producer.flush()  # raises SinkWriteError (naming topic and partition)
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(input_offsets.items())]
        offsets.append(TopicPartition(*self.marker_tp, 0, metadata=encode_marker(marker)))
        metadata = self._group.consumer_group_metadata()
        self._step("send_offsets_to_transaction", offsets, metadata, self._timeout_s)
        self._step("commit_transaction", self._timeout_s)

    def fail(self, error: BaseException) -> BaseException:
        """Abort the batch's transaction after ``error``; returns what the error means: the
        task was fenced (or its transaction timed out) if the producer is in that state,
        else ``error`` itself."""
        if isinstance(error, (TaskFencedError, TransactionTimeoutError)) or not self.initialized:
            return error
        if self.abandoned:  # a call that never returned: the next attempt fences this one
            return error
        error = self.producer.logged_denial() or error  # the cause behind a failed write
        wait_s = _ABORT_AFTER_OUTAGE_S if isinstance(error, TaskTimeoutError) else self._timeout_s
        try:
            bounded_call(self.producer.client.abort_transaction, (wait_s,), wait_s + _GRACE_S)
        except CallHungError:
            self._abandon()
            return error
        except KafkaException as e:
            err = e.args[0]
            if isinstance(error, KafkaSecurityError):  # the cause; the abort only follows it
                self.fenced = err.fatal() or self.fenced
                if err.fatal():
                    _forget(self)
                return error
            if err.fatal():
                return self._explain("produce", err)
            log.warning("task %s: aborting its transaction failed (%s); the broker aborts it "
                        "when the next attempt starts", self.task_id, err.str())
        return error

    def close(self) -> None:
        self.producer.client.flush(0)

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self.producer.client, name)(*args)
        except KafkaException as e:
            raise self._explain(name, e.args[0]) from None

    def _step(self, name: str, *args: Any) -> Any:
        """A transactional call that talks to the coordinator, ridden through a broker
        restart or a coordinator move: a retriable error is retried (librdkafka allows the
        same call again) until ``task.timeout.ms``; an error that requires an abort, or a
        call that never returns (librdkafka may ignore the timeout of
        send_offsets_to_transaction while the coordinator moves), ends this attempt with a
        TransientKafkaError: the next attempt's init_transactions fences it, and its marker
        says whether the batch committed (it is replayed or skipped, never guessed)."""
        stall = Stall.of(f"task {self.task_id}: {name}", self.settings)
        while True:
            limit = min(self._timeout_s + _GRACE_S, stall.remaining_s())
            try:
                return bounded_call(getattr(self.producer.client, name), args, limit)
            except CallHungError:
                self._abandon()
                if stall.expired():
                    raise stall.timeout_error(f"{name} did not return") from None
                raise TransientKafkaError(
                    f"task {self.task_id}: {name} did not return within {limit:.0f} s (the "
                    f"transaction coordinator at {self.settings.bootstrap} moved or "
                    "restarted), so the transaction's outcome is unknown: this attempt is "
                    "abandoned; the next one fences it and reads the task's marker to replay "
                    "the batch or go on") from None
            except KafkaException as e:
                err = e.args[0]
                if err.fatal() or not transient(err) or _requires_abort(err):
                    if _requires_abort(err) and transient(err):
                        raise TransientKafkaError(
                            f"task {self.task_id}: {name} failed while the cluster at "
                            f"{self.settings.bootstrap} recovered ({err.str()}); the "
                            "transaction is aborted and the batch replayed") from None
                    raise self._explain(name, err) from None
                stall.wait(err)

    def _cluster_was_away(self) -> bool:
        """Whether the producer could not reach the cluster during this transaction (a
        broker restart: its error callback reported the brokers down or unreachable)."""
        record = errors_of(self.producer.client)
        began = self._began or 0.0
        return record is not None and any(
            t >= began and code in TRANSIENT_CODES for t, code, _ in record.errors)

    def _abandon(self) -> None:
        """This producer is stuck in a call: leave it (its next attempt fences it)."""
        self.abandoned = self.fenced = True
        _forget(self)

    def _explain(self, step: str, err: KafkaError) -> Exception:
        denied = self.producer.denied(err, None)  # a missing ACL is not a fence
        if denied is not None and step == "send_offsets_to_transaction" and \
                isinstance(denied, AuthorizationError) and denied.resource_type == "TOPIC":
            # committing offsets needs READ on the topics whose offsets are committed
            denied = authorization_for(self.settings, err.code(), err.str(),
                                       {"TOPIC": (self.marker_tp[0], "READ", False)})
        if denied is not None:
            if isinstance(denied, AuthorizationError) and denied.resource_type == "GROUP":
                denied = authorization_for(self.settings, err.code(), err.str(),
                                           {"GROUP": (self.app_id, "READ", False)})
            return denied
        open_ms = (time.monotonic() - self._began) * 1000 if self._began else 0
        if err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                          KafkaError.INVALID_PRODUCER_EPOCH) or err.fatal():
            self.fenced = True
            _forget(self)
            if open_ms > self.timeout_ms and self._cluster_was_away():
                return TransientKafkaError(
                    f"task {self.task_id}: its transaction was open for {open_ms:.0f} ms while "
                    f"the cluster at {self.settings.bootstrap} was away, longer than "
                    f"transaction.timeout.ms={self.timeout_ms}, so the broker aborted it "
                    f"({err.str()}); the batch is replayed")
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


def read_marker(where: ClientSettings | str, app_id: str, task_id: str,
                marker_tp: tuple[str, int], timeout_s: float = 60.0) -> Marker | None:
    """Task ``task_id``'s last committed marker: the offset metadata of the consumer group
    ``app_id`` for ``marker_tp`` (None: the task never committed a batch). Both guarantees
    keep a task's progress there, so no task ever resumes a stale local copy."""
    settings = as_settings(where)
    tp = TopicPartition(*marker_tp)
    stall: Stall | None = None
    while True:  # the group coordinator may be loading or moving: retry until the deadline
        try:
            (committed,) = group_reader(settings, app_id).committed([tp], timeout=timeout_s)
            return decode_marker(committed.metadata, (
                f"task {task_id}'s marker (the offset metadata of consumer group "
                f"{app_id!r} for topic {tp.topic!r} partition {tp.partition})"))
        except KafkaException as e:
            err = e.args[0]
            denied = authorization_for(settings, err.code(), err.str(),
                                       {"GROUP": (app_id, "READ", False)})
            if denied is not None:
                raise denied from None
            if not transient(err) and err.code() not in _COORDINATOR_MOVING:
                raise TransactionsUnavailableError(
                    f"task {task_id}: cannot read its committed marker from consumer "
                    f"group {app_id!r} ({err.str()}); is the broker up?") from None
            renew_group_reader(settings, app_id)
            stall = stall or Stall.of(f"task {task_id}: reading its committed marker from "
                                      f"consumer group {app_id!r}", settings)
            stall.wait(err)


def task_transactions(where: ClientSettings | str, app_id: str, task_id: str,
                      marker_tp: tuple[str, int], batch: tuple[str, int] | None,
                      begin: bool = True) -> tuple[TaskTransactions | None, Marker | None]:
    """The task's last marker and, unless that marker already covers ``batch`` (a replay,
    which writes nothing and so fences nobody), its producer with the batch's transaction
    begun (``begin``; else the caller begins it).

    A worker keeps the producer of a task while that producer made the task's last commit;
    otherwise another worker's producer has fenced it, and a new one is made, whose
    ``init_transactions`` fences every other attempt of the task. The marker is read again
    after that, since a fenced attempt may have committed just before.
    """
    settings = as_settings(where)
    key = (app_id, settings, task_id, marker_tp)
    tx = registry().get("transactions", key)
    if tx is None:
        tx = TaskTransactions(settings, app_id, task_id, marker_tp)
    marker = tx.marker()
    if marker is not None and marker.covers(batch):
        registry().put("transactions", key, tx)
        return None, marker
    if tx.fenced or (tx.initialized and (marker is None or marker.producer != tx.instance)):
        tx.close()
        tx = TaskTransactions(settings, app_id, task_id, marker_tp)
    registry().put("transactions", key, tx)
    if not tx.initialized:
        tx.init()
        marker = tx.marker()
        if marker is not None and marker.covers(batch):
            return None, marker
    if begin:
        tx.begin()
    return tx, marker


def _forget(tx: TaskTransactions) -> None:
    registry().forget("transactions", tx)
