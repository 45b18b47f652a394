"""Windowed aggregation of a grouped stream: time windows (tumbling, hopping) and session
windows, each result keyed by its ``Windowed`` key; a record for a window closed past its
grace is dropped. Sliding windows have their own module (``sliding``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.aggregates.emit import FinalResults, windows_starting_between
from kspark._engine.aggregates.windows import Window, Windowed
from kspark._engine.api import Record
from kspark._engine.context import record_dropped
from kspark._engine.progress import KeepsProgress
from kspark._engine.state.timestamped import ValueAndTimestamp
from kspark._engine.tables.change import Change
from kspark._engine.tables.processors import TableStoreProcessor

__all__ = ["WindowAggregateProcessor", "SessionAggregateProcessor"]


class WindowAggregateProcessor(TableStoreProcessor, FinalResults, KeepsProgress):
    """Windowed count / reduce / aggregate; records for windows closed past grace are dropped.
    As KStreamWindowAggregate, only null keys are skipped: a null value reaches the
    aggregator (count counts it; a reduce's first null value leaves the window empty)."""

    progress_fields = ("observed", "last_emit")  # kept in the task's progress across restarts

    def __init__(self, store_name: str, windows: Any, initializer: Callable[[], Any] | None,
                 aggregator: Callable[[Any, Any, Any], Any], final: bool = False):
        super().__init__(store_name)
        self.windows = windows
        self.initializer = initializer
        self.aggregator = aggregator
        self.final = final
        self.observed = -1
        self.dropped_late = 0

    def _final_range(self, close: int) -> tuple[int, int] | None:
        """Window starts to emit, as KStreamWindowAggregate's emitRange bounds."""
        size = self.windows.size_ms
        upper = close - size
        if upper < 0:
            return None
        if self.last_emit == -1:
            return 0, upper
        lower = max(0, self.last_emit - size) + 1
        if self.windows.windows_for(upper) == self.windows.windows_for(lower - 1):
            return None  # no new window closed
        return lower, upper

    def _closed(self, lower: int, upper: int) -> Any:
        return [(kv.key, kv.value.value, kv.value.timestamp)
                for kv in windows_starting_between(self.store, lower, upper)]

    def process(self, record: Record) -> None:
        if record.key is None:
            record_dropped(self.context, "a windowed aggregation skips a record with a null key")
            return
        ts = record.timestamp
        self.observed = max(self.observed, ts)
        for w in self.windows.windows_for(ts):
            if w.end + self.windows.grace_ms <= self.observed:
                self.dropped_late += 1
                record_dropped(
                    self.context,
                    f"late record for window [{w.start}, {w.end}) of key {record.key!r}: stream "
                    f"time {self.observed} is past the window's end plus grace "
                    f"({self.windows.grace_ms} ms)")
                continue
            old_vt = self.store.fetch(record.key, w.start)
            old = None if old_vt is None else old_vt.value
            if old is None:  # a new window's old value is the initializer's (Java's)
                old = None if self.initializer is None else self.initializer()
                new = record.value if self.initializer is None else self.aggregator(
                    record.key, record.value, old)
            else:
                new = self.aggregator(record.key, record.value, old)
            new_ts = ts if old_vt is None else max(ts, old_vt.timestamp)
            self.store.put(record.key, None if new is None else ValueAndTimestamp(new, new_ts),
                           w.start)
            if self.forward_now:
                self.context.forward(Record(Windowed(record.key, w), Change(new, old), new_ts,
                                            record.headers))
        self._emit_final(record, self.observed - self.windows.grace_ms)


class SessionAggregateProcessor(TableStoreProcessor, FinalResults, KeepsProgress):
    """Session count / reduce / aggregate: a record joins (and merges) the sessions within
    the gap; merged sessions are removed downstream (a change to None)."""

    progress_fields = ("observed", "last_emit")  # kept in the task's progress across restarts

    def __init__(self, store_name: str, windows: Any, initializer: Callable[[], Any] | None,
                 aggregator: Callable[[Any, Any, Any], Any],
                 merger: Callable[[Any, Any, Any], Any], final: bool = False):
        super().__init__(store_name)
        self.windows, self.initializer = windows, initializer
        self.aggregator, self.merger = aggregator, merger
        self.final = final
        self.observed = -1

    def _final_range(self, close: int) -> tuple[int, int] | None:
        """Session ends to emit: [last close, close - 1], as KStreamSessionWindowAggregate."""
        lower, upper = max(0, self.last_emit), close - 1
        return (lower, upper) if upper >= 0 and upper >= lower else None

    def _closed(self, lower: int, upper: int) -> Any:
        return [(kv.key, kv.value.value, kv.key.window.end)
                for kv in self.store.ending_between(lower, upper)]

    def process(self, record: Record) -> None:
        """As KStreamSessionWindowAggregate: only null keys are skipped; the aggregate starts
        from the initializer, merges every overlapping session, then adds the record;
        results and the tombstones of merged sessions carry the session's end as timestamp."""
        if record.key is None:
            record_dropped(self.context, "a session aggregation skips a record with a null key")
            return
        ts, gap = record.timestamp, self.windows.gap_ms
        self.observed = max(self.observed, ts)
        close = self.observed - self.windows.grace_ms - gap
        agg = None if self.initializer is None else self.initializer()
        start, end = ts, ts
        merged = list(self.store.find_sessions(record.key, ts - gap, ts + gap))
        for kv in merged:
            agg = kv.value.value if agg is None else self.merger(record.key, agg, kv.value.value)
            start, end = min(start, kv.key.window.start), max(end, kv.key.window.end)
        if end < close:
            record_dropped(
                self.context,
                f"late record for a session of key {record.key!r} at {ts}: stream time "
                f"{self.observed} is past its end plus gap and grace "
                f"({self.windows.grace_ms} ms)")
            self._emit_final(record, close)
            return
        if (start, end) != (ts, ts):
            for kv in merged:
                self.store.remove(kv.key)
                if self.forward_now:
                    self.context.forward(Record(kv.key, Change(None, kv.value.value),
                                                kv.key.window.end, record.headers))
        agg = (record.value if agg is None and self.initializer is None
               else self.aggregator(record.key, record.value, agg))
        session = Windowed(record.key, Window(start, end))
        self.store.put(session, None if agg is None else ValueAndTimestamp(agg, end))
        if self.forward_now:
            self.context.forward(Record(session, Change(agg, None), end, record.headers))
        self._emit_final(record, close)
