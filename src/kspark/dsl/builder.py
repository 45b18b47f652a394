"""StreamsBuilder: the entry point of the DSL."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kspark._engine.state.build import store_kind
from kspark._graph.graph import SourceSpec, TopologyGraph
from kspark._graph.naming import processor_name, store_name, suffixed_name
from kspark.dsl import _forms
from kspark.dsl._overloads import bind
from kspark.dsl.kstream import KStream
from kspark.errors import TopologyError
from kspark.processor.topology import Topology
from kspark._engine.tables.processors import Switch, TableSourceProcessor
from kspark._graph.graph import ProcessorSpec
from kspark._engine.global_task import GlobalTableSourceProcessor
from kspark._graph.optimize import optimize

if TYPE_CHECKING:
    from kspark.dsl.global_table import GlobalKTable
    from kspark.dsl.ktable import KTable

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

    def stream(self, *args: Any, **kwargs: Any) -> KStream:
        """A KStream of the records of one topic or several: ``stream(topic | topics
        [, consumed])``, or the keywords ``key_serde``, ``value_serde``,
        ``timestamp_extractor``, ``offset_reset``.

        The offset reset policy (``Consumed.with_offset_reset_policy`` or ``offset_reset``:
        "earliest", "latest", "none" or "by_duration:<ISO-8601 duration>"; unset,
        ``auto.offset.reset`` decides) says where a new application starts reading these
        topics; a restarted one resumes from its committed offsets.
        """
        a = bind("StreamsBuilder.stream", _forms.STREAM, args, kwargs)
        topics = a["topics"]
        topics = (topics,) if isinstance(topics, str) else tuple(topics)
        c = _consumed(a)
        name = processor_name(self._graph, "KSTREAM-SOURCE", c.processor_name)
        self._graph.add(SourceSpec(name, topics, c.key_serde, c.value_serde,
                                   c.timestamp_extractor, c.offset_reset))
        return KStream(self._graph, name, c.key_serde, c.value_serde)

    def table(self, *args: Any, **kwargs: Any) -> KTable:
        """A KTable of ``topic``: each record upserts its key; a null value deletes it:
        ``table(topic[, consumed][, materialized])`` (or the keywords of :meth:`stream`)."""
        import functools

        from kspark.dsl.ktable import KTable
        from kspark.dsl.materialized import Materialized

        a = bind("StreamsBuilder.table", _forms.TABLE, args, kwargs)
        topic, c, g = a["topic"], _consumed(a), self._graph
        key_serde, value_serde = c.key_serde, c.value_serde
        m = a["materialized"] or Materialized()
        store = m.store_name or store_name(g, topic, m.logging)  # Java's order: store, source
        src = suffixed_name(g, c.processor_name, "-source", "KSTREAM-SOURCE")
        name = processor_name(g, "KTABLE-SOURCE", c.processor_name)
        g.add(SourceSpec(src, (topic,), key_serde, value_serde, c.timestamp_extractor,
                         c.offset_reset))
        ks = m.key_serde if m.key_serde is not None else key_serde
        vs = m.value_serde if m.value_serde is not None else value_serde
        source = Switch()
        g.add(ProcessorSpec(name, functools.partial(TableSourceProcessor, store, source), (src,)))
        g.table_sources[store] = topic  # reuse.ktable.source.topics: its changelog, maybe
        return KTable(g, name, ks, vs, store, queryable=m.store_name is not None, source=source,
                      pending=m.builder(store, ks, vs))

    def global_table(self, *args: Any, **kwargs: Any) -> GlobalKTable:
        """A GlobalKTable of every partition of ``topic``: every task reads its store in full:
        ``global_table(topic[, consumed][, materialized])`` (or the keywords of
        :meth:`stream`).

        The store is a timestamped key-value store without a changelog (``topic`` is its
        changelog); it cannot be versioned. ``offset_reset`` ("earliest", the default, or
        "latest") is where the store is (re)built from when it has no valid offset; unset,
        ``global.consumer.auto.offset.reset`` decides.
        """
        import functools

        from kspark.dsl.global_table import GlobalKTable
        from kspark.dsl.materialized import Materialized

        a = bind("StreamsBuilder.global_table", _forms.GLOBAL_TABLE, args, kwargs)
        topic, c = a["topic"], _consumed(a)
        key_serde, value_serde = c.key_serde, c.value_serde
        timestamp_extractor, offset_reset = c.timestamp_extractor, c.offset_reset
        if offset_reset not in (None, "earliest", "latest"):
            raise TopologyError(f"global table of topic {topic!r}: its offset reset policy is "
                                f"'earliest' or 'latest' (as global.consumer.auto.offset."
                                f"reset), got {offset_reset!r}")
        m = a["materialized"] or Materialized()
        if m.history_retention_ms is not None:
            raise TopologyError(f"global table of topic {topic!r}: GlobalTables cannot be "
                                f"versioned")
        store = m.store_name or store_name(self._graph, topic, logged=False)
        src = SourceSpec(suffixed_name(self._graph, c.processor_name, "-source", "KSTREAM-SOURCE"),
                         (topic,), key_serde, value_serde, timestamp_extractor, offset_reset)
        name = processor_name(self._graph, "KTABLE-SOURCE", c.processor_name)
        ks = m.key_serde if m.key_serde is not None else key_serde
        vs = m.value_serde if m.value_serde is not None else value_serde
        builder = m.with_logging_disabled().builder(store, ks, vs)
        self._graph.add_global_store(builder, src, ProcessorSpec(
            name, functools.partial(GlobalTableSourceProcessor, store), (src.name,)))
        return GlobalKTable(store, ks, vs, queryable=m.store_name is not None)

    def add_global_store(self, store_builder: Any, topic: str, state_update_supplier: Any, *,
                         key_serde: Any = None, value_serde: Any = None,
                         timestamp_extractor: Callable | None = None,
                         offset_reset: str | None = None) -> "StreamsBuilder":
        """Add a global store kept from ``topic`` by the processors ``state_update_supplier()``
        makes (they update the store and forward nothing). Logging is turned off: the topic
        is the store's changelog. Every processor may read the store (read-only)."""
        _check_reset(offset_reset)
        src = SourceSpec(self._graph.next_name("KSTREAM-SOURCE"), (topic,), key_serde,
                         value_serde, timestamp_extractor, offset_reset)
        proc = ProcessorSpec(self._graph.next_name("KTABLE-SOURCE"), state_update_supplier,
                             (src.name,))
        store_kind(store_builder)
        self._graph.add_global_store(store_builder.with_logging_disabled(), src, proc)
        return self

    def add_state_store(self, builder: Any) -> "StreamsBuilder":
        """Add a state store that ``KStream.process(supplier, "name")`` can connect to."""
        store_kind(builder)  # a builder that names its store kind, or a clear error
        self._graph.add_store(builder)
        return self

    def build(self, props: Mapping[str, Any] | None = None) -> Topology:
        """The topology built so far; with ``props`` (Java's ``build(props)``), rewritten as
        their ``topology.optimization`` says ("all", "none", or some of
        "reuse.ktable.source.topics", "merge.repartition.topics", "single.store.self.join").

        Example:
            >>> from kspark import Materialized, StreamsBuilder, Serdes
            >>> b = StreamsBuilder()
            >>> _ = b.table("prices", Materialized.as_("prices-store"),
            ...             key_serde=Serdes.String(), value_serde=Serdes.Long())
            >>> t = b.build({"topology.optimization": "all"})  # no prices-store-changelog
        """
        if props is not None and props.get("topology.optimization") is not None:
            optimize(self._graph, str(props["topology.optimization"]))
        return Topology(self._graph)


def _check_reset(offset_reset: str | None) -> None:
    if offset_reset not in (None, "earliest", "latest"):
        raise TopologyError(f"offset_reset must be 'earliest' or 'latest', got {offset_reset!r}")


def _consumed(a: dict[str, Any]) -> Any:
    """The source's Consumed: the one given, with the keywords given over it, the offset
    reset policy checked."""
    from dataclasses import replace

    from kspark.dsl.topic_options import Consumed, check_offset_reset

    c = a["consumed"] or Consumed()
    for key in ("key_serde", "value_serde", "timestamp_extractor", "offset_reset"):
        if a[key] is not None:
            c = replace(c, **{key: a[key]})
    if c.offset_reset is not None:
        check_offset_reset(c.offset_reset)
    return c
