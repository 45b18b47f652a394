"""What a :class:`~kspark._engine.task.StreamTask` does with a record it cannot read,
process or write: it asks the configured exception handler (``deserialization.``,
``processing.`` (KIP-1033) or ``production.exception.handler``; see
:mod:`~kspark._error_handlers`), writes the dead-letter records the handler returns
(KIP-1034), then drops the record (RESUME, Java's CONTINUE: counted in ``dropped``, logged
at WARN) or fails the task (FAIL, the default). The production handler may answer RETRY to
a retriable error (``kspark.errors.RetriableSinkWriteError``): the sink sends the record
again, in place (so before any later record of the task), ``retry.backoff.ms`` apart and
asking the handler after each failure, until it is written or ``task.timeout.ms`` has
passed since the first failure (then a TaskTimeoutError). RETRY to any other error (one
Kafka will not change its mind about, or a serialization error) is read as FAIL, as Kafka
Streams' RecordCollectorImpl does.

As Kafka Streams (ProcessorNode.process, StreamTask.punctuate), the processing handler sees
what user code raises in a processor or a punctuation, never kspark's own errors (a
KSparkError: a failure a downstream node already decided, a sink's, a broker's).

Example:
    >>> from kspark._engine.collector import MemoryCollector
    >>> from kspark._engine.task import StreamTask
    >>> from kspark.errors import SerializationError
    >>> task = StreamTask("0_0", {}, [], {"application.id": "app", "state.dir": "/tmp",
    ...                   "production.exception.handler": "log_and_continue"},
    ...                   MemoryCollector())
    >>> task.write_failed("KSTREAM-SINK-0000000001", SerializationError("bad value"))
    False
    >>> task.dropped
    1
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kspark._engine.api import Record
from kspark._engine.collector import RecordCollector
from kspark._engine.handler_config import (DEFAULT, DESERIALIZATION, PROCESSING, PRODUCTION,
                                           as_response, make_handler)
from kspark._engine.partitioner import default_partition
from kspark._error_handlers import (ErrorHandlerContext, ProducerRecord, Response, Result,
                                     SerializationExceptionOrigin, dead_letter_record,
                                     retriable)
from kspark._engine.nodes import ProcessorNode, RawRecord, SourceNode, _describe_failure
from kspark.errors import (ExceptionHandlerError, KSparkError, ProcessorError,
                           SerializationError, SinkWriteError, TaskTimeoutError)

__all__ = ["RecordErrors"]

log = logging.getLogger("kspark")


class RecordErrors:
    """The error handling of :class:`~kspark._engine.task.StreamTask` (a mixin: the task
    sets the attributes below and calls :meth:`_init_handlers`)."""

    task_id: str
    collector: RecordCollector
    stream_time: int
    dropped: int
    dead_letter_topic: str | None
    sources: dict[str, SourceNode]
    partition_counts: dict[str, int]
    _current: RawRecord | None

    def _init_handlers(self, config: Mapping[str, Any]) -> None:
        """Make this task's three handlers from ``config``, each configured with it."""
        def made(key: str) -> Any:
            return make_handler(key, config.get(key, DEFAULT), config)

        self._on_bad_record = made(DESERIALIZATION)
        self._on_processing_error = made(PROCESSING)
        self._on_write_error = made(PRODUCTION)
        # a production handler's RETRY: how far apart, and for how long (Kafka Streams' keys)
        self._retry_backoff_s = int(config.get("retry.backoff.ms") or 100) / 1000
        timeout = config.get("task.timeout.ms")
        self._task_timeout_ms = 300_000 if timeout is None else int(timeout)

    def record_dropped(self, node: ProcessorNode, reason: str) -> None:
        self.dropped += 1
        log.warning("task %s, processor %s drops a record: %s", self.task_id, node.name, reason)

    def _context(self, node: str, timestamp: int, headers: Any,
                 raw: RawRecord | None) -> ErrorHandlerContext:
        """The handler's view of where the error happened; ``raw`` None: a punctuation."""
        if raw is None:
            return ErrorHandlerContext(None, -1, -1, tuple(headers or ()), node, self.task_id,
                                       timestamp, None, None)
        return ErrorHandlerContext(raw.topic, raw.partition, raw.offset, tuple(headers or ()),
                                   node, self.task_id, timestamp, raw.key, raw.value)

    def _ask(self, key: str, handler: Any, call: Callable[[], Any],
             context: ErrorHandlerContext, error: BaseException) -> Response:
        """``call``'s answer as a Response, its dead-letter records written; a handler that
        raises (or answers no Response) fails the task with an ExceptionHandlerError."""
        try:
            response = as_response(call())
            if response.result is Result.RETRY and key != PRODUCTION:
                raise TypeError(f"it answered RETRY, which only {PRODUCTION} may (Kafka "
                                "Streams' processing and deserialization handlers have no "
                                "RETRY)")
            for record in response.dead_letter_records:
                _check_record(record)
        except Exception as e:
            raise ExceptionHandlerError(
                f"task {self.task_id}, processor {context.processor_node_id!r}: {key} "
                f"{handler!r} failed while handling {type(error).__name__}: {error} "
                f"({_where(context)}): {type(e).__name__}: {e}; fix the handler (Kafka "
                "Streams fails the same way: fatal user code error in the error callback)"
            ) from e
        for record in response.dead_letter_records:
            self._write_dead_letter(record, context)
        return response

    def _write_dead_letter(self, record: Any, context: ErrorHandlerContext) -> None:
        ts = getattr(record, "timestamp", None)
        self.collector.send(record.topic, record.key, record.value,
                            max(context.timestamp if ts is None else ts, 0),
                            tuple(getattr(record, "headers", ()) or ()),
                            getattr(record, "partition", None))

    def _resumed(self, key: str, context: ErrorHandlerContext, error: BaseException) -> None:
        self.dropped += 1
        log.warning("task %s, processor %s drops the record (%s) after %s: %s (%s answered "
                    "CONTINUE)", self.task_id, context.processor_node_id, _where(context),
                    type(error).__name__, error, key)

    def continue_after(self, node: ProcessorNode, record: Record, error: Exception) -> bool:
        """``processing.exception.handler``'s decision about ``error``, raised by user code in
        ``node`` processing ``record``: True, the record is dropped at ``node`` (counted and
        logged); False, the task fails."""
        context = self._context(node.name, record.timestamp, record.headers, self._current)
        handler = self._on_processing_error
        response = self._ask(PROCESSING, handler, lambda: handler.handle(context, record, error),
                             context, error)
        if response.result is Result.FAIL:
            return False
        self._resumed(PROCESSING, context, error)
        return True

    def punctuation_failed(self, node: Any, timestamp: int, error: Exception) -> None:
        """A punctuation of ``node`` raised ``error``: the processing handler decides, with
        no record (as Java's StreamTask.punctuate); raises ProcessorError to fail."""
        context = self._context(node.name, timestamp, (), None)
        handler = self._on_processing_error
        response = self._ask(PROCESSING, handler, lambda: handler.handle(context, None, error),
                             context, error)
        if response.result is Result.FAIL:
            raise ProcessorError(f"{_describe_failure(node, error)} (in a punctuation at "
                                 f"{timestamp})") from error
        self._resumed(PROCESSING, context, error)

    def _bad_record(self, raw: RawRecord, error: SerializationError) -> None:
        """A record that cannot be deserialized: ``deserialization.exception.handler``
        decides (its record is the raw one)."""
        source = self.sources.get(raw.topic)
        context = self._context(source.name if source else "?", raw.timestamp, raw.headers,
                                raw)
        handler = self._on_bad_record
        try:
            response = self._ask(DESERIALIZATION, handler,
                                 lambda: handler.handle(context, raw, error), context, error)
        finally:
            self._current = None
        if response.result is Result.FAIL:
            raise error
        self._resumed(DESERIALIZATION, context, error)

    def write_failed(self, sink: str, error: KSparkError, record: ProducerRecord | None = None,
                     origin: SerializationExceptionOrigin | None = None) -> bool:
        """Sink ``sink`` could not serialize ``record`` (``origin``: its KEY or VALUE) or
        hand it over: ``production.exception.handler`` decides. False: the record is
        dropped (RESUME); True: it was written after all (RETRY, see the module's doc);
        raises to fail the task (FAIL, or RETRY to an error that is not retriable)."""
        deadline, attempts = None, 1
        while True:
            result = self._ask_production(sink, error, record, origin)
            if result is Result.RESUME:
                self._resumed(PRODUCTION, self._write_context(sink, record), error)
                return False
            if result is Result.FAIL:
                raise error
            if origin is not None or record is None or not retriable(error):
                raise self._retry_refused(sink, error, record) from error
            now = time.monotonic()
            if deadline is None:  # as Java's maybeInitTaskTimeoutOrThrow: from the 1st failure
                deadline = now + self._task_timeout_ms / 1000
            elif now > deadline:
                raise self._retry_timed_out(sink, error, record, attempts) from error
            time.sleep(max(0.0, min(self._retry_backoff_s, deadline - now)))
            ts: Any = record.timestamp  # as the sink sent it (None: a suppress buffer's)
            try:
                self.collector.send(record.topic, record.key, record.value, ts,
                                    record.headers, record.partition)
            except SinkWriteError as e:
                if e.fatal:
                    raise
                error = _renamed(e, f"sink {sink!r} in task {self.task_id}: {e}")
                attempts += 1
                continue
            log.info("task %s, processor %s: a record for topic %r was written at attempt %d "
                     "(%s answered RETRY)", self.task_id, sink, record.topic, attempts + 1,
                     PRODUCTION)
            return True

    def _write_context(self, sink: str, record: ProducerRecord | None) -> ErrorHandlerContext:
        headers = record.headers if record is not None else ()
        ts = record.timestamp if record is not None and record.timestamp is not None else max(
            self.stream_time, 0)
        return self._context(sink, ts, headers, self._current)

    def _ask_production(self, sink: str, error: KSparkError, record: ProducerRecord | None,
                        origin: SerializationExceptionOrigin | None) -> Result:
        """The production handler's decision (its dead-letter records written)."""
        context = self._write_context(sink, record)
        handler = self._on_write_error

        def call() -> Any:
            if origin is None:
                return handler.handle(context, record, error)
            serialization = getattr(handler, "handle_serialization_exception", None)
            return (serialization(context, record, error, origin) if callable(serialization)
                    else Response.fail())  # Java's default for a handler without it

        return self._ask(PRODUCTION, handler, call, context, error).result

    def _where_written(self, sink: str, record: ProducerRecord | None) -> str:
        """``task 0_0, processor 'SINK', topic 'out', partition 1 (input record ...)``."""
        context = self._write_context(sink, record)
        where = f"task {self.task_id}, processor {sink!r}"
        if record is not None:
            where += f", topic {record.topic!r}, partition {_partition_of(record, self)}"
        source = ("written in a punctuation" if context.topic is None
                  else f"from the input {_where(context)}")
        return f"{where} ({source})"

    def _retry_refused(self, sink: str, error: KSparkError,
                       record: ProducerRecord | None) -> KSparkError:
        """``error``, its message saying that RETRY was read as FAIL, and where."""
        kind = "serialization error" if isinstance(error, SerializationError) else \
            "non-retriable error"
        log.warning("%s answered RETRY for a %s; treated as FAIL, as Kafka Streams does (%s)",
                    PRODUCTION, kind, self._where_written(sink, record))
        return _renamed(error, (
            f"{error} [{PRODUCTION} answered RETRY, read as FAIL: RETRY is honoured only for "
            f"a retriable error (kspark.errors.RetriableSinkWriteError, Java's "
            f"RetriableException), and this is a {kind}; "
            f"{self._where_written(sink, record)}]"))

    def _retry_timed_out(self, sink: str, error: KSparkError, record: ProducerRecord,
                         attempts: int) -> TaskTimeoutError:
        return TaskTimeoutError(
            f"{self._where_written(sink, record)}: the record was not written within "
            f"task.timeout.ms ({self._task_timeout_ms} ms) after {attempts} attempt(s); "
            f"{PRODUCTION} answered RETRY each time. Last error: {error}. Raise "
            "task.timeout.ms to keep retrying longer, or answer Response.fail() / "
            "Response.resume() for this error")

    def dead_letter(self, raw: RawRecord | None, error: BaseException,
                    extra_headers: tuple = ()) -> None:
        """KIP-1034 for an async step's failed call: the input record, unchanged, with Kafka
        Streams' ``__streams.errors.*`` headers and ``extra_headers`` (no input record, as
        in a punctuation: no key or value)."""
        if not self.dead_letter_topic:
            return
        ts = raw.timestamp if raw is not None else max(self.stream_time, 0)
        context = self._context("?", ts, raw.headers if raw is not None else (), raw)
        record = dead_letter_record(self.dead_letter_topic, context, error)
        self._write_dead_letter(record._replace(headers=record.headers + tuple(extra_headers)),
                                context)


def _check_record(record: Any) -> None:
    """TypeError unless ``record`` is a dead-letter record: a topic, key and value bytes."""
    topic, key, value = (getattr(record, "topic", None), getattr(record, "key", None),
                         getattr(record, "value", None))
    if not isinstance(topic, str) or not all(
            x is None or isinstance(x, (bytes, bytearray)) for x in (key, value)):
        raise TypeError(f"its dead-letter record {record!r} is not a ProducerRecord(topic, "
                        "key bytes, value bytes, ...)")


def _renamed(error: KSparkError, message: str) -> KSparkError:
    """``error`` (its class, so that a retriable one stays so) with ``message``."""
    named = copy.copy(error)
    named.args = (message,)
    return named


def _partition_of(record: ProducerRecord, task: Any) -> str:
    """The partition ``record`` was bound for: its own, or Kafka's default partitioner's
    (a topic's partitions counted as its sink counts them)."""
    if record.partition is not None:
        return str(record.partition)
    n = task.partition_counts.get(record.topic, 1)
    if n == 1:
        return "0"
    if isinstance(record.key, (bytes, bytearray)):
        return str(default_partition(bytes(record.key), n))
    return "(any: a null key)" if record.key is None else "(unknown: the key is not serialized)"


def _where(context: ErrorHandlerContext) -> str:
    if context.topic is None:
        return "in a punctuation"
    return (f"record at topic {context.topic!r}, partition {context.partition}, offset "
            f"{context.offset}")
