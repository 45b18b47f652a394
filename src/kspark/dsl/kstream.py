"""KStream: a record stream, and its stateless operations."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kspark._engine import operators as ops
from kspark._graph.graph import ProcessorSpec, SinkSpec, TopologyGraph

__all__ = ["KStream"]


class KStream:
    """An unbounded stream of key-value records. Each method adds a node and returns a new KStream.

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> s = StreamsBuilder().stream("in", key_serde=Serdes.String(), value_serde=Serdes.String())
        >>> s.filter(lambda k, v: v != "").map_values(str.upper).to("out")
    """

    def __init__(self, graph: TopologyGraph, node: str, key_serde: Any, value_serde: Any):
        self._graph = graph
        self._node = node
        self._key_serde = key_serde
        self._value_serde = value_serde

    def _then(self, prefix: str, supplier: Callable[[], Any], name: str | None = None,
              key_serde: Any = None, value_serde: Any = None, keep_serdes: bool = True) -> "KStream":
        name = name or self._graph.next_name(prefix)
        self._graph.add(ProcessorSpec(name, supplier, (self._node,)))
        if keep_serdes:
            key_serde, value_serde = self._key_serde, self._value_serde
        return KStream(self._graph, name, key_serde, value_serde)

    def filter(self, predicate: Callable[[Any, Any], bool], name: str | None = None) -> "KStream":
        """Keep the records for which ``predicate(key, value)`` is true."""
        return self._then("KSTREAM-FILTER", functools.partial(ops.FilterProcessor, predicate), name)

    def filter_not(self, predicate: Callable[[Any, Any], bool], name: str | None = None) -> "KStream":
        """Drop the records for which ``predicate(key, value)`` is true."""
        return self._then("KSTREAM-FILTER",
                          functools.partial(ops.FilterProcessor, predicate, True), name)

    def map_values(self, fn: Callable[[Any], Any], name: str | None = None, *,
                   with_key: bool = False) -> "KStream":
        """Replace each value by ``fn(value)``; ``with_key=True`` calls ``fn(key, value)``."""
        sup = functools.partial(ops.MapValuesProcessor, fn, with_key)
        return self._then("KSTREAM-MAPVALUES", sup, name, self._key_serde, None, keep_serdes=False)

    def map(self, fn: Callable[[Any, Any], tuple[Any, Any]], name: str | None = None) -> "KStream":
        """Replace each record's key and value by ``fn(key, value) -> (key2, value2)``."""
        return self._then("KSTREAM-MAP", functools.partial(ops.MapProcessor, fn), name,
                          keep_serdes=False)

    def peek(self, action: Callable[[Any, Any], None], name: str | None = None) -> "KStream":
        """Call ``action(key, value)`` for each record and pass it on unchanged."""
        return self._then("KSTREAM-PEEK", functools.partial(ops.PeekProcessor, action), name)

    def foreach(self, action: Callable[[Any, Any], None], name: str | None = None) -> None:
        """Call ``action(key, value)`` for each record (a terminal operation)."""
        self._then("KSTREAM-FOREACH", functools.partial(ops.PeekProcessor, action, False), name)

    def to(self, topic: str | Callable[..., str], *, key_serde: Any = None, value_serde: Any = None,
           partitioner: Callable[..., int | None] | None = None, name: str | None = None) -> None:
        """Write the stream to ``topic`` (serdes default to the stream's, then to the config's)."""
        name = name or self._graph.next_name("KSTREAM-SINK")
        self._graph.add(SinkSpec(name, topic, (self._node,),
                                 key_serde if key_serde is not None else self._key_serde,
                                 value_serde if value_serde is not None else self._value_serde,
                                 partitioner))
