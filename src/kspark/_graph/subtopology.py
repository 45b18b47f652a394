"""Cut a topology into sub-topologies where Kafka Streams would put a topic between them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kspark._graph.graph import SinkSpec, SourceSpec, TopologyGraph

__all__ = ["SubTopology", "sub_topologies", "group_ids"]


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
    """The sub-topologies in the order their first node was added (upstream first),
    numbered as Kafka Streams numbers them, global stores counted (:func:`group_ids`): the
    ids of its tasks (``<id>_<partition>``) and of its ``describe()``.

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
    order = {name: i for i, name in enumerate(graph.nodes)}
    ids, _ = group_ids(graph, [order[specs[0].name] for specs in groups.values()])
    result = []
    for i, specs in zip(ids, groups.values(), strict=True):
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


def group_ids(graph: TopologyGraph, firsts: list[int]) -> tuple[list[int], dict[str, int]]:
    """Kafka Streams' node-group ids (``InternalTopologyBuilder.makeNodeGroups``): for the
    sub-topologies whose first nodes were added ``firsts``-th, and for each global store,
    numbered together in the order added. A global store the Processor API added knows how
    many nodes came before it (``graph.global_after``); one the DSL added is placed by the
    index in its generated name (``KTABLE-SOURCE-0000000003``), see :func:`_by_index`.

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> _ = b.global_table("g", key_serde=Serdes.String(), value_serde=Serdes.String())
        >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()).to("out")
        >>> [s.id for s in sub_topologies(b._graph)]
        [1]
    """
    events: list[tuple[int, int, int, str]] = [(first, 1, i, "") for i, first in enumerate(firsts)]
    floor = 0  # global stores were added in their order
    for store, g in graph.global_stores.items():
        position = graph.global_after.get(store)
        if position is None:
            position = _by_index(list(graph.nodes), _index(g.processor.name))
        floor = max(floor, position)
        events.append((floor, 0, len(events), store))
    events.sort(key=lambda e: e[:3])  # stable: global stores at one position stay in order
    subs, stores = [0] * len(firsts), {}
    for group_id, (_, kind, i, store) in enumerate(events):
        if kind:
            subs[i] = group_id
        else:
            stores[store] = group_id
    return subs, stores


_INDEX = re.compile(r"(?<![0-9])[0-9]{10}(?![0-9])")


def _index(name: str) -> int | None:
    m = _INDEX.search(name)
    return int(m.group()) if m else None


def _by_index(names: list[str], index: int | None) -> int:
    """How many of ``names`` (in the order added) come before the name generated with
    ``index``: up to the last one generated with a smaller index (all, with no index)."""
    if index is None:
        return len(names)
    position = 0
    for i, name in enumerate(names):
        other = _index(name)
        if other is not None and other < index:
            position = i + 1
    return position
