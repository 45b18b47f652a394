"""The rows that travel between the source, the stages and the shuffles: one wire format.

Every row has the columns of a Kafka record (:data:`SOURCE_ARROW_SCHEMA`); rows that leave
a stage for a shuffle also carry the upstream task and the shuffle key
(:data:`FED_ARROW_SCHEMA`). Each schema is declared once, as Arrow; Spark's DDL strings are
derived from it.

A *task marker* is a row that names a task and holds no record: its ``topic`` is
:data:`MARKER_TOPIC`, its ``partition`` the task's position and its ``value`` the JSON of a
:class:`TaskMarker` (the Kafka offset ranges the task reads itself, the global topics'
offsets and the clock the micro-batch pinned). Every task's input starts with one, so a
stage knows which task a Spark partition runs from its rows (Spark numbers partitions
differently from batch to batch), and records read from Kafka never cross the JVM.

Example:
    >>> m = TaskMarker(2, (("in", 0, 5, 9),), clock=1000)
    >>> m.encode()
    b'{"ranges": [["in", 0, 5, 9]], "clock": 1000}'
    >>> TaskMarker.decode(2, m.encode()) == m
    True
    >>> FED_SCHEMA.split(", ")[-2:]
    ['src_task int', 'shuffle_key int']
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kspark._spark.documents import check_task_marker

__all__ = ["SOURCE_ARROW_SCHEMA", "FED_ARROW_SCHEMA", "SOURCE_SCHEMA", "FED_SCHEMA",
           "MARKER_TOPIC", "Range", "TaskMarker", "marker_batch", "markers_in", "records_only",
           "spark_ddl"]

Range = tuple[str, int, int, int]  # topic, partition, start offset, end offset (exclusive)
Offsets = dict[str, dict[str, int]]

SOURCE_ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
    ("timestamp", pa.int64()), ("key", pa.binary()), ("value", pa.binary()),
    ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
])
FED_ARROW_SCHEMA = SOURCE_ARROW_SCHEMA.append(pa.field("src_task", pa.int32())).append(
    pa.field("shuffle_key", pa.int32()))

# The topic of a task marker: no Kafka topic has an empty name.
MARKER_TOPIC = ""

_DDL = {pa.string(): "string", pa.int32(): "int", pa.int64(): "long", pa.binary(): "binary"}


def spark_ddl(schema: pa.Schema | pa.DataType) -> str:
    """Spark's DDL for an Arrow schema (or type) of the wire format.

    Example:
        >>> h = pa.list_(pa.struct([("k", pa.string())]))
        >>> spark_ddl(pa.schema([("a", pa.int32()), ("h", h)]))
        'a int, h array<struct<k:string>>'
    """
    if isinstance(schema, pa.Schema):
        return ", ".join(f"{f.name} {spark_ddl(f.type)}" for f in schema)
    if pa.types.is_list(schema):
        return f"array<{spark_ddl(schema.value_type)}>"
    if pa.types.is_struct(schema):
        return "struct<" + ",".join(f"{f.name}:{spark_ddl(f.type)}" for f in schema) + ">"
    return _DDL[schema]


SOURCE_SCHEMA = spark_ddl(SOURCE_ARROW_SCHEMA)
FED_SCHEMA = spark_ddl(FED_ARROW_SCHEMA)


@dataclass(frozen=True)
class TaskMarker:
    """What a task marker tells its task: ``task``, the task's position in its stage's
    input; ``ranges``, the Kafka offset ranges it reads itself; ``globals``, the global
    topics' end offsets the micro-batch pinned; ``clock``, the micro-batch's pinned
    wall-clock time (KIP-311's delayed records)."""

    task: int
    ranges: tuple[Range, ...] = ()
    globals: Offsets | None = None
    clock: int | None = None

    def encode(self) -> bytes:
        """The marker's ``value``: ``{"ranges": [...], "globals": ..., "clock": ...}``
        (absent fields left out)."""
        doc: dict[str, Any] = {"ranges": [list(r) for r in self.ranges]}
        if self.globals is not None:
            doc["globals"] = self.globals
        if self.clock is not None:
            doc["clock"] = self.clock
        return json.dumps(doc).encode()

    @classmethod
    def decode(cls, task: int, raw: bytes | str) -> TaskMarker:
        """The marker of task ``task`` whose value is ``raw`` (checked: a malformed one
        raises :class:`~kspark.errors.CorruptStateError`)."""
        doc = check_task_marker(raw)
        return cls(task, tuple((t, p, s, e) for t, p, s, e in doc["ranges"]),
                   doc.get("globals"), doc.get("clock"))

    def row(self) -> tuple:
        """The marker as a row of :data:`SOURCE_ARROW_SCHEMA`."""
        return (MARKER_TOPIC, self.task, -1, -1, None, self.encode(), [])


def marker_batch(marker: TaskMarker) -> pa.RecordBatch:
    """The one-row batch that starts a task's input read straight from Kafka.

    Example:
        >>> marker_batch(TaskMarker(1, (("in", 0, 0, 3),))).column(1).to_pylist()
        [1]
    """
    return pa.RecordBatch.from_pylist(
        [dict(zip(SOURCE_ARROW_SCHEMA.names, marker.row(), strict=True))],
        schema=SOURCE_ARROW_SCHEMA)


def _is_marker(batch: pa.RecordBatch) -> pa.Array:
    import pyarrow.compute as pc  # here: 40 ms that Spark's planning processes need not pay

    return pc.equal(batch.column(0), MARKER_TOPIC)


def markers_in(batch: pa.RecordBatch) -> list[TaskMarker]:
    """The task markers among ``batch``'s rows, decoded.

    Example:
        >>> markers_in(marker_batch(TaskMarker(0, (), clock=5)))
        [TaskMarker(task=0, ranges=(), globals=None, clock=5)]
    """
    found = batch.filter(_is_marker(batch))
    return [TaskMarker.decode(task, value) for task, value in
            zip(found.column(1).to_pylist(), found.column(5).to_pylist(), strict=True)]


def records_only(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` without its task markers.

    Example:
        >>> records_only(marker_batch(TaskMarker(0))).num_rows
        0
    """
    import pyarrow.compute as pc

    keep = pc.invert(_is_marker(batch))
    return batch if pc.all(keep).as_py() is not False else batch.filter(keep)
