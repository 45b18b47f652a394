"""StreamsBuilder: the entry point of the DSL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._graph.graph import SourceSpec, TopologyGraph
from kspark.dsl.kstream import KStream
from kspark.errors import TopologyError
from kspark.processor.topology import Topology

__all__ = ["StreamsBuilder"]


class StreamsBuilder:
    """Builds a :class:`~kspark.processor.Topology` with the KStream DSL.

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> (b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.Integer())
        ...   .filter(lambda k, v: v > 0).map_values(lambda v: v * 10)
        ...   .to("out"))
        >>> print(b.build().describe())  # doctest: +ELLIPSIS
        Topologies:
           Sub-topology: 0
            Source: KSTREAM-SOURCE-0000000000 (topics: [in])
        ...
    """

    def __init__(self) -> None:
        self._graph = TopologyGraph()

    def stream(self, topic_or_topics: str | list[str], *, key_serde: Any = None,
               value_serde: Any = None, timestamp_extractor: Callable | None = None,
               offset_reset: str | None = None) -> KStream:
        """A KStream of the records of one topic or several.

        ``offset_reset`` ("earliest", the default, or "latest") says where a new application
        starts reading these topics; a restarted one resumes from its checkpoint.
        """
        if offset_reset not in (None, "earliest", "latest"):
            raise TopologyError(f"offset_reset must be 'earliest' or 'latest', got {offset_reset!r}")
        topics = (topic_or_topics,) if isinstance(topic_or_topics, str) else tuple(topic_or_topics)
        name = self._graph.next_name("KSTREAM-SOURCE")
        self._graph.add(SourceSpec(name, topics, key_serde, value_serde,
                                   timestamp_extractor, offset_reset))
        return KStream(self._graph, name, key_serde, value_serde)

    def table(self, topic: str, *, key_serde: Any = None, value_serde: Any = None,
              materialized: Any = None, timestamp_extractor: Callable | None = None,
              offset_reset: str | None = None) -> Any:
        """A KTable of ``topic``: each record upserts its key; a null value deletes it."""
        import functools

        from kspark._engine.tables import Switch, TableSourceProcessor
        from kspark._graph.graph import ProcessorSpec
        from kspark.dsl.ktable import KTable
        from kspark.dsl.materialized import Materialized

        src = self._graph.next_name("KSTREAM-SOURCE")
        self._graph.add(SourceSpec(src, (topic,), key_serde, value_serde, timestamp_extractor,
                                   offset_reset))
        name = self._graph.next_name("KTABLE-SOURCE")
        m = materialized or Materialized()
        store = m.store_name or f"{topic}-STATE-STORE-{name[-10:]}"
        ks = m.key_serde if m.key_serde is not None else key_serde
        vs = m.value_serde if m.value_serde is not None else value_serde
        source = Switch()
        self._graph.add(ProcessorSpec(name, functools.partial(TableSourceProcessor, store, source),
                                      (src,)))
        self._graph.add_store(m.builder(store, ks, vs), (name,))
        return KTable(self._graph, name, ks, vs, store, queryable=m.store_name is not None,
                      source=source)

    def add_state_store(self, builder: Any) -> "StreamsBuilder":
        """Add a state store that ``KStream.process(supplier, "name")`` can connect to."""
        self._graph.add_store(builder)
        return self

    def build(self) -> Topology:
        """The topology built so far."""
        return Topology(self._graph)
