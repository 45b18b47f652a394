"""A task's ``count()`` over a whole batch of records at once (the batch path).

Where a task's every source feeds only a ``group_by_key().count()`` whose store caches
(Kafka Streams' record cache collapses a key's updates until the next commit anyway), the
task counts a batch of records per key in one pass and writes each key's new count into
the cache once, in the order of each key's last record: exactly the cache entries, store
contents, changelog records, emitted changes, metrics and dropped-record counts that
processing the records one by one gives. Where it could differ it does not run:

- a key or value that would fail to deserialize, an invalid timestamp, a punctuation
  schedule, DEBUG metrics: the batch goes record by record (:func:`batch_refusal`);
- a batch whose new entries could overflow the record cache (an eviction would emit
  intermediate counts): the batch goes record by record.

Whether a task can take the batch path at all is decided once, from its topology
(:func:`topology_refusal`); ``kspark describe`` shows it per sub-topology.

Example:
    >>> counts_in_order([b"a", b"b", b"a", None], [5, 7, 6, 9])
    ({b'b': (1, 7), b'a': (2, 6)}, 1)
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any, cast

from kspark._engine.aggregates.stream import StreamAggregateProcessor, count_initializer, count_one
from kspark._engine.metrics.stats import record_size
from kspark._engine.nodes import ProcessorNode, RawRecord, SinkNode, SourceNode
from kspark._engine.tables.processors import TableToStreamProcessor
from kspark._engine.state.layers import ENTRY_OVERHEAD, CachingLayer
from kspark.errors import SinkWriteError
from kspark.serde import _builtin as builtin

__all__ = ["BatchCount", "DirectEmit", "direct_sink", "topology_refusal", "is_count_supplier",
           "batch_refusal", "counts_in_order", "plan_batch_count", "BATCH_KEY"]

log = logging.getLogger("kspark")

BATCH_KEY = "batch.aggregation.enabled"
# key serdes whose deserialize-then-serialize gives back the record's bytes (valid ones)
_IDENTITY_KEYS = (builtin.StringSerde, builtin.LongSerde, builtin.IntegerSerde,
                  builtin.ShortSerde, builtin.ByteArraySerde)
_COUNT_VALUE_BYTES = 16  # a cached count: 8-byte timestamp + 8-byte long


def count_node(sources: Sequence[SourceNode]) -> ProcessorNode | None:
    """The one ``count()`` node every source of ``sources`` feeds, and nothing else; None
    if the sources feed anything else."""
    targets = {id(c): c for s in sources for c in s.children}
    if not sources or any(len(s.children) != 1 for s in sources) or len(targets) != 1:
        return None
    (node,) = targets.values()
    p = node.processor
    if type(p) is not StreamAggregateProcessor or p.aggregator is not count_one \
            or p.initializer is not count_initializer:
        return None
    return node


def _key_family(serde: Any) -> type | None:
    for family in _IDENTITY_KEYS:
        if isinstance(serde, family):
            return family
    return None


def topology_refusal(count: bool, caching: bool, versioned: bool, value_serde: Any,
                     key_serde: Any, source_key_serdes: Sequence[Any]) -> str | None:
    """Why a task cannot count in batches (None: it can), from what its topology says:
    ``count``: its sources feed one ``count()`` and nothing else; ``caching``, ``versioned``,
    ``value_serde``, ``key_serde``: the count's store's; ``source_key_serdes``: its sources'.

    >>> from kspark import Serdes
    >>> S, L = Serdes.String(), Serdes.Long()
    >>> topology_refusal(True, True, False, L, S, [S]) is None
    True
    >>> topology_refusal(True, False, False, L, S, [S])
    "the count's store does not cache (with_caching_disabled or statestore.cache.max.bytes=0)"
    """
    if not count:
        return "its sources feed more than one group_by_key().count()"
    if not caching:
        return "the count's store does not cache (with_caching_disabled or " \
               "statestore.cache.max.bytes=0)"
    if versioned:
        return "the count's store is versioned"
    if type(value_serde) is not builtin.LongSerde:
        return "the count's store does not hold longs"
    family = _key_family(key_serde)
    if family is None or any(_key_family(s) is not family for s in source_key_serdes):
        return "the count's key serde is not the source's String, Long, Integer, Short or Bytes"
    return None


def is_count_supplier(supplier: Any) -> bool:
    """Whether a processor supplier makes the DSL's ``count()`` processor (without making it).

    >>> import functools
    >>> is_count_supplier(functools.partial(StreamAggregateProcessor, "s", count_initializer,
    ...                                     count_one))
    True
    """
    return isinstance(supplier, functools.partial) and supplier.func is StreamAggregateProcessor \
        and supplier.args[1:3] == (count_initializer, count_one)


def plan_batch_count(task: Any) -> BatchCount | None:
    """The task's batch count, or None (logged at debug with the reason) where its topology
    or config refuses it."""
    if not task.config.get(BATCH_KEY, True):
        return None
    sources = list(dict.fromkeys(task.sources.values()))
    node = count_node(sources)
    store = None if node is None else task.stores.get(
        cast(StreamAggregateProcessor, node.processor).store_name)
    why = topology_refusal(
        store is not None, store is not None and bool(store.caching_enabled)
        and type(store.inner) is CachingLayer,
        getattr(store, "history_retention_ms", None) is not None,
        getattr(getattr(store, "value_serde", None), "inner", None),
        getattr(store, "key_serde", None), [s.key_serde for s in sources])
    if why is not None or node is None:
        log.debug("task %s counts record by record: %s", task.task_id, why)
        return None
    count = BatchCount(node, store)
    sink = direct_sink(node, store)
    if sink is not None and not task.stats.debug:
        count.cache.on_flush = DirectEmit(task, node, sink).flushed
    return count


def direct_sink(node: ProcessorNode, store: Any) -> SinkNode | None:
    """The sink a count's changes go to through ``to_stream()`` alone, where a flushed
    entry's bytes are the sink's record (the count's key bytes, its 8-byte long); else None."""
    (to_stream,) = node.children if len(node.children) == 1 else (None,)
    if to_stream is None or type(to_stream.processor) is not TableToStreamProcessor \
            or len(to_stream.children) != 1:
        return None
    (sink,) = to_stream.children
    if type(sink) is not SinkNode or not isinstance(sink.topic, str) \
            or sink.partitioner is not None or type(sink.value_serde) is not builtin.LongSerde \
            or _key_family(sink.key_serde) is not _key_family(store.key_serde):
        return None
    return sink


def batch_refusal(task: Any) -> str | None:
    """Why this task must process its next batch record by record now (None: it need not)."""
    if task.stats.debug:
        return "DEBUG metrics are recorded per node and record"
    if task._stream_punctuations.schedules or task._wall_punctuations.schedules:  # noqa: SLF001
        return "a punctuation is scheduled"
    if task._delayed_stores or task._async:  # noqa: SLF001
        return "records may be delayed or processed asynchronously"
    return None


def counts_in_order(keys: Sequence[bytes | None], stamps: Sequence[int]
                    ) -> tuple[dict[bytes, tuple[int, int]], int]:
    """Per key, (records, largest timestamp), in the order of each key's last record; and
    how many keys were None (records the count drops)."""
    seen: dict[bytes, list[int]] = {}
    dropped = 0
    for k, ts in zip(keys, stamps, strict=True):
        if k is None:
            dropped += 1
            continue
        s = seen.pop(k, None)  # re-inserted: the key moves to the end (its last record)
        if s is None:
            seen[k] = [1, ts]
        else:
            s[0] += 1
            if ts > s[1]:
                s[1] = ts
            seen[k] = s
    return {k: (s[0], s[1]) for k, s in seen.items()}, dropped


class BatchCount:
    """A task's count node and store, counted a batch at a time (:meth:`run`)."""

    def __init__(self, node: ProcessorNode, store: Any):
        self.node = node
        self.store = store
        self.cache: CachingLayer = store.inner
        self.key_family = _key_family(store.key_serde)

    def run(self, task: Any, raws: list[RawRecord]) -> bool:
        """Count ``raws`` (in processing order) as record-by-record processing would; False
        (nothing done) where this batch must go record by record."""
        if not raws or batch_refusal(task) is not None:
            return False
        keys = self._keys(task, raws)
        if keys is None:
            return False
        per_key, _ = counts_in_order(keys, [r.timestamp for r in raws])
        if self._could_evict(per_key):
            return False
        self._write(per_key)
        self._account(task, raws, keys)
        return True

    def _keys(self, task: Any, raws: list[RawRecord]) -> list[bytes | None] | None:
        """Each record's key as the count sees it (None: dropped for a null key or value);
        None if any record would not deserialize or has an invalid timestamp."""
        out: list[bytes | None] = []
        sources = task.sources
        check_key = _key_check(self.key_family)
        for r in raws:
            source = sources.get(r.topic)
            if r.timestamp < 0 or source is None:
                return None
            k, v = r.key, r.value
            if k is not None and check_key is not None and not check_key(k):
                return None
            if v is not None and not _is_bytes_serde(source.value_serde):
                try:  # a count reads only whether the value is null
                    v = source.value_serde.deserialize(r.topic, v)
                except Exception:  # noqa: BLE001 - record by record, the handler decides
                    return None
            out.append(None if v is None else k)
        return out

    def _could_evict(self, per_key: dict[bytes, tuple[int, int]]) -> bool:
        budget = self.cache.budget
        grow = sum(len(k) for k in per_key) + len(per_key) * (ENTRY_OVERHEAD + _COUNT_VALUE_BYTES)
        return budget.size + grow > budget.max_bytes

    def _write(self, per_key: dict[bytes, tuple[int, int]]) -> None:
        """Each key's new count into the cache, once, in the order of its last record (the
        reads first, as the per-record path's get-then-put leaves the same LRU order)."""
        cache, keys = self.cache, list(per_key)
        many = getattr(cache, "get_many", None)  # one multi-get for the cache's misses
        olds = many(keys) if many is not None else [cache.get(k) for k in keys]
        deleted_at = getattr(self.node.processor, "_deleted_at", {})
        put = cache.put
        for k, old in zip(keys, olds, strict=True):
            n, ts = per_key[k]
            if old is not None:
                n += int.from_bytes(old[8:16], "big", signed=True)
                ts = max(ts, int.from_bytes(old[:8], "big", signed=True))
            deleted_at.pop(k, None)
            put(k, ts.to_bytes(8, "big", signed=True) + n.to_bytes(8, "big", signed=True))

    def _account(self, task: Any, raws: list[RawRecord], keys: list[bytes | None]) -> None:
        """The task's times, counts and INFO metrics, as after processing ``raws`` one by
        one."""
        now = task.clock()
        stats = task.stats
        by_topic: dict[str, list[int]] = {}  # count, bytes, max, min; sum, max, min ts
        for r in raws:
            ts, topic = r.timestamp, r.topic
            size = (record_size(r.key, r.value, topic, r.headers) if r.headers else
                    20 + len(r.key or b"") + len(r.value or b"") + len(topic.encode()))
            t = by_topic.get(topic)
            if t is None:
                by_topic[topic] = [1, size, size, size, ts, ts, ts]
            else:
                t[0] += 1
                t[1] += size
                t[4] += ts
                if size > t[2]:
                    t[2] = size
                if size < t[3]:
                    t[3] = size
                if ts > t[5]:
                    t[5] = ts
                if ts < t[6]:
                    t[6] = ts
            tp = (topic, r.partition)
            if ts > task.partition_time.get(tp, -1):
                task.partition_time[tp] = ts
        for topic, (n, size, big, small, total, high, low) in by_topic.items():
            source = task.sources[topic]
            stats.record_many("bytes-consumed", n, size, big, small, f"{source.name}|{topic}")
            e2e = (n, n * now - total, now - low, now - high)
            stats.record_many("e2e", *e2e, source.name)
            if self.node.terminal:
                stats.record_many("e2e", *e2e, self.node.name)
            task.stream_time = max(task.stream_time, high)
        for r, k in zip(raws, keys, strict=True):
            if k is None:
                task.record_dropped(self.node, "an aggregation skips a record with a null "
                                    f"{'key' if r.key is None else 'value'}")
        task.current_timestamp = raws[-1].timestamp
        task.processed += len(raws)


def _key_check(family: type | None) -> Any:
    """A check that a non-null key deserializes (None: every key does)."""
    if family is builtin.ByteArraySerde:
        return None
    if family is builtin.StringSerde:
        return _utf8
    sizes: dict[Any, int] = {builtin.LongSerde: 8, builtin.IntegerSerde: 4, builtin.ShortSerde: 2}
    size = sizes[family]
    return lambda k: len(k) == size


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _is_bytes_serde(serde: Any) -> bool:
    return isinstance(serde, builtin.ByteArraySerde)




class DirectEmit:
    """A count's cache flush straight to its sink (``count().to_stream().to(topic)``): each
    flushed entry is sent as the sink would send the change ``to_stream()`` forwards, with
    the same metrics, without building the records in between. A send the collector refuses
    goes the whole way instead (the production handler decides there)."""

    def __init__(self, task: Any, node: ProcessorNode, sink: SinkNode):
        self.task, self.sink = task, sink
        count = cast(StreamAggregateProcessor, node.processor)
        self.slow = count._flushed  # noqa: SLF001 - the processor's own flush path
        self.deleted_at = count._deleted_at  # noqa: SLF001
        self.topic = cast(str, sink.topic)  # direct_sink: a topic name
        self.size = 20 + len(self.topic.encode())  # record_size without key, value, headers
        self.where = f"{sink.name}|{self.topic}"

    def flushed(self, key: bytes, new: bytes | None, old: bytes | None) -> None:
        if new is None:
            self.slow(key, new, old)
            return
        task = self.task
        self.deleted_at.pop(key, None)
        ts = int.from_bytes(new[:8], "big", signed=True)
        value = new[8:]
        try:
            task.collector.send(self.topic, key, value, ts, (), None)
        except SinkWriteError:
            self.slow(key, new, old)
            return
        stats = task.stats
        stats.record("bytes-produced", self.size + len(key) + len(value), self.where)
        stats.record("e2e", task.clock() - ts, self.sink.name)
