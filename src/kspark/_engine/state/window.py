"""WindowStore: values per (key, window start), on a byte store ordered by key then time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kspark._engine.state.kv import KeyValue, KeyValueIterator, StoreBase, tagged_range
from kspark._engine.state.layers import CachingLayer, ChangeLoggingLayer, layer_stack
from kspark._engine.aggregates.windows import Window, Windowed
from kspark._engine.durations import to_epoch_ms

__all__ = ["WindowStore"]

_TS = 8
_NOT_CACHED = object()


def _ts(t: int) -> bytes:
    return t.to_bytes(_TS, "big", signed=True)


class WindowStore(StoreBase):
    """A window store: ``put(key, value, window_start)``; fetches by key and time range.

    Entries whose window started more than ``retention_ms`` before the newest window seen
    are expired: not returned, and dropped from the bytes store as time moves on.

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> s = Stores.window_store_builder(Stores.in_memory_window_store("w", 100, 10),
        ...     Serdes.String(), Serdes.Integer()).build()
        >>> s.put("a", 1, 0); s.put("a", 2, 10)
        >>> [tuple(kv) for kv in s.fetch("a", 0, 10)], s.fetch("a", 10)
        ([(0, 1), (10, 2)], 2)
    """

    def __init__(self, name: str, inner: Any, key_serde: Any, value_serde: Any,
                 retention_ms: int, window_size_ms: int, retain_duplicates: bool = False,
                 time_first: bool = False):
        self._name = name
        self.inner = inner
        self.key_serde, self.value_serde = key_serde, value_serde
        self.retention_ms, self.window_size_ms = retention_ms, window_size_ms
        # stream time as retention sees it: with a cache, as of the last write down (Kafka
        # Streams' store below its cache sees writes only then)
        self.observed = -1
        self.caching_enabled = False
        self.is_open = True
        # with duplicates kept (stream-stream joins), each put gets a 4-byte sequence suffix
        self.retain_duplicates = retain_duplicates
        self._suffix = _TS + 4 if retain_duplicates else _TS
        self.sequence = 0  # the last put's (Java's counter; a join keeps it in its progress)
        # Kafka Streams' time-ordered store of final-result aggregations keeps a window one
        # millisecond longer: while start >= stream time - retention
        self._keep_edge = 1 if time_first else 0
        if isinstance(inner, CachingLayer):  # a record cache: stream time as written down
            inner.on_write_down = self._written_down

    def _written_down(self, raw: bytes) -> None:
        self.observed = max(self.observed, self._start(raw))

    def _start(self, raw: bytes) -> int:
        return int.from_bytes(raw[-self._suffix:][:_TS], "big", signed=True)

    def decode_key(self, raw: bytes) -> Windowed:
        """The Windowed key of a stored entry's bytes."""
        n = self._suffix
        start = int.from_bytes(raw[-n:][:_TS], "big", signed=True)
        return Windowed(self.key_serde.deserialize(self._name, raw[:-n]),
                        Window(start, start + self.window_size_ms))

    def resume_observed(self, observed: int) -> None:
        """Take over the stream time a predecessor of this store had observed (a task
        restarted, e.g. for Spark's next micro-batch), so expired windows stay expired."""
        self.observed = max(self.observed, observed)

    def _expired(self, start: int) -> bool:
        """As Kafka Streams' window stores: a window lives while start > stream time - retention."""
        return self.observed >= 0 and start + self._keep_edge <= self.observed - self.retention_ms

    def below_retention(self, raw: bytes) -> bool:
        """Whether the store below its cache no longer returns the entry with these bytes
        (its window has expired)."""
        return self._expired(self._start(raw))

    def put(self, key: Any, value: Any, window_start: int) -> None:
        """Store ``value`` for ``key`` in the window starting at ``window_start`` (None deletes)."""
        if self.retain_duplicates:
            self._put_duplicate(key, value, window_start)
            return
        if not self.caching_enabled:  # with a cache: when written down (_written_down)
            self.observed = max(self.observed, window_start)
        if self._expired(window_start) and not self.caching_enabled:
            return  # a caching store takes it (Java's cache checks nothing): a commit forwards it
        kb = self.key_serde.serialize(self._name, key) + _ts(window_start)
        self.inner.put(kb, self.value_serde.serialize(self._name, value))

    def _put_duplicate(self, key: Any, value: Any, window_start: int) -> None:
        """A put into a store keeping duplicates (a stream-stream join's window), numbered
        as Java's ChangeLoggingWindowBytesStore numbers its changelog records: every put
        takes the next sequence number; a None (which deletes nothing) and an expired
        window are logged only, as Java logs them (a None as a tombstone), not stored."""
        self.sequence = (self.sequence + 1) & 0x7FFFFFFF
        kb = (self.key_serde.serialize(self._name, key) + _ts(window_start)
              + self.sequence.to_bytes(4, "big"))
        raw = None if value is None else self.value_serde.serialize(self._name, value)
        if raw is not None:  # Java's store below its changelog skips a None: no stream time
            self.observed = max(self.observed, window_start)
        if raw is not None and not self._expired(window_start):
            self.inner.put(kb, raw)
            return
        for layer in layer_stack(self.inner):
            if isinstance(layer, ChangeLoggingLayer):
                layer.log(kb, raw)

    def _scan(self, key_bytes: bytes | None, t_from: int, t_to: int,
              reverse: bool) -> Iterator[tuple[bytes, int, bytes]]:
        if key_bytes is not None:
            # timestamps are >= 0; a negative bound would sort after them as signed bytes
            hi = key_bytes + _ts(t_to) + (b"\xff" * 4 if self.retain_duplicates else b"")
            entries = tagged_range(self.inner, key_bytes + _ts(max(t_from, 0)), hi, reverse)
        else:
            entries = tagged_range(self.inner, None, None, reverse)
        n = self._suffix
        for k, v, cached in entries:
            kb, start = k[:-n], int.from_bytes(k[-n:][:_TS], "big", signed=True)
            if key_bytes is not None and kb != key_bytes:
                continue
            # the record cache returns what it holds, also past the store's retention
            if t_from <= start <= t_to and (cached or not self._expired(start)):
                yield kb, start, v

    def _point(self, kb: bytes, start: int) -> bytes | None:
        """The value of ``kb``'s window starting at ``start``, as a scan of that one window
        finds it (without one): the record cache's entry, also past retention (a cached
        delete hides the store's), else the store's below while the window has not expired."""
        if start < 0:
            return None  # no window starts before 0 (a scan's bounds would be empty)
        full, layer = kb + _ts(start), self.inner
        if isinstance(layer, CachingLayer):
            v = layer.peek(full, _NOT_CACHED)
            if v is not _NOT_CACHED:
                return v
            layer = layer.inner
        return None if self._expired(start) else layer.get(full)

    def fetch(self, key: Any, time_from: int, time_to: int | None = None) -> Any:
        """``fetch(key, t)``: the value of the window starting at t; ``fetch(key, from, to)``:
        an iterator of KeyValue(window start, value) in time order. Times are epoch ms or
        ``datetime``s (Java's ``Instant``)."""
        time_from, time_to = _ms(time_from), None if time_to is None else _ms(time_to)
        kb = self.key_serde.serialize(self._name, key)
        if time_to is None and not self.retain_duplicates:  # one window: a point lookup
            v = self._point(kb, time_from)
            return None if v is None else self.value_serde.deserialize(self._name, v)
        if time_to is None:
            for _, _, v in self._scan(kb, time_from, time_from, False):
                return self.value_serde.deserialize(self._name, v)
            return None
        return KeyValueIterator(KeyValue(s, self.value_serde.deserialize(self._name, v))
                                for _, s, v in self._scan(kb, time_from, time_to, False))

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> KeyValueIterator:
        time_from, time_to = _ms(time_from), _ms(time_to)
        kb = self.key_serde.serialize(self._name, key)
        return KeyValueIterator(KeyValue(s, self.value_serde.deserialize(self._name, v))
                                for _, s, v in self._scan(kb, time_from, time_to, True))

    def _windowed(self, entries: Iterator[tuple[bytes, int, bytes]]) -> KeyValueIterator:
        if self._keep_edge:  # a time-ordered store (final results) iterates by start first
            entries = iter(sorted(entries, key=lambda e: (e[1], e[0])))
        return KeyValueIterator(
            KeyValue(Windowed(self.key_serde.deserialize(self._name, kb),
                              Window(s, s + self.window_size_ms)),
                     self.value_serde.deserialize(self._name, v)) for kb, s, v in entries)

    def fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator:
        """Every key's windows starting in ``[time_from, time_to]``, as Windowed keys."""
        return self._windowed(self._scan(None, _ms(time_from), _ms(time_to), False))

    def all(self) -> KeyValueIterator:
        return self._windowed(self._scan(None, -(1 << 62), 1 << 62, False))

    def backward_all(self) -> KeyValueIterator:
        return self._windowed(self._scan(None, -(1 << 62), 1 << 62, True))

    def purge_expired(self) -> int:
        """Delete expired windows from the bytes store; returns how many."""
        n = self._suffix
        dead = [k for k, _ in self.inner.range(None, None)
                if self._expired(int.from_bytes(k[-n:][:_TS], "big", signed=True))]
        for k in dead:
            self.inner.delete(k)
        return len(dead)


def _ms(t: Any) -> int:
    """A time argument in epoch ms (a ``datetime`` converted; ints as they are)."""
    if type(t) is int:
        return t

    return to_epoch_ms(t, "a window store's time")
