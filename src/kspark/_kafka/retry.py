"""Riding through Kafka's own faults (a broker restarts, a leader or a coordinator moves):
which client errors are transient, and how long a task keeps retrying them.

Kafka Streams' rule (KIP-572): a task that hits a timeout or a retriable error retries,
``retry.backoff.ms`` apart, until it has made no progress for ``task.timeout.ms``; then it
fails with an error saying so. kspark's tasks, its driver and its stream threads follow
it through :class:`Stall`: every client call that can block has a bound, and an outage
longer than ``task.timeout.ms`` ends in a :class:`~kspark.errors.TaskTimeoutError` naming
what was unreachable and for how long — never a silent hang.

Example:
    >>> from confluent_kafka import KafkaError
    >>> transient(KafkaError(KafkaError.LEADER_NOT_AVAILABLE))
    True
    >>> transient(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    False
    >>> stall = Stall("task 0_1: reading the end offsets", "b:9092", timeout_ms=0, backoff_ms=1)
    >>> stall.wait(KafkaError(KafkaError._TRANSPORT, "Connection refused"))
    Traceback (most recent call last):
    ...
    kspark.errors.TaskTimeoutError: task 0_1: reading the end offsets: the Kafka cluster at b:9092 did not answer for 0 s, ...
"""  # noqa: E501 - a doctest's expected output is one line

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaError

from kspark.errors import TaskTimeoutError

__all__ = ["transient", "not_yet_visible", "Stall", "TRANSIENT_CODES", "WARN_EVERY_S",
           "bounded_call", "CallHungError"]

log = logging.getLogger("kspark")
WARN_EVERY_S = 10.0  # how often a stalled call says so in the log


def _codes() -> frozenset[int]:
    names = (
        # the broker is down or restarting: the connection fails or the request times out
        "_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT", "_TIMED_OUT_QUEUE", "_MSG_TIMED_OUT",
        "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "BROKER_NOT_AVAILABLE", "_WAIT_COORD",
        "_DESTROY_BROKER",  # a broker gone from the metadata (a node restarting) mid-request
        # no leader known (librdkafka says _NOENT "No leaders found" while none is), or a
        # leader moved: Java's InvalidMetadataException family
        "_NOENT", "LEADER_NOT_AVAILABLE", "NOT_LEADER_FOR_PARTITION", "UNKNOWN_LEADER_EPOCH",
        "FENCED_LEADER_EPOCH", "OFFSET_NOT_AVAILABLE", "REPLICA_NOT_AVAILABLE",
        "KAFKA_STORAGE_ERROR", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        # the group or transaction coordinator is moving or loading its log
        "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
        "CONCURRENT_TRANSACTIONS", "REBALANCE_IN_PROGRESS", "_STATE",
        "UNSTABLE_OFFSET_COMMIT", "THROTTLING_QUOTA_EXCEEDED",
    )
    return frozenset(getattr(KafkaError, n) for n in names if hasattr(KafkaError, n))


TRANSIENT_CODES = _codes()


def transient(err: Any) -> bool:
    """True for a client error that a broker restart or a leader or coordinator move
    causes, and that goes away by itself: retry it (within ``task.timeout.ms``)."""
    if err.fatal():
        return False
    return err.code() in TRANSIENT_CODES or (err.retriable() and not _abortable(err))


_UNSEEN_CODES = frozenset(getattr(KafkaError, n) for n in ("_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC",
                                                         "UNKNOWN_TOPIC_OR_PART")
                          if hasattr(KafkaError, n))


def not_yet_visible(err: Any) -> bool:
    """True for "unknown topic or partition": for a topic the application has just
    created, a broker that has not received the new metadata yet (another node of the
    cluster than the one that created it) answers so for a moment. Retry it only for a
    topic known to exist (for others it is the error to report)."""
    return not err.fatal() and err.code() in _UNSEEN_CODES


def _abortable(err: Any) -> bool:
    return bool(getattr(err, "txn_requires_abort", lambda: False)())


class Stall:
    """A period in which one step kept failing with transient errors. :meth:`wait` logs
    (at most every ``WARN_EVERY_S``), sleeps ``retry.backoff.ms`` (doubling up to a
    second), and raises :class:`~kspark.errors.TaskTimeoutError` once the step has been
    failing for ``task.timeout.ms``.

    ``what`` names the step and whose it is ("task 0_1: committing its transaction");
    ``where`` the cluster (its bootstrap servers).
    """

    def __init__(self, what: str, where: str, timeout_ms: int = 300_000,
                 backoff_ms: int = 100):
        self.what, self.where = what, where
        self.timeout_ms, self.backoff_ms = timeout_ms, backoff_ms
        self.began = time.monotonic()
        self.tries = 0
        self._warned = self.began

    @classmethod
    def of(cls, what: str, settings: Any) -> "Stall":
        """A stall bounded by the ``task.timeout.ms`` and ``retry.backoff.ms`` of
        ``settings`` (a :class:`~kspark._kafka.settings.ClientSettings`)."""
        return cls(what, settings.bootstrap, settings.task_timeout_ms, settings.retry_backoff_ms)

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.began

    def expired(self) -> bool:
        return self.elapsed_s * 1000 >= self.timeout_ms

    def remaining_s(self) -> float:
        """How long the step may still take before the bound (at least a second)."""
        return max(1.0, self.timeout_ms / 1000 - self.elapsed_s)

    def wait(self, err: Any) -> None:
        """Note a transient failure ``err`` (a KafkaError or any exception): sleep before
        the next try, or raise TaskTimeoutError if the bound has passed."""
        self.tries += 1
        detail = err.str() if hasattr(err, "str") else str(err)
        if self.expired():
            raise self.timeout_error(detail)
        self.note(detail)
        backoff = min(1.0, self.backoff_ms / 1000 * 2 ** min(self.tries - 1, 10))
        time.sleep(min(backoff, max(0.0, self.timeout_ms / 1000 - self.elapsed_s)))

    def note(self, detail: str) -> None:
        """Say in the log (at most every ``WARN_EVERY_S``) that the step still waits."""
        now = time.monotonic()
        if now - self._warned >= WARN_EVERY_S:
            self._warned = now
            log.warning("%s: waiting for the Kafka cluster at %s for %.0f s of task.timeout.ms="
                        "%d (%s); it goes on once the brokers answer", self.what, self.where,
                        self.elapsed_s, self.timeout_ms, detail)

    def timeout_error(self, detail: str) -> TaskTimeoutError:
        return TaskTimeoutError(
            f"{self.what}: the Kafka cluster at {self.where} did not answer for "
            f"{self.elapsed_s:.0f} s, longer than task.timeout.ms={self.timeout_ms} (last "
            f"error: {detail}). Check that the brokers are up and reachable; raise "
            "task.timeout.ms to ride out longer outages")


class CallHungError(Exception):
    """A client call did not return within its bound (see :func:`bounded_call`)."""


def bounded_call(call: Callable[..., Any], args: Sequence[Any], limit_s: float) -> Any:
    """``call(*args)``, but never longer than ``limit_s``: a librdkafka call can block past
    its own timeout while a coordinator moves (librdkafka issue 5456:
    send_offsets_to_transaction). It runs in a daemon thread; if that thread has not
    returned after ``limit_s``, CallHungError is raised and the thread (and its client) is left
    behind: the caller must stop using that client.

    >>> bounded_call(lambda x: x + 1, (1,), 5)
    2
    >>> bounded_call(time.sleep, (2,), 0.01)
    Traceback (most recent call last):
    ...
    kspark._kafka.retry.CallHungError: sleep did not return within 0.01 s
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    thread = threading.Thread(target=run, name="kspark-bounded-call", daemon=True)
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        name = getattr(call, "__name__", "the call")
        raise CallHungError(f"{name} did not return within {limit_s:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")
