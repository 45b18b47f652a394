"""Kafka Streams' node groups and the order its description lists nodes in.

Java numbers node groups (sub-topologies and global stores alike) in the order their first
node was added (``InternalTopologyBuilder.makeNodeGroups``), so a global store added between
two sub-topologies takes the id between theirs. Within a sub-topology it orders nodes by the
number of paths leading out of them (most first), then by name; the ``-->``/``<--`` lists are
``TreeSet``s filled while those sizes still grow, replayed here link by link
(``describeSubtopology``), so their order is Java's even where it is not sorted.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from kspark._graph.graph import GlobalStoreSpec, TopologyGraph
from kspark._graph.java_sets import TreeSet, added_capacity, hash_order, java_compare
from kspark._graph.subtopology import group_ids, sub_topologies

__all__ = ["AddedOrder", "NodeGroup", "LinkedNode", "node_groups", "linked_nodes"]


@dataclass
class AddedOrder:
    """What a graph does not keep of the order a topology was built in, and Java's
    description shows: ``stores_of``, each processor's stores in the order they were
    connected."""

    stores_of: dict[str, list[str]] = field(default_factory=dict)

    def connected(self, processors: tuple[str, ...], stores: tuple[str, ...]) -> None:
        for p in processors:
            self.stores_of.setdefault(p, []).extend(stores)

    def stores(self, graph: TopologyGraph, processor: str) -> list[str]:
        """The stores of ``processor`` in the order connected. Those not recorded come last,
        as the DSL connects them: first the stores it was added with (it is their first
        user), then the others (an upstream table's, a join's other side's), each in the
        order they were added."""
        order = {name: i for i, name in enumerate(graph.nodes)}
        connected = [s for s, (_, users) in graph.stores.items() if processor in users]
        first_user = {s: min(graph.stores[s][1], key=lambda u: order.get(u, -1))
                      for s in connected}
        own = [s for s in connected if first_user[s] == processor]
        return list(dict.fromkeys([s for s in self.stores_of.get(processor, [])
                                   if s in connected] + own + connected))


@dataclass(frozen=True)
class NodeGroup:
    """Node group ``id``: a sub-topology's nodes (in the order they were added), or, with
    ``global_store`` set, that global store's."""

    id: int
    nodes: tuple[str, ...] = ()
    global_store: GlobalStoreSpec | None = None


@dataclass(frozen=True)
class LinkedNode:
    """A node of a sub-topology with its predecessors and successors, in Java's order."""

    name: str
    predecessors: tuple[str, ...]
    successors: tuple[str, ...]


def node_groups(graph: TopologyGraph) -> list[NodeGroup]:
    """Sub-topologies and global stores, numbered as Kafka Streams numbers them
    (``subtopology.group_ids``).

    Example:
        >>> from kspark import Topology
        >>> t = Topology().add_source("a", "in-a").add_sink("o", "out", "a")
        >>> [(g.id, g.nodes) for g in node_groups(t._graph)]
        [(0, ('a', 'o'))]
    """
    subs = sub_topologies(graph)
    order = {name: i for i, name in enumerate(graph.nodes)}
    _, stores = group_ids(graph, [order[st.nodes[0]] for st in subs])
    groups = [NodeGroup(st.id, st.nodes) for st in subs]
    groups += [NodeGroup(i, global_store=graph.global_stores[name]) for name, i in stores.items()]
    return sorted(groups, key=lambda g: g.id)


class _Node:
    __slots__ = ("name", "size", "predecessors", "successors")

    def __init__(self, name: str):
        self.name, self.size = name, 1
        self.predecessors: TreeSet[_Node] = TreeSet(_compare)
        self.successors: TreeSet[_Node] = TreeSet(_compare)


def _compare(a: _Node, b: _Node) -> int:
    """``InternalTopologyBuilder.NodeComparator``: larger sub-tree first, then by name."""
    if a is b:
        return 0
    if a.size != b.size:
        return b.size - a.size
    return java_compare(a.name, b.name)


def _grow(node: _Node, delta: int) -> None:
    """``updateSize``: add ``delta`` to ``node`` and, once per path, to every node above it."""
    stack = [node]
    while stack:
        n = stack.pop()
        n.size += delta
        stack.extend(n.predecessors)


def linked_nodes(graph: TopologyGraph, names: tuple[str, ...]) -> list[LinkedNode]:
    """The nodes of one sub-topology (``names``, in the order added), linked and ordered as
    ``InternalTopologyBuilder.describeSubtopology`` does.

    Example:
        >>> from kspark import Topology
        >>> t = Topology().add_source("a", "in-a").add_sink("o", "out", "a")
        >>> linked_nodes(t._graph, ("a", "o"))[0]
        LinkedNode(name='a', predecessors=(), successors=('o',))
    """
    by_name = {n: _Node(n) for n in hash_order(names, added_capacity(len(names)))}
    for node in by_name.values():
        for parent in graph.nodes[node.name].parents:
            predecessor = by_name[parent]
            node.predecessors.add(predecessor)
            predecessor.successors.add(node)
            _grow(predecessor, node.size)
    ordered = sorted(by_name.values(), key=functools.cmp_to_key(_compare))
    return [LinkedNode(n.name, tuple(p.name for p in n.predecessors),
                       tuple(s.name for s in n.successors)) for n in ordered]
