"""Values stored with their timestamp, as Kafka Streams' timestamped stores keep them."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["ValueAndTimestamp", "ValueAndTimestampSerde"]


class ValueAndTimestamp(NamedTuple):
    value: Any
    timestamp: int


class ValueAndTimestampSerde:
    """8-byte big-endian timestamp followed by the value's bytes (Kafka Streams' layout)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def serialize(self, topic: str, data: ValueAndTimestamp | None) -> bytes | None:
        if data is None or data.value is None:
            return None
        return (data.timestamp.to_bytes(8, "big", signed=True)
                + self.inner.serialize(topic, data.value))

    def deserialize(self, topic: str, data: bytes | None) -> ValueAndTimestamp | None:
        if data is None:
            return None
        return ValueAndTimestamp(self.inner.deserialize(topic, data[8:]),
                                 int.from_bytes(data[:8], "big", signed=True))
