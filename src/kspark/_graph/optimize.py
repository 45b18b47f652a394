"""``topology.optimization``: Kafka Streams' graph rewrites, each a named pass.

Java's ``InternalStreamsBuilder.optimizeTopology`` runs, in this order, on what the DSL
built, when ``StreamsBuilder.build(props)`` is given the key:

- ``reuse.ktable.source.topics`` (:func:`reuse_source_topics`): a source KTable's store
  keeps no changelog of its own; its input topic serves as its changelog (restored from
  it, up to the committed offset);
- ``merge.repartition.topics`` (:func:`merge_repartitions`): the repartitions that follow
  one key-changing operation become one, through the first one's topic, its nodes named
  after that topic and added right after the key-changing node;
- ``single.store.self.join`` (:func:`single_store_self_join`): a stream-stream join of a
  stream with itself keeps one window store and joins in one processor.

``all`` is the three, ``none`` (the default) none of them; a comma list names some.

Example:
    >>> sorted(optimizations("all"))[:2]
    ['merge.repartition.topics', 'reuse.ktable.source.topics']
    >>> optimizations("none"), optimization_problem("all,none")  # doctest: +ELLIPSIS
    (frozenset(), '"all,none" is not a valid optimization config. Acceptable values are: ...')
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kspark._graph.graph import ProcessorSpec, SinkSpec, SourceSpec, TopologyGraph
from kspark._graph.naming import RepartitionNames, repartition_names
from kspark.errors import TopologyError
from kspark._engine.joins.self_join import SelfJoinProcessor
from kspark._engine import operators as ops
from kspark._engine.tables.processors import Switch

__all__ = ["REUSE_KTABLE_SOURCE_TOPICS", "MERGE_REPARTITION_TOPICS", "SINGLE_STORE_SELF_JOIN",
           "optimizations", "optimization_problem", "optimize", "reuse_source_topics",
           "merge_repartitions", "single_store_self_join"]

REUSE_KTABLE_SOURCE_TOPICS = "reuse.ktable.source.topics"
MERGE_REPARTITION_TOPICS = "merge.repartition.topics"
SINGLE_STORE_SELF_JOIN = "single.store.self.join"
_ALL = (REUSE_KTABLE_SOURCE_TOPICS, MERGE_REPARTITION_TOPICS, SINGLE_STORE_SELF_JOIN)
_HINT = ("Acceptable values are: \"none\", \"all\" or a comma-separated list of "
         f"{', '.join(_ALL)}")  # the choices, as Java's message lists them


def optimizations(value: str | None) -> frozenset[str]:
    """The rewrites ``value`` asks for (Java's ``verifyTopologyOptimizationConfigs``);
    a TopologyError for a value Java refuses."""
    problem = optimization_problem(value or "none")
    if problem:
        raise TopologyError(f"topology.optimization: {problem}")
    names = re.split(r"\s*,\s*", value or "none")
    if "all" in names:
        return frozenset(_ALL)
    return frozenset() if "none" in names else frozenset(names)


def optimization_problem(value: Any) -> str | None:
    """What is wrong with ``value`` for ``topology.optimization`` (None: nothing)."""
    names = re.split(r"\s*,\s*", str(value))
    if ("none" in names or "all" in names) and len(names) > 1:
        return f"\"{value}\" is not a valid optimization config. {_HINT}"
    if any(n not in (*_ALL, "none", "all") for n in names):
        return f"Unrecognized config. {_HINT}"
    return None


def optimize(graph: TopologyGraph, value: str | None) -> None:
    """Apply the rewrites ``value`` names to ``graph``, once, in Java's order."""
    chosen = optimizations(value)
    if graph.optimized or not chosen:
        return
    graph.optimized = True
    if REUSE_KTABLE_SOURCE_TOPICS in chosen:
        reuse_source_topics(graph)
    if MERGE_REPARTITION_TOPICS in chosen:
        merge_repartitions(graph)
    if SINGLE_STORE_SELF_JOIN in chosen:
        for join in graph.self_joins:
            single_store_self_join(graph, *join)


def reuse_source_topics(graph: TopologyGraph) -> None:
    """Each materialized source KTable's store: logging off, its topic is its changelog
    (Java's ``TableSourceNode`` with ``reuseSourceTopicForChangeLog``)."""
    for store, topic in graph.table_sources.items():
        if store in graph.stores:
            builder, users = graph.stores[store]
            graph.stores[store] = (replace(builder.with_logging_disabled(),
                                           source_changelog=topic), users)
            graph.source_changelogs[store] = topic


def single_store_self_join(g: TopologyGraph, windowed: str, other_windowed: str, this: str,
                           that: str, merge: str, store: str, other_store: str,
                           pending: str | None, joiner: Any, windows: Any) -> None:
    """Java's ``rewriteSingleStoreSelfJoin``: a join of a stream with itself keeps this
    side's windowed node and store; the other side's, both join nodes and the other stores
    go, and the ``-merge`` node joins (``SelfJoinProcessor``, inner semantics for any kind
    of join, as Java's)."""
    import functools


    for node in (other_windowed, this, that):
        del g.nodes[node]
    for gone in (other_store, pending):
        if gone is not None:
            del g.stores[gone]
    g.stores[store] = (g.stores[store][0], {windowed, merge})
    g.nodes[merge] = ProcessorSpec(merge, functools.partial(
        SelfJoinProcessor, store, joiner, windows), (windowed,))


def _parents(g: TopologyGraph, name: str) -> tuple[str, ...]:
    """Node ``name``'s parents as Java's graph nodes have them: a repartition (named by its
    source) is one node, whose parents are its null-key filter's."""
    if name == _PENDING:
        return ()
    rep = g.repartitions.get(name)
    return g.nodes[rep[0].filter].parents if rep else g.nodes[name].parents


def _find(g: TopologyGraph, start: str, test: Callable[[str], bool]) -> str | None:
    """Java's ``findParentNodeMatching``: ``start`` if it passes, else the first parent that
    does, else (for each parent in turn, the last one's answer kept) the search above it."""
    if test(start):
        return start
    found = None
    for parent in _parents(g, start):
        if test(parent):
            return parent
        found = _find(g, parent, test)
    return found


def _key_changer(g: TopologyGraph, rep: str) -> str | None:
    """``getKeyChangingParentNode``: the nearest key- or value-changing node upstream of
    repartition ``rep``, if it changes keys."""
    nearest = _find(g, rep, lambda n: n in g.changing)
    key = _find(g, rep, lambda n: "key" in g.changing.get(n, ""))
    return key if nearest is not None and nearest == key else None


def _groups(g: TopologyGraph) -> dict[str, list[str]]:
    """Key-changing node -> the optimizable repartitions after it, in the order added
    (``keyChangingOperationsToOptimizableRepartitionNodes``), merge nodes folded in as
    ``maybeUpdateKeyChangingRepartitionNodeMap`` folds them."""
    groups: dict[str, list[str]] = {}
    for name in g.nodes:
        if "key" in g.changing.get(name, ""):
            groups[name] = []
        elif name in g.repartitions and g.repartitions[name][1]:
            changer = _key_changer(g, name)
            if changer is not None:
                groups[changer].append(name)
    folded = {merge: [k for k, reps in groups.items()
                      if all(_below(g, r, merge) for r in reps) and _below(g, merge, k)]
              for merge in g.merge_nodes}
    gone = {k for ks in folded.values() for k in ks}
    merged = {m: [r for k in ks for r in groups[k]] for m, ks in folded.items()}
    return {**{k: v for k, v in groups.items() if k not in gone}, **merged}


def _below(g: TopologyGraph, node: str, above: str) -> bool:
    """Whether a search up from ``node`` finds a child of ``above`` (as Java searches)."""
    return _find(g, node, lambda n: above in _parents(g, n)) is not None


def merge_repartitions(graph: TopologyGraph) -> None:
    """Java's ``mergeRepartitionTopics``: each key-changing node's repartitions become one.

    The one repartition is named after the first one's topic (its nodes
    ``<topic>-filter``, ``-sink``, ``-source``; three indices are taken for them) and
    is added right after the key-changing node; what led from that node to each old
    repartition now hangs below the new one, and what read an old repartition reads
    what fed it."""
    for changer, reps in _groups(graph).items():
        if reps:
            _merge(graph, changer, reps)


_PENDING = "\0merged-repartition"  # the merged repartition while it is linked in


def _merge(g: TopologyGraph, changer: str, reps: list[str]) -> None:
    olds = [g.repartitions[r][0] for r in reps]
    sinks = [s for s in (g.nodes[n.sink] for n in olds) if isinstance(s, SinkSpec)]
    key_serde = next((s.key_serde for s in sinks if s.key_serde is not None), None)
    value_serde = next((s.value_serde for s in sinks if s.value_serde is not None), None)
    names = repartition_names(g, olds[0].topic)  # may be the first one's names again
    keep_nulls = any(g.null_key_filters[o.filter].on for o in olds)
    like = [g.partitions_like[o.topic] for o in olds if o.topic in g.partitions_like]
    origin = g.origins.get(olds[0].filter, "")
    for rep, old in zip(reps, olds, strict=True):
        child = _find(g, rep, lambda n: changer in _parents(g, n))
        if child is None:
            raise TopologyError(
                f"Found a null keyChangingChild node for {rep} (as Kafka Streams 4.1.1: "
                f"merge.repartition.topics cannot merge repartitions that share a step after "
                f"the key change {changer!r}; leave merge.repartition.topics out of "
                "topology.optimization, or repartition() before that step)")
        _set_parents(g, child, [p for p in dict.fromkeys((*_parents(g, child), _PENDING))
                                if p != changer])
        above = _parents(g, rep)
        for node in [n for n in g.nodes.values() if rep in n.parents]:
            _set_parents(g, node.name, [p for p in dict.fromkeys((*node.parents, *above))
                                        if p != rep])
        _drop(g, rep, old, names.topic)
    for node in [n for n in g.nodes.values() if _PENDING in n.parents]:
        g.nodes[node.name] = replace(node, parents=tuple(
            names.source if p == _PENDING else p for p in node.parents))
    g.repartitions[names.source] = (names, True)
    if like:
        g.partitions_like[names.topic] = like[0]
    for made in (names.filter, names.sink, names.source):
        g.origins[made] = origin
    _place(g, changer, _repartition_nodes(g, changer, names, keep_nulls, key_serde,
                                          value_serde))


def _repartition_nodes(g: TopologyGraph, parent: str, names: RepartitionNames,
                       keep_nulls: bool, key_serde: Any, value_serde: Any) -> list[Any]:
    """The merged repartition's filter (keeping null keys if any old one's did), sink and
    source."""
    import functools


    keep = g.null_key_filters[names.filter] = Switch()
    keep.on = keep_nulls
    return [ProcessorSpec(names.filter, functools.partial(ops.NullKeyFilter, keep), (parent,)),
            SinkSpec(names.sink, names.topic, (names.filter,), key_serde, value_serde,
                     internal=True),
            SourceSpec(names.source, (names.topic,), key_serde, value_serde, internal=True)]


def _set_parents(g: TopologyGraph, name: str, parents: list[str]) -> None:
    """Set Java node ``name``'s parents (a repartition's: its null-key filter's)."""
    rep = g.repartitions.get(name)
    target = rep[0].filter if rep else name
    g.nodes[target] = replace(g.nodes[target], parents=tuple(parents))


def _drop(g: TopologyGraph, rep: str, old: RepartitionNames, kept: str) -> None:
    """Remove a merged-away repartition: its nodes, its switch, what its topic had (unless
    it is the ``kept`` topic, the merged one's)."""
    for node in (old.filter, old.sink, old.source):
        del g.nodes[node]
    del g.repartitions[rep]
    g.null_key_filters.pop(old.filter, None)
    if old.topic != kept:  # (KIP-1111's check still lists it, as Java's: named by the DSL)
        g.partitions_like.pop(old.topic, None)


def _place(g: TopologyGraph, after: str, nodes: list[Any]) -> None:
    """Put ``nodes`` right after node ``after`` in the order added (Java writes the merged
    repartition with the key-changing node's build priority: right after it)."""
    for node in nodes:
        g.nodes.pop(node.name, None)
    order = list(g.nodes.values())
    at = [n.name for n in order].index(after) + 1
    g.nodes.clear()
    g.nodes.update((n.name, n) for n in (*order[:at], *nodes, *order[at:]))
