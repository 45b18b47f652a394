"""The batch path of ``windowed_by(TimeWindows...).count()`` with a caching store.

As ``KStreamWindowAggregate`` (``windowed.py``) record by record: a null key is dropped;
stream time (the processor's ``observed``) rises with each record; each of a record's
windows (earliest first) whose end plus grace is at or before stream time is dropped as
late, each other one counts the record (null values too) and keeps the largest record
timestamp. The batch computes that for every record in order, then reads and writes each
(key, window) entry once, in the order of its last update.

Example:
    >>> from kspark._engine.aggregates.windows import TimeWindows
    >>> w = TimeWindows.of_size_and_grace(10, 0)
    >>> entries, late, observed = window_entries(w, -1, [b"a", b"a", b"a"], [12, 25, 3])
    >>> [(k[:1], int.from_bytes(k[1:], "big"), s) for k, s in entries.items()]
    [(b'a', 10, [1, 12]), (b'a', 20, [1, 25])]
    >>> late, observed
    ([(2, 0, 10, 25)], 25)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from kspark._engine.aggregates.batch_base import STORED_COUNT, BatchBase
from kspark._engine.aggregates.windowed import WindowAggregateProcessor
from kspark._engine.nodes import RawRecord
from kspark._engine.state.layer_base import get_many

__all__ = ["WindowedBatchCount", "window_entries"]

_MISSING = object()


def window_entries(windows: Any, observed: int, keys: Sequence[bytes | None],
                   stamps: Sequence[int]
                   ) -> tuple[dict[bytes, list[int]], list[tuple[int, int, int, int]], int]:
    """Per (key bytes + 8-byte window start) entry, [records, largest timestamp] in the
    order of its last update; the late windows as (record index, start, end, stream time
    then); and stream time after the batch (``observed`` before it)."""
    size, grace = windows.size_ms, windows.grace_ms
    tumbling = windows.advance_ms == size
    seen: dict[bytes, list[int]] = {}
    late: list[tuple[int, int, int, int]] = []
    for i, (k, ts) in enumerate(zip(keys, stamps, strict=True)):
        if k is None:
            continue
        if ts > observed:
            observed = ts
        starts = (ts - ts % size,) if tumbling else [w.start for w in windows.windows_for(ts)]
        for start in starts:
            if start + size + grace <= observed:
                late.append((i, start, start + size, observed))
                continue
            entry = k + start.to_bytes(8, "big", signed=True)
            s = seen.pop(entry, None)
            if s is None:
                seen[entry] = [1, ts]
            else:
                s[0] += 1
                if ts > s[1]:
                    s[1] = ts
                seen[entry] = s
    return seen, late, observed


class WindowedBatchCount(BatchBase):
    """A task's windowed ``count()`` (time windows, updates emitted through the cache), a
    batch at a time."""

    drops_null_values = False  # KStreamWindowAggregate counts a null value

    def __init__(self, node: Any, store: Any):
        super().__init__(node, store)
        self.processor = cast(WindowAggregateProcessor, node.processor)
        self._late: list[tuple[int, int, int, int]] = []
        self._observed = -1

    def entries(self, raws: list[RawRecord], keys: list[bytes | None]) -> dict[bytes, list[int]]:
        p = self.processor
        seen, self._late, self._observed = window_entries(
            p.windows, p.observed, keys, [r.timestamp for r in raws])
        return seen

    def write(self, entries: dict[bytes, list[int]]) -> None:
        """As the processor's fetch then put per window: a cached entry as cached (also
        past retention), else the store's below if its window has not expired."""
        cache, store = self.cache, self.store
        keys = list(entries)
        cached = [cache.peek(k, _MISSING) for k in keys]
        missed = [k for k, v in zip(keys, cached, strict=True) if v is _MISSING]
        below = dict(zip(missed, get_many(cache.inner, missed), strict=True))
        items = []
        for k, old in zip(keys, cached, strict=True):
            n, ts = entries[k]
            if old is _MISSING:
                old = None if store._expired(int.from_bytes(k[-8:], "big", signed=True)) \
                    else below[k]  # noqa: SLF001 - the store's own retention rule
            if old is not None:
                was, count = STORED_COUNT.unpack(old)
                n += count
                if was > ts:
                    ts = was
            items.append((k, STORED_COUNT.pack(ts, n)))
        cache.put_many(items)  # no eviction: _could_evict made sure
        self.processor.observed = self._observed

    def dropped(self, task: Any, raws: list[RawRecord], keys: list[bytes | None]) -> None:
        node, grace = self.node, self.processor.windows.grace_ms
        for k in keys:
            if k is None:
                task.record_dropped(node, "a windowed aggregation skips a record with a null key")
        key_serde = self.store.key_serde
        for i, start, end, observed in self._late:
            self.processor.dropped_late += 1
            key = key_serde.deserialize(self.store.name(), raws[i].key)
            task.record_dropped(
                node, f"late record for window [{start}, {end}) of key {key!r}: stream time "
                f"{observed} is past the window's end plus grace ({grace} ms)")
