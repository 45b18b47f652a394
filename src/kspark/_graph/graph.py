"""Node specs and the TopologyGraph that holds them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kspark.errors import TopologyError

__all__ = ["SourceSpec", "ProcessorSpec", "SinkSpec", "GlobalStoreSpec", "TopologyGraph",
           "NodeSpec", "topic_name", "user_call"]


@dataclass(frozen=True)
class SourceSpec:
    """Reads ``topics`` and deserializes with the given serdes (None: the config default)."""

    name: str
    topics: tuple[str, ...]
    key_serde: Any = None
    value_serde: Any = None
    timestamp_extractor: Callable | None = None
    offset_reset: str | None = None
    parents: tuple[str, ...] = ()
    internal: bool = False  # topics are suffixes of '<application.id>-' (repartition topics)


@dataclass(frozen=True)
class ProcessorSpec:
    """Runs ``supplier()``'s processor on what its parents forward. ``key_changing``: the
    processor may change record keys, so a later key-based step repartitions first."""

    name: str
    supplier: Callable[[], Any]
    parents: tuple[str, ...]
    key_changing: bool = False


@dataclass(frozen=True)
class SinkSpec:
    """Writes to ``topic`` (a name, or an extractor ``fn(key, value, record_metadata)``)."""

    name: str
    topic: str | Callable[..., str]
    parents: tuple[str, ...]
    key_serde: Any = None
    value_serde: Any = None
    partitioner: Callable[..., int | None] | None = None
    internal: bool = False


@dataclass(frozen=True)
class GlobalStoreSpec:
    """A global store: every task reads it (read-only); ``processor`` keeps it up to date
    from every partition of ``source.topics[0]``, which serves as its changelog."""

    builder: Any  # a store builder with logging disabled
    source: SourceSpec
    processor: ProcessorSpec


def topic_name(topic: str, internal: bool, application_id: str) -> str:
    """The real name of a node's topic: internal topics are prefixed with the application id."""
    return f"{application_id}-{topic}" if internal else topic


NodeSpec = SourceSpec | ProcessorSpec | SinkSpec


@dataclass
class TopologyGraph:
    """Every node of a topology, in the order added (parents always come first)."""

    nodes: dict[str, NodeSpec] = field(default_factory=dict)
    _counter: int = 0
    # Groups of source topics whose partition N must meet in task N (joins register them).
    copartition_groups: list[frozenset[str]] = field(default_factory=list)
    # State stores: name -> (builder, names of the processors connected to it)
    stores: dict[str, tuple[Any, set[str]]] = field(default_factory=dict)
    # Internal topics partitioned like another topic rather than like their writer's tasks
    # (a foreign-key join's subscriptions go to the right table's partitions).
    partitions_like: dict[str, str] = field(default_factory=dict)
    # Each repartition's null-key filter: its switch turns on (null keys kept) when a left or
    # outer join is added downstream of it, as Kafka Streams' NULL_KEY_RELAXED_JOIN rewrite.
    null_key_filters: dict[str, Any] = field(default_factory=dict)
    # Global stores by store name (their nodes are not in ``nodes``: no task runs them).
    global_stores: dict[str, GlobalStoreSpec] = field(default_factory=dict)
    # For a global store the Processor API added: how many nodes were added before it (Java
    # numbers sub-topologies and global stores together, in the order added: node_groups.py)
    global_after: dict[str, int] = field(default_factory=dict)
    # Repartition topics with a number of partitions of their own (Repartitioned).
    partition_counts: dict[str, int] = field(default_factory=dict)
    # Spark sinks by sink node name (``KStream.to_spark``/``foreach_batch``: SparkSinkSpec)
    spark_sinks: dict[str, Any] = field(default_factory=dict)
    # The user's call that added each node or store: "group_by() at app.py:12", for errors.
    origins: dict[str, str] = field(default_factory=dict)
    # Internal names the DSL generated rather than the user gave, in the order made:
    # (kind, name, logged); kind "store" or "repartition" (KIP-1111, ``naming.py``)
    generated: list[tuple[str, str, bool]] = field(default_factory=list)
    # What topology.optimization reads (``optimize.py``), as Java's graph nodes mark it:
    # nodes that change keys or values ("key", "value"), KStream.merge
    # nodes, repartitions by source node ((names, optimizable)), source KTables' stores by
    # their topic, stream-stream joins of a stream with itself; and what it did: stores
    # whose changelog is their source topic, and whether it ran.
    changing: dict[str, str] = field(default_factory=dict)
    merge_nodes: list[str] = field(default_factory=list)
    repartitions: dict[str, tuple[Any, bool]] = field(default_factory=dict)
    table_sources: dict[str, str] = field(default_factory=dict)
    self_joins: list[tuple] = field(default_factory=list)
    source_changelogs: dict[str, str] = field(default_factory=dict)
    optimized: bool = False

    def origin(self, name: str) -> str:
        """The user's call that added node or store ``name`` ("" if unknown)."""
        return self.origins.get(name, "")

    def add_store(self, builder: Any, processors: tuple[str, ...] = ()) -> None:
        if builder.name in self.stores or builder.name in self.global_stores:
            raise TopologyError(f"a state store named {builder.name!r} already exists")
        self.origins.setdefault(builder.name, user_call())
        self.stores[builder.name] = (builder, set())
        self.connect(processors, (builder.name,))

    def connect(self, processors: tuple[str, ...], store_names: tuple[str, ...]) -> None:
        """Give ``processors`` access to the named stores."""
        for store in store_names:
            if store in self.global_stores:
                raise TopologyError(
                    f"store {store!r} is a global store: every processor may read it without "
                    "being connected, and only its global processor writes it; do not connect "
                    f"{', '.join(map(repr, processors))} to it")
            if store not in self.stores:
                raise TopologyError(f"no state store named {store!r}; add it with "
                                    "Topology.add_state_store or StreamsBuilder.add_state_store")
            for p in processors:
                if not isinstance(self.nodes.get(p), ProcessorSpec):
                    raise TopologyError(f"cannot connect store {store!r} to {p!r}: no processor "
                                        "of that name")
                self.stores[store][1].add(p)

    def stores_of(self, processor: str) -> list[str]:
        return sorted(n for n, (_, procs) in self.stores.items() if processor in procs)

    def next_name(self, prefix: str) -> str:
        """A Kafka-Streams-style generated name, e.g. ``KSTREAM-FILTER-0000000001``."""
        name = f"{prefix}-{self._counter:010d}"
        self._counter += 1
        return name

    def add(self, spec: NodeSpec) -> NodeSpec:
        if spec.name in self.nodes:
            raise TopologyError(f"a node named {spec.name!r} already exists in the topology")
        for p in spec.parents:
            parent = self.nodes.get(p)
            if parent is None:
                raise TopologyError(f"node {spec.name!r} names unknown parent {p!r}")
            if isinstance(parent, SinkSpec):
                raise TopologyError(f"node {spec.name!r} cannot have the sink {p!r} as parent")
        if isinstance(spec, SourceSpec):
            taken = {t for s in self.sources() for t in s.topics} | set(self.global_topics())
            dup = taken.intersection(spec.topics)
            if dup:
                raise TopologyError(f"topic {sorted(dup)[0]!r} is already read by another source")
        self.nodes[spec.name] = spec
        self.origins.setdefault(spec.name, user_call())
        return spec

    def add_global_store(self, builder: Any, source: SourceSpec, processor: ProcessorSpec) -> None:
        """Add a global store fed from ``source`` (one topic) by ``processor``."""
        if builder.logging_enabled:
            raise TopologyError(f"state store {builder.name!r} for a global store must not have "
                                "logging enabled: its topic is its changelog; build it with "
                                "with_logging_disabled()")
        if getattr(builder.supplier, "history_retention_ms", None) is not None:
            raise TopologyError(f"global store {builder.name!r} cannot be versioned")
        if source.name == processor.name:
            raise TopologyError(f"the source and processor of global store {builder.name!r} "
                                f"must have different names (both are {source.name!r})")
        for name in (source.name, processor.name):
            if name in self.nodes or any(name in (g.source.name, g.processor.name)
                                         for g in self.global_stores.values()):
                raise TopologyError(f"a node named {name!r} already exists in the topology")
        if builder.name in self.stores or builder.name in self.global_stores:
            raise TopologyError(f"a state store named {builder.name!r} already exists")
        (topic,) = source.topics
        if topic in {t for s in self.sources() for t in s.topics} | set(self.global_topics()):
            raise TopologyError(f"topic {topic!r} is already read by another source")
        self.global_stores[builder.name] = GlobalStoreSpec(builder, source, processor)

    def delayed_stores(self) -> list[str]:
        """The delayed-records stores (KIP-311's delayed processing), by name."""
        return sorted(n for n, (b, _) in self.stores.items()
                      if getattr(b, "delayed_records", False))

    def global_topics(self) -> list[str]:
        """The topics global stores are read from."""
        return [g.source.topics[0] for g in self.global_stores.values()]

    def copartition(self, *topics: str) -> None:
        """Require ``topics`` to be co-partitioned (same partition count, checked at start)."""
        self.copartition_groups.append(frozenset(topics))

    def check_copartitioning(self, partition_counts: dict[str, int]) -> None:
        """Raise TopologyError naming the topics of any group whose partition counts differ."""
        for group in self.copartition_groups:
            counts = {t: partition_counts[t] for t in sorted(group) if t in partition_counts}
            if len(set(counts.values())) > 1:
                shown = ", ".join(f"{t!r} has {n}" for t, n in counts.items())
                raise TopologyError(
                    f"topics that must be co-partitioned have different partition counts "
                    f"({shown}); give them the same number of partitions, or repartition() "
                    "one side first")

    def upstream_topic(self, node: str) -> str:
        """The first topic a source upstream of ``node`` reads (as named in its spec)."""
        todo, seen = [node], set()
        while todo:
            spec = self.nodes[todo.pop(0)]
            if isinstance(spec, SourceSpec):
                return spec.topics[0]
            if spec.name not in seen:
                seen.add(spec.name)
                todo.extend(spec.parents)
        raise TopologyError(f"node {node!r} has no source upstream")

    def sources(self) -> list[SourceSpec]:
        return [n for n in self.nodes.values() if isinstance(n, SourceSpec)]

    def sinks(self) -> list[SinkSpec]:
        return [n for n in self.nodes.values() if isinstance(n, SinkSpec)]

    def children(self, name: str) -> list[NodeSpec]:
        return [n for n in self.nodes.values() if name in n.parents]

    def source_topics(self, application_id: str = "") -> list[str]:
        """Every topic a source reads (internal ones named for ``application_id``)."""
        return [topic_name(t, s.internal, application_id) for s in self.sources() for t in s.topics]

    def user_source_topics(self) -> list[str]:
        return [t for s in self.sources() if not s.internal for t in s.topics]

    def sink_topics(self) -> list[str]:
        """User sink topics known before running (topic extractors and internal topics excluded)."""
        return [s.topic for s in self.sinks() if isinstance(s.topic, str) and not s.internal]

    def internal_topics(self) -> list[str]:
        return sorted({t for s in self.sources() if s.internal for t in s.topics})


_KSPARK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_call() -> str:
    """The kspark call the user's code made that led here, and where: ``"group_by() at
    app.py:12"`` ("" when no user code is on the stack)."""
    frame = sys._getframe(1)  # noqa: SLF001 - the cheap way to walk the stack
    called = None
    while frame is not None:
        if os.path.abspath(frame.f_code.co_filename).startswith(_KSPARK_DIR):
            called = frame.f_code.co_name
        elif called is not None:
            return f"{called}() at {frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return ""
