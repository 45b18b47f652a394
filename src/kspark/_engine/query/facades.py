"""Read-only stores (IQv1) over a query function: ``ask(query, partitions)`` answers a
StateQueryResult for the partitions asked (None: all). As Java's composite stores, a
single-key read returns the first partition's answer that is not None (asking only the
key's partition when ``partition_of`` knows it) and an iterating read concatenates the
partitions' entries in partition order. A failed partition raises: NOT_ACTIVE, NOT_PRESENT
and DOES_NOT_EXIST a StateStoreNotAvailableError (retry), the others an
InvalidStateStoreError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.query.internal import AllQuery, ApproximateNumEntriesQuery, PrefixScanQuery
from kspark._engine.state.kv import KeyValueIterator
from kspark.errors import InvalidStateStoreError, StateStoreNotAvailableError
from kspark.query.queries import KeyQuery, RangeQuery, TimestampedKeyQuery, \
    TimestampedRangeQuery
from kspark.query.results import FailureReason, QueryResult, StateQueryResult
from kspark.query.time_queries import VersionedKeyQuery

__all__ = ["Ask", "ReadOnlyStore", "ReadOnlyKeyValueStore", "ReadOnlyTimestampedKeyValueStore",
           "ReadOnlyVersionedKeyValueStore", "raise_failure"]

Ask = Callable[[Any, "set[int] | None"], StateQueryResult]
_UNAVAILABLE = (FailureReason.NOT_ACTIVE, FailureReason.NOT_PRESENT,
                FailureReason.DOES_NOT_EXIST)
_NO_KEY = object()


def raise_failure(name: str, partition: int | None, result: QueryResult) -> None:
    """Raise the error of a failed ``result`` of store ``name`` (nothing on a success).

    >>> raise_failure("s", 1, QueryResult.for_failure(FailureReason.NOT_PRESENT, "gone"))
    Traceback (most recent call last):
    ...
    kspark.errors.StateStoreNotAvailableError: state store 's' partition 1 cannot answer \
(NOT_PRESENT): gone
    """
    if result.is_success():
        return
    reason = result.get_failure_reason()
    where = "" if partition is None else f" partition {partition}"
    text = f"state store {name!r}{where} cannot answer ({reason.name}): " \
           f"{result.get_failure_message()}"
    raise (StateStoreNotAvailableError if reason in _UNAVAILABLE else InvalidStateStoreError)(
        text)


class ReadOnlyStore:
    """What the read-only stores share: asking, narrowing a key's read to its partition,
    first-answer and concatenated reads."""

    def __init__(self, ask: Ask, name: str,
                 partition_of: Callable[[Any], int | None] | None = None):
        self._ask, self._name, self._partition_of = ask, name, partition_of

    def name(self) -> str:
        return self._name

    def _results(self, query: Any, key: Any = _NO_KEY) -> list[tuple[int | None, Any]]:
        """(partition, result) of each answer, in partition order, failures raised."""
        partitions = None
        if key is not _NO_KEY and self._partition_of is not None:
            p = self._partition_of(key)
            partitions = None if p is None else {p}
        answer = self._ask(query, partitions)
        found = answer.get_global_result()
        items = ([(None, found)] if found is not None
                 else sorted(answer.get_partition_results().items()))
        out = []
        for p, r in items:
            raise_failure(self._name, p, r)
            out.append((p, r.get_result()))
        return out

    def _first(self, query: Any, key: Any) -> Any:
        return next((v for _, v in self._results(query, key) if v is not None), None)

    def _concat(self, query: Any, key: Any = _NO_KEY) -> KeyValueIterator:
        return KeyValueIterator(iter([e for _, it in self._results(query, key) for e in it]))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"


class ReadOnlyKeyValueStore(ReadOnlyStore):
    """A read-only key-value store (Java's ``ReadOnlyKeyValueStore``); a DSL store's values
    without their timestamps.

    Example:
        >>> from kspark.query import StateQueryResult
        >>> def ask(query, partitions):  # a store answering 7 for any key
        ...     r = StateQueryResult(); r.add_result(0, QueryResult.for_result(7)); return r
        >>> ReadOnlyKeyValueStore(ask, "s").get("a")
        7
    """

    timestamped = False

    def get(self, key: Any) -> Any:
        q = (TimestampedKeyQuery if self.timestamped else KeyQuery).with_key(key)
        return self._first(q, key)

    def _range(self) -> Any:
        return TimestampedRangeQuery if self.timestamped else RangeQuery

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator:
        """Entries from ``from_key`` to ``to_key`` (None: open end), each partition's in key
        order."""
        return self._concat(self._range().with_range(from_key, to_key))

    def reverse_range(self, from_key: Any, to_key: Any) -> KeyValueIterator:
        return self._concat(self._range().with_range(from_key, to_key).with_descending_keys())

    def all(self) -> KeyValueIterator:
        return self._concat(AllQuery(False, self.timestamped))

    def reverse_all(self) -> KeyValueIterator:
        return self._concat(AllQuery(True, self.timestamped))

    def prefix_scan(self, prefix: Any, prefix_key_serializer: Any) -> KeyValueIterator:
        """Entries whose serialized key starts with ``prefix`` serialized by
        ``prefix_key_serializer`` (here, before asking)."""
        raw = prefix_key_serializer.serialize(self._name, prefix)
        return self._concat(PrefixScanQuery(raw, self.timestamped))

    def approximate_num_entries(self) -> int:
        """The sum of every partition's approximate number of entries."""
        return sum(n for _, n in self._results(ApproximateNumEntriesQuery()))


class ReadOnlyTimestampedKeyValueStore(ReadOnlyKeyValueStore):
    """A read-only DSL key-value store with its values as ValueAndTimestamp."""

    timestamped = True


class ReadOnlyVersionedKeyValueStore(ReadOnlyStore):
    """A read-only versioned store: ``get(key)`` the latest version, ``get(key, as_of)``
    the one valid then (a VersionedRecord or None)."""

    def get(self, key: Any, as_of: Any = None) -> Any:
        q = VersionedKeyQuery.with_key(key)
        return self._first(q if as_of is None else q.as_of(as_of), key)
