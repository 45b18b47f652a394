"""Serdes: turn keys and values into bytes and back, byte-compatible with Java Kafka.

Example:
    >>> from kspark.serde import Serdes
    >>> Serdes.Long().serialize("t", 1)
    b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01'
    >>> Serdes.by_name("String")
    Serdes.String()

Schema Registry serdes (Avro, JSON Schema, Protobuf): ``Serdes.avro()``,
``Serdes.json_schema()``, ``Serdes.protobuf()`` (:mod:`kspark.serde.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kspark.errors import ConfigError
from kspark.serde._base import Serde
from kspark.serde import _builtin as _b
from kspark.serde import registry as _registry

__all__ = ["Serde", "Serdes"]


class Serdes:
    """Factory of the built-in serdes, named as in Java's ``Serdes``."""

    String = _b.StringSerde
    Integer = _b.IntegerSerde
    Long = _b.LongSerde
    Short = _b.ShortSerde
    Float = _b.FloatSerde
    Double = _b.DoubleSerde
    Bytes = _b.BytesSerde
    ByteArray = _b.ByteArraySerde
    UUID = _b.UUIDSerde
    Void = _b.VoidSerde
    Json = _b.JsonSerde
    Avro = _b.AvroSerde

    @staticmethod
    def avro(schema_str: str | None = None, config: Mapping[str, Any] | None = None,
             record_type: type | None = None) -> Serde:
        """Avro with the Schema Registry (Confluent's wire format), for keys or values:
        writes with ``schema_str`` or the schema of ``record_type`` (a dataclass or a
        Pydantic model), reads with the writer's schema resolved to that one, to dicts or
        ``record_type`` instances. ``config``: this serde's ``schema.registry.*`` and
        serializer keys; the others come from the application config (docs/serdes.md).

        >>> s = Serdes.avro('{"type": "record", "name": "V", "fields": '
        ...                 '[{"name": "n", "type": "long"}]}',
        ...                 config={"schema.registry.url": "mock://doc-avro"})
        >>> s.deserialize("t", s.serialize("t", {"n": 1}))
        {'n': 1}
        """
        return _registry.AvroRegistrySerde(schema_str, config, record_type)

    @staticmethod
    def json_schema(schema_str: str | None = None, config: Mapping[str, Any] | None = None,
                    record_type: type | None = None) -> Serde:
        """JSON Schema with the Schema Registry (Confluent's wire format): JSON text checked
        against ``schema_str`` or the schema of ``record_type``; see :meth:`avro`.

        >>> s = Serdes.json_schema('{"type": "object", "title": "V"}',
        ...                        config={"schema.registry.url": "mock://doc-json"})
        >>> s.serialize("t", {"n": 1})
        b'\\x00\\x00\\x00\\x00\\x01{"n":1}'
        """
        return _registry.JsonSchemaRegistrySerde(schema_str, config, record_type)

    @staticmethod
    def protobuf(message_class: type, config: Mapping[str, Any] | None = None) -> Serde:
        """Protobuf with the Schema Registry (Confluent's wire format, with the message
        indexes): instances of ``message_class``, a generated message class; see
        :meth:`avro`."""
        return _registry.ProtobufRegistrySerde(message_class, config)

    _NAMES = ("String", "Integer", "Long", "Short", "Float", "Double",
              "Bytes", "ByteArray", "UUID", "Void", "Json")

    @classmethod
    def by_name(cls, name: Any) -> Serde:
        """The built-in serde called ``name`` (``"String"``, or Java's
        ``...Serdes$StringSerde``), or a serde class made into a serde (as Java's
        ``Serdes.StringSerde.class`` in a config: ``Serdes.String``)."""
        if isinstance(name, type) and issubclass(name, Serde):
            return name()
        if not isinstance(name, str):
            raise ConfigError(f"a serde in the config is a Serde, a Serde class or a built-in "
                              f"serde's name such as 'String', got {type(name).__name__} "
                              f"{name!r:.60}")
        short = name.rsplit("$", 1)[-1].rsplit(".", 1)[-1]
        short = short[: -len("Serde")] if short.endswith("Serde") and short != "Serde" else short
        if short not in cls._NAMES:
            raise ConfigError(
                f"unknown serde {name!r}; use one of {', '.join(cls._NAMES)} or pass a Serde "
                "instance"
            )
        return getattr(cls, short)()
