"""TopologyDescription: what :meth:`Topology.describe` returns, as Java's
``org.apache.kafka.streams.TopologyDescription``.

Sub-topologies and global stores with their ids, each sub-topology's nodes (sources,
processors, sinks) with their predecessors and successors. ``str()`` of a description is
byte for byte the text Kafka Streams' ``TopologyDescription.toString()`` prints for the same
topology: the same order of sub-topologies, global stores and nodes, ``none`` for no
neighbours, a blank line after each sub-topology.

Java's ``Set``s are tuples here, in the order Java iterates them (``subtopologies()`` and
``global_stores()`` by id, ``nodes()`` largest sub-tree first); ``topic_set()`` and
``stores()`` are frozensets.

Example:
    >>> from kspark import Serdes, Topology
    >>> t = Topology().add_source("src", "in", key_serde=Serdes.String(),
    ...                           value_serde=Serdes.String()).add_sink("out", "out-topic", "src")
    >>> d = t.describe()
    >>> [(s.id(), [n.name() for n in s.nodes()]) for s in d.subtopologies()]
    [(0, ['src', 'out'])]
    >>> d.subtopologies()[0].nodes()[0].successors()[0].topic()
    'out-topic'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kspark._graph.graph import SinkSpec, SourceSpec, TopologyGraph
from kspark._graph.java_sets import added_capacity, copied_capacity, hash_order
from kspark._graph.node_groups import AddedOrder, linked_nodes, node_groups
from kspark.processor.pictures import Box, Edge, Group, Picture, Topics, to_dot, to_mermaid

__all__ = ["TopologyDescription", "Subtopology", "GlobalStore", "Node", "Source", "Processor",
           "Sink"]


def _names(nodes: tuple[str, ...]) -> str:
    """``InternalTopologyBuilder.nodeNames``: the names joined by ", ", or ``none``."""
    return ", ".join(nodes) if nodes else "none"


def _java_set(items: tuple[str, ...]) -> str:
    return f"[{', '.join(items)}]"


@dataclass(frozen=True)
class Node:
    """A node of a sub-topology (``TopologyDescription.Node``): its name, the nodes it reads
    from (``predecessors()``) and the nodes it forwards to (``successors()``)."""

    _name: str
    _predecessors: tuple[str, ...] = ()
    _successors: tuple[str, ...] = field(default=(), compare=False)
    # The nodes of the same sub-topology by name, to resolve neighbours (filled once built).
    _peers: Mapping[str, Node] = field(default_factory=dict, compare=False, repr=False)

    def name(self) -> str:
        """The node's name."""
        return self._name

    def predecessors(self) -> tuple[Node, ...]:
        """The nodes this one reads from, in the order Java lists them."""
        return tuple(self._peers[n] for n in self._predecessors)

    def successors(self) -> tuple[Node, ...]:
        """The nodes this one forwards to, in the order Java lists them."""
        return tuple(self._peers[n] for n in self._successors)


@dataclass(frozen=True)
class Source(Node):
    """A source node (``TopologyDescription.Source``): reads ``topic_set()`` (or the topics
    ``topic_pattern()`` matches; one of the two is None)."""

    _topics: tuple[str, ...] | None = None  # in Java's HashSet order
    _pattern: re.Pattern | None = None

    def topic_set(self) -> frozenset[str] | None:
        """The topics read, or None when a pattern names them."""
        return None if self._topics is None else frozenset(self._topics)

    def topic_pattern(self) -> re.Pattern | None:
        """The pattern of the topics read, or None when they are named."""
        return self._pattern

    def __str__(self) -> str:
        topics = self._pattern.pattern if self._pattern is not None else \
            _java_set(self._topics or ())
        return f"Source: {self._name} (topics: {topics})\n      --> {_names(self._successors)}"


@dataclass(frozen=True)
class Processor(Node):
    """A processor node (``TopologyDescription.Processor``) and the stores it may use."""

    _stores: tuple[str, ...] = ()  # in Java's HashSet order

    def stores(self) -> frozenset[str]:
        """The names of the state stores connected to this processor."""
        return frozenset(self._stores)

    def __str__(self) -> str:
        return (f"Processor: {self._name} (stores: {_java_set(self._stores)})\n"
                f"      --> {_names(self._successors)}\n      <-- {_names(self._predecessors)}")


@dataclass(frozen=True)
class Sink(Node):
    """A sink node (``TopologyDescription.Sink``): writes to ``topic()``, or to the topic
    its ``topic_name_extractor()`` picks per record (one of the two is None)."""

    _topic: str | None = None
    _extractor: Callable[..., str] | None = None

    def topic(self) -> str | None:
        """The topic written, or None when an extractor picks it."""
        return self._topic

    def topic_name_extractor(self) -> Callable[..., str] | None:
        """The extractor picking the topic per record, or None for a fixed topic."""
        return self._extractor

    def __str__(self) -> str:
        target = f"topic: {self._topic}" if self._extractor is None else \
            f"extractor class: {self._extractor}"  # Java: the extractor's toString()
        return f"Sink: {self._name} ({target})\n      <-- {_names(self._predecessors)}"


@dataclass(frozen=True)
class Subtopology:
    """A sub-topology (``TopologyDescription.Subtopology``): nodes connected to each other,
    run by one task per partition."""

    _id: int
    _nodes: tuple[Node, ...]

    def id(self) -> int:
        """The sub-topology's id, numbered with the global stores (Java's task ids are
        ``<id>_<partition>``)."""
        return self._id

    def nodes(self) -> tuple[Node, ...]:
        """The nodes, in Java's order: most paths leading out of them first, then by name."""
        return self._nodes

    def __str__(self) -> str:
        return f"Sub-topology: {self._id}\n" + "".join(f"    {n}\n" for n in self._nodes) + "\n"


@dataclass(frozen=True)
class GlobalStore:
    """A global store (``TopologyDescription.GlobalStore``): its ``source()`` reads the
    store's topic and its ``processor()`` keeps the store; no task runs them."""

    _source: Source
    _processor: Processor
    _id: int = field(default=0, compare=False)

    def id(self) -> int:
        """The id of the global store's node group (numbered with the sub-topologies)."""
        return self._id

    def source(self) -> Source:
        """The source node reading the store's topic."""
        return self._source

    def processor(self) -> Processor:
        """The processor updating the store."""
        return self._processor

    def __str__(self) -> str:
        return (f"Sub-topology: {self._id} for global store (will not generate tasks)\n"
                f"    {self._source}\n    {self._processor}\n")


@dataclass(frozen=True)
class TopologyDescription:
    """A topology's sub-topologies and global stores (Java's ``TopologyDescription``);
    ``str()`` is Java's ``toString()``, byte for byte; :meth:`to_mermaid` and :meth:`to_dot`
    draw it."""

    _subtopologies: tuple[Subtopology, ...] = ()
    _global_stores: tuple[GlobalStore, ...] = ()
    # What Java's description leaves out and the pictures show (not compared, as Java's
    # equals() does not): the internal topics among the nodes' topics (named as the nodes
    # name them, without the application id), and each logged store with the source topic
    # that is its changelog (None: its own ``<application.id>-<store>-changelog``).
    _internal: frozenset[str] = field(default=frozenset(), compare=False)
    _changelogs: tuple[tuple[str, str | None], ...] = field(default=(), compare=False)

    def subtopologies(self) -> tuple[Subtopology, ...]:
        """The sub-topologies, by id."""
        return self._subtopologies

    def global_stores(self) -> tuple[GlobalStore, ...]:
        """The global stores, by id."""
        return self._global_stores

    def __str__(self) -> str:
        """Java's text: sub-topologies and global stores by id (as Java's loop that expects
        ids to follow each other interleaves them)."""
        subs, stores = list(self._subtopologies), list(self._global_stores)
        out, expected = ["Topologies:\n "], 0
        while subs and stores:
            out.append("  ")
            if subs[0].id() == expected:
                out.append(str(subs.pop(0)))
            else:
                out.append(str(stores.pop(0)))
            expected += 1
        out += [f"  {s}" for s in subs] + [f"  {g}" for g in stores]
        return "".join(out)

    def to_mermaid(self) -> str:
        """The topology as a Mermaid flowchart (paste it in a ```` ```mermaid ```` block:
        GitHub draws it). Sub-topologies and global stores are subgraphs; processors
        are boxes, topics stadiums and stores cylinders; repartition and changelog topics
        have their own style and say so. Ids are made safe (the names are the labels); the
        same topology always gives the same text.

        Example:
            >>> from kspark import Serdes, StreamsBuilder
            >>> b = StreamsBuilder()
            >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()).to("out")
            >>> print(b.build().describe().to_mermaid())
            flowchart TB
                subgraph sub_0["Sub-topology: 0"]
                    n_KSTREAM_SOURCE_0000000000("KSTREAM-SOURCE-0000000000")
                    n_KSTREAM_SINK_0000000001("KSTREAM-SINK-0000000001")
                end
                t_in(["in"])
                t_out(["out"])
                t_in --> n_KSTREAM_SOURCE_0000000000
                n_KSTREAM_SOURCE_0000000000 --> n_KSTREAM_SINK_0000000001
                n_KSTREAM_SINK_0000000001 --> t_out
                classDef source fill:#e8f4ff,stroke:#2f6f9f
                class n_KSTREAM_SOURCE_0000000000 source
                classDef sink fill:#e8f4ff,stroke:#2f6f9f
                class n_KSTREAM_SINK_0000000001 sink
                classDef topic fill:#fff4dd,stroke:#b07d18
                class t_in,t_out topic
        """
        return to_mermaid(self._picture())

    def to_dot(self) -> str:
        """The topology as a Graphviz DOT digraph (``dot -Tsvg``): sub-topologies and global
        stores are ``cluster_`` subgraphs; processors are boxes (``shape=box``), topics
        ellipses and stores cylinders; repartition and changelog topics are dashed or
        dotted and say so.

        Example:
            >>> from kspark import Serdes, StreamsBuilder
            >>> b = StreamsBuilder()
            >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()).to("out")
            >>> print(b.build().describe().to_dot())  # doctest: +ELLIPSIS
            digraph topology {
            ...
                subgraph cluster_sub_0 {
                    label="Sub-topology: 0";
                    n_KSTREAM_SOURCE_0000000000 [label="KSTREAM-SOURCE-0000000000", shape=box, ...];
                    n_KSTREAM_SINK_0000000001 [label="KSTREAM-SINK-0000000001", shape=box, ...];
                }
                t_in [label="in", shape=ellipse];
                t_out [label="out", shape=ellipse];
                t_in -> n_KSTREAM_SOURCE_0000000000;
                n_KSTREAM_SOURCE_0000000000 -> n_KSTREAM_SINK_0000000001;
                n_KSTREAM_SINK_0000000001 -> t_out;
            }
        """
        return to_dot(self._picture())

    def _picture(self) -> Picture:
        """The boxes, groups and edges both pictures draw, in the description's order."""
        parts = sorted([*self._subtopologies, *self._global_stores], key=lambda p: p.id())
        topics = Topics(self._internal)
        groups, edges = [], []
        placed: set[str] = set()
        changelogs = dict(self._changelogs)
        for part in parts:
            if isinstance(part, GlobalStore):
                key, title = f"global:{part.id()}", f"Sub-topology: {part.id()} for global store"
                nodes: tuple[Node, ...] = (part.source(), part.processor())
            else:
                key, title, nodes = f"sub:{part.id()}", f"Sub-topology: {part.id()}", part.nodes()
            boxes: list[Box] = []
            for node in nodes:
                edges += _node_edges(node, topics, boxes, placed,
                                     "global store" if key.startswith("global") else "")
                for store in sorted(node.stores()) if isinstance(node, Processor) else ():
                    if store in changelogs:
                        edges.append(topics.changelog(store, changelogs.pop(store)))
            groups.append(Group(key, title, tuple(boxes)))
        return Picture(tuple(groups), tuple(topics.boxes.values()), tuple(edges))


def _node_edges(node: Node, topics: Topics, boxes: list[Box], placed: set[str],
                store_note: str = "") -> list[Edge]:
    """Draw ``node`` (in ``boxes``), its topics and stores (not drawn yet: ``placed``); the
    edges into and out of it."""
    key = f"node:{node.name()}"
    edges = [Edge(key, f"node:{n.name()}") for n in node.successors()]
    if isinstance(node, Source):
        pattern = node.topic_pattern()
        ins = ([topics.pattern(pattern.pattern)] if pattern is not None else
               [topics.named(t) for t in sorted(node.topic_set() or ())])
        boxes.append(Box(key, node.name(), "source"))
        return [Edge(t, key) for t in ins] + edges
    if isinstance(node, Sink):
        topic = node.topic()
        out = topics.named(topic) if topic is not None else topics.extracted(node.name())
        boxes.append(Box(key, node.name(), "sink"))
        return [*edges, Edge(key, out)]
    boxes.append(Box(key, node.name(), "processor"))
    for store in sorted(node.stores()) if isinstance(node, Processor) else ():
        if store not in placed:
            placed.add(store)
            boxes.append(Box(f"store:{store}", store, "store", store_note))
        edges.append(Edge(key, f"store:{store}", "store"))
    return edges


def describe(graph: TopologyGraph, added: AddedOrder | None = None) -> TopologyDescription:
    """The description of a topology's graph, as Java's ``InternalTopologyBuilder.describe``
    makes it (``added``: the order of what the graph does not order)."""
    added = added or AddedOrder()
    subtopologies, global_stores = [], []
    for group in node_groups(graph):
        g = group.global_store
        if g is None:
            subtopologies.append(_subtopology(graph, added, group.id, group.nodes))
            continue
        peers: dict[str, Node] = {}
        source = Source(g.source.name, (), (g.processor.name,), peers,
                        _topics=(g.source.topics[0],))
        processor = Processor(g.processor.name, (g.source.name,), (), peers,
                              _stores=(g.builder.name,))
        peers.update({source.name(): source, processor.name(): processor})
        global_stores.append(GlobalStore(source, processor, group.id))
    internal = {t for s in graph.sources() if s.internal for t in s.topics}
    internal |= {s.topic for s in graph.sinks() if s.internal and isinstance(s.topic, str)}
    changelogs = [(name, None if builder.logging_enabled else graph.source_changelogs[name])
                  for name, (builder, _) in sorted(graph.stores.items())
                  if builder.logging_enabled or name in graph.source_changelogs]
    return TopologyDescription(tuple(subtopologies), tuple(global_stores), frozenset(internal),
                               tuple(changelogs))


def _subtopology(graph: TopologyGraph, added: AddedOrder, id_: int,
                 names: tuple[str, ...]) -> Subtopology:
    """Sub-topology ``id_`` of ``names``: nodes as Java describes them, in Java's order."""
    peers: dict[str, Node] = {}
    for n in linked_nodes(graph, names):
        spec = graph.nodes[n.name]
        links = (n.name, n.predecessors, n.successors, peers)
        if isinstance(spec, SourceSpec):
            peers[n.name] = Source(*links, _topics=tuple(
                hash_order(spec.topics, copied_capacity(len(spec.topics)))))
        elif isinstance(spec, SinkSpec):
            topic = spec.topic
            peers[n.name] = (Sink(*links, _topic=topic) if isinstance(topic, str)
                             else Sink(*links, _extractor=topic))
        else:
            stores = added.stores(graph, n.name)
            stores = hash_order(hash_order(stores, added_capacity(len(stores))),
                                copied_capacity(len(stores)))
            peers[n.name] = Processor(*links, _stores=tuple(stores))
    return Subtopology(id_, tuple(peers.values()))
