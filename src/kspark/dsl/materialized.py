"""Materialized: how a DSL operation's state store is named, typed and built."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kspark._engine.either import either
from kspark.dsl._overloads import check_serdes
from kspark._engine.state.build import StoreKind, supplier_kind
from kspark._engine.durations import to_ms
from kspark.errors import TopologyError
from kspark._engine.state.timestamped import ValueAndTimestampSerde
from kspark.state import stores

__all__ = ["Materialized"]


@dataclass(frozen=True)
class Materialized:
    """Store name (queryable), serdes, store type, logging and caching of a DSL store.

    Example:
        >>> from kspark import Serdes
        >>> m = Materialized.as_("counts").with_value_serde(Serdes.Long()).with_caching_disabled()
        >>> m.store_name, m.caching
        ('counts', False)
    """

    store_name: str | None = None
    key_serde: Any = None
    value_serde: Any = None
    persistent: bool = True
    caching: bool | None = None  # None: statestore.cache.max.bytes decides
    logging: bool = True
    log_config: tuple[tuple[str, str], ...] = ()
    retention_ms: int | None = None  # window and session stores: None is size (gap) + grace
    history_retention_ms: int | None = None  # set: a versioned key-value store (KIP-889)

    def __post_init__(self) -> None:
        check_serdes("Materialized", key_serde=self.key_serde, value_serde=self.value_serde)

    @either
    def as_(self, store: Any) -> "Materialized":
        """Name the store (a name, or a store supplier from :class:`~kspark.state.Stores`).
        Called on a configured value it keeps its settings (Java's static factory there
        would drop them)."""
        if isinstance(store, str):
            return replace(self, store_name=store)
        versioned = supplier_kind(store) is StoreKind.VERSIONED
        return replace(self, store_name=store.name, persistent=store.persistent,
                       history_retention_ms=store.history_retention_ms if versioned else None)

    @either
    def with_(self, key_serde: Any, value_serde: Any) -> "Materialized":
        return replace(self, key_serde=key_serde, value_serde=value_serde)

    def with_key_serde(self, serde: Any) -> "Materialized":
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> "Materialized":
        return replace(self, value_serde=serde)

    def with_caching_enabled(self) -> "Materialized":
        return replace(self, caching=True)

    def with_caching_disabled(self) -> "Materialized":
        return replace(self, caching=False)

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> "Materialized":
        return replace(self, logging=True, log_config=tuple((config or {}).items()))

    def with_logging_disabled(self) -> "Materialized":
        return replace(self, logging=False)

    def with_retention(self, retention_ms: Any) -> "Materialized":
        """How long a window or session store keeps windows; at least the window size (or
        session gap) plus grace, checked when the aggregation is added."""
        retention_ms = to_ms(retention_ms, "Materialized.with_retention retention")
        if retention_ms < 0:
            raise TopologyError(f"a store's retention must not be negative (got {retention_ms})")
        return replace(self, retention_ms=retention_ms)

    def in_memory(self) -> "Materialized":
        """Keep the store in memory instead of RocksDB."""
        return replace(self, persistent=False)

    def builder(self, default_name: str, key_serde: Any, value_serde: Any) -> Any:
        """The timestamped (or versioned) key-value store builder this describes."""
        if self.history_retention_ms is not None:
            return stores.VersionedKeyValueStoreBuilder(
                stores.VersionedBytesStoreSupplier(self.store_name or default_name,
                                                   self.history_retention_ms),
                self.key_serde if self.key_serde is not None else key_serde,
                self.value_serde if self.value_serde is not None else value_serde,
                logging_enabled=self.logging, log_config=self.log_config, caching_enabled=False)
        supplier = stores.KeyValueBytesStoreSupplier(self.store_name or default_name,
                                                     self.persistent)
        vs = self.value_serde if self.value_serde is not None else value_serde
        return stores.KeyValueStoreBuilder(
            supplier, self.key_serde if self.key_serde is not None else key_serde,
            ValueAndTimestampSerde(vs),
            logging_enabled=self.logging, log_config=self.log_config, caching_enabled=self.caching)
