"""Read-only window and session stores (IQv1) over a query function (see ``facades``), and
:func:`make_facade`, the read-only store a QueryableStoreType names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.durations import to_epoch_ms
from kspark._engine.query.facades import Ask, ReadOnlyKeyValueStore, ReadOnlyStore, \
    ReadOnlyTimestampedKeyValueStore, ReadOnlyVersionedKeyValueStore
from kspark._engine.query.internal import SessionFetchQuery, SessionFetchSessionQuery, \
    SessionFindQuery, WindowAllQuery, WindowFetchAllQuery, WindowFetchQuery
from kspark._engine.state.kv import KeyValueIterator

__all__ = ["ReadOnlyWindowStore", "ReadOnlyTimestampedWindowStore", "ReadOnlySessionStore",
           "make_facade"]


def _ms(t: Any, what: str) -> int:
    return t if type(t) is int else to_epoch_ms(t, what)


class ReadOnlyWindowStore(ReadOnlyStore):
    """A read-only window store (Java's ``ReadOnlyWindowStore``); a DSL store's values
    without their timestamps. Times are epoch ms or ``datetime``s.

    Example:
        >>> from kspark.query import QueryResult, StateQueryResult
        >>> from kspark._engine.state.kv import KeyValue
        >>> def ask(query, partitions):  # one window of "a" at 0
        ...     r = StateQueryResult()
        ...     r.add_result(0, QueryResult.for_result(KeyValueIterator(iter([KeyValue(0, 5)]))))
        ...     return r
        >>> w = ReadOnlyWindowStore(ask, "w")
        >>> w.fetch("a", 0), [tuple(kv) for kv in w.fetch("a", 0, 10)]
        (5, [(0, 5)])
    """

    timestamped = False

    def fetch(self, key: Any, time_from: Any, time_to: Any = None) -> Any:
        """``fetch(key, t)``: the value of ``key``'s window starting at t (or None);
        ``fetch(key, from, to)``: KeyValue(window start, value) of the windows starting
        in ``[from, to]``."""
        t0 = _ms(time_from, "time_from")
        if time_to is None:
            q = WindowFetchQuery(key, t0, t0, False, self.timestamped)
            return next((kv.value for _, it in self._results(q, key) for kv in it), None)
        return self._concat(WindowFetchQuery(key, t0, _ms(time_to, "time_to"), False,
                                             self.timestamped), key)

    def backward_fetch(self, key: Any, time_from: Any, time_to: Any) -> KeyValueIterator:
        return self._concat(WindowFetchQuery(key, _ms(time_from, "time_from"),
                                             _ms(time_to, "time_to"), True, self.timestamped),
                            key)

    def fetch_all(self, time_from: Any, time_to: Any) -> KeyValueIterator:
        """Every key's windows starting in ``[time_from, time_to]``, as Windowed keys."""
        return self._concat(WindowFetchAllQuery(_ms(time_from, "time_from"),
                                                _ms(time_to, "time_to"), False,
                                                self.timestamped))

    def backward_fetch_all(self, time_from: Any, time_to: Any) -> KeyValueIterator:
        return self._concat(WindowFetchAllQuery(_ms(time_from, "time_from"),
                                                _ms(time_to, "time_to"), True, self.timestamped))

    def all(self) -> KeyValueIterator:
        return self._concat(WindowAllQuery(False, self.timestamped))

    def backward_all(self) -> KeyValueIterator:
        return self._concat(WindowAllQuery(True, self.timestamped))


class ReadOnlyTimestampedWindowStore(ReadOnlyWindowStore):
    """A read-only DSL window store with its values as ValueAndTimestamp."""

    timestamped = True


class ReadOnlySessionStore(ReadOnlyStore):
    """A read-only session store (Java's ``ReadOnlySessionStore``): KeyValue(Windowed key,
    aggregate) per session."""

    def fetch(self, key: Any) -> KeyValueIterator:
        """Every session of ``key``, oldest first."""
        return self._concat(SessionFetchQuery(key), key)

    def backward_fetch(self, key: Any) -> KeyValueIterator:
        return self._concat(SessionFetchQuery(key, backward=True), key)

    def find_sessions(self, key: Any, earliest_session_end: Any,
                      latest_session_start: Any) -> KeyValueIterator:
        """Sessions of ``key`` ending at or after ``earliest_session_end`` and starting at
        or before ``latest_session_start``."""
        return self._concat(SessionFindQuery(key, _ms(earliest_session_end, "earliest end"),
                                             _ms(latest_session_start, "latest start")), key)

    def fetch_session(self, key: Any, session_start: Any, session_end: Any) -> Any:
        """The aggregate of ``key``'s session ``[session_start, session_end]``, or None."""
        return self._first(SessionFetchSessionQuery(key, _ms(session_start, "session start"),
                                                    _ms(session_end, "session end")), key)


_FACADES: dict[tuple[str, bool], type[ReadOnlyStore]] = {
    ("key-value", False): ReadOnlyKeyValueStore,
    ("key-value", True): ReadOnlyTimestampedKeyValueStore,
    ("window", False): ReadOnlyWindowStore,
    ("window", True): ReadOnlyTimestampedWindowStore,
    ("session", False): ReadOnlySessionStore,
    ("versioned key-value", False): ReadOnlyVersionedKeyValueStore,
}


def make_facade(store_type: Any, ask: Ask, name: str,
                partition_of: Callable[[Any], int | None] | None = None) -> ReadOnlyStore:
    """The read-only store ``store_type`` (a QueryableStoreType) names, over ``ask``.

    >>> from kspark.state.queryable import QueryableStoreTypes
    >>> make_facade(QueryableStoreTypes.session_store(), None, "s")
    ReadOnlySessionStore('s')
    """
    return _FACADES[(store_type.kind, store_type.timestamped)](ask, name, partition_of)
