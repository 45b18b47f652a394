"""Built-in serdes, byte-compatible with Java Kafka's serializers.

As Java's serializers, each refuses a value of a type it does not take (a
SerializationError naming the topic, the serde and the value) rather than writing
something else: ``Serdes.String()`` takes ``str`` only, not ``str(value)`` of anything.
"""

from __future__ import annotations

import io
import json
import numbers
import struct
import uuid
from collections.abc import Mapping
from typing import Any

from kspark.errors import SerializationError
from kspark.serde._base import Serde, cannot_deserialize, cannot_serialize
from kspark.serde._json import JsonSerde

__all__ = [
    "StringSerde", "IntegerSerde", "LongSerde", "ShortSerde", "FloatSerde", "DoubleSerde",
    "BytesSerde", "ByteArraySerde", "UUIDSerde", "VoidSerde", "JsonSerde", "AvroSerde",
]


class StringSerde(Serde):
    """UTF-8 text, as Java's ``StringSerializer``; takes ``str`` only."""

    name, takes = "String", "str only"

    def _to_bytes(self, data: Any) -> bytes:
        return self.serialize("", data) or b""

    def _from_bytes(self, data: bytes) -> str:
        return data.decode("utf-8")

    # the per-record path: one call instead of two
    def serialize(self, topic: str, data: Any) -> bytes | None:
        if type(data) is str or isinstance(data, str):
            try:
                return data.encode("utf-8")
            except UnicodeEncodeError as e:  # a lone surrogate
                raise cannot_serialize(self, topic, data, f"not valid UTF-8 ({e})") from e
        if data is None:
            return None
        raise cannot_serialize(self, topic, data)

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        try:
            return None if data is None else data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise cannot_deserialize(self, topic, data, e) from e


class _StructSerde(Serde):
    fmt = ""
    size = 0
    exact: type = int  # the type of the per-record path
    kind: type = numbers.Integral  # every type taken (bool never is)
    range = ""  # the values that fit, for the error

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if type(data) is not self.exact:
            if data is None:
                return None
            if not isinstance(data, self.kind) or isinstance(data, bool):
                raise cannot_serialize(self, topic, data)
        try:
            return struct.pack(self.fmt, data)
        except (struct.error, OverflowError) as e:
            raise cannot_serialize(self, topic, data, f"out of range for {self.range}") from e

    def _to_bytes(self, data: Any) -> bytes:
        return self.serialize("", data) or b""

    def _from_bytes(self, data: bytes) -> Any:
        if len(data) != self.size:
            raise SerializationError(
                f"Serdes.{self.name}() expects {self.size} bytes but got {len(data)}; "
                "is the topic written with another serde?"
            )
        return struct.unpack(self.fmt, data)[0]


class IntegerSerde(_StructSerde):
    """32-bit big-endian signed integer, as Java's ``IntegerSerializer``; takes ``int``."""

    name, fmt, size, takes = "Integer", ">i", 4, "int (not bool)"
    range = "a 32-bit signed integer (-2**31 to 2**31-1)"


class LongSerde(_StructSerde):
    """64-bit big-endian signed integer, as Java's ``LongSerializer``; takes ``int``."""

    name, fmt, size, takes = "Long", ">q", 8, "int (not bool)"
    range = "a 64-bit signed integer (-2**63 to 2**63-1)"


class ShortSerde(_StructSerde):
    """16-bit big-endian signed integer, as Java's ``ShortSerializer``; takes ``int``."""

    name, fmt, size, takes = "Short", ">h", 2, "int (not bool)"
    range = "a 16-bit signed integer (-32768 to 32767)"


class FloatSerde(_StructSerde):
    """IEEE-754 single precision, big-endian, as Java's ``FloatSerializer``; takes ``float``
    or ``int``."""

    name, fmt, size, takes = "Float", ">f", 4, "float or int (not bool)"
    exact, kind, range = float, numbers.Real, "a 32-bit float"


class DoubleSerde(_StructSerde):
    """IEEE-754 double precision, big-endian, as Java's ``DoubleSerializer``; takes ``float``
    or ``int``."""

    name, fmt, size, takes = "Double", ">d", 8, "float or int (not bool)"
    exact, kind, range = float, numbers.Real, "a 64-bit float"


class ByteArraySerde(Serde):
    """Raw bytes, unchanged; takes ``bytes``, ``bytearray`` or ``memoryview``."""

    name, takes = "ByteArray", "bytes, bytearray or memoryview"

    def _to_bytes(self, data: Any) -> bytes:
        return self.serialize("", data) or b""

    def _from_bytes(self, data: bytes) -> bytes:
        return bytes(data)

    # the per-record path: bytes pass through without a copy
    def serialize(self, topic: str, data: Any) -> bytes | None:
        if type(data) is bytes or data is None:
            return data
        if isinstance(data, (bytes, bytearray, memoryview)):
            return bytes(data)
        raise cannot_serialize(self, topic, data)

    def deserialize(self, topic: str, data: bytes | None) -> bytes | None:
        return data if data is None or type(data) is bytes else bytes(data)

    # Both return ``bytes`` and None as given: the engine's sources and sinks skip the call
    # for them (``_engine/nodes.py``, ``bytes_identity``). A subclass that overrides one
    # loses the mark for it.
    serialize.bytes_identity = True  # type: ignore[attr-defined]
    deserialize.bytes_identity = True  # type: ignore[attr-defined]


class BytesSerde(ByteArraySerde):
    """Raw bytes (Java's ``Bytes`` wrapper is plain ``bytes`` in Python)."""

    name = "Bytes"


class UUIDSerde(Serde):
    """A UUID as its 36-character string, as Java's ``UUIDSerializer``; takes a
    ``uuid.UUID`` (or a ``str`` that parses as one)."""

    name, takes = "UUID", "uuid.UUID, or a str that parses as one"

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if isinstance(data, uuid.UUID):
            return str(data).encode("utf-8")
        if data is None:
            return None
        if not isinstance(data, str):
            raise cannot_serialize(self, topic, data)
        try:
            return str(uuid.UUID(data)).encode("utf-8")
        except ValueError as e:
            raise cannot_serialize(self, topic, data, "the str is not a UUID") from e

    def _to_bytes(self, data: Any) -> bytes:
        return self.serialize("", data) or b""

    def _from_bytes(self, data: bytes) -> uuid.UUID:
        return uuid.UUID(data.decode("utf-8"))


class VoidSerde(Serde):
    """Always null, as Java's ``VoidSerializer``; a non-null value is an error."""

    name, takes = "Void", "None only"

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        raise cannot_serialize(self, topic, data)

    def _to_bytes(self, data: Any) -> bytes:
        raise cannot_serialize(self, "", data)

    def _from_bytes(self, data: bytes) -> None:
        raise SerializationError(f"Serdes.Void() expects null data, got {len(data)} bytes")


class AvroSerde(Serde):
    """Avro binary encoding of one schema (no registry framing), through fastavro; a record
    schema takes a ``dict``. What fastavro refuses is a SerializationError naming the topic."""

    name = "Avro"

    def __init__(self, schema: dict | str):
        import fastavro

        self.schema = json.loads(schema) if isinstance(schema, str) else schema
        self._parsed = fastavro.parse_schema(self.schema)
        record = isinstance(self.schema, dict) and self.schema.get("type") == "record"
        self._record = record
        self.takes = (f"a dict with the fields of record {self.schema.get('name')!r}" if record
                      else "what its schema describes")

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        if self._record and not isinstance(data, Mapping):
            raise cannot_serialize(self, topic, data)
        try:
            return self._to_bytes(data)
        except Exception as e:  # fastavro's errors name the field
            raise cannot_serialize(self, topic, data, f"it does not match the schema "
                                                      f"({type(e).__name__}: {e})") from e

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
