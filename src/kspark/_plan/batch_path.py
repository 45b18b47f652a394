"""Whether a sub-topology's ``count()`` runs a batch of records at a time (the batch path
of ``_engine/aggregates/batch_count.py``), decided from the topology alone for ``kspark
describe`` by the same rule the task applies.

Example:
    >>> from kspark import StreamsBuilder, Serdes
    >>> from kspark.config import StreamsConfig
    >>> b = StreamsBuilder()
    >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
    ...  .group_by_key().count().to_stream().to("out", value_serde=Serdes.Long())
    >>> g = b.build()._graph
    >>> given = {"application.id": "a", "bootstrap.servers": "kafka:9092"}
    >>> store = next(iter(g.stores))
    >>> batch_path_note(g, StreamsConfig(given), set(g.nodes), store)
    'counted a batch of records at a time'
    >>> uncached = StreamsConfig({**given, "statestore.cache.max.bytes": 0})
    >>> batch_path_note(g, uncached, set(g.nodes), store)  # doctest: +ELLIPSIS
    "counted record by record: the count's store does not cache ..."
"""

from __future__ import annotations

from typing import Any

from kspark._engine.aggregates.batch_count import BATCH_KEY, is_count_supplier, topology_refusal
from kspark._graph.graph import ProcessorSpec, SourceSpec, TopologyGraph
from kspark._graph.instantiate import resolve_serde, resolve_store
from kspark.errors import TopologyError
from kspark.state.stores import VersionedKeyValueStoreBuilder

__all__ = ["batch_path_note"]


def batch_path_note(graph: TopologyGraph, config: Any, nodes: set[str],
                    store: str) -> str | None:
    """How the tasks of the sub-topology of ``nodes`` update ``store`` if it is a
    ``count()``'s store fed straight by the sources: a batch at a time, or record by record
    and why; None for any other store."""
    builder, procs = graph.stores[store]
    counts = [p for p in procs if p in nodes and isinstance(graph.nodes[p], ProcessorSpec)
              and is_count_supplier(graph.nodes[p].supplier)]  # type: ignore[union-attr]
    if len(counts) != 1:
        return None
    sources = [s for s in graph.nodes.values() if isinstance(s, SourceSpec) and s.name in nodes]
    fed = {c.name for s in sources for c in graph.children(s.name)}
    if not sources or any(len(graph.children(s.name)) != 1 for s in sources):
        fed = set()
    if fed != set(counts):
        return None  # not fed by the sources alone: not a count of the input's keys
    if not config.get(BATCH_KEY, True):
        return f"counted record by record: {BATCH_KEY}=false"
    try:
        resolved = resolve_store(builder, config)
        source_keys = [resolve_serde(s.key_serde, config, "key", s.name) for s in sources]
    except TopologyError:  # a serde missing: the task says so when it is built, as before
        return None
    vs = resolved.value_serde
    why = topology_refusal(
        True, bool(resolved.caching_enabled),
        isinstance(builder, VersionedKeyValueStoreBuilder), getattr(vs, "inner", vs),
        resolved.key_serde, source_keys)
    return "counted a batch of records at a time" if why is None else \
        f"counted record by record: {why}"
