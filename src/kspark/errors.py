"""kspark's errors: one root, :class:`KSparkError`, and a subclass per concern.

Every message says what happened, names the topic, partition, task, address or
config key involved, and says what to do about it.

Example:
    >>> from kspark.errors import KSparkError, ConfigError
    >>> issubclass(ConfigError, KSparkError)
    True
"""

from __future__ import annotations

# The handler types live in a leaf module the engine imports too; they are public here, as
# Java's org.apache.kafka.streams.errors holds them.
from kspark._error_handlers import (
    DefaultProductionExceptionHandler,
    DeserializationExceptionHandler,
    ErrorHandlerContext,
    LogAndContinueExceptionHandler,
    LogAndContinueProcessingExceptionHandler,
    LogAndContinueProductionExceptionHandler,
    LogAndFailExceptionHandler,
    LogAndFailProcessingExceptionHandler,
    ProcessingExceptionHandler,
    ProducerRecord,
    ProductionExceptionHandler,
    Response,
    Result,
    SerializationExceptionOrigin,
)

__all__ = [
    "KSparkError",
    "ConfigError",
    "SerializationError",
    "TopologyError",
    "MissingSourceTopicError",
    "MissingSinkTopicError",
    "BrokerUnreachableError",
    "TaskTimeoutError",
    "TransientKafkaError",
    "SchemaRegistryUnreachableError",
    "BrokerError",
    "PrerequisiteError",
    "SparkSinkError",
    "SourceReadError",
    "SinkWriteError",
    "RetriableSinkWriteError",
    "StreamsError",
    "RunFailedError",
    "TransactionsUnavailableError",
    "TaskFencedError",
    "TransactionTimeoutError",
    "InstanceAlreadyRunningError",
    "ProcessorError",
    "ChangelogLostError",
    "ProgressMismatchError",
    "StateStoreError",
    "KafkaSecurityError",
    "AuthenticationError",
    "CertificateError",
    "AuthorizationError",
    "CorruptStateError",
    "ExceptionHandlerError",
    "InvalidStateStoreError",
    "UnknownStateStoreError",
    "StateStoreNotAvailableError",
    # the exception handlers (kspark._error_handlers; docs/handlers.md)
    "ErrorHandlerContext",
    "Response",
    "Result",
    "ProducerRecord",
    "ProcessingExceptionHandler",
    "LogAndFailProcessingExceptionHandler",
    "LogAndContinueProcessingExceptionHandler",
    "DeserializationExceptionHandler",
    "LogAndFailExceptionHandler",
    "LogAndContinueExceptionHandler",
    "ProductionExceptionHandler",
    "DefaultProductionExceptionHandler",
    "LogAndContinueProductionExceptionHandler",
    "SerializationExceptionOrigin",
]


class KSparkError(Exception):
    """Root of every error kspark raises."""


class ConfigError(KSparkError, ValueError):
    """A config key is unknown or its value is invalid; the message names the key."""


class SerializationError(KSparkError):
    """A key or value could not be (de)serialized; the message names topic, partition, offset."""


class TopologyError(KSparkError):
    """The topology is malformed (unknown parent, duplicate name, missing serde, ...)."""


class MissingSourceTopicError(KSparkError):
    """A topic the topology reads does not exist: create it before starting the application."""


class MissingSinkTopicError(KSparkError):
    """A topic the topology writes does not exist: create it before starting the application."""


class BrokerUnreachableError(KSparkError):
    """No broker answered at the configured ``bootstrap.servers`` within the timeout."""


class TaskTimeoutError(BrokerUnreachableError):
    """A task (or the driver) kept failing to reach the Kafka cluster for longer than
    ``task.timeout.ms`` (Kafka Streams' bound, KIP-572): the message names the step, the
    cluster and how long it waited. Shorter outages are ridden through."""


class TransientKafkaError(KSparkError):
    """A task attempt ended because the Kafka cluster was recovering (a broker restart, a
    coordinator move) in a way only a new attempt can resolve: a transaction whose outcome
    is unknown, or one that must be aborted. The application replays the batch from its
    last commit (fencing the old attempt) by itself; this error reaches the user only if
    that keeps happening for ``task.timeout.ms``."""


class SchemaRegistryUnreachableError(TransientKafkaError):
    """The schema registry did not answer within ``request.timeout.ms`` while a record was
    read or written. The record is never skipped (no exception handler sees this): the task
    attempt ends and is replayed from its last commit, as after a broker restart, so an
    outage delays the application and loses nothing; it reaches the user only if it lasts
    ``task.timeout.ms``."""


class BrokerError(KSparkError):
    """The local Kafka broker managed by ``kspark broker`` failed to start or stop."""


class PrerequisiteError(KSparkError):
    """A tool kspark needs (Java 17) is missing; the message says how to install it."""


class SourceReadError(KSparkError):
    """Reading a topic-partition failed or stalled; the message names topic and partition."""


class SinkWriteError(KSparkError):
    """A record could not be written to Kafka; the message names the topic and task.

    kspark never drops such a record silently: the task fails and is retried by Spark,
    unless ``production.exception.handler`` is ``log_and_continue`` (then it is logged,
    counted and, if a dead-letter topic is set, its input record is dead-lettered).
    ``fatal``: the producer itself is unusable (say, fenced); no handler can continue.
    """

    fatal = False


class RetriableSinkWriteError(SinkWriteError):
    """A record Kafka refused for a reason that can go away by itself (Java's
    ``RetriableException``: a leader moving, too few in-sync replicas, a timeout). A
    ``production.exception.handler`` may answer ``Response.retry()`` to it (the default
    does, as Java's): the sink sends the record again, ``retry.backoff.ms`` apart, for up
    to ``task.timeout.ms``, then fails with a :class:`TaskTimeoutError`.

    Example:
        >>> e = RetriableSinkWriteError("topic 'out' partition 0: not enough replicas")
        >>> e.retriable, DefaultProductionExceptionHandler().handle(None, None, e)
        (True, Response(result=<Result.RETRY: 'RETRY'>, dead_letter_records=()))
    """

    retriable = True


class SparkSinkError(KSparkError):
    """A Spark sink (``KStream.to_spark``/``foreach_batch``) could not read its topic or
    write its batch; the message names the sink, the topic, partition and offset or the
    table, and what to do."""


class StreamsError(KSparkError):
    """The running application failed; the cause is attached and named in the message."""


class RunFailedError(StreamsError):
    """A run (the micro-batch query, or a real-time stream thread) failed for good, as its
    query handle's ``await_termination()`` raises it in every execution mode: ``cause`` is
    the failure, ``desc`` its whole text (with the Python worker's traceback), ``lost``
    whether the Spark Connect server stopped answering (the failure is the connection's).
    ``KafkaStreams.await_termination()`` raises a StreamsError naming the first kspark
    error in ``desc``, chained from this one.

    Example:
        >>> e = RunFailedError(RuntimeError("kspark.errors.ProcessorError: task 0_0: boom"))
        >>> str(e), e.lost, isinstance(e, StreamsError)
        ('kspark.errors.ProcessorError: task 0_0: boom', False, True)
    """

    def __init__(self, cause: BaseException, text: str | None = None, lost: bool = False):
        super().__init__(text or str(cause))
        self.cause, self.lost = cause, lost
        self.desc = getattr(cause, "traceback", None) or text or str(cause)


class TransactionsUnavailableError(KSparkError):
    """Exactly-once needs Kafka transactions and the brokers cannot provide them (too few
    brokers for ``transaction.state.log.replication.factor``, or a coordinator that does not
    answer); the message names the setting to check."""


class TaskFencedError(KSparkError):
    """A newer attempt of the same task started (Spark retried it, or ran it speculatively)
    and fenced this one: its transaction is aborted and never becomes visible."""


class TransactionTimeoutError(KSparkError):
    """A task's transaction stayed open longer than ``transaction.timeout.ms`` and the broker
    aborted it; make micro-batches shorter or raise ``producer.transaction.timeout.ms``."""


class InstanceAlreadyRunningError(KSparkError):
    """Another instance of the same ``application.id`` is running (on any host); two would
    both process all input. The message names the running instance."""


class ProcessorError(KSparkError):
    """Code in a processor (your lambda or Processor) raised: the message names the task, the
    processor node, the input record (topic, partition, offset), the exception and the file
    and line it came from; the original exception is chained as ``__cause__``."""


class ChangelogLostError(KSparkError):
    """A store's changelog topic was deleted or recreated while local state still has a
    checkpoint of it: restoring would silently lose state. The message names the topic and
    the choices (reset the application, or restore the topic)."""


class ProgressMismatchError(KSparkError):
    """The Spark checkpoint disagrees with the input offsets the application's consumer group
    committed (a restored old checkpoint, or a reset group): trusting either silently would
    skip or repeat input. The message names the topic, partition, both offsets and the choices."""


class StateStoreError(KSparkError):
    """A state store could not be opened or used (say, RocksDB's lock is held by another
    process); the message names the store, its directory and the cause."""


class KafkaSecurityError(KSparkError):
    """Kafka refused kspark's client for a security reason: authentication, the TLS
    certificate, or a missing ACL. The message names the cause and what to change."""


class AuthenticationError(KafkaSecurityError):
    """The brokers refused the client's credentials (SASL): the message names the mechanism,
    the user and the listener's security protocol."""


class CertificateError(KafkaSecurityError):
    """The TLS handshake failed: the broker's certificate is not trusted by the CA kspark was
    given (``ssl.ca.location``/``ssl.ca.pem``), its name does not match, or the broker refused
    kspark's own certificate."""


class AuthorizationError(KafkaSecurityError):
    """A missing ACL: the message names the principal, the resource type and name, the
    operation, and the ``kafka-acls`` command that grants it.

    Example:
        >>> e = AuthorizationError("denied", resource_type="TOPIC", resource_name="in",
        ...                        operation="READ")
        >>> (e.resource_type, e.resource_name, e.operation)
        ('TOPIC', 'in', 'READ')
    """

    def __init__(self, message: str, resource_type: str = "", resource_name: str = "",
                 operation: str = ""):
        super().__init__(message)
        self.resource_type, self.resource_name, self.operation = (
            resource_type, resource_name, operation)

    def __reduce__(self):  # keeps its fields through pickling (Spark ships errors back)
        return (type(self), (self.args[0], self.resource_type, self.resource_name,
                             self.operation))


class CorruptStateError(StateStoreError):
    """Data kspark keeps for itself and reads back from Kafka or local disk (a store's
    internal values, a changelog record, a task's progress or marker, the metadata topic)
    does not parse: it was damaged, or written by something other than kspark. kspark never
    executes such data. The message names the store or document, where it was read (topic,
    partition and offset, or file) and what to do (usually: reset the application)."""


class InvalidStateStoreError(KSparkError):
    """An interactive query cannot be answered as asked (Java's ``InvalidStateStoreException``):
    a store of another type than the one asked for, or a partition the application does not
    have. The message names the store, its type and what to ask instead."""


class UnknownStateStoreError(InvalidStateStoreError):
    """An interactive query names a store the topology does not have (Java's
    ``UnknownStateStoreException``); the message lists the stores it has."""


class StateStoreNotAvailableError(InvalidStateStoreError):
    """The task holding a store's partition cannot answer now: it is restoring, moving to
    another worker, or its worker is unreachable (Java's ``StreamsNotStartedException`` and
    the migrating ``InvalidStateStoreException``). Retry; or allow stale reads with
    ``StoreQueryParameters.enable_stale_stores()``. The message names the store, the
    partition, the task and why."""


class ExceptionHandlerError(ProcessorError):
    """An exception handler (``processing.exception.handler``, or the deserialization or
    production one) raised, or answered something other than a Response, while handling an
    error: the task fails (as Java's "Fatal user code error in ... error callback"). The
    message names the key, the handler, the task and the error it was handling; the
    handler's own exception is chained as ``__cause__``."""
