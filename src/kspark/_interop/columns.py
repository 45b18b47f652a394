"""The columns of a kspark topic in Spark: each serde's values as a typed Arrow column.

A topic read by :func:`kspark.spark.read_topic` (and every Spark sink) has the columns
``key``, ``value``, ``topic``, ``partition``, ``offset``, ``timestamp`` and ``headers``; a
windowed key adds ``window_start`` and ``window_end`` after ``key``. The type of ``key`` and
``value`` follows the serde: ``Long`` is a bigint, ``String`` a string, a windowed key its
inner key's type, Avro (schemaless or registry, with a schema or a record type) and JSON
Schema with a record type (or a schema declaring every property, ``additionalProperties:
false``) a struct; JSON without a schema, Protobuf and serdes kspark does not know are JSON
text.

Example:
    >>> from kspark.serde import Serdes
    >>> c = serde_columns(Serdes.Long(), "value")
    >>> [str(f.type) for f in c.fields], c.to_row(7)
    (['int64'], (7,))
    >>> from kspark.dsl import TimeWindowedSerde, Windowed, Window
    >>> w = serde_columns(TimeWindowedSerde(Serdes.String(), 60_000), "key")
    >>> [f.name for f in w.fields], w.to_row(Windowed("ann", Window(0, 60_000)))
    (['key', 'window_start', 'window_end'], ('ann', 0, 60000000))
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = ["Columns", "serde_columns", "META_FIELDS", "HEADERS_TYPE"]

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
TIMESTAMP = pa.timestamp("us", tz="UTC")
# after the key's and the value's columns, in this order
META_FIELDS = (pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
               pa.field("offset", pa.int64()), pa.field("timestamp", TIMESTAMP),
               pa.field("headers", HEADERS_TYPE))

_PRIMITIVE = {"StringSerde": pa.string(), "IntegerSerde": pa.int32(), "LongSerde": pa.int64(),
              "ShortSerde": pa.int16(), "FloatSerde": pa.float32(), "DoubleSerde": pa.float64(),
              "ByteArraySerde": pa.binary(), "BytesSerde": pa.binary(), "UUIDSerde": pa.string()}
_AVRO = {"null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(),
         "float": pa.float32(), "double": pa.float64(), "bytes": pa.binary(),
         "string": pa.string()}

# fastavro reads these as datetime/date/UUID values
_LOGICAL = {"timestamp-millis": TIMESTAMP, "timestamp-micros": TIMESTAMP, "date": pa.date32(),
            "uuid": pa.string()}
Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class Columns:
    """One serde's column(s): ``fields``, and ``to_row(decoded)``, one value per field."""

    fields: tuple[pa.Field, ...]
    to_row: Callable[[Any], tuple]


def serde_columns(serde: Any, name: str) -> Columns:
    """The column(s) named ``name`` of values read with ``serde`` (a resolved serde)."""
    cls = type(serde).__name__
    if cls in ("TimeWindowedSerde", "SessionWindowedSerde"):
        inner_type, inner = _typed(serde.inner)
        micros = lambda ms: None if ms is None else ms * 1000  # noqa: E731
        return Columns((pa.field(name, inner_type), pa.field("window_start", TIMESTAMP),
                        pa.field("window_end", TIMESTAMP)),
                       lambda w: (None, None, None) if w is None else (
                           inner(w.key), micros(w.window.start), micros(w.window.end)))
    arrow_type, convert = _typed(serde)
    return Columns((pa.field(name, arrow_type),),
                   lambda v: (None if v is None else convert(v),))


def _typed(serde: Any) -> tuple[pa.DataType, Convert]:
    """The Arrow type of ``serde``'s values and how a decoded value becomes one."""
    cls = type(serde).__name__
    if cls in _PRIMITIVE:
        return _PRIMITIVE[cls], (str if cls == "UUIDSerde" else _same)
    if cls == "VoidSerde":
        return pa.string(), lambda v: None
    schema = _avro_schema_of(serde)
    if schema is not None:
        arrow_type, convert = _avro(schema, set())
        record_type = getattr(serde, "record_type", None)
        if record_type is None:
            return arrow_type, convert
        from kspark.serde._registry_types import to_plain

        return arrow_type, lambda v: convert(to_plain(record_type, v))
    json_schema = _closed_json_schema(serde)
    if json_schema is not None:
        return _json(json_schema)
    if cls == "ProtobufRegistrySerde":
        from google.protobuf.json_format import MessageToJson  # type: ignore[import-untyped]

        return pa.string(), lambda v: MessageToJson(v, indent=None)
    return pa.string(), _json_text


def _same(v: Any) -> Any:
    return v


def _json_text(v: Any) -> str:
    """JSON text of a decoded value (str() of what JSON cannot encode)."""
    return json.dumps(v, separators=(",", ":"), default=str)


def _avro_schema_of(serde: Any) -> Any:
    """The Avro schema (parsed JSON) a serde's values follow, or None: schemaless Avro's,
    a registry Avro serde's schema or record type, a JSON Schema serde's record type."""
    cls = type(serde).__name__
    if cls == "AvroSerde":
        schema = getattr(serde, "schema", None) or getattr(serde, "_schema", None)
        return json.loads(schema) if isinstance(schema, str) else schema
    if cls not in ("AvroRegistrySerde", "JsonSchemaRegistrySerde"):
        return None
    record_type = getattr(serde, "record_type", None)
    if record_type is not None:
        from kspark.serde._registry_types import avro_schema

        return json.loads(avro_schema(record_type))
    if cls == "AvroRegistrySerde" and serde.schema_str:
        return json.loads(serde.schema_str)
    return None


def _closed_json_schema(serde: Any) -> Any:
    """A JSON Schema serde's schema when every value it allows fits a struct: an object
    whose properties are all declared (``additionalProperties: false``, at every level),
    else None (JSON text: a struct would drop undeclared properties)."""
    if type(serde).__name__ != "JsonSchemaRegistrySerde" or not serde.schema_str:
        return None
    schema = json.loads(serde.schema_str)
    return schema if _closed(schema) else None


def _closed(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "object":
        return schema.get("additionalProperties") is False and all(
            _closed(p) for p in schema.get("properties", {}).values())
    if kind == "array":
        return _closed(schema.get("items"))
    return kind in _JSON


_JSON = {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(),
         "boolean": pa.bool_()}


def _json(schema: Any) -> tuple[pa.DataType, Convert]:
    """A closed JSON Schema's Arrow type and converter (see :func:`_closed`)."""
    kind = schema["type"]
    if kind == "object":
        fields = [(n, *_json(p)) for n, p in schema.get("properties", {}).items()]
        return pa.struct([(n, t) for n, t, _ in fields]), lambda v: {
            n: None if v.get(n) is None else c(v.get(n)) for n, _, c in fields}
    if kind == "array":
        items, convert = _json(schema["items"])
        return pa.list_(items), lambda v: [None if x is None else convert(x) for x in v]
    return _JSON[kind], _same


def _avro(schema: Any, named: set[str]) -> tuple[pa.DataType, Convert]:
    """An Avro schema's Arrow type and converter (unions of several types: JSON text)."""
    if isinstance(schema, str):
        return (_AVRO[schema], _same) if schema in _AVRO else (pa.string(), _json_text)
    if isinstance(schema, list):
        kinds = [s for s in schema if s != "null"]
        return _avro(kinds[0], named) if len(kinds) == 1 else (pa.string(), _json_text)
    kind = schema.get("type")
    if kind == "record":
        fields = [(f["name"], *_avro(f["type"], named)) for f in schema["fields"]]
        arrow = pa.struct([(n, t) for n, t, _ in fields])
        return arrow, lambda v: {n: None if v.get(n) is None else c(v.get(n))
                                 for n, _, c in fields}
    if kind == "array":
        items, convert = _avro(schema["items"], named)
        return pa.list_(items), lambda v: [None if x is None else convert(x) for x in v]
    if kind == "map":
        values, convert = _avro(schema["values"], named)
        return pa.map_(pa.string(), values), lambda v: [
            (k, None if x is None else convert(x)) for k, x in v.items()]
    if kind == "enum":
        return pa.string(), _same
    if kind == "fixed" or schema.get("logicalType") == "decimal":
        return (pa.binary(), _same) if kind == "fixed" else (pa.string(), str)
    logical = _LOGICAL.get(schema.get("logicalType"))
    if logical is None:  # {"type": "long", "logicalType": ...}: its base type
        return _avro(kind, named)
    return logical, (str if schema["logicalType"] == "uuid" else _same)
