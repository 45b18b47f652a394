"""A task's ``count()`` or ``windowed_by(TimeWindows...).count()`` over a whole batch of
records at once (the batch path).

Where a task's every source feeds only such a count, and its store caches (Kafka Streams'
record cache collapses a key's updates until the next commit anyway), the task counts a
batch of records per store entry in one pass and writes each entry's new count into the
cache once, in the order of each entry's last record: exactly the cache entries, store
contents, changelog records, emitted changes, metrics and dropped-record counts that
processing the records one by one gives (``batch_base.py``; windows: ``batch_windowed.py``).
A ``count().to_stream().to(topic)`` also sends each flushed count straight to the topic
(``batch_emit.py``). Where a batch could come out differently, it goes record by record.

Whether a task can take the batch path at all is decided once, from its topology
(:func:`topology_refusal`); ``kspark describe`` shows it per store (``_plan/batch_path.py``).

Example:
    >>> from kspark import Serdes
    >>> S, L = Serdes.String(), Serdes.Long()
    >>> topology_refusal(True, True, False, L, S, [S]) is None
    True
    >>> topology_refusal(True, True, False, Serdes.Integer(), S, [S])
    "the count's store does not hold longs"
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

from kspark._engine.aggregates.batch_base import (STORED_COUNT, BatchBase, counts_in_order,
                                                  key_family)
from kspark._engine.aggregates.batch_emit import DirectEmit, direct_sink
from kspark._engine.aggregates.batch_windowed import WindowedBatchCount
from kspark._engine.aggregates.stream import StreamAggregateProcessor, count_initializer, count_one
from kspark._engine.aggregates.windowed import WindowAggregateProcessor
from kspark._engine.aggregates.windows import TimeWindows
from kspark._engine.nodes import ProcessorNode, RawRecord, SourceNode
from kspark._engine.state.layer_base import get_many
from kspark._engine.state.layers import CachingLayer
from kspark.serde import _builtin as builtin

__all__ = ["BatchCount", "topology_refusal", "is_count_supplier", "plan_batch_count",
           "count_node", "BATCH_KEY"]

log = logging.getLogger("kspark")

BATCH_KEY = "batch.aggregation.enabled"
_MISSING = object()


def _is_count(processor: Any) -> bool:
    """A DSL ``count()`` (key-value, or in time windows updating through the cache)."""
    if type(processor) is StreamAggregateProcessor:
        return processor.aggregator is count_one and processor.initializer is count_initializer
    return (type(processor) is WindowAggregateProcessor and processor.aggregator is count_one
            and processor.initializer is count_initializer and not processor.final
            and type(processor.windows) is TimeWindows)


def count_node(sources: Sequence[SourceNode]) -> ProcessorNode | None:
    """The one count node every source of ``sources`` feeds, and nothing else; None if the
    sources feed anything else."""
    targets = {id(c): c for s in sources for c in s.children}
    if not sources or any(len(s.children) != 1 for s in sources) or len(targets) != 1:
        return None
    (node,) = targets.values()
    return node if _is_count(node.processor) else None


def topology_refusal(count: bool, caching: bool, versioned: bool, value_serde: Any,
                     key_serde: Any, source_key_serdes: Sequence[Any]) -> str | None:
    """Why a task cannot count in batches (None: it can), from what its topology says:
    ``count``: its sources feed one count and nothing else; ``caching``, ``versioned``,
    ``value_serde``, ``key_serde``: the count's store's (a window store's key serde is
    its keys'); ``source_key_serdes``: its sources'."""
    if not count:
        return "its sources feed more than one group_by_key().count()"
    if not caching:
        return "the count's store does not cache (with_caching_disabled or " \
               "statestore.cache.max.bytes=0)"
    if versioned:
        return "the count's store is versioned"
    if type(value_serde) is not builtin.LongSerde:
        return "the count's store does not hold longs"
    family = key_family(key_serde)
    if family is None or any(key_family(s) is not family for s in source_key_serdes):
        return "the count's key serde is not the source's String, Long, Integer, Short or Bytes"
    return None


def is_count_supplier(supplier: Any) -> bool:
    """Whether a processor supplier makes a count :func:`count_node` takes (without making
    it: ``describe`` asks).

    >>> is_count_supplier(functools.partial(StreamAggregateProcessor, "s", count_initializer,
    ...                                     count_one))
    True
    """
    if not isinstance(supplier, functools.partial):
        return False
    if supplier.func is StreamAggregateProcessor:
        return supplier.args[1:3] == (count_initializer, count_one)
    return (supplier.func is WindowAggregateProcessor and len(supplier.args) == 5
            and type(supplier.args[1]) is TimeWindows and supplier.args[4] is False
            and supplier.args[2:4] == (count_initializer, count_one))


def plan_batch_count(task: Any) -> BatchBase | None:
    """The task's batch count, or None (logged at debug with the reason) where its topology
    or config refuses it."""
    if not task.config.get(BATCH_KEY, True):
        return None
    sources = list(dict.fromkeys(task.sources.values()))
    node = count_node(sources)
    store = None if node is None else task.stores.get(node.processor.store_name)  # type: ignore[attr-defined]
    why = topology_refusal(
        store is not None, store is not None and bool(store.caching_enabled)
        and type(store.inner) is CachingLayer,
        getattr(store, "history_retention_ms", None) is not None,
        getattr(getattr(store, "value_serde", None), "inner", None),
        getattr(store, "key_serde", None), [s.key_serde for s in sources])
    if why is not None or node is None:
        log.debug("task %s counts record by record: %s", task.task_id, why)
        return None
    if type(node.processor) is WindowAggregateProcessor:
        return WindowedBatchCount(node, store)
    assert store is not None  # topology_refusal: the count has its store
    sink = direct_sink(node, store)
    if sink is not None and not task.stats.debug:
        emit = DirectEmit(task, node, sink)
        store.inner.on_flush, store.inner.on_flush_many = emit.flushed, emit.flushed_many
    return BatchCount(node, store)


class BatchCount(BatchBase):
    """A task's key-value ``count()``, a batch at a time."""

    def entries(self, raws: list[RawRecord], keys: list[bytes | None]) -> dict[bytes, list[int]]:
        return counts_in_order(keys, [r.timestamp for r in raws])

    def write(self, entries: dict[bytes, list[int]]) -> None:
        """Each key's new count into the cache, once: the old one as a ``get`` reads it (the
        cache's, else the store's below, all misses in one multi-get), the new ones put in
        order (the same recency order as get-then-put per key: a put makes the key the most
        recent either way; nothing is evicted, ``_could_evict`` made sure)."""
        cache, keys = self.cache, list(entries)
        olds = [cache.peek(k, _MISSING) for k in keys]
        missed = [k for k, old in zip(keys, olds, strict=True) if old is _MISSING]
        below = dict(zip(missed, get_many(cache.inner, missed), strict=True))
        deleted_at = self.node.processor._deleted_at  # type: ignore[attr-defined]  # noqa: SLF001
        items = []
        for k, old in zip(keys, olds, strict=True):
            n, ts = entries[k]
            if old is _MISSING:
                old = below[k]
            if old is not None:
                was, count = STORED_COUNT.unpack(old)
                n += count
                if was > ts:
                    ts = was
            if deleted_at:
                deleted_at.pop(k, None)
            items.append((k, STORED_COUNT.pack(ts, n)))
        cache.put_many(items)

    def dropped(self, task: Any, raws: list[RawRecord], keys: list[bytes | None]) -> None:
        for r, k in zip(raws, keys, strict=True):
            if k is None:
                task.record_dropped(self.node, "an aggregation skips a record with a null "
                                    f"{'key' if r.key is None else 'value'}")
