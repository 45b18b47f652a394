"""One partition's store answering an interactive query: the position bound checked, the
query dispatched on (query type, store kind), the answer (iterators materialized) or the
failure as a QueryResult carrying the store's position. As Java's Metered*Store.query."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kspark._engine.query import internal as iq
from kspark._engine.query.read_versions import multi_versioned, versioned_get
from kspark._engine.query.types import store_shape
from kspark._engine.state.kv import KeyValue, KeyValueIterator
from kspark._engine.state.timestamped import ValueAndTimestamp
from kspark.query.position import Position, PositionBound, behind
from kspark.query.queries import KeyQuery, RangeQuery, ResultOrder, TimestampedKeyQuery, \
    TimestampedRangeQuery
from kspark.query.results import FailureReason, QueryResult
from kspark.query.time_queries import MultiVersionedKeyQuery, VersionedKeyQuery, \
    WindowKeyQuery, WindowRangeQuery

__all__ = ["evaluate", "answers"]


class _UnanswerableError(Exception):
    """The store's kind takes this query type but not this form of it."""


def _plain(v: Any) -> Any:
    return v.value if isinstance(v, ValueAndTimestamp) else v


def _entries(it: Any, stamped: bool, keep_stamps: bool) -> KeyValueIterator:
    """``it`` materialized; values without their timestamps unless ``keep_stamps``."""
    strip = stamped and not keep_stamps
    return KeyValueIterator(iter([KeyValue(k, _plain(v) if strip else v) for k, v in it]))


def _listed(items: list[Any]) -> KeyValueIterator:
    return KeyValueIterator(iter(items))


def _kv_range(q: Any, s: Any, stamped: bool, keep: bool) -> KeyValueIterator:
    read = s.reverse_range if q.order is ResultOrder.DESCENDING else s.range
    return _entries(read(q.lower, q.upper), stamped, keep)


def _prefix(q: iq.PrefixScanQuery, s: Any, stamped: bool) -> KeyValueIterator:
    return _entries(s.prefix_scan(q.prefix, _RawBytes()), stamped, q.timestamped)


class _RawBytes:
    """A prefix serializer for a prefix already serialized."""

    def serialize(self, topic: str, data: bytes) -> bytes:
        return data


def _window_range(q: WindowRangeQuery, s: Any, stamped: bool) -> KeyValueIterator:
    if q.key is not None or q.time_from is None or q.time_to is None:
        raise _UnanswerableError("WindowStores only supports WindowRangeQuery.with_window_start_"
                            "range")
    return _entries(s.fetch_all(q.time_from, q.time_to), stamped, True)


def _session_range(q: WindowRangeQuery, s: Any, stamped: bool) -> KeyValueIterator:
    if q.key is None:
        raise _UnanswerableError("SessionStores only support WindowRangeQuery.with_key")
    return _entries(s.fetch(q.key), stamped, False)  # Java's session stores keep no stamps


def _window_fetch(q: iq.WindowFetchQuery, s: Any, stamped: bool) -> KeyValueIterator:
    read = s.backward_fetch if q.backward else s.fetch
    return _entries(read(q.key, q.time_from, q.time_to), stamped, q.timestamped)


def _window_fetch_all(q: iq.WindowFetchAllQuery, s: Any, stamped: bool) -> KeyValueIterator:
    found = list(s.fetch_all(q.time_from, q.time_to))
    return _entries(reversed(found) if q.backward else found, stamped, q.timestamped)


def _needs_stamps(read: Callable[..., Any]) -> Callable[..., Any]:
    """A reader of values with timestamps: unanswerable by a store that keeps none."""
    def checked(q: Any, s: Any, stamped: bool) -> Any:
        if not stamped:
            raise _UnanswerableError("only a store keeping timestamps (the DSL's) answers it")
        return read(q, s, stamped)
    return checked


def _stamped_if(read: Callable[..., Any]) -> Callable[..., Any]:
    """A reader whose query asks for timestamps only if its ``timestamped`` flag is set."""
    def checked(q: Any, s: Any, stamped: bool) -> Any:
        if q.timestamped and not stamped:
            raise _UnanswerableError("only a store keeping timestamps (the DSL's) answers it "
                                "with timestamps")
        return read(q, s, stamped)
    return checked


_Reader = Callable[[Any, Any, bool], Any]
_KV: dict[type, _Reader] = {
    KeyQuery: lambda q, s, st: _plain(s.get(q.key)) if st else s.get(q.key),
    TimestampedKeyQuery: _needs_stamps(lambda q, s, st: s.get(q.key)),
    RangeQuery: lambda q, s, st: _kv_range(q, s, st, False),
    TimestampedRangeQuery: _needs_stamps(lambda q, s, st: _kv_range(q, s, st, True)),
    iq.AllQuery: _stamped_if(lambda q, s, st: _entries(
        s.reverse_all() if q.reverse else s.all(), st, q.timestamped)),
    iq.PrefixScanQuery: _stamped_if(_prefix),
    iq.ApproximateNumEntriesQuery: lambda q, s, st: s.approximate_num_entries(),
}
_WINDOW: dict[type, _Reader] = {
    WindowKeyQuery: lambda q, s, st: _entries(s.fetch(q.key, q.time_from, q.time_to), st, True),
    WindowRangeQuery: _window_range,
    iq.WindowFetchQuery: _stamped_if(_window_fetch),
    iq.WindowFetchAllQuery: _stamped_if(_window_fetch_all),
    iq.WindowAllQuery: _stamped_if(lambda q, s, st: _entries(
        s.backward_all() if q.backward else s.all(), st, q.timestamped)),
}
_SESSION: dict[type, _Reader] = {
    WindowRangeQuery: _session_range,
    iq.SessionFetchQuery: lambda q, s, st: _entries(
        (lambda found: found[::-1] if q.backward else found)(list(s.fetch(q.key))), st, False),
    iq.SessionFindQuery: lambda q, s, st: _entries(
        s.find_sessions(q.key, q.earliest_end, q.latest_start), st, False),
    iq.SessionFetchSessionQuery: lambda q, s, st: _plain(s.fetch_session(q.key, q.start, q.end)),
}
_VERSIONED: dict[type, _Reader] = {
    VersionedKeyQuery: lambda q, s, st: versioned_get(s, q.key, q.as_of_timestamp),
    MultiVersionedKeyQuery: lambda q, s, st: _listed(multi_versioned(s, q)),
}
_BY_KIND = {"key-value": _KV, "window": _WINDOW, "session": _SESSION,
            "versioned key-value": _VERSIONED}


def answers(store: Any) -> list[str]:
    """The query types ``store`` answers, by name.

    >>> from kspark import Serdes
    >>> from kspark.state import Stores
    >>> answers(Stores.versioned_key_value_store_builder(
    ...     Stores.persistent_versioned_key_value_store("v", 10), Serdes.String(),
    ...     Serdes.Long()).with_logging_disabled().build())
    ['VersionedKeyQuery', 'MultiVersionedKeyQuery']
    """
    return [t.__name__ for t in _BY_KIND.get(store_shape(store)[0], {})
            if t.__module__.startswith("kspark.query")]


def evaluate(query: Any, store: Any, position: Position, bound: PositionBound | None = None,
             partition: int = 0, *, collect_execution_info: bool = False) -> QueryResult:
    """``store`` (one partition's engine store, at ``position``) answering ``query``:
    NOT_UP_TO_BOUND if ``position`` has not reached ``bound`` for this partition,
    UNKNOWN_QUERY_TYPE if the store's kind does not answer the query, STORE_EXCEPTION if
    reading raised. The result carries a copy of ``position``.

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> s = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"),
        ...     Serdes.String(), Serdes.Long()).with_logging_disabled().build()
        >>> s.put("a", 1)
        >>> evaluate(KeyQuery.with_key("a"), s, Position.empty()).get_result()
        1
        >>> evaluate(KeyQuery.with_key("a"), s, Position.empty(), PositionBound.at(
        ...     Position.from_map({"in": {0: 3}}))).get_failure_reason().name
        'NOT_UP_TO_BOUND'
    """
    start = time.perf_counter_ns()
    if bound is not None and behind(position, bound, partition):
        result = _not_up_to_bound(store, position, bound, partition)
    else:
        result = _read(query, store)
    if collect_execution_info:
        result.add_execution_info(
            f"Handled in {type(store).__name__} {store.name()!r} (partition {partition}) in "
            f"{time.perf_counter_ns() - start}ns")
    result.set_position(position.copy())
    return result


def _read(query: Any, store: Any) -> QueryResult:
    kind, stamped = store_shape(store)
    reader = _BY_KIND.get(kind, {}).get(type(query))
    why = "" if reader is not None else (
        f"a {kind} store answers {', '.join(answers(store))}" if kind in _BY_KIND
        else "interactive queries cannot read it")
    if reader is not None:
        try:
            return QueryResult.for_result(reader(query, store, stamped))
        except _UnanswerableError as e:
            why = str(e)
        except Exception as e:  # noqa: BLE001 - a store's failure is the answer's
            return QueryResult.for_failure(
                FailureReason.STORE_EXCEPTION,
                f"store {store.name()!r} raised {type(e).__name__} while answering "
                f"{query!r}: {e}")
    return QueryResult.for_failure(
        FailureReason.UNKNOWN_QUERY_TYPE,
        f"This store ({kind} store{' with timestamps' if stamped else ''} {store.name()!r}, "
        f"a {type(store).__name__}) doesn't know how to execute the given query ({query!r}): "
        f"{why}. Contact the store maintainer if you need support for a new query type.")


def _not_up_to_bound(store: Any, position: Position, bound: PositionBound,
                     partition: int) -> QueryResult:
    gaps = []
    for topic, p, seen, wanted in behind(position, bound, partition):
        gaps.append(f"topic {topic!r} partition {p} has seen nothing, the bound asks for "
                    f"offset {wanted}" if seen is None else
                    f"topic {topic!r} partition {p} is at offset {seen}, the bound asks for "
                    f"{wanted} ({wanted - seen} behind)")
    return QueryResult.for_failure(
        FailureReason.NOT_UP_TO_BOUND,
        f"For store {store.name()!r} partition {partition}, the current position "
        f"{position.to_map()} is not yet up to the bound {bound.position().to_map()}: "
        f"{'; '.join(gaps)}. Retry once the store has caught up, or query without the bound")
