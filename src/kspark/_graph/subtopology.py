"""Cut a topology into sub-topologies where Kafka Streams would put a topic between them."""

from __future__ import annotations

from dataclasses import dataclass

from kspark._graph.graph import SinkSpec, SourceSpec, TopologyGraph

__all__ = ["SubTopology", "sub_topologies"]


@dataclass(frozen=True)
class SubTopology:
    """Nodes connected by parent links, with the topics at its edges.

    ``user_topics``: read from Kafka. ``fed_topics``: written by another sub-topology of the
    same topology (repartition topics, ``through()`` topics). ``feeds``: topics this
    sub-topology writes that another one reads. Topic names are as in the specs (internal
    ones without the application-id prefix).
    """

    id: int
    nodes: tuple[str, ...]
    user_topics: tuple[str, ...]
    fed_topics: tuple[str, ...]
    feeds: tuple[str, ...]


def sub_topologies(graph: TopologyGraph) -> list[SubTopology]:
    """The sub-topologies, numbered in the order their first node was added (upstream first).

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
        ...  .repartition(name="r").to("out")
        >>> [(s.id, s.user_topics, s.fed_topics, s.feeds) for s in sub_topologies(b._graph)]
        [(0, ('in',), (), ('r-repartition',)), (1, (), ('r-repartition',), ())]
    """
    root: dict[str, str] = {}

    def find(n: str) -> str:
        while root.setdefault(n, n) != n:
            n = root[n]
        return n

    for spec in graph.nodes.values():
        for p in spec.parents:
            root[find(spec.name)] = find(p)
    for _, processors in graph.stores.values():  # processors sharing a store share a task
        names = sorted(processors)
        for other in names[1:]:
            root[find(other)] = find(names[0])
    groups: dict[str, list] = {}
    for spec in graph.nodes.values():
        groups.setdefault(find(spec.name), []).append(spec)

    written = {s.topic for s in graph.sinks() if isinstance(s.topic, str)}
    read = {t for s in graph.sources() for t in s.topics}
    result = []
    for i, specs in enumerate(groups.values()):
        sources = [s for s in specs if isinstance(s, SourceSpec)]
        sinks = [s for s in specs if isinstance(s, SinkSpec) and isinstance(s.topic, str)]
        topics = [t for s in sources for t in s.topics]
        result.append(SubTopology(
            id=i,
            nodes=tuple(s.name for s in specs),
            user_topics=tuple(t for t in topics if t not in written),
            fed_topics=tuple(t for t in topics if t in written),
            feeds=tuple(dict.fromkeys(s.topic for s in sinks if s.topic in read)),
        ))
    return result
