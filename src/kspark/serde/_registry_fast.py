"""Avro's per-record fast path: once confluent-kafka's serializer has written (or its
deserializer read) the first record of a schema, and that schema carries no data-contract
rules, no references and no migrations apply, the same bytes come from fastavro directly:
the framing (magic byte 0, the 4-byte schema id) and fastavro's ``schemaless_writer`` /
``schemaless_reader``, which is what confluent's serializers run underneath (measured: its
per-record rule and context handling cost as much as the encoding itself).

Every fast path is checked once against confluent's own output before it is used: the
first record's bytes (or value) must be identical, else the serde stays on confluent's path.

Example:
    >>> import fastavro, io
    >>> schema = fastavro.parse_schema({"type": "record", "name": "R",
    ...                                 "fields": [{"name": "a", "type": "long"}]})
    >>> w = FastWriter(b"\\x00\\x00\\x00\\x00\\x07", schema)
    >>> raw = w.write({"a": 1})
    >>> raw, FastReader(schema, schema).read(raw)
    (b'\\x00\\x00\\x00\\x00\\x07\\x02', {'a': 1})
"""

from __future__ import annotations

import io
import json
from typing import Any

__all__ = ["FastWriter", "FastReader", "writer_for", "reader_for"]


class FastWriter:
    """Writes one subject's records: the framing of its schema id, then fastavro."""

    def __init__(self, header: bytes, parsed: Any):
        from fastavro import schemaless_writer

        self.header, self.parsed, self._write = header, parsed, schemaless_writer

    def write(self, value: Any) -> bytes:
        out = io.BytesIO()
        out.write(self.header)
        self._write(out, self.parsed, value)
        return out.getvalue()


class FastReader:
    """Reads one writer schema's records into the reader schema (schema evolution)."""

    def __init__(self, writer: Any, reader: Any):
        from fastavro import schemaless_reader

        self.writer, self.reader, self._read = writer, reader, schemaless_reader

    def read(self, data: bytes) -> Any:
        return self._read(io.BytesIO(data[5:]), self.writer, self.reader)


def _parsed(schema_str: str) -> Any:
    import fastavro

    return fastavro.parse_schema(json.loads(schema_str))


def _plain_schema(schema: Any) -> bool:
    """A registered schema with nothing confluent's serializers act on per record."""
    return (not getattr(schema, "references", None) and not getattr(schema, "rule_set", None)
            and getattr(schema, "schema_type", "AVRO") in (None, "AVRO"))


def writer_for(serializer: Any, schema_str: str, value: Any, written: bytes) -> FastWriter | None:
    """A fast writer for what ``serializer`` (confluent's, writing with our own
    ``schema_str``, not a subject's latest version) has just written as ``written`` from
    ``value``, if fastavro gives the very same bytes; else None."""
    if (len(written) < 5 or written[0] != 0
            or str(getattr(serializer, "_validation_rules_execution", "")).split(".")[-1]
            not in ("DISABLED", "0")):
        return None
    try:
        fast = FastWriter(bytes(written[:5]), _parsed(schema_str))
        return fast if fast.write(value) == bytes(written) else None
    except Exception:  # noqa: BLE001 - any doubt: stay on confluent's path
        return None


def reader_for(client: Any, schema_id: int, subject: str | None, reader_schema_str: str | None,
               data: bytes, value: Any, convert: Any = lambda v: v) -> FastReader | None:
    """A fast reader for records of ``schema_id`` (already in ``client``'s cache: the
    deserializer just read ``data`` as ``value``, after ``convert``, looking the id up under
    ``subject``: the client's cache answers, no request), if the writer schema is plain and
    fastavro reads the same value; else None."""
    try:
        registered = client.get_schema(schema_id, subject)
        if not _plain_schema(registered):
            return None
        writer = _parsed(registered.schema_str)
        if writer == "bytes" or (isinstance(writer, dict) and writer.get("type") == "bytes"):
            return None
        reader = _parsed(reader_schema_str) if reader_schema_str else writer
        fast = FastReader(writer, reader)
        return fast if convert(fast.read(data)) == value else None
    except Exception:  # noqa: BLE001 - any doubt: stay on confluent's path
        return None
