"""Timestamp extractors (re-exported from the engine).

Example:
    >>> from kspark.processor.timestamps import WallclockTimestampExtractor
"""

from kspark._engine.timestamps import (
    ConsumerRecord,
    FailOnInvalidTimestamp,
    LogAndSkipOnInvalidTimestamp,
    TimestampExtractor,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
)

__all__ = ["ConsumerRecord", "TimestampExtractor", "FailOnInvalidTimestamp",
           "LogAndSkipOnInvalidTimestamp", "UsePartitionTimeOnInvalidTimestamp",
           "WallclockTimestampExtractor"]
