"""What the DSL's classes hand one another, and the graph walks their joins share.

An :class:`Upstream` is the node of the topology being built that an object's records come
out of, with their serdes: Kafka Streams keeps the same in ``AbstractStream``'s
package-private fields. A producer passes it to what it makes (``group_by_key`` to
``KGroupedStream``, ``split`` to ``BranchedKStream``), so no class reads another's
private attributes.

Example:
    >>> from kspark._graph.graph import SourceSpec, TopologyGraph
    >>> g = TopologyGraph()
    >>> _ = g.add(SourceSpec("src", ("clicks",)))
    >>> Upstream(g, "src", None, None).node, source_topics(g, "src")
    ('src', {'clicks'})
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kspark._graph.graph import ProcessorSpec, SinkSpec, SourceSpec, TopologyGraph
from kspark._graph.naming import RepartitionNames, repartition_names
from kspark._engine import operators as ops
from kspark._engine.tables.processors import Switch

__all__ = ["Upstream", "source_topics", "copartition", "relax_null_keys", "add_repartition",
           "repartitioned"]


@dataclass(frozen=True, eq=False)
class Upstream:
    """A node of the topology being built, and the serdes of the records it forwards.

    Compared by identity: two groupings of one stream are two upstreams (a cogroup tells
    its grouped streams apart so)."""

    graph: TopologyGraph
    node: str
    key_serde: Any
    value_serde: Any
    # a grouped stream whose key changed: its aggregations repartition first, each through a
    # topic named for its store, or for ``grouped_name`` (``Grouped.as_``: one topic, shared)
    repartition: bool = False
    grouped_name: str | None = None
    shared: dict[str, Upstream] = field(default_factory=dict, compare=False)
    origin: str = ""  # the user's grouping call: its repartition's nodes are named for it


def repartitioned(up: Upstream, prefix: str) -> Upstream:
    """``up`` itself, or (``up.repartition``) ``up`` through a repartition topic named for
    ``up.grouped_name`` or else ``prefix`` (an aggregation's store name), as Java's
    ``GroupedStreamAggregateBuilder``: the names are taken in any case, the nodes of a
    named grouping are added once."""
    if not up.repartition:
        return up
    names = repartition_names(up.graph, up.grouped_name or prefix)
    if up.grouped_name and up.grouped_name in up.shared:
        return up.shared[up.grouped_name]
    for node in (names.filter, names.sink, names.source) if up.origin else ():
        up.graph.origins[node] = up.origin
    source = add_repartition(up.graph, up.node, names, up.key_serde, up.value_serde)
    out = Upstream(up.graph, source, up.key_serde, up.value_serde)
    if up.grouped_name:
        up.shared[up.grouped_name] = out
    return out


def add_repartition(g: TopologyGraph, node: str, names: RepartitionNames, key_serde: Any,
                    value_serde: Any, partitioner: Callable[..., int | None] | None = None,
                    partitions: int | None = None, optimizable: bool = True) -> str:
    """Add a repartition after ``node`` (its null-key filter, the sink writing the topic,
    the source reading it, named ``names``); the source's name. The filter drops null keys
    unless a left or outer join downstream turns its switch on (:func:`relax_null_keys`).
    ``optimizable``: merge.repartition.topics may merge it (not ``KStream.repartition``'s)."""
    keep = g.null_key_filters[names.filter] = Switch()
    g.add(ProcessorSpec(names.filter, functools.partial(ops.NullKeyFilter, keep), (node,)))
    g.add(SinkSpec(names.sink, names.topic, (names.filter,), key_serde, value_serde,
                   partitioner, internal=True))
    if partitions is not None:
        g.partition_counts[names.topic] = partitions
    g.add(SourceSpec(names.source, (names.topic,), key_serde, value_serde, internal=True))
    g.repartitions[names.source] = (names, optimizable)
    return names.source

def source_topics(graph: TopologyGraph, node: str, internal: bool = False) -> set[str]:
    """The user source topics ``node``'s records come from (for co-partitioning), or with
    ``internal`` the nearest repartition topics upstream."""
    out: set[str] = set()
    todo, seen = [node], set()
    while todo:
        spec = graph.nodes[todo.pop()]
        if spec.name in seen:
            continue
        seen.add(spec.name)
        if isinstance(spec, SourceSpec) and spec.internal == internal:
            out.update(spec.topics)
        todo.extend(spec.parents)
    return out


def copartition(graph: TopologyGraph, *nodes: str) -> None:
    """Register a join's co-partitioning, as Kafka Streams does: the user topics the sides
    (``nodes``) read must have equal partition counts (checked at start), and repartition
    topics just upstream of a side get the partition count of those user topics."""
    user = sorted(set().union(*(source_topics(graph, node) for node in nodes)))
    if len(user) > 1:
        graph.copartition(*user)
    if user:
        for node in nodes:
            for topic in source_topics(graph, node, internal=True):
                graph.partitions_like.setdefault(topic, user[0])


def relax_null_keys(graph: TopologyGraph, node: str) -> None:
    """A left or outer join reads ``node``: every repartition upstream keeps null keys
    (Java's NodesWithRelaxedNullKeyJoinDownstream)."""
    todo, seen = [node], set()
    writers: dict[str, list[str]] = {}
    for spec in graph.nodes.values():
        if isinstance(spec, SinkSpec) and isinstance(spec.topic, str):
            writers.setdefault(spec.topic, []).append(spec.name)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in graph.null_key_filters:
            graph.null_key_filters[name].on = True
        spec = graph.nodes[name]
        todo.extend(spec.parents)
        if isinstance(spec, SourceSpec):
            for topic in spec.topics:
                todo.extend(writers.get(topic, ()))
