"""The exception handlers of Kafka Streams 4.1 (``org.apache.kafka.streams.errors``) in
Python: what a task does with a record it cannot deserialize (``DeserializationException
Handler``), one whose processing raised (``ProcessingExceptionHandler``, KIP-1033) and one a
sink cannot write (``ProductionExceptionHandler``), with KIP-1034's dead-letter records.

A handler is asked with an :class:`ErrorHandlerContext`, the record and the exception, and
answers a :class:`Response`: ``Response.resume(...)`` (Java's CONTINUE: the record is
dropped, counted in dropped-records, and processing goes on) or ``Response.fail(...)``,
either with dead-letter records to write first. A production handler may also answer
``Response.retry()`` (Java's RETRY): honoured for a :func:`retriable` error only, read as
FAIL otherwise. Java's older enum names are kept:
``ProcessingExceptionHandler.ProcessingHandlerResponse.CONTINUE`` is ``Result.RESUME``.
kspark.errors exports these names; docs/handlers.md tells the whole story.

Example:
    >>> class SkipValueErrors(ProcessingExceptionHandler):
    ...     def handle(self, context, record, exception):
    ...         if isinstance(exception, ValueError):
    ...             return Response.resume()
    ...         return Response.fail()
    >>> ctx = ErrorHandlerContext("in", 0, 7, (), "KSTREAM-MAPVALUES-0000000001", "0_0", 5,
    ...                           b"k", b"v")
    >>> SkipValueErrors().handle(ctx, None, ValueError("bad")).result
    <Result.RESUME: 'RESUME'>
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping, NamedTuple

__all__ = ["Result", "Response", "ProducerRecord", "ErrorHandlerContext",
           "ProcessingExceptionHandler", "LogAndFailProcessingExceptionHandler",
           "LogAndContinueProcessingExceptionHandler", "DeserializationExceptionHandler",
           "LogAndFailExceptionHandler", "LogAndContinueExceptionHandler",
           "ProductionExceptionHandler", "DefaultProductionExceptionHandler",
           "LogAndContinueProductionExceptionHandler", "SerializationExceptionOrigin",
           "dead_letter_record", "error_headers", "retriable", "DEAD_LETTER_TOPIC"]

DEAD_LETTER_TOPIC = "errors.dead.letter.queue.topic.name"
_PREFIX = "__streams.errors."


class Result(Enum):
    """What a handler decided: RESUME (Java's CONTINUE, kept as an alias), FAIL, or RETRY
    (a production handler's only, for a :func:`retriable` error; FAIL for any other)."""

    RESUME = "RESUME"
    FAIL = "FAIL"
    RETRY = "RETRY"
    CONTINUE = "RESUME"  # Kafka Streams 4.1's name of RESUME


def retriable(exception: BaseException) -> bool:
    """Whether ``exception`` may go away by itself, so that a production handler's RETRY
    is honoured (Java's ``instanceof RetriableException``): an error whose class says
    ``retriable = True``, as :class:`kspark.errors.RetriableSinkWriteError`.

    >>> class LeaderMoved(Exception):
    ...     retriable = True
    >>> retriable(LeaderMoved()), retriable(ValueError())
    (True, False)
    """
    return getattr(exception, "retriable", False) is True


class ProducerRecord(NamedTuple):
    """A record to write (Java's ``ProducerRecord<byte[], byte[]>``): a dead-letter record a
    handler returns, or the record a sink could not write (then ``key`` and ``value`` are
    objects when serializing failed). ``timestamp`` None: the context's; ``partition`` None:
    the default partitioner."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple = ()
    timestamp: int | None = None
    partition: int | None = None


@dataclass(frozen=True)
class Response:
    """A handler's answer: its :class:`Result` and the dead-letter records to write.

    >>> Response.fail().result, Response.resume([ProducerRecord("dlq", b"k", b"v")]).result
    (<Result.FAIL: 'FAIL'>, <Result.RESUME: 'RESUME'>)
    >>> Response.retry()
    Response(result=<Result.RETRY: 'RETRY'>, dead_letter_records=())
    """

    result: Result
    dead_letter_records: tuple[ProducerRecord, ...] = ()

    @classmethod
    def resume(cls, dead_letter_records: Any = ()) -> "Response":
        """Drop the record and go on (after writing ``dead_letter_records``)."""
        return cls(Result.RESUME, tuple(dead_letter_records or ()))

    @classmethod
    def fail(cls, dead_letter_records: Any = ()) -> "Response":
        """Fail the task (after writing ``dead_letter_records``)."""
        return cls(Result.FAIL, tuple(dead_letter_records or ()))

    @classmethod
    def retry(cls) -> "Response":
        """Send the record again (a production handler's answer to a :func:`retriable`
        error; FAIL for any other): the sink re-sends it in place, ``retry.backoff.ms``
        apart, asking the handler after each failure, for up to ``task.timeout.ms``."""
        return cls(Result.RETRY)


@dataclass(frozen=True)
class ErrorHandlerContext:
    """Where the error happened (Java's ``ErrorHandlerContext``): the input record's topic,
    partition, offset and headers (in a punctuation: None, -1, -1 and no headers), the
    processor node, the task, the timestamp of the record at that node (in a punctuation:
    the punctuation's time) and the input record's raw key and value (None in a
    punctuation)."""

    topic: str | None
    partition: int
    offset: int
    headers: tuple
    processor_node_id: str
    task_id: str
    timestamp: int
    source_raw_key: bytes | None
    source_raw_value: bytes | None


_Answer = Response | Result  # what handle() returns (the classes below shadow both names)


class SerializationExceptionOrigin(Enum):
    """Which part of a record a sink could not serialize (Java's enum of that name)."""

    KEY = "KEY"
    VALUE = "VALUE"


def _class_name(error: BaseException) -> str:
    """Java's ``getClass().getName()`` in Python: ``module.QualifiedName``."""
    cls = type(error)
    return f"{cls.__module__}.{cls.__qualname__}"


def error_headers(context: ErrorHandlerContext, exception: BaseException) -> tuple:
    """The headers Kafka Streams' dead-letter records carry (ExceptionHandlerUtils): the
    exception's class, message (None when it has none, as Java's null) and stack trace, and
    the input record's topic, partition and offset, all UTF-8 text.

    >>> ctx = ErrorHandlerContext(None, -1, -1, (), "P", "0_0", 9, None, None)
    >>> [(k[17:], v) for k, v in error_headers(ctx, KeyError("x")) if "stack" not in k]
    [('exception', b'builtins.KeyError'), ('message', b"'x'"), ('topic', None), ('partition', b'-1'), ('offset', b'-1')]
    """  # noqa: E501 - a doctest's expected output is one line
    message = str(exception)
    trace = "".join(traceback.format_exception(type(exception), exception,
                                               exception.__traceback__))
    return ((_PREFIX + "exception", _class_name(exception).encode()),
            (_PREFIX + "message", message.encode() if message else None),
            (_PREFIX + "stacktrace", trace.encode()),
            (_PREFIX + "topic", None if context.topic is None else context.topic.encode()),
            (_PREFIX + "partition", str(context.partition).encode()),
            (_PREFIX + "offset", str(context.offset).encode()))


def dead_letter_record(topic: str, context: ErrorHandlerContext,
                       exception: BaseException) -> ProducerRecord:
    """The dead-letter record Kafka Streams' own handlers write (KIP-1034): the input
    record's raw key and value, its headers, then :func:`error_headers`; at the context's
    timestamp, partitioned by key."""
    return ProducerRecord(topic, context.source_raw_key, context.source_raw_value,
                          tuple(context.headers or ()) + error_headers(context, exception),
                          context.timestamp, None)


class _DeadLetters:
    """The built-in handlers' part: read the dead-letter topic in ``configure`` and build
    Java's dead-letter record when it is set."""

    dead_letter_topic: str | None = None

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Read ``errors.dead.letter.queue.topic.name`` from the application's config."""
        self.dead_letter_topic = configs.get(DEAD_LETTER_TOPIC)

    def _records(self, context: ErrorHandlerContext, exception: BaseException) -> tuple:
        if not self.dead_letter_topic:
            return ()
        return (dead_letter_record(self.dead_letter_topic, context, exception),)


class ProcessingExceptionHandler:
    """Decides about a record whose processing raised in user code (a DSL function, a
    Processor, a punctuation: then ``record`` is None). Override :meth:`handle`;
    :meth:`configure` gets the application's config once, before the first call."""

    Response = Response
    Result = Result
    ProcessingHandlerResponse = Result  # Kafka Streams 4.1's enum: CONTINUE, FAIL

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Read settings from the application's config (no-op by default)."""

    def handle(self, context: ErrorHandlerContext, record: Any,
               exception: Exception) -> _Answer:
        """The decision (default: fail)."""
        return Response.fail()


class LogAndFailProcessingExceptionHandler(_DeadLetters, ProcessingExceptionHandler):
    """Fails the task (kspark's ProcessorError names node, record and line), after writing
    the dead-letter record if a dead-letter topic is set. The default."""

    def handle(self, context, record, exception):
        return Response.fail(self._records(context, exception))


class LogAndContinueProcessingExceptionHandler(_DeadLetters, ProcessingExceptionHandler):
    """Drops the record at the failing node (logged at WARN, counted in dropped-records),
    after writing the dead-letter record if a dead-letter topic is set."""

    def handle(self, context, record, exception):
        return Response.resume(self._records(context, exception))


class DeserializationExceptionHandler:
    """Decides about an input record that cannot be deserialized; ``record`` is the raw
    record (topic, partition, offset, timestamp, key and value bytes, headers)."""

    Response = Response
    Result = Result
    DeserializationHandlerResponse = Result  # Kafka Streams 4.1's enum: CONTINUE, FAIL

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Read settings from the application's config (no-op by default)."""

    def handle(self, context: ErrorHandlerContext, record: Any,
               exception: Exception) -> _Answer:
        """The decision (default: fail)."""
        return Response.fail()


class LogAndFailExceptionHandler(_DeadLetters, DeserializationExceptionHandler):
    """Fails the task with a SerializationError naming topic, partition and offset (after
    the dead-letter record, if a topic is set). The default."""

    def handle(self, context, record, exception):
        return Response.fail(self._records(context, exception))


class LogAndContinueExceptionHandler(_DeadLetters, DeserializationExceptionHandler):
    """Skips the record (logged, counted in dropped-records), after the dead-letter record
    if a topic is set."""

    def handle(self, context, record, exception):
        return Response.resume(self._records(context, exception))


class ProductionExceptionHandler:
    """Decides about a record a sink could not write: :meth:`handle` when Kafka refused it
    (``record`` serialized), :meth:`handle_serialization_exception` when its key or value
    could not be serialized (``record`` holds the objects; default: fail, as Java's)."""

    Response = Response
    Result = Result
    ProductionExceptionHandlerResponse = Result  # Kafka Streams 4.1's: CONTINUE, FAIL, RETRY

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Read settings from the application's config (no-op by default)."""

    def handle(self, context: ErrorHandlerContext, record: ProducerRecord,
               exception: Exception) -> _Answer:
        """The decision about a record Kafka refused (default: fail)."""
        return Response.fail()

    def handle_serialization_exception(self, context: ErrorHandlerContext,
                                       record: ProducerRecord, exception: Exception,
                                       origin: SerializationExceptionOrigin | None
                                       ) -> _Answer:
        """The decision about a record that cannot be serialized (default: fail)."""
        return Response.fail()


class DefaultProductionExceptionHandler(_DeadLetters, ProductionExceptionHandler):
    """Retries a :func:`retriable` error, as Java's (KIP-1065); fails the task on any
    other (after the dead-letter record, if a topic is set). The default."""

    def handle(self, context, record, exception):
        if retriable(exception):
            return Response.retry()
        return Response.fail(self._records(context, exception))

    def handle_serialization_exception(self, context, record, exception, origin):
        return Response.fail(self._records(context, exception))


class LogAndContinueProductionExceptionHandler(_DeadLetters, ProductionExceptionHandler):
    """kspark's ``log_and_continue``: skips the record (logged, counted in dropped-records),
    after the dead-letter record if a topic is set (Kafka Streams 4.1 has no such class)."""

    def handle(self, context, record, exception):
        return Response.resume(self._records(context, exception))

    def handle_serialization_exception(self, context, record, exception, origin):
        return Response.resume(self._records(context, exception))
