"""``KStream.to_spark`` and ``KStream.foreach_batch``: a sink node writing the stream to the
application's sink topic, and the Spark sink that reads it (``_interop/sinks.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._graph.graph import SinkSpec, TopologyGraph
from kspark._interop.sinks import SparkSinkSpec
from kspark.errors import TopologyError

__all__ = ["SparkSinkSteps", "add_spark_sink"]


def add_spark_sink(graph: TopologyGraph, parent: str, spec: SparkSinkSpec, key_serde: Any,
                   value_serde: Any) -> None:
    """Add ``spec``'s sink node after ``parent``, writing with the serdes (None: the
    stream's, then the config's)."""
    if spec.name in graph.nodes:
        raise_taken(spec.name)
    graph.add(SinkSpec(spec.name, spec.topic, (parent,), key_serde, value_serde,
                       internal=True))
    graph.spark_sinks[spec.name] = spec


def raise_taken(name: str) -> None:
    raise TopologyError(f"a node named {name!r} already exists in the topology: give the "
                        "Spark sink another name=")


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


class SparkSinkSteps:
    """KStream's Spark sinks (a mixin: ``KStream`` has the graph, node and serdes)."""

    _graph: TopologyGraph
    _node: str
    _key_serde: Any
    _value_serde: Any

    def to_spark(self, format: str, path: str | None = None, table: str | None = None,
                 options: dict[str, Any] | None = None, partition_by: Any = None,
                 key_serde: Any = None, value_serde: Any = None, name: str | None = None
                 ) -> None:
        """Write the stream into a Spark table or directory, as part of the application:
        ``format`` ``'delta'`` (exactly once), a Spark file format such as ``'parquet'``
        (exactly once, through Spark's file sink), ``'jdbc'`` (at least once; ``options``
        with ``url`` and ``dbtable``), or any format with ``table=`` (a catalog table:
        Iceberg, say). The rows have :func:`kspark.spark.read_topic`'s columns, the key and
        value read with the stream's serdes (or these); see docs/spark-interop.md.

        >>> from kspark import StreamsBuilder, Serdes
        >>> s = StreamsBuilder().stream("in", key_serde=Serdes.String(),
        ...                             value_serde=Serdes.Long())
        >>> s.to_spark("parquet", path="/tmp/counts", name="counts")
        """
        name = name or self._graph.next_name("KSTREAM-SPARKSINK")
        spec = SparkSinkSpec.of(name, format, path, table, options, partition_by)
        add_spark_sink(self._graph, self._node, spec, _first(key_serde, self._key_serde),
                       _first(value_serde, self._value_serde))

    def foreach_batch(self, fn: Callable[[Any, int], Any], key_serde: Any = None,
                      value_serde: Any = None, name: str | None = None) -> None:
        """Call ``fn(dataframe, batch_id)`` for each Spark micro-batch of the stream's
        records (at least once: a batch may come again after a failure; ``batch_id`` tells
        it), as part of the application; the DataFrame has :func:`kspark.spark.read_topic`'s
        columns. See docs/spark-interop.md.

        >>> from kspark import StreamsBuilder, Serdes
        >>> s = StreamsBuilder().stream("in", key_serde=Serdes.String(),
        ...                             value_serde=Serdes.Long())
        >>> s.foreach_batch(lambda df, batch_id: df.show(), name="show")
        """
        name = name or self._graph.next_name("KSTREAM-SPARKSINK")
        add_spark_sink(self._graph, self._node, SparkSinkSpec.function(name, fn),
                       _first(key_serde, self._key_serde), _first(value_serde, self._value_serde))
