"""The Serde protocol: a pair of functions between Python values and bytes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from kspark.errors import SerializationError

__all__ = ["Serde", "cannot_deserialize"]


def cannot_deserialize(serde: Any, topic: str, data: bytes,
                       cause: BaseException) -> SerializationError:
    """The error for bytes of ``topic`` that ``serde`` cannot read.

    >>> cannot_deserialize("Serdes.Long()", "t", b"ab", ValueError("2 bytes"))
    SerializationError("Serdes.Long() cannot deserialize 2 bytes of 't' (ValueError: 2 bytes); is it written with another serde?")
    """  # noqa: E501 - a doctest's expected output is one line
    return SerializationError(f"{serde!s} cannot deserialize {len(data)} bytes of {topic!r} "
                              f"({type(cause).__name__}: {cause}); is it written with another "
                              f"serde?")


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
        """Turn bytes read from ``topic`` back into a value; ``None`` stays ``None``. Bytes
        that do not parse raise a SerializationError (whatever failed is chained to it)."""
        if data is None:
            return None
        try:
            return self._from_bytes(data)
        except SerializationError:
            raise
        except Exception as e:
            raise cannot_deserialize(self, topic, data, e) from e

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
