"""Key-value queries (Java's ``KeyQuery``, ``TimestampedKeyQuery``, ``RangeQuery``,
``TimestampedRangeQuery``): frozen dataclasses made by Java's factory methods in snake_case.

A query is plain data: the store that answers it decides how (see
``kspark._engine.query.evaluate``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Query", "ResultOrder", "KeyQuery", "TimestampedKeyQuery", "RangeQuery",
           "TimestampedRangeQuery"]


class Query:
    """What every interactive query is (Java's ``Query<R>``): a marker base class."""


class ResultOrder(enum.Enum):
    """The order of a range's results: ANY (the store's own: ascending here), ASCENDING,
    DESCENDING."""

    ANY = "ANY"
    ASCENDING = "ASCENDING"
    DESCENDING = "DESCENDING"


def _not_none(key: Any) -> Any:
    if key is None:
        raise ValueError("key cannot be None")
    return key


@dataclass(frozen=True)
class KeyQuery(Query):
    """The value of one key; a DSL store answers without the value's timestamp.

    Example:
        >>> q = KeyQuery.with_key("a").skip_cache()
        >>> q.get_key(), q.is_skip_cache()
        ('a', True)
    """

    key: Any
    skips_cache: bool = False

    @classmethod
    def with_key(cls, key: Any) -> "KeyQuery":
        return cls(_not_none(key))

    def skip_cache(self) -> "KeyQuery":
        """The same query, flagged to skip the record cache (kspark reads through it
        either way: the flag changes nothing)."""
        return replace(self, skips_cache=True)

    def get_key(self) -> Any:
        return self.key

    def is_skip_cache(self) -> bool:
        return self.skips_cache


@dataclass(frozen=True)
class TimestampedKeyQuery(Query):
    """The ValueAndTimestamp of one key, from a timestamped (DSL) key-value store.

    Example:
        >>> TimestampedKeyQuery.with_key("a").skip_cache().key
        'a'
    """

    key: Any
    skips_cache: bool = False

    @classmethod
    def with_key(cls, key: Any) -> "TimestampedKeyQuery":
        return cls(_not_none(key))

    def skip_cache(self) -> "TimestampedKeyQuery":
        return replace(self, skips_cache=True)

    def get_key(self) -> Any:
        return self.key

    def is_skip_cache(self) -> bool:
        return self.skips_cache


class _Range:
    """The factories both range queries share (a None bound: open at that end)."""

    lower: Any
    upper: Any
    order: ResultOrder

    @classmethod
    def with_range(cls, lower: Any, upper: Any) -> Any:
        """Keys from ``lower`` to ``upper``, both included (None: unbounded)."""
        return cls(lower, upper)  # type: ignore[call-arg]

    @classmethod
    def with_upper_bound(cls, upper: Any) -> Any:
        return cls(None, upper)  # type: ignore[call-arg]

    @classmethod
    def with_lower_bound(cls, lower: Any) -> Any:
        return cls(lower, None)  # type: ignore[call-arg]

    @classmethod
    def with_no_bounds(cls) -> Any:
        return cls(None, None)  # type: ignore[call-arg]

    def with_descending_keys(self) -> Any:
        return replace(self, order=ResultOrder.DESCENDING)  # type: ignore[type-var]

    def with_ascending_keys(self) -> Any:
        return replace(self, order=ResultOrder.ASCENDING)  # type: ignore[type-var]

    def get_lower_bound(self) -> Any:
        return self.lower

    def get_upper_bound(self) -> Any:
        return self.upper

    def result_order(self) -> ResultOrder:
        return self.order


@dataclass(frozen=True)
class RangeQuery(_Range, Query):
    """Entries whose key lies in a range, as a KeyValueIterator of plain values.

    Example:
        >>> q = RangeQuery.with_range("a", "c").with_descending_keys()
        >>> q.lower, q.upper, q.order.name
        ('a', 'c', 'DESCENDING')
        >>> RangeQuery.with_no_bounds()
        RangeQuery(lower=None, upper=None, order=<ResultOrder.ANY: 'ANY'>)
    """

    lower: Any = None
    upper: Any = None
    order: ResultOrder = ResultOrder.ANY


@dataclass(frozen=True)
class TimestampedRangeQuery(_Range, Query):
    """As :class:`RangeQuery`, values as ValueAndTimestamp (a timestamped store).

    Example:
        >>> TimestampedRangeQuery.with_upper_bound("m").upper
        'm'
    """

    lower: Any = None
    upper: Any = None
    order: ResultOrder = ResultOrder.ANY
