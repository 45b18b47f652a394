"""Sliding-window aggregation: count / reduce / aggregate over ``SlidingWindows``.

The store holds, per key, only windows that hold records and differ in content: the window
ending at each record, ``[t - d, t]``, and the one starting just after it,
``[t + 1, t + 1 + d]``, when a later record falls into it. Each stored aggregate carries
the newest record timestamp in it. A new record updates every stored window that covers
it and creates its own windows, seeding them from neighbouring windows with the same
content (aggregates cannot be taken apart), as Kafka Streams does. Windows past their end
plus grace are left alone; a record whose windows are all past it is dropped and counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.aggregates.emit import FinalResults, windows_starting_between
from kspark._engine.aggregates.windows import SlidingWindows, Window, Windowed
from kspark._engine.api import Record
from kspark._engine.context import record_dropped
from kspark._engine.progress import KeepsProgress
from kspark._engine.state.timestamped import ValueAndTimestamp
from kspark._engine.tables.change import Change
from kspark._engine.tables.processors import TableStoreProcessor

__all__ = ["SlidingWindowAggregateProcessor", "sliding_store_retention"]


def sliding_store_retention(windows: SlidingWindows) -> int:
    """How long the store keeps a window: long enough to seed a new record's window while
    that record is within grace (it may look back two time differences); Java's value.

    >>> sliding_store_retention(SlidingWindows.of_time_difference_and_grace(10, 5))
    25
    """
    return 2 * windows.time_difference_ms + windows.grace_ms


class SlidingWindowAggregateProcessor(TableStoreProcessor, FinalResults, KeepsProgress):
    """Emits ``Windowed(key, Window(start, start + d))`` -> Change(new, old) per window update."""

    progress_fields = ("observed", "last_emit")  # kept in the task's progress across restarts

    def __init__(self, store_name: str, windows: SlidingWindows,
                 initializer: Callable[[], Any] | None, aggregator: Callable[[Any, Any, Any], Any],
                 final: bool = False):
        super().__init__(store_name)
        self.windows, self.initializer, self.aggregator = windows, initializer, aggregator
        self.final = final
        self.observed = -1
        self.dropped_late = 0

    def _final_range(self, close: int) -> tuple[int, int] | None:
        """Window starts to emit, as KStreamSlidingWindowAggregate's emitRange bounds."""
        d = self.windows.time_difference_ms
        upper = close - d - 1
        if upper < 0:
            return None
        return (0 if self.last_emit == -1 else max(0, self.last_emit - d)), upper

    def _closed(self, lower: int, upper: int) -> Any:
        d = self.windows.time_difference_ms  # sliding windows include their end
        return [(Windowed(kv.key.key, Window(kv.key.window.start, kv.key.window.start + d)),
                 kv.value.value, kv.value.timestamp)
                for kv in windows_starting_between(self.store, lower, upper)]

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            record_dropped(self.context, "a sliding-window aggregation skips a record with a "
                                         f"null {'key' if record.key is None else 'value'}")
            return
        t, d = record.timestamp, self.windows.time_difference_ms
        self.observed = max(self.observed, t)
        close = self.observed - self.windows.grace_ms
        if t + 1 + d <= close:
            self._late(record, t - d, t, close)
        elif t < d:
            self._process_early(record, close)  # as Java: no final-results pass after these
        else:
            self._process(record, close)
            self._emit_final(record, close)

    def _process(self, record: Record, close: int) -> None:
        # As Java's processReverse: windows from the newest start back, so updates go out in
        # descending start order, stopping at the first window that ends before t.
        t, d = record.timestamp, self.windows.time_difference_ms
        with self.store.backward_fetch(record.key, max(0, t - 2 * d), t + 1) as found:
            stored = list(found)
        starts = set()
        before = after = None  # aggregates to seed this record's left / right window
        left_exists = right_exists = False
        previous = None  # the newest record timestamp before t, when known
        for start, vt in stored:
            starts.add(start)
            end = start + d
            if start == t + 1:
                right_exists = True
            elif end > t:
                if after is None:
                    after = vt
                self._add(record, start, vt, close)
            elif end == t:
                left_exists = True
                self._add(record, start, vt, close)
                if vt.timestamp >= t:
                    return  # as Java: a record at t already made this record's windows
                # Read on, as Java does: the next older window's newest timestamp replaces this
                # one; when the left window was closed to the previous record it lacks that
                # record, and so no right window is made for it.
                previous = vt.timestamp
            else:
                before, previous = vt, vt.timestamp
                break
        if previous is not None and previous + 1 not in starts and previous + 1 + d >= t:
            self._add(record, previous + 1, None, close)  # the previous record's right window
        if not left_exists:
            seed = before if previous is not None and previous >= t - d else None
            self._add(record, t - d, seed and ValueAndTimestamp(seed.value, t), close)
        if not right_exists and after is not None and after.timestamp > t:
            self._create_right_window(record, after)

    def _process_early(self, record: Record, close: int) -> None:
        """``t < d``: windows cannot start before 0, so ``[0, d]`` holds every early record."""
        t = record.timestamp
        with self.store.fetch(record.key, 0, t + 1) as found:
            stored = list(found)
        starts = {start for start, _ in stored}
        combined = after = None
        right_exists = False
        previous = None
        for start, vt in stored:
            if start == 0:
                combined = vt
                if vt.timestamp < t:
                    previous = vt.timestamp
            elif start <= t:
                after = vt
                self._add(record, start, vt, close)
            elif start == t + 1:
                right_exists = True
        if after is None and combined is not None and combined.timestamp > t:
            after = combined  # only later records are in [0, d] then
        if not right_exists and after is not None and after.timestamp > t:
            self._create_right_window(record, after)
        if previous is not None and previous + 1 not in starts:
            self._add(record, previous + 1, None, close)
        self._add(record, 0, combined, close)

    def _add(self, record: Record, start: int, base: ValueAndTimestamp | None,
             close: int) -> None:
        """Aggregate ``record`` into the window at ``start`` holding ``base`` (None: empty)."""
        end = start + self.windows.time_difference_ms
        if end < close:
            self._late(record, start, end, close)
            return
        if base is None:  # a new window starts from the initializer (Java's old value too)
            old = None if self.initializer is None else self.initializer()
            new = record.value if self.initializer is None else self.aggregator(
                record.key, record.value, old)
            new_ts = record.timestamp
        else:
            old = base.value
            new = self.aggregator(record.key, record.value, base.value)
            new_ts = max(record.timestamp, base.timestamp)
        self.store.put(record.key, ValueAndTimestamp(new, new_ts), start)
        if self.forward_now:
            self.context.forward(Record(Windowed(record.key, Window(start, end)), Change(new, old),
                                        new_ts, record.headers))

    def _create_right_window(self, record: Record, content: ValueAndTimestamp) -> None:
        """``[t + 1, t + 1 + d]`` holds exactly what ``content`` holds (records after t)."""
        start = record.timestamp + 1
        self.store.put(record.key, content, start)
        if self.forward_now:
            window = Window(start, start + self.windows.time_difference_ms)
            self.context.forward(Record(Windowed(record.key, window), Change(content.value, None),
                                        content.timestamp, record.headers))

    def _late(self, record: Record, start: int, end: int, close: int) -> None:
        self.dropped_late += 1
        record_dropped(
            self.context,
            f"late record (timestamp {record.timestamp}) for sliding window [{start}, {end}] "
            f"of key {record.key!r}: the window closed at stream time {self.observed} "
            f"(end plus grace {self.windows.grace_ms} ms)")
