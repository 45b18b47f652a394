"""Kafka messages of a kspark topic as Arrow batches of its columns (``columns.py``).

A message whose key or value its serde cannot read, or whose value does not fit its column
(an int too large for ``Integer``, a field of the wrong type), is not in the batch: it comes
back with its error, and the caller writes it to the dead-letter topic or fails naming it.

Example:
    >>> from kspark.serde import Serdes
    >>> rows = TopicRows(Serdes.String(), Serdes.Long())
    >>> class M:  # a confluent_kafka Message's methods
    ...     def __init__(s, k, v, o): s.k, s.v, s.o = k, v, o
    ...     def key(s): return s.k
    ...     def value(s): return s.v
    ...     def topic(s): return "t"
    ...     def partition(s): return 0
    ...     def offset(s): return s.o
    ...     def timestamp(s): return (0, 1000)
    ...     def headers(s): return None
    >>> batch, bad = rows.batch([M(b"a", (5).to_bytes(8, "big"), 0), M(b"b", b"x", 1)])
    >>> batch.to_pydict()["value"], [(m.offset(), type(e).__name__) for m, e in bad]
    ([5], [(1, 'SerializationError')])
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from kspark._interop.columns import META_FIELDS, serde_columns

__all__ = ["TopicRows", "Written"]


class TopicRows:
    """Decodes messages with ``key_serde`` and ``value_serde`` (resolved serdes)."""

    def __init__(self, key_serde: Any, value_serde: Any):
        self.key_serde, self.value_serde = key_serde, value_serde
        self.key = serde_columns(key_serde, "key")
        self.value = serde_columns(value_serde, "value")
        self.schema = pa.schema([*self.key.fields, *self.value.fields, *META_FIELDS])

    def batch(self, messages: list) -> tuple[pa.RecordBatch, list[tuple[Any, Exception]]]:
        """The batch of the messages that decode and fit, and the others with their error."""
        rows, kept, rejected = [], [], []
        for m in messages:
            try:
                rows.append(self._row(m))
                kept.append(m)
            except Exception as e:  # noqa: BLE001 - serdes are user code: any error is theirs
                rejected.append((m, e))
        try:
            return self._arrow(rows), rejected
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            pass
        fitting = []  # some value does not fit its column: find which, row by row
        for m, row in zip(kept, rows, strict=True):
            try:
                self._arrow([row])
                fitting.append(row)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError,
                    OverflowError) as e:
                rejected.append((m, ValueError(f"it does not fit the Spark columns "
                                               f"{self._types()}: {e}")))
        return self._arrow(fitting), rejected

    def _row(self, m: Any) -> tuple:
        topic = m.topic()
        key = self.key.to_row(self.key_serde.deserialize(topic, m.key()))
        value = self.value.to_row(self.value_serde.deserialize(topic, m.value()))
        headers = m.headers()
        return (*key, *value, topic, m.partition(), m.offset(), m.timestamp()[1] * 1000,
                [{"key": k, "value": v} for k, v in headers] if headers else [])

    def _arrow(self, rows: list[tuple]) -> pa.RecordBatch:
        columns: list = list(zip(*rows, strict=True)) if rows else [() for _ in self.schema]
        return pa.RecordBatch.from_arrays(
            [pa.array(list(c), f.type) for c, f in zip(columns, self.schema, strict=True)],
            schema=self.schema)

    def _types(self) -> str:
        fields = [*self.key.fields, *self.value.fields]
        return ", ".join(f"{f.name} {f.type}" for f in fields)


class Written:
    """A record the engine wrote (``ProducedRecord``) with a Kafka message's methods, at
    ``offset`` of partition 0 (the test driver's one partition)."""

    def __init__(self, record: Any, offset: int):
        self._r, self._offset = record, offset

    def topic(self) -> str:
        return self._r.topic

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return 1, self._r.timestamp

    def key(self) -> bytes | None:
        return self._r.key

    def value(self) -> bytes | None:
        return self._r.value

    def headers(self) -> list | None:
        return list(self._r.headers or ()) or None
