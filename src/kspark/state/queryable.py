"""Read-only stores for interactive queries (IQv1): which type of store to read
(:class:`QueryableStoreTypes`) and which store, partition and staleness
(:class:`StoreQueryParameters`), as Java's ``KafkaStreams.store(params)`` takes them.

Example:
    >>> from kspark import Materialized, Serdes, StreamsBuilder
    >>> from kspark.testing import TopologyTestDriver
    >>> b = StreamsBuilder()
    >>> _ = b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
    ...  .group_by_key().count(Materialized.as_("counts"))
    >>> with TopologyTestDriver(b.build()) as d:
    ...     d.create_input_topic("in", Serdes.String(), Serdes.String()).pipe_input("a", "x")
    ...     store = d.store(StoreQueryParameters.from_name_and_type(
    ...         "counts", QueryableStoreTypes.key_value_store()))
    ...     store.get("a"), [tuple(kv) for kv in store.all()]
    (1, [('a', 1)])
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from kspark._engine.query.types import store_shape

__all__ = ["QueryableStoreType", "QueryableStoreTypes", "StoreQueryParameters"]


@dataclass(frozen=True)
class QueryableStoreType:
    """A type of read-only store: the ``kind`` of store it reads (``key-value``,
    ``window``, ``session``, ``versioned key-value``) and whether it reads values with
    their timestamps (then it accepts only stores that keep them: the DSL's)."""

    name: str
    kind: str
    timestamped: bool = False

    def accepts(self, store: Any) -> bool:
        """Whether this type can read ``store`` (an engine store)."""
        kind, stamped = store_shape(store)
        return kind == self.kind and (stamped or not self.timestamped)

    def __repr__(self) -> str:
        return f"QueryableStoreTypes.{self.name}()"


class QueryableStoreTypes:
    """The types of read-only store (Java's ``QueryableStoreTypes``).

    Example:
        >>> QueryableStoreTypes.timestamped_window_store()
        QueryableStoreTypes.timestamped_window_store()
        >>> QueryableStoreTypes.key_value_store().kind
        'key-value'
    """

    @staticmethod
    def key_value_store() -> QueryableStoreType:
        """A key-value store; a DSL store's values read without their timestamps."""
        return QueryableStoreType("key_value_store", "key-value")

    @staticmethod
    def timestamped_key_value_store() -> QueryableStoreType:
        """A DSL key-value store, values as ValueAndTimestamp."""
        return QueryableStoreType("timestamped_key_value_store", "key-value", True)

    @staticmethod
    def window_store() -> QueryableStoreType:
        """A window store; a DSL store's values read without their timestamps."""
        return QueryableStoreType("window_store", "window")

    @staticmethod
    def timestamped_window_store() -> QueryableStoreType:
        """A DSL window store, values as ValueAndTimestamp."""
        return QueryableStoreType("timestamped_window_store", "window", True)

    @staticmethod
    def session_store() -> QueryableStoreType:
        return QueryableStoreType("session_store", "session")

    @staticmethod
    def versioned_key_value_store() -> QueryableStoreType:
        """A versioned key-value store: ``get(key)`` and ``get(key, as_of)`` (kspark's;
        Java reads versioned stores through IQv2 only)."""
        return QueryableStoreType("versioned_key_value_store", "versioned key-value")


@dataclass(frozen=True)
class StoreQueryParameters:
    """Which store to read, as which type, on which partition (None: all), and whether a
    standby or restoring copy may answer (``enable_stale_stores``).

    Example:
        >>> p = StoreQueryParameters.from_name_and_type(
        ...     "counts", QueryableStoreTypes.key_value_store()).with_partition(1)
        >>> p.store_name(), p.partition(), p.stale_stores_enabled()
        ('counts', 1, False)
    """

    name: str
    store_type: QueryableStoreType
    partition_number: int | None = None
    stale: bool = False

    @classmethod
    def from_name_and_type(cls, name: str,
                           store_type: QueryableStoreType) -> "StoreQueryParameters":
        return cls(name, store_type)

    def with_partition(self, partition: int | None) -> "StoreQueryParameters":
        return replace(self, partition_number=partition)

    def enable_stale_stores(self) -> "StoreQueryParameters":
        return replace(self, stale=True)

    def store_name(self) -> str:
        return self.name

    def query_type(self) -> QueryableStoreType:
        return self.store_type

    def partition(self) -> int | None:
        return self.partition_number

    def stale_stores_enabled(self) -> bool:
        return self.stale
