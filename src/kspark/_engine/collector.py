"""Record collectors: where a task's sinks put serialized records."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from kspark._engine.api import Headers
from kspark.errors import SinkWriteError

__all__ = ["send_many", "RecordCollector", "ProducedRecord", "MemoryCollector"]


@dataclass(frozen=True)
class ProducedRecord:
    """A record a sink wrote: serialized key and value, and where it goes."""

    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers
    partition: int | None


class RecordCollector(ABC):
    """Receives every record a task's sinks emit."""

    @abstractmethod
    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
             headers: Headers, partition: int | None) -> None:
        """Accept one serialized record for ``topic`` (``partition`` None: the default
        partitioner)."""

    def send_many(self, topic: str, records: list[tuple[bytes | None, bytes | None, int,
                                                         Headers, int | None]]) -> None:
        """Accept ``(key, value, timestamp, headers, partition)`` records for ``topic``, in
        order, as one :meth:`send` each (a Kafka producer sends them with less done per
        record). A SinkWriteError raised for one carries its ``index``: the records before it
        were accepted."""
        for i, (key, value, timestamp, headers, partition) in enumerate(records):
            try:
                self.send(topic, key, value, timestamp, headers, partition)
            except SinkWriteError as e:
                e.index = i  # type: ignore[attr-defined]
                raise

    def flush(self) -> None:
        """Make sure everything sent so far is written; raise if anything failed."""


def send_many(collector: Any, topic: str, records: list[tuple[Any, ...]]) -> None:
    """``collector.send_many(topic, records)``, or one ``send`` each for a collector
    without it (a test's), a SinkWriteError carrying its record's ``index`` either way."""
    many = getattr(collector, "send_many", None)
    if many is not None:
        many(topic, records)
        return
    RecordCollector.send_many(collector, topic, records)


class MemoryCollector(RecordCollector):
    """Keeps records in a list (the test driver's collector)."""

    def __init__(self) -> None:
        self.records: list[ProducedRecord] = []

    def send(self, topic, key, value, timestamp, headers, partition) -> None:
        self.records.append(ProducedRecord(topic, key, value, timestamp, headers, partition))
