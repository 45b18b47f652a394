"""Turn a TopologyGraph into engine nodes and a StreamTask."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from kspark._engine.collector import RecordCollector
from kspark._engine.nodes import ProcessorNode, SinkNode, SourceNode
from kspark._engine.task import StreamTask
from kspark._graph.graph import ProcessorSpec, SinkSpec, SourceSpec, TopologyGraph, topic_name
from kspark.errors import TopologyError
from kspark.serde import Serde, Serdes
from kspark._engine.state.timestamped import ValueAndTimestampSerde
from kspark._engine.global_task import GlobalFeed, GlobalStateTask

__all__ = ["build_task", "build_global_task", "resolve_serde", "resolve_store"]


# How each DSL call takes serdes, for the error of a call that needs one and has none.
_SERDE_HINTS = {
    **dict.fromkeys(("stream", "table", "global_table"), "{kind}_serde= or Consumed.with_(...)"),
    "to": "{kind}_serde= or Produced.with_(...)",
    "repartition": "{kind}_serde= or Repartitioned.with_(...)",
    **dict.fromkeys(("group_by", "group_by_key"), "{kind}_serde= or Grouped.with_(...)"),
    **dict.fromkeys(("join", "left_join", "outer_join"),
                    "Joined.with_(...) for a stream-table join, StreamJoined.with_(...) for a "
                    "stream-stream join, Materialized for a table-table join"),
    **dict.fromkeys(("count", "reduce", "aggregate", "to_table", "filter", "map_values"),
                    "Materialized.with_(key_serde, value_serde)"),
}


def resolve_serde(serde: Any, config: Mapping[str, Any], kind: str, node: str,
                  origin: str = "") -> Serde:
    """The serde to use: the node's own, else ``default.<kind>.serde``, else a clear error
    naming the user's call that needs it (``origin``, as ``TopologyGraph.origin``). A serde
    with ``configure(config, is_key)`` (a Schema Registry serde) is given the application
    config, as Java's ``Serde.configure``: what it returns is used (a configured copy; the
    serde itself, shared by every task, is never changed)."""
    if serde is None:
        serde = config.get(f"default.{kind}.serde")
    if serde is None:
        if origin:
            how = _SERDE_HINTS.get(origin.split("(", 1)[0], f"{kind}_serde=")
            raise TopologyError(
                f"{origin} needs a {kind} serde (for its node {node!r}): give that call one "
                f"({how.format(kind=kind)}), or set the config key 'default.{kind}.serde'")
        raise TopologyError(
            f"node {node!r} has no {kind} serde: pass {kind}_serde= to it or set "
            f"the config key 'default.{kind}.serde'"
        )
    if hasattr(serde, "with_defaults"):  # a serde of several serdes, some left to defaults
        return serde.with_defaults(lambda s: resolve_serde(s, config, kind, node, origin))
    inner = getattr(serde, "inner", False)
    if inner is None or hasattr(inner, "configure"):  # a wrapper (Change, Windowed...)
        import copy

        resolved = copy.copy(serde)
        resolved.inner = resolve_serde(inner, config, kind, node, origin)
        return resolved
    serde = Serdes.by_name(serde) if isinstance(serde, (str, type)) else serde
    configure = getattr(serde, "configure", None)
    return configure(config, kind == "key") if callable(configure) else serde


def resolve_store(builder: Any, config: Mapping[str, Any], origin: str = "") -> Any:
    """The builder with default serdes and the default caching (statestore.cache.max.bytes)
    filled in."""
    from dataclasses import replace


    ks = resolve_serde(builder.key_serde, config, "key", f"store {builder.name}", origin)
    vs = builder.value_serde
    if isinstance(vs, ValueAndTimestampSerde):
        vs = ValueAndTimestampSerde(
            resolve_serde(vs.inner, config, "value", f"store {builder.name}", origin))
    else:
        vs = resolve_serde(vs, config, "value", f"store {builder.name}", origin)
    caching, cache_bytes = builder.caching_enabled, config.get("statestore.cache.max.bytes")
    if caching is None:
        caching = (cache_bytes or 0) > 0
    elif cache_bytes == 0:  # a zero-size cache forwards every update, even where enabled
        caching = False
    return replace(builder, key_serde=ks, value_serde=vs, caching_enabled=caching)


def build_task(graph: TopologyGraph, task_id: str, config: Mapping[str, Any],
               collector: RecordCollector, clock: Callable[[], int] | None = None,
               only: Iterable[str] | None = None, batch_buffer: bool = False,
               restore: Callable[[StreamTask], Any] | None = None,
               global_stores: Mapping[str, Any] | None = None,
               async_runtime: Any = None, durable_commits: bool = True) -> StreamTask:
    """A fresh StreamTask running ``graph``, or only the nodes named in ``only`` (a sub-topology).

    Processors come from their suppliers, so each task has its own. ``global_stores``: the
    read-only views of the global stores (see ``GlobalStateTask.read_only``).
    ``durable_commits``: whether a commit writes persistent stores to disk (see StreamTask).
    """
    nodes: dict[str, ProcessorNode] = {}
    app_id = config["application.id"]
    wanted = set(only) if only is not None else None
    for spec in graph.nodes.values():
        if wanted is not None and spec.name not in wanted:
            continue
        origin = graph.origin(spec.name)
        if isinstance(spec, SourceSpec):
            node: ProcessorNode = SourceNode(
                spec.name, [topic_name(t, spec.internal, app_id) for t in spec.topics],
                resolve_serde(spec.key_serde, config, "key", spec.name, origin),
                resolve_serde(spec.value_serde, config, "value", spec.name, origin),
                spec.timestamp_extractor)
        elif isinstance(spec, ProcessorSpec):
            processor = spec.supplier()
            if processor is None:
                raise TopologyError(f"the processor supplier of {spec.name!r} returned None")
            node = ProcessorNode(spec.name, processor)
        elif isinstance(spec, SinkSpec):
            # an internal sink writes to a named repartition topic, never through an extractor
            topic = (topic_name(cast(str, spec.topic), True, app_id) if spec.internal
                     else spec.topic)
            node = SinkNode(spec.name, topic,
                            resolve_serde(spec.key_serde, config, "key", spec.name, origin),
                            resolve_serde(spec.value_serde, config, "value", spec.name, origin),
                            spec.partitioner)
        else:  # pragma: no cover - the graph only holds the three kinds
            raise TopologyError(f"unknown node kind {spec!r}")
        for parent in spec.parents:
            nodes[parent].children.append(node)
        nodes[spec.name] = node
    kwargs = {"clock": clock} if clock is not None else {}
    sources = {t: source for s in graph.sources()
               if isinstance(source := nodes.get(s.name), SourceNode)
               for t in (topic_name(x, s.internal, app_id) for x in s.topics)}
    stores = {name: resolve_store(builder, config, graph.origin(name))
              for name, (builder, procs) in graph.stores.items() if procs & set(nodes)}
    for name, node in nodes.items():
        node.store_names = set(graph.stores_of(name))
    return StreamTask(task_id, sources, nodes.values(), config, collector, store_builders=stores,
                      batch_buffer=batch_buffer, restore=restore, global_stores=global_stores,
                      async_runtime=async_runtime, durable_commits=durable_commits, **kwargs)


def build_global_task(graph: TopologyGraph, config: Mapping[str, Any],
                      directory: Any = None) -> Any:
    """The GlobalStateTask keeping ``graph``'s global stores (uncached: nothing to emit)."""
    uncached = {**config, "statestore.cache.max.bytes": 0}
    builders = {name: resolve_store(g.builder, uncached) for name, g in graph.global_stores.items()}
    feeds = {g.source.topics[0]: GlobalFeed(
        name, resolve_serde(g.source.key_serde, config, "key", g.source.name),
        resolve_serde(g.source.value_serde, config, "value", g.source.name),
        g.source.timestamp_extractor, g.processor.name, g.processor.supplier)
        for name, g in graph.global_stores.items()}
    return GlobalStateTask(config, builders, feeds, directory)
