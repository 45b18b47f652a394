"""KStream-KStream windowed joins, with Kafka Streams' (4.1) left/outer semantics: a record
that found no partner is emitted with None once its join window has closed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.context import record_dropped
from kspark._engine.durations import to_ms
from kspark._engine.progress import KeepsProgress
from kspark.errors import CorruptStateError

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
    def of_time_difference_with_no_grace(diff_ms: Any) -> "JoinWindows":
        """Kafka Streams' ``ofTimeDifferenceWithNoGrace`` (int ms or a ``timedelta``)."""
        return JoinWindows.of_time_difference_and_grace(diff_ms, 0)

    of_time_difference_without_grace = of_time_difference_with_no_grace  # kspark's older name

    @staticmethod
    def of_time_difference_and_grace(diff_ms: Any, grace_ms: Any) -> "JoinWindows":
        diff_ms, grace_ms = to_ms(diff_ms, "time difference"), to_ms(grace_ms, "grace")
        if diff_ms < 0 or grace_ms < 0:
            raise ValueError("join window difference and grace must be >= 0")
        return JoinWindows(diff_ms, diff_ms, grace_ms)

    def before(self, ms: Any) -> "JoinWindows":
        """How far before a left record a right record may be."""
        return JoinWindows(to_ms(ms, "before"), self.after_ms, self.grace_ms)

    def after(self, ms: Any) -> "JoinWindows":
        """How far after a left record a right record may be."""
        return JoinWindows(self.before_ms, to_ms(ms, "after"), self.grace_ms)

    def size_ms(self) -> int:
        return self.before_ms + self.after_ms


class JoinWindowProcessor(Processor, KeepsProgress):
    """A stream-stream join side's window (Kafka Streams' KStreamJoinWindow, the
    ``KSTREAM-WINDOWED-`` node): forward the record to the side's join, then keep it in the
    side's window store (a record with a null key is kept nowhere; one with a null value
    only takes a sequence number and is logged, as Java logs it).

    The store's last sequence number is kept in the task's progress: a task rebuilt (each
    micro-batch, with RocksDB stores) numbers on, so a record equal in key and time to one
    kept before does not overwrite it (Java's counter starts at 0 in each new store)."""

    progress_fields = ("seq",)

    def __init__(self, store: str):
        self.store_name = store

    @property
    def seq(self) -> int:
        return int(self.store.sequence)

    @seq.setter
    def seq(self, value: int) -> None:
        self.store.sequence = max(int(self.store.sequence), int(value))

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record) -> None:
        self.context.forward(record)
        if record.key is not None:
            self.store.put(record.key, record.value, record.timestamp)


class StreamStreamJoinProcessor(Processor, KeepsProgress):
    """One side of a stream-stream join (Kafka Streams' KStreamKStreamJoin): join the other
    side's window (its :class:`JoinWindowProcessor` keeps this record in this side's).

    ``kind``: "inner", "left" or "outer". Both sides share one stream time (the newest
    timestamp either has seen). No record is dropped for lateness: expiry comes only from
    the window stores' retention. An unjoined record of an outer side is emitted with None
    at once if its window has already ended, else it waits in the shared ``pending`` store,
    ordered by (timestamp, side, key), until stream time passes its window's end plus
    grace; waiting records whose window closed are emitted before the current record's
    join results. A null-key record of an outer side is joined with None at once (KIP-962).
    """

    # kept in the task's progress across restarts
    progress_fields = ("observed", "min_time")
    pending: Any  # the store of records waiting for a partner (None in an inner join)

    def __init__(self, other_store: str, pending_store: str | None,
                 joiner: Callable[[Any, Any], Any], windows: JoinWindows, kind: str,
                 this_is_left: bool):
        self.other_store, self.pending_store = other_store, pending_store
        self.joiner, self.windows, self.kind, self.left = joiner, windows, kind, this_is_left

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.other = context.get_state_store(self.other_store)
        self.observed = -1
        self.min_time = _NEVER  # the oldest waiting record's timestamp, as Java tracks it
        if self.pending_store is None:  # an inner join: nothing waits, no time is shared
            self.pending, self._sides = None, [self]
            return
        self.pending = context.get_state_store(self.pending_store)
        # Java's shared time tracker: both sides hold the same pending store object
        self._sides = self.pending.__dict__.setdefault("join_sides", [])
        self._sides.append(self)

    def _stream_time(self) -> int:
        return max(side.observed for side in self._sides)

    def _outer_side(self) -> bool:
        return self.kind == "outer" or (self.kind == "left" and self.left)

    def _join(self, mine: Any, theirs: Any) -> Any:
        return self.joiner(mine, theirs) if self.left else self.joiner(theirs, mine)

    def process(self, record: Record) -> None:
        ts, w = record.timestamp, self.windows
        before, after = (w.before_ms, w.after_ms) if self.left else (w.after_ms, w.before_ms)
        time_from, time_to = max(0, ts - before), max(0, ts + after)
        self.observed = max(self.observed, ts)
        if self._outer_side() and record.key is None and record.value is not None:
            self.context.forward(record.with_value(self._join(record.value, None)))
            return
        if record.key is None or record.value is None:
            record_dropped(self.context, f"a stream-stream join skips a record with a null "
                                         f"{'key' if record.key is None else 'value'}")
            return
        stream_time = self._stream_time()
        if ts == stream_time and self.pending is not None:
            self._emit_closed(stream_time, record)
        matched = False
        for other_ts, other_value in self.other.fetch(record.key, time_from, time_to):
            matched = True
            if self.pending is not None:  # as Java's putIfAbsent(key, null): a delete
                theirs = (other_ts, not self.left, record.key)  # only of what waits
                if self.pending.get(theirs) is not None:
                    self.pending.delete(theirs)
            self.context.forward(Record(record.key, self._join(record.value, other_value),
                                        max(ts, other_ts), record.headers))
        if not matched and self._outer_side():
            if time_to < stream_time:  # its window has ended already: nothing can join it
                self.context.forward(record.with_value(self._join(record.value, None)))
            else:
                # a list per (ts, side, key), as Java's ListValueStore: equal keys and
                # timestamps all wait, in arrival order
                waiting = self.pending.get((ts, self.left, record.key)) or []
                self.pending.put((ts, self.left, record.key), [*waiting, (self.left, record.value)])
                self._set_min_time(min(self._min_time(), ts))

    def _min_time(self) -> int:
        return min(side.min_time for side in self._sides)

    def _set_min_time(self, ts: int) -> None:
        for side in self._sides:
            side.min_time = ts

    def _emit_closed(self, stream_time: int, record: Record) -> None:
        """Emit (and forget) waiting records whose window plus grace has passed.

        As Java's KStreamKStreamJoin: only when the oldest waiting record, as last tracked,
        may have closed. Java also throttles this to once a second of wall-clock time in
        production (its test driver does not); kspark does not, so replays stay exact."""
        w = self.windows
        after = w.after_ms if self.left else w.before_ms
        if self._min_time() + after + w.grace_ms >= stream_time:
            return
        self._set_min_time(_NEVER)
        done: list[Any] = []
        open_sides: set[bool] = set()  # sides whose oldest waiting record's window is open
        with self.pending.all() as it:
            for kv in it:
                ts, is_left, key = kv.key
                self._set_min_time(ts)
                if len(open_sides) == 2:
                    break
                if ts + (w.after_ms if is_left else w.before_ms) + w.grace_ms >= stream_time:
                    open_sides.add(is_left)
                    continue
                if is_left in open_sides:
                    continue
                done.append(kv)
        for kv in done:
            ts, is_left, key = kv.key
            self.pending.delete(kv.key)
            for _, waiting in kv.value:
                value = self.joiner(waiting, None) if is_left else self.joiner(None, waiting)
                self.context.forward(Record(key, value, ts, record.headers))


_NEVER = 1 << 62  # no record waits (Java's Long.MAX_VALUE)


class PendingKeySerde:
    """Orders waiting records by (timestamp, side, key): 8 + 1 bytes, then the key's bytes
    in the join's key serde (Kafka Streams' TimestampedKeyAndJoinSide)."""

    def __init__(self, inner: Any):
        self.inner = inner  # None: the default key serde (filled in when the store is built)

    def serialize(self, topic: str, data: tuple | None) -> bytes | None:
        if data is None:
            return None
        ts, is_left, key = data
        return (ts.to_bytes(8, "big", signed=True) + (b"\x01" if is_left else b"\x00")
                + self.inner.serialize(topic, key))

    def deserialize(self, topic: str, data: bytes | None) -> tuple | None:
        if data is None:
            return None
        return (int.from_bytes(data[:8], "big", signed=True), data[8] == 1,
                self.inner.deserialize(topic, data[9:]))


class PendingValuesSerde:
    """The waiting records of one (timestamp, side, key): a list of (is_left, value), in
    Java's layout (``ListSerde`` of ``LeftOrRightValue``): a byte 1 (variable-size
    entries), a 4-byte count, then per record a 4-byte length and its bytes: a side byte
    (1: left) and the value in its side's serde.

    >>> from kspark import Serdes
    >>> s = PendingValuesSerde(Serdes.Long(), Serdes.String())
    >>> s.serialize("t", [(True, 1), (False, "x")]).hex()
    '010000000200000009010000000000000001000000020078'
    >>> s.deserialize("t", s.serialize("t", [(True, 1), (False, "x")]))
    [(True, 1), (False, 'x')]
    """

    def __init__(self, left: Any, right: Any):
        self.left, self.right = left, right  # None: the default value serde

    def with_defaults(self, resolve: Callable[[Any], Any]) -> "PendingValuesSerde":
        return PendingValuesSerde(resolve(self.left), resolve(self.right))

    def serialize(self, topic: str, data: list | None) -> bytes | None:
        if data is None:
            return None
        out = bytearray(b"\x01" + len(data).to_bytes(4, "big"))
        for is_left, value in data:
            raw = (self.left if is_left else self.right).serialize(topic, value)
            out += (len(raw) + 1).to_bytes(4, "big") + (b"\x01" if is_left else b"\x00") + raw
        return bytes(out)

    def deserialize(self, topic: str, data: bytes | None) -> list | None:
        if data is None:
            return None
        if data[:1] != b"\x01":
            raise CorruptStateError(
                f"store {topic!r} (a stream-stream join's waiting records) holds a value "
                f"not in Kafka Streams' layout (first byte {data[:1].hex() or 'none'}, not "
                "01): written by an earlier kspark; reset the application")
        out, i = [], 5
        for _ in range(int.from_bytes(data[1:5], "big")):
            n = int.from_bytes(data[i:i + 4], "big", signed=True)
            is_left, raw = data[i + 4] == 1, data[i + 5:i + 4 + n]
            out.append((is_left, (self.left if is_left else self.right).deserialize(topic, raw)))
            i += 4 + n
        return out
