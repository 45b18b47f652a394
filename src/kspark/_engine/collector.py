"""Record collectors: where a task's sinks put serialized records."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from kspark._engine.api import Headers

__all__ = ["RecordCollector", "ProducedRecord", "MemoryCollector"]


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

    def flush(self) -> None:
        """Make sure everything sent so far is written; raise if anything failed."""


class MemoryCollector(RecordCollector):
    """Keeps records in a list (the test driver's collector)."""

    def __init__(self) -> None:
        self.records: list[ProducedRecord] = []

    def send(self, topic, key, value, timestamp, headers, partition) -> None:
        self.records.append(ProducedRecord(topic, key, value, timestamp, headers, partition))
