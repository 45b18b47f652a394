"""Built-in serdes, byte-compatible with Java Kafka's serializers."""

from __future__ import annotations

import io
import json
import struct
import uuid
from typing import Any

from kspark.errors import SerializationError
from kspark.serde._base import Serde, cannot_deserialize

__all__ = [
    "StringSerde", "IntegerSerde", "LongSerde", "ShortSerde", "FloatSerde", "DoubleSerde",
    "BytesSerde", "ByteArraySerde", "UUIDSerde", "VoidSerde", "JsonSerde", "AvroSerde",
]


class StringSerde(Serde):
    """UTF-8 text, as Java's ``StringSerializer``."""

    name = "String"

    def _to_bytes(self, data: Any) -> bytes:
        return str(data).encode("utf-8")

    def _from_bytes(self, data: bytes) -> str:
        return data.decode("utf-8")

    # the per-record path: one call instead of two
    def serialize(self, topic: str, data: Any) -> bytes | None:
        return None if data is None else str(data).encode("utf-8")

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        try:
            return None if data is None else data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise cannot_deserialize(self, topic, data, e) from e


class _StructSerde(Serde):
    fmt = ""
    size = 0

    def _to_bytes(self, data: Any) -> bytes:
        try:
            return struct.pack(self.fmt, data)
        except struct.error as e:
            raise SerializationError(f"Serdes.{self.name}() cannot serialize {data!r}: {e}") from e

    def _from_bytes(self, data: bytes) -> Any:
        if len(data) != self.size:
            raise SerializationError(
                f"Serdes.{self.name}() expects {self.size} bytes but got {len(data)}; "
                "is the topic written with another serde?"
            )
        return struct.unpack(self.fmt, data)[0]


class IntegerSerde(_StructSerde):
    """32-bit big-endian signed integer, as Java's ``IntegerSerializer``."""

    name, fmt, size = "Integer", ">i", 4


class LongSerde(_StructSerde):
    """64-bit big-endian signed integer, as Java's ``LongSerializer``."""

    name, fmt, size = "Long", ">q", 8


class ShortSerde(_StructSerde):
    """16-bit big-endian signed integer, as Java's ``ShortSerializer``."""

    name, fmt, size = "Short", ">h", 2


class FloatSerde(_StructSerde):
    """IEEE-754 single precision, big-endian, as Java's ``FloatSerializer``."""

    name, fmt, size = "Float", ">f", 4


class DoubleSerde(_StructSerde):
    """IEEE-754 double precision, big-endian, as Java's ``DoubleSerializer``."""

    name, fmt, size = "Double", ">d", 8


class ByteArraySerde(Serde):
    """Raw bytes, unchanged."""

    name = "ByteArray"

    def _to_bytes(self, data: Any) -> bytes:
        return bytes(data)

    def _from_bytes(self, data: bytes) -> bytes:
        return bytes(data)

    # the per-record path: bytes pass through without a copy
    def serialize(self, topic: str, data: Any) -> bytes | None:
        return data if data is None or type(data) is bytes else bytes(data)

    def deserialize(self, topic: str, data: bytes | None) -> bytes | None:
        return data if data is None or type(data) is bytes else bytes(data)


class BytesSerde(ByteArraySerde):
    """Raw bytes (Java's ``Bytes`` wrapper is plain ``bytes`` in Python)."""

    name = "Bytes"


class UUIDSerde(Serde):
    """A UUID as its 36-character string, as Java's ``UUIDSerializer``."""

    name = "UUID"

    def _to_bytes(self, data: Any) -> bytes:
        return str(data if isinstance(data, uuid.UUID) else uuid.UUID(str(data))).encode("utf-8")

    def _from_bytes(self, data: bytes) -> uuid.UUID:
        return uuid.UUID(data.decode("utf-8"))


class VoidSerde(Serde):
    """Always null, as Java's ``VoidSerializer``; a non-null value is an error."""

    name = "Void"

    def _to_bytes(self, data: Any) -> bytes:
        raise SerializationError(f"Serdes.Void() can only serialize None, got {data!r}")

    def _from_bytes(self, data: bytes) -> None:
        raise SerializationError(f"Serdes.Void() expects null data, got {len(data)} bytes")


class JsonSerde(Serde):
    """JSON text in UTF-8 (compact separators, keys in insertion order)."""

    name = "Json"

    def _to_bytes(self, data: Any) -> bytes:
        return json.dumps(data, separators=(",", ":")).encode("utf-8")

    def _from_bytes(self, data: bytes) -> Any:
        return json.loads(data)


class AvroSerde(Serde):
    """Avro binary encoding of one schema (no registry framing), through fastavro."""

    name = "Avro"

    def __init__(self, schema: dict | str):
        import fastavro

        self.schema = json.loads(schema) if isinstance(schema, str) else schema
        self._parsed = fastavro.parse_schema(self.schema)

    def _to_bytes(self, data: Any) -> bytes:
        import fastavro

        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, self._parsed, data)
        return buf.getvalue()

    def _from_bytes(self, data: bytes) -> Any:
        import fastavro

        return fastavro.schemaless_reader(io.BytesIO(data), self._parsed)

    def __repr__(self) -> str:
        name = self.schema.get("name", "schema") if isinstance(self.schema, dict) else "schema"
        return f"Serdes.Avro({name})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AvroSerde) and other.schema == self.schema

    def __hash__(self) -> int:
        return hash("Avro")
