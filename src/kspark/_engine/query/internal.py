"""Queries only kspark asks: what the read-only (IQv1) stores need beyond Java's public
queries. Each is frozen data, evaluated by ``evaluate`` and carried by the wire codec.

``timestamped``: answer with ValueAndTimestamp values (a timestamped store's facade), else
plain values (a timestamped store's values without their timestamps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kspark.query.queries import Query

__all__ = ["AllQuery", "PrefixScanQuery", "ApproximateNumEntriesQuery", "WindowFetchQuery",
           "WindowFetchAllQuery", "WindowAllQuery", "SessionFetchQuery", "SessionFindQuery",
           "SessionFetchSessionQuery", "INTERNAL_QUERIES"]


@dataclass(frozen=True)
class AllQuery(Query):
    """Every entry of a key-value store, in key order (``reverse``: descending).

    >>> AllQuery(reverse=True)
    AllQuery(reverse=True, timestamped=False)
    """

    reverse: bool = False
    timestamped: bool = False


@dataclass(frozen=True)
class PrefixScanQuery(Query):
    """Entries whose serialized key starts with ``prefix`` (the prefix serialized where the
    query is made, by the caller's prefix serializer).

    >>> PrefixScanQuery(b"ab").prefix
    b'ab'
    """

    prefix: bytes
    timestamped: bool = False


@dataclass(frozen=True)
class ApproximateNumEntriesQuery(Query):
    """The store's approximate number of entries.

    >>> ApproximateNumEntriesQuery()
    ApproximateNumEntriesQuery()
    """


@dataclass(frozen=True)
class WindowFetchQuery(Query):
    """One key's windows starting in ``[time_from, time_to]``: KeyValue(start, value).

    >>> WindowFetchQuery("a", 0, 10, backward=True).backward
    True
    """

    key: Any
    time_from: int
    time_to: int
    backward: bool = False
    timestamped: bool = False


@dataclass(frozen=True)
class WindowFetchAllQuery(Query):
    """Every key's windows starting in ``[time_from, time_to]``: KeyValue(Windowed, value).

    >>> WindowFetchAllQuery(0, 10).time_to
    10
    """

    time_from: int
    time_to: int
    backward: bool = False
    timestamped: bool = False


@dataclass(frozen=True)
class WindowAllQuery(Query):
    """Every window of a window store: KeyValue(Windowed, value).

    >>> WindowAllQuery().backward
    False
    """

    backward: bool = False
    timestamped: bool = False


@dataclass(frozen=True)
class SessionFetchQuery(Query):
    """Every session of ``key``: KeyValue(Windowed, value) (``backward``: newest first).

    >>> SessionFetchQuery("a").key
    'a'
    """

    key: Any
    backward: bool = False


@dataclass(frozen=True)
class SessionFindQuery(Query):
    """Sessions of ``key`` ending at or after ``earliest_end`` and starting at or before
    ``latest_start``.

    >>> SessionFindQuery("a", 0, 9).latest_start
    9
    """

    key: Any
    earliest_end: int
    latest_start: int


@dataclass(frozen=True)
class SessionFetchSessionQuery(Query):
    """The value of ``key``'s session ``[start, end]``, or None.

    >>> SessionFetchSessionQuery("a", 0, 5).end
    5
    """

    key: Any
    start: int
    end: int


INTERNAL_QUERIES: tuple[type, ...] = (
    AllQuery, PrefixScanQuery, ApproximateNumEntriesQuery, WindowFetchQuery,
    WindowFetchAllQuery, WindowAllQuery, SessionFetchQuery, SessionFindQuery,
    SessionFetchSessionQuery)
