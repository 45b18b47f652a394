"""What the batch paths of ``count()`` and ``windowed_by(...).count()`` share: checking a
batch before anything is done, counting per store entry in the order of each entry's last
record, the record-cache bound, and the task's times and metrics afterwards.

A batch path (:class:`BatchBase`) runs a whole batch of a task's records at once and leaves
exactly what processing them one by one leaves; where it could differ it does nothing and
the batch goes record by record (:func:`batch_refusal`, a record that would not
deserialize, an invalid timestamp, a batch that could overflow the record cache).

Example:
    >>> counts_in_order([b"a", b"b", b"a", None], [5, 7, 6, 9])
    {b'b': [1, 7], b'a': [2, 6]}
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from kspark._engine.metrics.stats import record_size
from kspark._engine.nodes import ProcessorNode, RawRecord
from kspark._engine.state.layers import ENTRY_OVERHEAD, CachingLayer
from kspark.serde import _builtin as builtin

__all__ = ["BatchBase", "batch_refusal", "counts_in_order", "key_family", "COUNT_VALUE_BYTES",
           "STORED_COUNT"]

# key serdes whose deserialize-then-serialize gives back the record's bytes (valid ones)
_IDENTITY_KEYS = (builtin.StringSerde, builtin.LongSerde, builtin.IntegerSerde,
                  builtin.ShortSerde, builtin.ByteArraySerde)
COUNT_VALUE_BYTES = 16  # a stored count: 8-byte timestamp + 8-byte long
STORED_COUNT = struct.Struct(">qq")  # (timestamp, count) as a timestamped store holds a long


def key_family(serde: Any) -> type | None:
    """The identity serde family of ``serde`` (None: not one whose bytes pass unchanged).

    >>> from kspark import Serdes
    >>> key_family(Serdes.Bytes()).__name__, key_family(Serdes.Json())
    ('ByteArraySerde', None)
    """
    for family in _IDENTITY_KEYS:
        if isinstance(serde, family):
            return family
    return None


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
                    ) -> dict[bytes, list[int]]:
    """Per key, [records, largest timestamp], in the order of each key's last record (the
    order a record cache's dirty entries keep); None keys are left out."""
    seen: dict[bytes, list[int]] = {}
    for k, ts in zip(keys, stamps, strict=True):
        if k is None:
            continue
        s = seen.pop(k, None)  # re-inserted: the key moves to the end (its last record)
        if s is None:
            seen[k] = [1, ts]
        else:
            s[0] += 1
            if ts > s[1]:
                s[1] = ts
            seen[k] = s
    return seen


class BatchBase(ABC):
    """A task's counting node and its store's record cache, run a batch at a time.

    Subclasses say which records the node drops (:meth:`dropped`), fold the batch into
    store entries (:meth:`entries`) and write them (:meth:`write`)."""

    drops_null_values = True  # a key-value count skips null values; a windowed one counts them

    def __init__(self, node: ProcessorNode, store: Any):
        self.node = node
        self.store = store
        self.cache: CachingLayer = store.inner
        self._check_key = _key_check(key_family(store.key_serde))

    def run(self, task: Any, raws: list[RawRecord]) -> bool:
        """Process ``raws`` (in processing order) as record-by-record processing would;
        False (nothing done) where this batch must go record by record."""
        if not raws or batch_refusal(task) is not None:
            return False
        keys = self._keys(task, raws)
        if keys is None:
            return False
        entries = self.entries(raws, keys)
        if self._could_evict(entries):
            return False
        self.write(entries)
        self._account(task, raws)
        self.dropped(task, raws, keys)
        return True

    @abstractmethod
    def entries(self, raws: list[RawRecord], keys: list[bytes | None]) -> dict[bytes, list[int]]:
        """The store entries the batch updates: their bytes -> [records, largest timestamp],
        in the order of each entry's last update."""

    @abstractmethod
    def write(self, entries: dict[bytes, list[int]]) -> None:
        """Each entry's new count into the cache, once, in ``entries``' order."""

    @abstractmethod
    def dropped(self, task: Any, raws: list[RawRecord], keys: list[bytes | None]) -> None:
        """Count and log the records (or windows) the node drops, as it would."""

    def _keys(self, task: Any, raws: list[RawRecord]) -> list[bytes | None] | None:
        """Each record's key as the count sees it (None: a record it drops for a null key,
        or value); None if any record would not deserialize or has an invalid timestamp."""
        out: list[bytes | None] = []
        sources, check_key = task.sources, self._check_key
        nulls = self.drops_null_values
        for r in raws:
            source = sources.get(r.topic)
            if r.timestamp < 0 or source is None:
                return None
            k, v = r.key, r.value
            if k is not None and check_key is not None and not check_key(k):
                return None
            if v is not None and not isinstance(source.value_serde, builtin.ByteArraySerde):
                try:  # a count reads only whether the value is null
                    v = source.value_serde.deserialize(r.topic, v)
                except Exception:  # noqa: BLE001 - record by record, the handler decides
                    return None
            out.append(None if v is None and nulls else k)
        return out

    def _could_evict(self, entries: dict[bytes, list[int]]) -> bool:
        """Whether writing ``entries`` could take the cache over budget (an eviction would
        emit intermediate counts): a bound, every entry taken as new."""
        budget = self.cache.budget
        grow = sum(len(k) for k in entries) + len(entries) * (ENTRY_OVERHEAD + COUNT_VALUE_BYTES)
        return budget.size + grow > budget.max_bytes

    def _account(self, task: Any, raws: list[RawRecord]) -> None:
        """The task's times, counts and INFO metrics, as after processing ``raws`` one by
        one (the clock read once for the batch)."""
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
