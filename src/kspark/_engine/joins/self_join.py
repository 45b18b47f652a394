"""A stream-stream join of a stream with itself over one window store (Kafka Streams'
``KStreamKStreamSelfJoin``), as ``topology.optimization``'s ``single.store.self.join``
rewrites such a join: one ``KSTREAM-WINDOWED-`` node keeps the records, and this
processor (the join's ``-merge`` node) joins each one with those of its window and with
itself. Java uses it for any kind of join of a stream with itself (inner semantics), and
so does kspark.

Example:
    >>> from kspark._engine.joins.stream_stream import JoinWindows
    >>> p = SelfJoinProcessor("s", lambda a, b: a * 10 + b, JoinWindows(5, 5, 0))
    >>> p.windows.size_ms()
    10
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.context import record_dropped
from kspark._engine.progress import KeepsProgress

__all__ = ["SelfJoinProcessor"]


class SelfJoinProcessor(Processor, KeepsProgress):
    """Join each record with the records of ``store`` in its window (the windowed node puts
    the record there after this has run), both ways round, then with itself, in the order
    an inner join of two copies of the stream emits them. The record joined with itself is
    left out once older than the store keeps records (window size plus grace)."""

    progress_fields = ("stream_time",)  # Java's TimeTracker, kept across restarts

    def __init__(self, store: str, joiner: Callable[[Any, Any], Any], windows: Any):
        self.store_name, self.joiner, self.windows = store, joiner, windows

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)
        self.stream_time = -1

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            record_dropped(self.context, f"a stream-stream join skips a record with a null "
                                         f"{'key' if record.key is None else 'value'}")
            return
        key, value, ts, w = record.key, record.value, record.timestamp, self.windows
        self.stream_time = max(self.stream_time, ts)
        with_self = ts > self.stream_time - (w.size_ms() + w.grace_ms) + 1
        itself = Record(key, self.joiner(value, value), ts, record.headers)
        for other_ts, other in self.store.fetch(key, max(0, ts - w.before_ms),
                                                max(0, ts + w.after_ms)):
            self.context.forward(Record(key, self.joiner(value, other), max(ts, other_ts),
                                        record.headers))
        for other_ts, other in self.store.fetch(key, max(0, ts - w.after_ms),
                                                max(0, ts + w.before_ms)):
            if ts < max(ts, other_ts) and with_self:  # timestamp order: itself first
                self.context.forward(itself)
                with_self = False
            self.context.forward(Record(key, self.joiner(other, value), max(ts, other_ts),
                                        record.headers))
        if with_self:
            self.context.forward(itself)
