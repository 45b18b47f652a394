"""Which metrics a task has, declared when it opens (:func:`declare_metrics`), as Java
Kafka Streams registers them: the task's own; process counts for source nodes; end-to-end
latency for source nodes and nodes without children; suppression emits for suppress nodes;
final emits for windowed aggregations; per-topic throughput for sources and sinks; the
cache's size for a task with a caching store; per store, its state-store metrics (and its
record cache's hit ratio, if it caches).

Example:
    >>> from kspark._engine.collector import MemoryCollector
    >>> from kspark._engine.task import StreamTask
    >>> task = StreamTask("0_0", {}, [], {"application.id": "app", "state.dir": "/tmp"},
    ...                   MemoryCollector())
    >>> sorted(task.stats.peek())
    ['=shape-task|0_0|']
"""

from __future__ import annotations

from typing import Any

from kspark._engine.nodes import SinkNode, SourceNode
from kspark._engine.state.layers import CachingLayer
from kspark._engine.state.metered import store_scope

__all__ = ["declare_metrics", "metered_stores"]


def _kinds(node: Any) -> list[tuple[str, str]]:
    """The node's metrics: by its type, and the ``metric_kinds`` its processor declares
    (``suppress``, ``window-agg``)."""
    out: list[tuple[str, str]] = []
    if isinstance(node, SourceNode):
        out += [("source", node.name), ("e2e", node.name)]
        out += [("consumed", f"{node.name}|{t}") for t in node.topics]
    elif not node.children:
        out.append(("e2e", node.name))
    if isinstance(node, SinkNode) and isinstance(node.topic, str):
        out.append(("produced", f"{node.name}|{node.topic}"))
    out += [(kind, node.name) for kind in _declared(node.processor)]
    return out


def _declared(processor: Any) -> tuple[str, ...]:
    return getattr(processor, "metric_kinds", ())


def declare_metrics(task: Any) -> None:
    """Declare ``task``'s metrics in its :class:`~kspark._engine.metrics.stats.TaskStats`."""
    stats = task.stats
    stats.shape("task")
    if any(_cached(s) for n, s in task.stores.items() if n not in _unused(task)):
        stats.shape("cache")
    for node in task.nodes:
        for kind, where in _kinds(node):
            stats.shape(kind, where)
    for name, scope in metered_stores(task).items():
        stats.shape("store", f"{name}|{scope}")
        if _cached(task.stores[name]):
            stats.shape("record-cache", name)


def metered_stores(task: Any) -> dict[str, str]:
    """The task's stores that Java meters, each with its store type (``rocksdb``,
    ``in-memory-window``, ...): not a source table's store that nothing materializes, not
    a suppression buffer (Java's has buffer metrics of its own), not a kspark-only store."""
    skip = _unused(task) | {n.processor.store_name for n in task.nodes
                            if "suppress" in _declared(n.processor)}
    out = {}
    for name, store in task.stores.items():
        scope = None if name in skip else store_scope(store)
        if scope is not None:
            out[name] = scope
    return out


def _unused(task: Any) -> set[str | None]:
    """The stores of source tables that nothing materializes (Java has no store there)."""
    return {getattr(n.processor, "unused_store", None) for n in task.nodes} - {None}


def _cached(store: Any) -> bool:
    """Whether a store has a caching layer (Kafka Streams' record cache)."""
    layer = getattr(store, "layer", None)
    return callable(layer) and layer(CachingLayer) is not None
