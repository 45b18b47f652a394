"""The Processor API types the engine runs: Record, Processor, ProcessorContext.

They are re-exported by :mod:`kspark.processor`, which is where users import them from.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Generic, Mapping, NamedTuple, TypeVar

__all__ = ["Record", "RecordMetadata", "Processor", "ProcessorContext", "Headers"]

K = TypeVar("K")
V = TypeVar("V")
Headers = tuple[tuple[str, bytes | None], ...]
# the copies below are made per record and step: tuple.__new__ skips the Python-level
# __new__ a named tuple has
_new = tuple.__new__


class Record(NamedTuple, Generic[K, V]):
    """An immutable record flowing through a topology (a named tuple: one is made per
    record per step, and a tuple is the cheapest immutable object Python builds).

    Example:
        >>> r = Record("k", 1, 10)
        >>> r.with_value(2)
        Record(key='k', value=2, timestamp=10, headers=())
    """

    key: K
    value: V
    timestamp: int
    headers: Headers = ()

    def with_key(self, key: Any) -> "Record":
        """A copy with another key."""
        return _new(Record, (key, self.value, self.timestamp, self.headers))

    def with_value(self, value: Any) -> "Record":
        """A copy with another value."""
        return _new(Record, (self.key, value, self.timestamp, self.headers))

    def with_timestamp(self, timestamp: int) -> "Record":
        """A copy with another timestamp (ms since the epoch)."""
        return _new(Record, (self.key, self.value, timestamp, self.headers))

    def with_headers(self, headers: Any) -> "Record":
        """A copy with other headers: a sequence of ``(key, bytes)`` or a mapping."""
        return Record(self.key, self.value, self.timestamp, normalize_headers(headers))


def normalize_headers(headers: Any) -> Headers:
    """Headers as a tuple of ``(str, bytes | None)`` pairs, order kept."""
    if not headers:
        return ()
    items = headers.items() if isinstance(headers, Mapping) else headers
    out = []
    for k, v in items:
        out.append((str(k), None if v is None
                    else (v.encode() if isinstance(v, str) else bytes(v))))
    return tuple(out)


@dataclass(frozen=True)
class RecordMetadata:
    """Where the record being processed came from."""

    topic: str
    partition: int
    offset: int


class ProcessorContext(ABC):
    """What a processor can see and do while it processes a record."""

    @abstractmethod
    def forward(self, record: Record, child_name: str | None = None) -> None:
        """Send ``record`` to all children, or only to the child called ``child_name``."""

    @abstractmethod
    def record_metadata(self) -> RecordMetadata | None:
        """Topic, partition and offset of the input record being processed (None if none)."""

    @abstractmethod
    def task_id(self) -> str:
        """The task's id, ``<sub-topology>_<partition>`` as in Kafka Streams."""

    @abstractmethod
    def application_id(self) -> str:
        """The ``application.id`` config value."""

    @abstractmethod
    def app_config(self) -> Mapping[str, Any]:
        """The application's config."""

    @abstractmethod
    def current_stream_time_ms(self) -> int:
        """The task's stream time: the largest timestamp it has processed (-1 before any)."""

    @abstractmethod
    def current_system_time_ms(self) -> int:
        """The wall-clock time the task sees (mockable in the test driver)."""

    @abstractmethod
    def commit(self) -> None:
        """Ask for a commit as soon as possible (on Spark: at the end of the micro-batch)."""

    @abstractmethod
    def get_state_store(self, name: str) -> Any:
        """The state store ``name``; the processor must be connected to it."""

    @abstractmethod
    def schedule(self, interval_ms: int, punctuation_type: Any, callback: Any) -> Any:
        """Call ``callback(timestamp)`` every ``interval_ms`` of stream time or wall-clock time.

        Stream-time punctuation fires as the task's stream time passes each interval (missed
        intervals are skipped); wall-clock punctuation fires on the system clock (on Spark:
        checked at the end of each micro-batch). Returns a Cancellable.
        """

    def schedule_record(self, record: Record, delay_ms: int) -> None:
        """Process ``record`` again with this processor ``delay_ms`` of wall-clock time from
        now (KIP-311's delayed processing). The record waits in a delayed-records store
        connected to the processor (``Stores.delayed_records_store_builder``), so it survives
        restarts; on Spark it is processed at the first micro-batch after it is due. While it
        is, :meth:`is_delayed_delivery` is true."""
        raise NotImplementedError(f"{type(self).__name__} cannot schedule records")

    def is_delayed_delivery(self) -> bool:
        """True while the processor processes a record it scheduled with
        :meth:`schedule_record`."""
        return False


class Processor(ABC):
    """A node of the topology that user code can write. All methods are no-ops by default.

    Example:
        >>> class Upper(Processor):
        ...     def init(self, context):
        ...         self.context = context
        ...     def process(self, record):
        ...         self.context.forward(record.with_value(record.value.upper()))
    """

    def init(self, context: ProcessorContext) -> None:
        """Called once before the first record; keep ``context`` to forward records."""

    def process(self, record: Record) -> None:
        """Called for each record."""

    def close(self) -> None:
        """Called once when the task closes."""
