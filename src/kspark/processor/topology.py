"""Topology: the Processor API's graph of sources, processors and sinks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.state.build import store_kind
from kspark._graph.graph import ProcessorSpec, SinkSpec, SourceSpec, TopologyGraph

__all__ = ["Topology"]


class Topology:
    """A processing graph, built with the Processor API or by :class:`~kspark.StreamsBuilder`.

    Example:
        >>> from kspark import Serdes
        >>> t = Topology()
        >>> t = t.add_source("src", "in", key_serde=Serdes.String(), value_serde=Serdes.String())
        >>> t = t.add_sink("out", "out-topic", "src")
        >>> print(t.describe())
        Topologies:
           Sub-topology: 0
            Source: src (topics: [in])
              --> out
            Sink: out (topic: out-topic)
              <-- src
        <BLANKLINE>
    """

    def __init__(self, graph: TopologyGraph | None = None):
        self._graph = graph if graph is not None else TopologyGraph()

    def add_source(self, name: str, *topics: str, key_serde: Any = None, value_serde: Any = None,
                   timestamp_extractor: Callable | None = None,
                   offset_reset: str | None = None) -> "Topology":
        """Add a source node reading ``topics``."""
        self._graph.add(SourceSpec(name, tuple(topics), key_serde, value_serde,
                                   timestamp_extractor, offset_reset))
        return self

    def add_processor(self, name: str, supplier: Callable[[], Any],
                      *parent_names: str) -> Topology:
        """Add a processor node; ``supplier()`` must return a new Processor per task."""
        self._graph.add(ProcessorSpec(name, supplier, tuple(parent_names)))
        return self

    def add_sink(self, name: str, topic: str | Callable[..., str], *parent_names: str,
                 key_serde: Any = None, value_serde: Any = None,
                 partitioner: Callable[..., int | None] | None = None) -> "Topology":
        """Add a sink node writing to ``topic`` (or to the topic a ``fn(k, v, meta)`` names)."""
        self._graph.add(SinkSpec(name, topic, tuple(parent_names), key_serde, value_serde,
                                 partitioner))
        return self

    def add_global_store(self, store_builder: Any, source_name: str, topic: str,
                         processor_name: str, state_update_supplier: Callable[[], Any], *,
                         key_serde: Any = None, value_serde: Any = None,
                         timestamp_extractor: Callable | None = None,
                         offset_reset: str | None = None) -> "Topology":
        """Add a global store kept from every partition of ``topic`` by the processor
        ``state_update_supplier()`` makes (it updates the store and forwards nothing). The
        store builder must have logging disabled (the topic is its changelog). Every
        processor may read the store (read-only) without being connected to it."""
        store_kind(store_builder)  # a builder that names its store kind, or a clear error
        self._graph.add_global_store(
            store_builder, SourceSpec(source_name, (topic,), key_serde, value_serde,
                                      timestamp_extractor, offset_reset),
            ProcessorSpec(processor_name, state_update_supplier, (source_name,)))
        return self

    def add_state_store(self, builder: Any, *processor_names: str) -> "Topology":
        """Add a state store, optionally connected to processors already in the topology."""
        store_kind(builder)  # a builder that names its store kind, or a clear error
        self._graph.add_store(builder, tuple(processor_names))
        return self

    def connect_processor_and_state_stores(self, processor_name: str,
                                           *store_names: str) -> Topology:
        """Give a processor access to stores added before."""
        self._graph.connect((processor_name,), tuple(store_names))
        return self

    def describe(self) -> str:
        """Sub-topologies, sources, processors and sinks, as Kafka Streams prints them."""
        lines = ["Topologies:"]
        groups = self._sub_topologies()
        for i, group in enumerate(groups):
            lines.append(f"   Sub-topology: {i}")
            for spec in group:
                lines.extend(self._describe_node(spec))
        for i, (store, g) in enumerate(self._graph.global_stores.items(), len(groups)):
            lines.append(f"   Sub-topology: {i} for global store (will not generate tasks)")
            lines += [f"    Source: {g.source.name} (topics: [{g.source.topics[0]}])",
                      f"      --> {g.processor.name}",
                      f"    Processor: {g.processor.name} (stores: [{store}])",
                      f"      <-- {g.source.name}"]
        return "\n".join(lines) + "\n"

    def _describe_node(self, spec: Any) -> list[str]:
        if isinstance(spec, SourceSpec):
            head = f"    Source: {spec.name} (topics: [{', '.join(spec.topics)}])"
        elif isinstance(spec, SinkSpec):
            topic = spec.topic if isinstance(spec.topic, str) else "<topic extractor>"
            head = f"    Sink: {spec.name} (topic: {topic})"
        else:
            stores = ", ".join(self._graph.stores_of(spec.name))
            head = f"    Processor: {spec.name} (stores: [{stores}])"
        out = [head]
        children = [c.name for c in self._graph.children(spec.name)]
        if children:
            out.append(f"      --> {', '.join(children)}")
        if spec.parents:
            out.append(f"      <-- {', '.join(spec.parents)}")
        return out

    def _sub_topologies(self) -> list[list[Any]]:
        from kspark._graph.subtopology import sub_topologies

        return [[self._graph.nodes[n] for n in st.nodes] for st in sub_topologies(self._graph)]

    def __repr__(self) -> str:
        return self.describe()
