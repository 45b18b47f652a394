"""Versioned stores answering VersionedKeyQuery and MultiVersionedKeyQuery, with each
version's ``valid_to`` (as Java's RocksDBVersionedStore answers them)."""

from __future__ import annotations

from typing import Any

from kspark._engine.state.versioned import VersionedKeyValueStore, VersionedRecord
from kspark.query.queries import ResultOrder

__all__ = ["versioned_get", "multi_versioned"]

_MIN, _MAX = -(1 << 63), (1 << 63) - 1


def versioned_get(store: VersionedKeyValueStore, key: Any,
                  as_of: int | None) -> VersionedRecord | None:
    """The latest version of ``key`` or the one valid ``as_of``; with its ``valid_to`` when
    a newer version ended it.

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> s = Stores.versioned_key_value_store_builder(
        ...     Stores.persistent_versioned_key_value_store("v", 100), Serdes.String(),
        ...     Serdes.Long()).with_logging_disabled().build()
        >>> _ = s.put("a", 1, 10), s.put("a", 2, 20)
        >>> versioned_get(s, "a", 15), versioned_get(s, "a", None)
        (VersionedRecord(value=1, timestamp=10, valid_to=20), VersionedRecord(value=2, \
timestamp=20, valid_to=None))
    """
    found = store.get(key, as_of)
    if found is None or as_of is None:
        return found
    return next((v for v in store.versions(key) if v.timestamp == found.timestamp), found)


def multi_versioned(store: VersionedKeyValueStore, query: Any) -> list[VersionedRecord]:
    """The versions of ``query.key`` valid at some time in ``[from, to]``, newest first
    (oldest first if the query asks ascending). Past the history retention only the
    latest version answers, as the store's own reads.

    Example:
        >>> from kspark import Serdes
        >>> from kspark.query import MultiVersionedKeyQuery
        >>> from kspark.state import Stores
        >>> s = Stores.versioned_key_value_store_builder(
        ...     Stores.persistent_versioned_key_value_store("v", 100), Serdes.String(),
        ...     Serdes.Long()).with_logging_disabled().build()
        >>> _ = s.put("a", 1, 10), s.put("a", 2, 20), s.put("a", 3, 30)
        >>> [v.value for v in multi_versioned(s, MultiVersionedKeyQuery.with_key("a")
        ...                                   .from_time(15).to_time(25))]
        [2, 1]
    """
    lo = _MIN if query.from_timestamp is None else query.from_timestamp
    hi = _MAX if query.to_timestamp is None else query.to_timestamp
    if lo > hi:
        raise ValueError("The `from_time` timestamp must be smaller than the `to_time` "
                         "timestamp.")
    versions = store.versions(query.key)
    if hi < store.observed_stream_time() - store.history_retention_ms:
        versions = [v for v in versions[-1:] if v.valid_to is None]  # the latest only
    found = [v for v in versions
             if v.timestamp <= hi and (v.valid_to is None or v.valid_to > lo)]
    return found if query.order is ResultOrder.ASCENDING else found[::-1]
