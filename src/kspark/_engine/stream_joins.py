"""KStream-KStream windowed joins, with Kafka Streams' (3.x) left/outer semantics: a record
that found no partner is emitted with None only once its join window has closed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record

__all__ = ["JoinWindows", "StreamStreamJoinProcessor"]


@dataclass(frozen=True)
class JoinWindows:
    """Records join when their timestamps differ by at most ``before``/``after`` ms.

    Example:
        >>> w = JoinWindows.of_time_difference_and_grace(10, 5).after(3)
        >>> (w.before_ms, w.after_ms, w.grace_ms)
        (10, 3, 5)
    """

    before_ms: int
    after_ms: int
    grace_ms: int

    @staticmethod
    def of_time_difference_without_grace(diff_ms: int) -> "JoinWindows":
        return JoinWindows(diff_ms, diff_ms, 0)

    @staticmethod
    def of_time_difference_and_grace(diff_ms: int, grace_ms: int) -> "JoinWindows":
        if diff_ms < 0 or grace_ms < 0:
            raise ValueError("join window difference and grace must be >= 0")
        return JoinWindows(diff_ms, diff_ms, grace_ms)

    def before(self, ms: int) -> "JoinWindows":
        """How far before a left record a right record may be."""
        return JoinWindows(ms, self.after_ms, self.grace_ms)

    def after(self, ms: int) -> "JoinWindows":
        """How far after a left record a right record may be."""
        return JoinWindows(self.before_ms, ms, self.grace_ms)

    def size_ms(self) -> int:
        return self.before_ms + self.after_ms


class StreamStreamJoinProcessor(Processor):
    """One side of a stream-stream join: store this record, join the other side's window.

    ``kind``: "inner", "left" or "outer". Unjoined records of the outer side(s) wait in the
    shared ``pending`` store (keyed by timestamp, so the oldest come first) until stream time
    passes their window's end plus grace.
    """

    # kept in the task's progress across restarts (seq keeps pending keys unique)
    _progress_fields = ("observed", "seq")

    def __init__(self, this_store: str, other_store: str, pending_store: str,
                 joiner: Callable[[Any, Any], Any], windows: JoinWindows, kind: str,
                 this_is_left: bool):
        self.this_store, self.other_store, self.pending_store = this_store, other_store, pending_store
        self.joiner, self.windows, self.kind, self.left = joiner, windows, kind, this_is_left

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.this = context.get_state_store(self.this_store)
        self.other = context.get_state_store(self.other_store)
        self.pending = context.get_state_store(self.pending_store)
        self.observed = -1
        self.seq = 0

    def _outer_side(self) -> bool:
        return self.kind == "outer" or (self.kind == "left" and self.left)

    def _join(self, mine: Any, theirs: Any) -> Any:
        return self.joiner(mine, theirs) if self.left else self.joiner(theirs, mine)

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            return
        ts, w = record.timestamp, self.windows
        self.observed = max(self.observed, ts)
        if ts + w.size_ms() + w.grace_ms < self.observed:
            self.context.record_dropped(f"record of key {record.key!r} at {ts} is past its join "
                                        f"window plus grace (stream time {self.observed})")
            return
        lo, hi = (ts - w.before_ms, ts + w.after_ms) if self.left else (ts - w.after_ms, ts + w.before_ms)
        self.this.put(record.key, (record.value, ts), ts)
        matched = False
        for other_ts, (other_value, _) in self.other.fetch(record.key, max(lo, 0), hi):
            matched = True
            self._drop_pending(record.key, other_ts)
            self.context.forward(Record(record.key, self._join(record.value, other_value),
                                        max(ts, other_ts), record.headers))
        if not matched and self._outer_side():
            self.seq += 1
            self.pending.put((ts, self.left, self.seq, record.key), record.value)
        self._emit_closed()

    def _drop_pending(self, key: Any, other_ts: int) -> None:
        """The other side's record at ``other_ts`` found a partner: it no longer waits."""
        with self.pending.range((other_ts, not self.left, 0, None), (other_ts, not self.left, 1 << 62, None)) as it:
            for kv in list(it):
                if kv.key[3] == key:
                    self.pending.delete(kv.key)

    def _emit_closed(self) -> None:
        w = self.windows
        done = []
        with self.pending.all() as it:
            for kv in it:
                ts, is_left, _, key = kv.key
                window_end = ts + (w.after_ms if is_left else w.before_ms)
                if window_end + w.grace_ms >= self.observed:
                    break
                done.append(kv)
        for kv in done:
            ts, is_left, _, key = kv.key
            self.pending.delete(kv.key)
            value = self.joiner(kv.value, None) if is_left else self.joiner(None, kv.value)
            self.context.forward(Record(key, value, ts))


class PendingKeySerde:
    """Orders pending records by (timestamp, side, sequence): 8 + 1 + 8 bytes, then the key."""

    def serialize(self, topic: str, data: tuple | None) -> bytes | None:
        import pickle

        if data is None:
            return None
        ts, is_left, seq, key = data
        return (ts.to_bytes(8, "big", signed=True) + (b"\x01" if is_left else b"\x00")
                + seq.to_bytes(8, "big") + pickle.dumps(key, protocol=5))

    def deserialize(self, topic: str, data: bytes | None) -> tuple | None:
        import pickle

        if data is None:
            return None
        return (int.from_bytes(data[:8], "big", signed=True), data[8] == 1,
                int.from_bytes(data[9:17], "big"), pickle.loads(data[17:]))
