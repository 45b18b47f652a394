"""KGroupedStream: a stream grouped by key, ready to aggregate into a KTable."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine.tables import StreamAggregateProcessor
from kspark._graph.graph import ProcessorSpec
from kspark.dsl.materialized import Materialized

if TYPE_CHECKING:
    from kspark.dsl.kstream import KStream
    from kspark.dsl.ktable import KTable

__all__ = ["KGroupedStream"]


class KGroupedStream:
    """Returned by ``group_by_key`` / ``group_by``. Records with a null key or value are skipped.

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> counts = b.stream("words", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
        ...           .group_by_key().count()
    """

    def __init__(self, stream: "KStream"):
        self._stream = stream
        self._graph = stream._graph

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   aggregator: Callable[[Any, Any, Any], Any], materialized: Materialized | None,
                   value_serde: Any) -> "KTable":
        from kspark.dsl.ktable import KTable

        m = materialized or Materialized()
        name = self._graph.next_name(prefix)
        store = m.store_name or f"{name}-STATE-STORE"
        key_serde = m.key_serde if m.key_serde is not None else self._stream._key_serde
        value_serde = m.value_serde if m.value_serde is not None else value_serde
        self._graph.add(ProcessorSpec(name, functools.partial(
            StreamAggregateProcessor, store, initializer, aggregator), (self._stream._node,)))
        self._graph.add_store(m.builder(store, key_serde, value_serde), (name,))
        return KTable(self._graph, name, key_serde, value_serde, store)

    def count(self, materialized: Materialized | None = None) -> "KTable":
        """The number of records per key (values default to Serdes.Long())."""
        from kspark.serde import Serdes

        return self._aggregate("KSTREAM-AGGREGATE", lambda: 0, lambda k, v, agg: agg + 1,
                               materialized, Serdes.Long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | None = None) -> "KTable":
        """Combine each key's values with ``reducer(aggregate, value)``."""
        return self._aggregate("KSTREAM-REDUCE", None, lambda k, v, agg: reducer(agg, v),
                               materialized, self._stream._value_serde)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None) -> "KTable":
        """Fold each key's values: ``aggregator(key, value, aggregate)`` from ``initializer()``."""
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, materialized, None)
