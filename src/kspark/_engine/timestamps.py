"""Timestamp extractors: the event time of each input record, as in Kafka Streams."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from kspark.errors import StreamsError

__all__ = ["ConsumerRecord", "TimestampExtractor", "FailOnInvalidTimestamp",
           "LogAndSkipOnInvalidTimestamp", "UsePartitionTimeOnInvalidTimestamp",
           "WallclockTimestampExtractor"]


@dataclass(frozen=True)
class ConsumerRecord:
    """An input record as an extractor sees it: deserialized key and value plus metadata."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Any
    value: Any
    headers: tuple = ()


class TimestampExtractor(ABC):
    """Gives each record its event time; a negative answer drops the record (logged, counted).

    Example:
        >>> class FromValue(TimestampExtractor):
        ...     def extract(self, record, partition_time):
        ...         return record.value["ts"]
    """

    @abstractmethod
    def extract(self, record: ConsumerRecord, partition_time: int) -> int:
        """The record's timestamp in ms; ``partition_time`` is the highest seen in its partition."""


class _RecordMetadataTimestamp(TimestampExtractor):
    """Uses the timestamp Kafka stored (CreateTime, or LogAppendTime if the topic sets it)."""

    def extract(self, record: ConsumerRecord, partition_time: int) -> int:
        if record.timestamp >= 0:
            return record.timestamp
        return self.on_invalid(record, partition_time)

    @abstractmethod
    def on_invalid(self, record: ConsumerRecord, partition_time: int) -> int:
        """What to do with a negative stored timestamp."""


class FailOnInvalidTimestamp(_RecordMetadataTimestamp):
    """The default: a negative stored timestamp stops the task with an error naming the record."""

    def on_invalid(self, record: ConsumerRecord, partition_time: int) -> int:
        raise StreamsError(
            f"invalid (negative) timestamp {record.timestamp} for the record at topic "
            f"{record.topic!r}, partition {record.partition}, offset {record.offset}; the "
            "producer wrote no valid timestamp. Use another timestamp_extractor "
            "(LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp) to go on"
        )


class LogAndSkipOnInvalidTimestamp(_RecordMetadataTimestamp):
    """Drops records with a negative stored timestamp (logged and counted)."""

    def on_invalid(self, record: ConsumerRecord, partition_time: int) -> int:
        return -1


class UsePartitionTimeOnInvalidTimestamp(_RecordMetadataTimestamp):
    """Gives records with a negative stored timestamp the partition's time (dropped if none yet)."""

    def on_invalid(self, record: ConsumerRecord, partition_time: int) -> int:
        return partition_time


class WallclockTimestampExtractor(TimestampExtractor):
    """Processing time: the system clock when the record is read."""

    def extract(self, record: ConsumerRecord, partition_time: int) -> int:
        return int(time.time() * 1000)
