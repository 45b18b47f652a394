"""Schema Registry serdes: Avro, JSON Schema and Protobuf in Confluent's wire format, built
on confluent-kafka's own client and serializers (so the bytes are theirs, and Java's).

Made by ``Serdes.avro()``, ``Serdes.json_schema()`` and ``Serdes.protobuf()``; the
registry's address and credentials usually come from the application config
(``schema.registry.url``, ``basic.auth.user.info``, ...), see docs/serdes.md.

Example:
    >>> from dataclasses import dataclass
    >>> from kspark import Serdes
    >>> @dataclass
    ... class View:
    ...     page: str
    ...     ms: int = 0
    >>> s = Serdes.avro(record_type=View, config={"schema.registry.url": "mock://doc"})
    >>> raw = s.serialize("views", View("/home", 5))
    >>> raw[:1], len(raw)  # magic byte, schema id, then Avro binary
    (b'\\x00', 12)
    >>> s.deserialize("views", raw)
    View(page='/home', ms=5)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kspark.errors import ConfigError
from kspark.serde._base import cannot_serialize
from kspark.serde._registry_fast import reader_for, writer_for
from kspark.serde._registry_serde import RegistrySerde
from kspark.serde._registry_settings import Settings, client_for, settings_from
from kspark.serde._registry_types import avro_schema, is_record_type, json_schema

__all__ = ["AvroRegistrySerde", "JsonSchemaRegistrySerde", "ProtobufRegistrySerde",
           "RegistrySerde", "schema_registry_client"]


def _check_record_type(record_type: Any, fmt: str) -> None:
    if record_type is not None and not is_record_type(record_type):
        raise ConfigError(f"Serdes.{fmt}(record_type=...) takes a dataclass or a Pydantic "
                          f"model class, got {record_type!r:.80}")


def _serializer_conf(s: Settings) -> dict[str, Any]:
    return {"auto.register.schemas": s.auto_register, "normalize.schemas": s.normalize,
            # as in Java, auto.register.schemas=true registers the serde's schema and wins
            "use.latest.version": s.use_latest and not s.auto_register,
            "subject.name.strategy": s.strategy_function()}


def _deserializer_conf(s: Settings) -> dict[str, Any]:
    return {"use.latest.version": s.use_latest, "subject.name.strategy": s.strategy_function()}


def _no_schema(fmt: str) -> ConfigError:
    return ConfigError(f"Serdes.{fmt}() has no schema to write with: give schema_str or "
                       f"record_type, or set use.latest.version=true with "
                       f"auto.register.schemas=false to write with the subject's latest schema")


class AvroRegistrySerde(RegistrySerde):
    """Avro with the Schema Registry: writes with ``schema_str`` (or the schema of
    ``record_type``), reads with the writer's schema (the id in the record) resolved to that
    reader schema (schema evolution), to dicts or ``record_type`` instances."""

    fmt = "avro"

    def __init__(self, schema_str: str | None = None, config: Mapping[str, Any] | None = None,
                 record_type: type | None = None):
        _check_record_type(record_type, self.fmt)
        super().__init__(schema_str, config, record_type)
        self._schema = schema_str or (avro_schema(record_type) if record_type else None)
        if self._schema is not None:
            try:
                import fastavro

                fastavro.parse_schema(json.loads(self._schema))
            except Exception as e:  # noqa: BLE001 - fastavro's and json's errors alike
                raise ConfigError(f"Serdes.avro(): schema_str is no valid Avro schema "
                                  f"({type(e).__name__}: {e})") from e

    def serialize(self, topic: str, data: Any) -> bytes | None:
        """As :class:`RegistrySerde`'s, through fastavro once confluent's serializer has
        written this topic's first record the same way (``_registry_fast``)."""
        if data is None:
            return None
        s = self._settings()
        codec = self._codec_of(s)
        fast = codec.fast.get(("w", topic))
        if fast is not None:
            try:
                return fast.write(self._plain(topic, data))
            except Exception:  # noqa: BLE001 - confluent's path names the error
                pass
        out = super().serialize(topic, data)
        if ("w", topic) not in codec.fast and out is not None and self._schema is not None:
            fixed = not (s.use_latest and not s.auto_register)  # our schema, not the latest
            codec.fast[("w", topic)] = fixed and writer_for(
                codec.get("write"), self._schema, self._plain(topic, data), out) or None
        return out

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        """As :class:`RegistrySerde`'s, through fastavro once confluent's deserializer has
        read a schema id's first record the same way (``_registry_fast``)."""
        if data is None:
            return None
        s = self._settings()
        if s.use_latest or len(data) < 6 or data[0] != 0:
            return super().deserialize(topic, data)
        codec, schema_id = self._codec_of(s), int.from_bytes(data[1:5], "big")
        fast = codec.fast.get(("r", schema_id))
        if fast is not None:
            try:
                return self._typed(fast.read(data))
            except Exception:  # noqa: BLE001 - confluent's path names the error
                pass
        value = super().deserialize(topic, data)
        if ("r", schema_id) not in codec.fast:
            # the deserializer looked the id up under the topic's subject (TopicNameStrategy)
            # or none: the client's cache holds it so
            subject = s.subject_of(topic, None) if s.strategy == "TopicNameStrategy" else None
            codec.fast[("r", schema_id)] = reader_for(codec.client, schema_id, subject,
                                                      self._schema, bytes(data), value,
                                                      self._typed)
        return value

    def _make(self, op: str, client: Any, settings: Settings) -> Any:
        from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

        if op == "read":
            return AvroDeserializer(client, self._schema, conf=_deserializer_conf(settings))
        if self._schema is None and not (settings.use_latest and not settings.auto_register):
            raise _no_schema(self.fmt)
        return AvroSerializer(client, self._schema, conf=_serializer_conf(settings))

    def _name_of_record(self) -> str | None:
        schema = json.loads(self._schema) if self._schema else None
        if not isinstance(schema, dict) or "name" not in schema:
            return None
        name, space = schema["name"], schema.get("namespace")
        return f"{space}.{name}" if space and "." not in name else name


class JsonSchemaRegistrySerde(RegistrySerde):
    """JSON Schema with the Schema Registry: JSON text validated against ``schema_str`` (or
    the schema of ``record_type``) on write and the writer's schema on read."""

    fmt = "json_schema"

    def __init__(self, schema_str: str | None = None, config: Mapping[str, Any] | None = None,
                 record_type: type | None = None):
        _check_record_type(record_type, self.fmt)
        super().__init__(schema_str, config, record_type)
        self._schema = schema_str or (json_schema(record_type) if record_type else None)
        if self._schema is not None:
            try:
                json.loads(self._schema)
            except ValueError as e:
                raise ConfigError(f"Serdes.json_schema(): schema_str is no JSON ({e})") from e

    def _make(self, op: str, client: Any, settings: Settings) -> Any:
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

        if op == "read":
            return JSONDeserializer(self._schema, schema_registry_client=client,
                                    conf=_deserializer_conf(settings))
        if self._schema is None and not (settings.use_latest and not settings.auto_register):
            raise _no_schema(self.fmt)
        return JSONSerializer(self._schema, client, conf=_serializer_conf(settings))

    def _name_of_record(self) -> str | None:
        schema = json.loads(self._schema) if self._schema else None
        return schema.get("title") if isinstance(schema, dict) else None


class ProtobufRegistrySerde(RegistrySerde):
    """Protobuf with the Schema Registry: instances of ``message_class`` (a generated
    message class), its schema registered with its imports as references; the framing adds
    the message's indexes in its file after the schema id."""

    fmt = "protobuf"

    def __init__(self, message_class: type, config: Mapping[str, Any] | None = None):
        if not (isinstance(message_class, type) and hasattr(message_class, "DESCRIPTOR")):
            raise ConfigError(f"Serdes.protobuf() takes a generated Protobuf message class, "
                              f"got {message_class!r:.80}")
        super().__init__(None, config, None, message_class)

    def _plain(self, topic: str, data: Any) -> Any:
        if not isinstance(data, self.message_class):  # type: ignore[arg-type]
            raise cannot_serialize(self, topic, data)
        return data

    def _make(self, op: str, client: Any, settings: Settings) -> Any:
        from confluent_kafka.schema_registry.protobuf import (ProtobufDeserializer,
                                                              ProtobufSerializer)

        if op == "read":
            return ProtobufDeserializer(self.message_class, _deserializer_conf(settings),
                                        schema_registry_client=client)
        conf = {**_serializer_conf(settings), "use.deprecated.format": False}
        return ProtobufSerializer(self.message_class, client, conf=conf)

    def _name_of_record(self) -> str | None:
        return self.message_class.DESCRIPTOR.full_name  # type: ignore[union-attr]

    def __repr__(self) -> str:
        return f"Serdes.protobuf({self._record_name()})"


def schema_registry_client(config: Mapping[str, Any]) -> Any:
    """The confluent-kafka ``SchemaRegistryClient`` kspark's registry serdes share in this
    process for ``config``'s registry settings (``schema.registry.url``, credentials...),
    to register or look up schemas beside them (``mock://<scope>``: one in-memory registry
    per scope).

    >>> c = schema_registry_client({"schema.registry.url": "mock://doc-client"})
    >>> c is schema_registry_client({"schema.registry.url": "mock://doc-client"})
    True
    """
    return client_for(settings_from({}, config, is_key=False))
