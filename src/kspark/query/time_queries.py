"""Queries over time: windows and sessions (Java's ``WindowKeyQuery``, ``WindowRangeQuery``)
and versions (``VersionedKeyQuery``, ``MultiVersionedKeyQuery``). Times are epoch ms (a
``datetime`` is converted, as Java's ``Instant``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kspark.query.queries import Query, ResultOrder, _not_none
from kspark._engine.durations import to_epoch_ms

__all__ = ["WindowKeyQuery", "WindowRangeQuery", "VersionedKeyQuery", "MultiVersionedKeyQuery"]


def _ms(t: Any, what: str) -> int | None:
    """``t`` in epoch ms (None stays None)."""
    if t is None or type(t) is int:
        return t

    return to_epoch_ms(t, what)


@dataclass(frozen=True)
class WindowKeyQuery(Query):
    """One key's windows starting in ``[time_from, time_to]``: a KeyValueIterator of
    KeyValue(window start, value), in time order (a window store).

    Example:
        >>> q = WindowKeyQuery.with_key_and_window_start_range("a", 0, 100)
        >>> q.get_key(), q.get_time_from(), q.get_time_to()
        ('a', 0, 100)
    """

    key: Any
    time_from: int
    time_to: int

    @classmethod
    def with_key_and_window_start_range(cls, key: Any, time_from: Any,
                                        time_to: Any) -> "WindowKeyQuery":
        t0, t1 = _ms(time_from, "time_from"), _ms(time_to, "time_to")
        if t0 is None or t1 is None:
            raise ValueError("a WindowKeyQuery needs both ends of its window start range")
        return cls(_not_none(key), t0, t1)

    def get_key(self) -> Any:
        return self.key

    def get_time_from(self) -> int:
        return self.time_from

    def get_time_to(self) -> int:
        return self.time_to


@dataclass(frozen=True)
class WindowRangeQuery(Query):
    """Windows of every key: ``with_window_start_range`` (a window store: every key's
    windows starting in the range) or ``with_key`` (a session store: every session of the
    key). A KeyValueIterator of KeyValue(Windowed key, value).

    Example:
        >>> WindowRangeQuery.with_key("a")
        WindowRangeQuery(key='a', time_from=None, time_to=None)
        >>> WindowRangeQuery.with_window_start_range(0, 10).get_time_to()
        10
    """

    key: Any = None
    time_from: int | None = None
    time_to: int | None = None

    @classmethod
    def with_key(cls, key: Any) -> "WindowRangeQuery":
        return cls(key=_not_none(key))

    @classmethod
    def with_window_start_range(cls, time_from: Any, time_to: Any) -> "WindowRangeQuery":
        return cls(None, _ms(time_from, "time_from"), _ms(time_to, "time_to"))

    def get_key(self) -> Any:
        return self.key

    def get_time_from(self) -> int | None:
        return self.time_from

    def get_time_to(self) -> int | None:
        return self.time_to


@dataclass(frozen=True)
class VersionedKeyQuery(Query):
    """The version of a key valid now, or ``as_of`` a time: a VersionedRecord (with its
    ``valid_to`` when a newer version replaced it) or None (a versioned store).

    Example:
        >>> q = VersionedKeyQuery.with_key("a").as_of(20)
        >>> q.key, q.as_of_timestamp
        ('a', 20)
    """

    key: Any
    as_of_timestamp: int | None = None

    @classmethod
    def with_key(cls, key: Any) -> "VersionedKeyQuery":
        return cls(_not_none(key))

    def as_of(self, timestamp: Any) -> "VersionedKeyQuery":
        return replace(self, as_of_timestamp=_ms(timestamp, "as_of"))


@dataclass(frozen=True)
class MultiVersionedKeyQuery(Query):
    """The versions of a key valid at some time in ``[from_time, to_time]`` (None: open
    end): an iterator of VersionedRecord, newest first unless ascending is asked.

    Example:
        >>> q = MultiVersionedKeyQuery.with_key("a").from_time(5).with_ascending_timestamps()
        >>> q.from_timestamp, q.to_timestamp, q.order.name
        (5, None, 'ASCENDING')
    """

    key: Any
    from_timestamp: int | None = None
    to_timestamp: int | None = None
    order: ResultOrder = ResultOrder.ANY

    @classmethod
    def with_key(cls, key: Any) -> "MultiVersionedKeyQuery":
        return cls(_not_none(key))

    def from_time(self, timestamp: Any) -> "MultiVersionedKeyQuery":
        return replace(self, from_timestamp=_ms(timestamp, "from_time"))

    def to_time(self, timestamp: Any) -> "MultiVersionedKeyQuery":
        return replace(self, to_timestamp=_ms(timestamp, "to_time"))

    def with_ascending_timestamps(self) -> "MultiVersionedKeyQuery":
        return replace(self, order=ResultOrder.ASCENDING)

    def with_descending_timestamps(self) -> "MultiVersionedKeyQuery":
        return replace(self, order=ResultOrder.DESCENDING)

    def result_order(self) -> ResultOrder:
        return self.order
