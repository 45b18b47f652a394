"""Topology: the Processor API's graph of sources, processors and sinks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.state.build import store_kind
from kspark._graph.graph import ProcessorSpec, SinkSpec, SourceSpec, TopologyGraph
from kspark._graph.node_groups import AddedOrder
from kspark.processor.description import TopologyDescription, describe

__all__ = ["Topology"]


class Topology:
    """A processing graph, built with the Processor API or by :class:`~kspark.StreamsBuilder`.

    Example:
        >>> from kspark import Serdes
        >>> t = Topology()
        >>> t = t.add_source("src", "in", key_serde=Serdes.String(), value_serde=Serdes.String())
        >>> t = t.add_sink("out", "out-topic", "src")
        >>> print(t.describe(), end="")
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
        self._added = AddedOrder()  # what describe() shows of the order things were added

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
        self._graph.global_after[store_builder.name] = len(self._graph.nodes)
        return self

    def add_state_store(self, builder: Any, *processor_names: str) -> "Topology":
        """Add a state store, optionally connected to processors already in the topology."""
        store_kind(builder)  # a builder that names its store kind, or a clear error
        self._graph.add_store(builder, tuple(processor_names))
        self._added.connected(tuple(processor_names), (builder.name,))
        return self

    def connect_processor_and_state_stores(self, processor_name: str,
                                           *store_names: str) -> Topology:
        """Give a processor access to stores added before."""
        self._graph.connect((processor_name,), tuple(store_names))
        self._added.connected((processor_name,), tuple(store_names))
        return self

    def describe(self) -> TopologyDescription:
        """The sub-topologies, global stores and nodes, as Java's ``Topology.describe()``;
        ``str()`` of it is Kafka Streams' text for the same topology."""
        return describe(self._graph, self._added)

    def __repr__(self) -> str:
        return str(self.describe())
