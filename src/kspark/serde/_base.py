"""The Serde protocol: a pair of functions between Python values and bytes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["Serde"]


class Serde(ABC):
    """Serializer and deserializer for one type, null-safe like Kafka's.

    ``None`` always maps to ``None`` (a Kafka null), in both directions.
    Subclasses implement :meth:`_to_bytes` and :meth:`_from_bytes`.

    Example:
        >>> from kspark import Serdes
        >>> s = Serdes.Integer()
        >>> s.serialize("t", 1)
        b'\\x00\\x00\\x00\\x01'
        >>> s.deserialize("t", b'\\x00\\x00\\x00\\x01'), s.serialize("t", None)
        (1, None)
    """

    name = "Serde"

    def serialize(self, topic: str, data: Any) -> bytes | None:
        """Turn ``data`` into bytes for ``topic``; ``None`` stays ``None``."""
        return None if data is None else self._to_bytes(data)

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        """Turn bytes read from ``topic`` back into a value; ``None`` stays ``None``."""
        return None if data is None else self._from_bytes(data)

    @abstractmethod
    def _to_bytes(self, data: Any) -> bytes:
        """Serialize a non-null value."""

    @abstractmethod
    def _from_bytes(self, data: bytes) -> Any:
        """Deserialize non-null bytes."""

    def __repr__(self) -> str:
        return f"Serdes.{self.name}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(type(self))
