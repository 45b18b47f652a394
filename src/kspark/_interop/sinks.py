"""A Spark sink of a topology, as plain data: what ``KStream.to_spark`` and
``KStream.foreach_batch`` add to the graph (``docs/spark-interop.md``).

The stream's records go to a Kafka topic the application owns, ``<application.id>-<name>-
spark-sink`` (written in the tasks' transactions, like a repartition topic); a Spark query
of the application reads it with read_committed and writes each micro-batch with the
sink's writer, then deletes what it has written from the topic.

Example:
    >>> s = SparkSinkSpec.of("counts", "parquet", path="/tmp/t")
    >>> s.topic, s.writer
    ('counts-spark-sink', 'file')
    >>> SparkSinkSpec.of("c", "delta", table="db.t")
    Traceback (most recent call last):
    ...
    kspark.errors.TopologyError: to_spark('delta', name='c'): the Delta sink writes the table at a path: give path= (a table name needs a catalog that kspark's Delta writer does not use)
"""  # noqa: E501 - a doctest's expected output is one line

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kspark._graph.resources import SPARK_SINK_SUFFIX
from kspark.errors import TopologyError

__all__ = ["SparkSinkSpec", "TOPIC_SUFFIX", "FILE_FORMATS"]

TOPIC_SUFFIX = SPARK_SINK_SUFFIX
# Spark's file sinks: exactly once through Spark's file-sink log (``_spark_metadata``)
FILE_FORMATS = ("parquet", "json", "csv", "orc", "text", "avro")
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


@dataclass(frozen=True)
class SparkSinkSpec:
    """A Spark sink named ``name`` (the sink node's name, also the topic's and the Spark
    query's). ``writer``: ``delta`` (kspark's Delta writer, exactly once by the batch's
    transaction id), ``file`` (Spark's file sink, exactly once), ``jdbc`` (at least once),
    ``table`` (Spark's ``toTable``: Iceberg or any catalog table, as that table's format
    guarantees) or ``function`` (``foreach_batch``)."""

    name: str
    writer: str
    format: str | None = None
    path: str | None = None
    table: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    partition_by: tuple[str, ...] = ()
    fn: Callable[[Any, int], Any] | None = field(default=None, compare=False)

    @property
    def topic(self) -> str:
        """The sink's topic, without the ``<application.id>-`` prefix."""
        return f"{self.name}{TOPIC_SUFFIX}"

    @staticmethod
    def of(name: str, fmt: str, path: str | None = None, table: str | None = None,
           options: Mapping[str, Any] | None = None,
           partition_by: Sequence[str] | str | None = None) -> "SparkSinkSpec":
        """The sink ``to_spark(fmt, path, table, options, partition_by, name=name)`` adds,
        checked (a missing or contradictory argument is a TopologyError naming it)."""
        call = f"to_spark({fmt!r}, name={name!r})"
        _check_name(name, call)
        if not isinstance(fmt, str) or not fmt:
            raise TopologyError(f"to_spark(format, ...) takes a format name such as 'delta' or "
                                f"'parquet', got {fmt!r}")
        fmt = fmt.lower()
        opts = tuple(sorted((str(k), str(v)) for k, v in (options or {}).items()))
        parts = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by or ())
        if path is not None and table is not None:
            raise TopologyError(f"{call}: give path= or table=, not both")
        writer = _writer(fmt, path, table, dict(opts), call)
        return SparkSinkSpec(name, writer, fmt, path, table, opts, parts)

    @staticmethod
    def function(name: str, fn: Callable[[Any, int], Any]) -> "SparkSinkSpec":
        """The sink ``foreach_batch(fn, name=name)`` adds."""
        _check_name(name, f"foreach_batch(name={name!r})")
        if not callable(fn):
            raise TopologyError(f"foreach_batch(fn) takes a function fn(dataframe, batch_id), "
                                f"got {type(fn).__name__} {fn!r:.60}")
        return SparkSinkSpec(name, "function", fn=fn)


def _writer(fmt: str, path: str | None, table: str | None, options: dict[str, str],
            call: str) -> str:
    if fmt == "delta":
        if path is None:
            raise TopologyError(f"{call}: the Delta sink writes the table at a path: give "
                                "path= (a table name needs a catalog that kspark's Delta writer "
                                "does not use)")
        return "delta"
    if fmt == "jdbc":
        missing = [k for k in ("url", "dbtable") if k not in options]
        if missing or path or table:
            raise TopologyError(f"{call}: a JDBC sink takes options={{'url': ..., 'dbtable': "
                                f"...}} (and the driver's), not path= or table=; missing: "
                                f"{missing}")
        return "jdbc"
    if path is None and table is None:
        raise TopologyError(f"{call}: give path= (a directory) or table= (a catalog table)")
    if table is not None:
        return "table"
    if fmt not in FILE_FORMATS:
        raise TopologyError(f"{call}: format {fmt!r} writes to a path only as one of Spark's "
                            f"file sinks {FILE_FORMATS}; for {fmt!r} give table= (with its "
                            "catalog configured on the session), or use foreach_batch(fn)")
    return "file"


def _check_name(name: str, call: str) -> None:
    if not isinstance(name, str) or not _LEGAL.match(name) or len(name) > 200:
        raise TopologyError(f"{call}: the sink's name becomes a Kafka topic's name: use "
                            f"letters, digits, '.', '_' and '-' only, got {name!r}")
