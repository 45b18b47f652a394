"""KTable: a changelog stream seen as a table, one latest value per key."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kspark._engine import tables
from kspark._graph.graph import ProcessorSpec, TopologyGraph

__all__ = ["KTable"]


class KTable:
    """A table; its operations see each update as a change of a key's value (new, old).

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> t = b.table("prices", key_serde=Serdes.String(), value_serde=Serdes.Integer())
        >>> t.filter(lambda k, v: v > 10).to_stream().to("expensive")
    """

    def __init__(self, graph: TopologyGraph, node: str, key_serde: Any, value_serde: Any,
                 store_name: str | None = None):
        self._graph = graph
        self._node = node
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._store_name = store_name

    def queryable_store_name(self) -> str | None:
        """The store holding this table, if it is materialized."""
        return self._store_name

    def _then(self, prefix: str, supplier: Callable[[], Any], value_serde: Any) -> "KTable":
        name = self._graph.next_name(prefix)
        self._graph.add(ProcessorSpec(name, supplier, (self._node,)))
        return KTable(self._graph, name, self._key_serde, value_serde)

    def filter(self, predicate: Callable[[Any, Any], bool]) -> "KTable":
        """Keep the rows for which ``predicate(key, value)`` holds (others read as deleted)."""
        return self._then("KTABLE-FILTER", functools.partial(tables.TableFilterProcessor, predicate),
                          self._value_serde)

    def filter_not(self, predicate: Callable[[Any, Any], bool]) -> "KTable":
        return self._then("KTABLE-FILTER",
                          functools.partial(tables.TableFilterProcessor, predicate, True),
                          self._value_serde)

    def map_values(self, fn: Callable[..., Any], *, with_key: bool = False) -> "KTable":
        """Map each value with ``fn(value)`` (``fn(key, value)`` with_key)."""
        return self._then("KTABLE-MAPVALUES",
                          functools.partial(tables.TableMapValuesProcessor, fn, with_key), None)

    def to_stream(self) -> Any:
        """The table's updates as a KStream (a delete is a record with a None value)."""
        from kspark.dsl.kstream import KStream

        name = self._graph.next_name("KTABLE-TOSTREAM")
        self._graph.add(ProcessorSpec(name, tables.TableToStreamProcessor, (self._node,)))
        return KStream(self._graph, name, self._key_serde, self._value_serde)
