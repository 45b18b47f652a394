"""The Serde protocol: a pair of functions between Python values and bytes."""

from __future__ import annotations

import reprlib
import uuid
from abc import ABC, abstractmethod
from typing import Any

from kspark.errors import SerializationError

__all__ = ["Serde", "cannot_deserialize", "cannot_serialize"]

_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxdict, _SHORT.maxlist = 40, 60, 4, 6

# the built-in serde that takes a value of each type, to suggest when another one refuses it
_FITS = {str: "Serdes.String()", int: "Serdes.Long()", float: "Serdes.Double()",
         bytes: "Serdes.ByteArray()", bytearray: "Serdes.ByteArray()",
         memoryview: "Serdes.ByteArray()", uuid.UUID: "Serdes.UUID()", dict: "Serdes.Json()",
         list: "Serdes.Json()", tuple: "Serdes.Json()", bool: "Serdes.Json()"}


def _advice(serde: Any, data: Any) -> str:
    if type(data).__name__ == "Windowed":  # kspark.dsl.Windowed, named not imported (layering)
        return (f"write windowed keys with TimeWindowedSerde({serde!r}, window_size_ms) or "
                f"SessionWindowedSerde({serde!r}), or map the key first: "
                f"map(lambda k, v: (k.key, v))")
    fits = _FITS.get(type(data))
    other = f", or use {fits}" if fits and fits != repr(serde) else ""
    return f"convert it first (a value with map_values(), a key with select_key()){other}"


def cannot_serialize(serde: Any, topic: str, data: Any, why: str = "") -> SerializationError:
    """The error for a value of ``topic`` that ``serde`` refuses; ``why`` (say, out of range)
    replaces "it takes <serde.takes>".

    >>> from kspark import Serdes
    >>> cannot_serialize(Serdes.String(), "t", {"a": 1})
    SerializationError("Serdes.String() cannot serialize dict {'a': 1} for topic 't': it takes str only; convert it first (a value with map_values(), a key with select_key()), or use Serdes.Json()")
    """  # noqa: E501 - a doctest's expected output is one line
    where = f" for topic {topic!r}" if topic else ""
    why = why or f"it takes {getattr(serde, 'takes', '') or 'another type'}"
    return SerializationError(f"{serde!r} cannot serialize {type(data).__name__} "
                              f"{_SHORT.repr(data)}{where}: {why}; {_advice(serde, data)}")


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
    takes = ""  # the values serialize accepts, as error messages name them ("str only")

    def serialize(self, topic: str, data: Any) -> bytes | None:
        """Turn ``data`` into bytes for ``topic``; ``None`` stays ``None``. A value of a type
        the serde does not take, or one it cannot encode, raises a SerializationError naming
        the topic, the serde and the value (whatever failed is chained to it)."""
        if data is None:
            return None
        try:
            return self._to_bytes(data)
        except SerializationError:
            raise
        except Exception as e:
            raise cannot_serialize(self, topic, data, f"{type(e).__name__}: {e}") from e

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
        """Serialize a non-null value; a TypeError means the serde does not take its type."""

    @abstractmethod
    def _from_bytes(self, data: bytes) -> Any:
        """Deserialize non-null bytes."""

    def __repr__(self) -> str:
        return f"Serdes.{self.name}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(type(self))
