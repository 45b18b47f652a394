"""SessionStore: aggregates per (key, session window), found by time overlap."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kspark._engine.state.kv import KeyValue, KeyValueIterator, StoreBase, tagged_range
from kspark._engine.state.layers import CachingLayer
from kspark._engine.aggregates.windows import Window, Windowed

__all__ = ["SessionStore"]


def _b(t: int) -> bytes:
    return t.to_bytes(8, "big", signed=True)


def _i(b: bytes) -> int:
    return int.from_bytes(b, "big", signed=True)


def _segment(t: int, interval: int) -> int:
    """Java's segment id ``t / interval`` (division truncating toward zero)."""
    return t // interval if t >= 0 else -(-t // interval)


class SessionStore(StoreBase):
    """Sessions keyed ``[key][end][start]`` (Kafka Streams' session key layout).

    Example:
        >>> from kspark import Serdes, Window, Windowed
        >>> from kspark.state import Stores
        >>> s = Stores.session_store_builder(Stores.in_memory_session_store("s", 100),
        ...     Serdes.String(), Serdes.Integer()).build()
        >>> s.put(Windowed("a", Window(0, 5)), 2)
        >>> [(kv.key.window.start, kv.key.window.end, kv.value)
        ...  for kv in s.find_sessions("a", 3, 9)]
        [(0, 5, 2)]
    """

    def __init__(self, name: str, inner: Any, key_serde: Any, value_serde: Any, retention_ms: int):
        self._name = name
        self.inner = inner
        self.key_serde, self.value_serde = key_serde, value_serde
        self.retention_ms = retention_ms
        self.observed = -1
        self.caching_enabled = False
        self.is_open = True
        if isinstance(inner, CachingLayer):  # a record cache: stream time as written down
            inner.on_write_down = self._written_down

    def _written_down(self, raw: bytes) -> None:
        self.observed = max(self.observed, _i(raw[-16:-8]))

    def decode_key(self, raw: bytes) -> Windowed:
        return Windowed(self.key_serde.deserialize(self._name, raw[:-16]),
                        Window(_i(raw[-8:]), _i(raw[-16:-8])))

    def _raw_key(self, wk: Windowed) -> bytes:
        return (self.key_serde.serialize(self._name, wk.key) + _b(wk.window.end)
                + _b(wk.window.start))

    def resume_observed(self, observed: int) -> None:
        """Take over the stream time a predecessor of this store had observed (see
        ``WindowStore.resume_observed``)."""
        self.observed = max(self.observed, observed)

    def _expired_put(self, end: int) -> bool:
        """Whether a put of a session ending at ``end`` is dropped. An in-memory store drops
        it once its end is retention behind stream time; a RocksDB store only once its whole
        segment is (Java's segmented stores: segments of max(retention / 2, 60 s))."""
        if not self.persistent():
            return end <= self.observed - self.retention_ms
        interval = max(self.retention_ms // 2, 60_000)
        return _segment(end, interval) < _segment(self.observed - self.retention_ms, interval)

    def below_retention(self, raw: bytes) -> bool:
        """Whether the store below its cache no longer returns the session with these
        bytes (it has expired)."""
        return _i(raw[-16:-8]) <= self.observed - self.retention_ms

    def put(self, session: Windowed, value: Any) -> None:
        """Store the aggregate of ``session`` (a Windowed key); None removes it."""
        if not self.caching_enabled:  # with a cache: when written down (_written_down)
            self.observed = max(self.observed, session.window.end)
            # expired, as in Java; a caching store still takes it (Java's cache checks
            # nothing), so a commit forwards it
            if self._expired_put(session.window.end):
                return
        self.inner.put(self._raw_key(session), self.value_serde.serialize(self._name, value))

    def remove(self, session: Windowed) -> None:
        self.inner.delete(self._raw_key(session))

    def fetch_session(self, key: Any, start: int, end: int) -> Any:
        raw = self.inner.get(self._raw_key(Windowed(key, Window(start, end))))
        return None if raw is None else self.value_serde.deserialize(self._name, raw)

    def _scan(self, key: Any, earliest_end: int, latest_start: int) -> Iterator[KeyValue]:
        kb = self.key_serde.serialize(self._name, key)
        # timestamps are >= 0; a negative bound would sort after all of them as signed bytes
        for raw, v, cached in tagged_range(self.inner, kb + _b(max(earliest_end, 0)),
                                           kb + _b(1 << 62)):
            if raw[:-16] != kb:
                continue
            start, end = _i(raw[-8:]), _i(raw[-16:-8])
            # the record cache returns what it holds, also past the store's retention
            if end >= earliest_end and start <= latest_start and (
                    cached or end > self.observed - self.retention_ms):
                yield KeyValue(Windowed(key, Window(start, end)),
                               self.value_serde.deserialize(self._name, v))

    def find_sessions(self, key: Any, earliest_session_end: int,
                      latest_session_start: int) -> KeyValueIterator:
        """Sessions of ``key`` ending at or after ``earliest_session_end`` and starting at or
        before ``latest_session_start``."""
        return KeyValueIterator(self._scan(key, earliest_session_end, latest_session_start))

    def fetch(self, key: Any) -> KeyValueIterator:
        """Every live session of ``key``."""
        return KeyValueIterator(self._scan(key, -(1 << 62), 1 << 62))

    def ending_between(self, earliest_end: int, latest_end: int) -> list[KeyValue]:
        """Every key's sessions ending in ``[earliest_end, latest_end]``, in order of (end,
        start, key bytes), retention not applied: Kafka Streams' time-ordered session store
        (``findSessions(earliestEnd, latestEnd)``), from which final results are emitted."""
        found = []
        for raw, v in self.inner.range(None, None):
            end = _i(raw[-16:-8])
            if earliest_end <= end <= latest_end:
                found.append((end, _i(raw[-8:]), raw[:-16], raw, v))
        found.sort(key=lambda f: f[:3])
        return [KeyValue(self.decode_key(raw), self.value_serde.deserialize(self._name, v))
                for *_, raw, v in found]
