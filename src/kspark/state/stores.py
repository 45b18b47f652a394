"""The Stores factory, store suppliers and builders.

Each supplier declares the kind of store it makes (``kind``) and makes it over the byte
store and its layers (``typed_store``); a builder adds serdes, logging and caching.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kspark._engine.state.build import StoreKind, build_store, supplier_kind
from kspark._engine.state.delayed import DelayedRecordsStore
from kspark._engine.state.kv import KeyValueStore
from kspark._engine.state.session import SessionStore
from kspark._engine.state.versioned import VersionedKeyValueStore
from kspark._engine.state.window import WindowStore
from kspark._engine.durations import to_ms
from kspark.errors import TopologyError
from kspark._engine.state.timestamped import ValueAndTimestampSerde

__all__ = ["Stores", "KeyValueBytesStoreSupplier", "KeyValueStoreBuilder",
           "DelayedRecordsStoreBuilder", "VersionedBytesStoreSupplier",
           "VersionedKeyValueStoreBuilder",
           "WindowBytesStoreSupplier", "WindowStoreBuilder", "SessionBytesStoreSupplier",
           "SessionStoreBuilder"]


@dataclass(frozen=True)
class KeyValueBytesStoreSupplier:
    """Names a key-value store and says whether it is persistent (RocksDB) or in memory."""

    name: str
    persistent: bool
    kind: ClassVar[StoreKind] = StoreKind.KEY_VALUE

    def typed_store(self, inner: Any, key_serde: Any, value_serde: Any) -> KeyValueStore:
        """The store over ``inner`` (the byte store and its layers)."""
        return KeyValueStore(self.name, inner, key_serde, value_serde)


@dataclass(frozen=True)
class KeyValueStoreBuilder:
    """A store to build per task: supplier, serdes, logging and caching."""

    supplier: KeyValueBytesStoreSupplier
    key_serde: Any
    value_serde: Any
    logging_enabled: bool = True
    log_config: tuple[tuple[str, str], ...] = ()
    caching_enabled: bool | None = False  # None: as statestore.cache.max.bytes says (DSL stores)
    # kspark-internal: the input topic that is the store's changelog (a source KTable under
    # topology.optimization's reuse.ktable.source.topics; logging is then disabled)
    source_changelog: str | None = None

    @property
    def name(self) -> str:
        return self.supplier.name

    @property
    def kind(self) -> StoreKind:
        """What this builds: its supplier's kind (a TopologyError if it declares none)."""
        return supplier_kind(self.supplier)

    def typed_store(self, inner: Any) -> Any:
        """The typed store over ``inner`` (the byte store with logging and caching)."""
        return self.supplier.typed_store(inner, self.key_serde, self.value_serde)

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> "KeyValueStoreBuilder":
        """Back the store with a compacted changelog topic (``config``: its topic configs)."""
        return replace(self, logging_enabled=True, log_config=tuple((config or {}).items()))

    def with_logging_disabled(self) -> "KeyValueStoreBuilder":
        return replace(self, logging_enabled=False, log_config=())

    def with_caching_enabled(self) -> "KeyValueStoreBuilder":
        """Hold writes until commit, so each key's latest value is written (and emitted) once."""
        return replace(self, caching_enabled=True)

    def with_caching_disabled(self) -> "KeyValueStoreBuilder":
        return replace(self, caching_enabled=False)

    def build(self) -> KeyValueStore:
        """A standalone store (no changelog): for use outside a topology, e.g. in tests."""
        return build_store(self)


@dataclass(frozen=True)
class DelayedRecordsStoreBuilder(KeyValueStoreBuilder):
    """A store of records scheduled for later processing (``context.schedule_record``):
    connect it to the processor that schedules them. Changelog-backed unless logging is
    disabled, so pending records survive restarts."""

    delayed_records: bool = True

    @property
    def kind(self) -> StoreKind:
        supplier_kind(self.supplier)  # a supplier that declares a kind, if not this one
        return StoreKind.DELAYED

    def typed_store(self, inner: Any) -> DelayedRecordsStore:
        return DelayedRecordsStore(self.name, inner, self.key_serde, self.value_serde)


def _durations(supplier: Any, *fields: str) -> None:
    """Durations given as ``timedelta`` become int ms (as Java's ``Duration`` overloads)."""
    for f in fields:
        object.__setattr__(supplier, f, to_ms(getattr(supplier, f), f"store "
                                              f"{supplier.name!r} {f}"))


@dataclass(frozen=True)
class VersionedBytesStoreSupplier:
    """Names a versioned key-value store (KIP-889) and how far back it answers reads."""

    name: str
    history_retention_ms: int
    persistent: bool = True
    kind: ClassVar[StoreKind] = StoreKind.VERSIONED

    def typed_store(self, inner: Any, key_serde: Any, value_serde: Any) -> VersionedKeyValueStore:
        return VersionedKeyValueStore(self.name, inner, key_serde, value_serde,
                                      self.history_retention_ms)

    def __post_init__(self) -> None:
        _durations(self, "history_retention_ms")
        if self.history_retention_ms < 0:
            raise TopologyError(f"the history retention of versioned store {self.name!r} "
                                f"cannot be negative (got {self.history_retention_ms} ms)")


@dataclass(frozen=True)
class VersionedKeyValueStoreBuilder(KeyValueStoreBuilder):
    """A versioned key-value store to build per task (it never caches)."""

    def with_caching_enabled(self) -> "KeyValueStoreBuilder":
        raise TopologyError(f"versioned store {self.name!r} cannot cache (as in Kafka Streams)")

    def build(self) -> Any:
        return build_store(self)


@dataclass(frozen=True)
class WindowBytesStoreSupplier:
    """Names a window store: persistence, retention, window size, duplicates (for joins)."""

    name: str
    persistent: bool
    retention_ms: int
    window_size_ms: int
    retain_duplicates: bool = False
    time_first: bool = False  # kspark-internal: a final-results (on_window_close) store
    kind: ClassVar[StoreKind] = StoreKind.WINDOW

    def __post_init__(self) -> None:
        _durations(self, "retention_ms", "window_size_ms")

    def typed_store(self, inner: Any, key_serde: Any, value_serde: Any) -> WindowStore:
        return WindowStore(self.name, inner, key_serde, value_serde, self.retention_ms,
                           self.window_size_ms, self.retain_duplicates, self.time_first)


@dataclass(frozen=True)
class WindowStoreBuilder(KeyValueStoreBuilder):
    """A window store to build per task."""

    def build(self) -> Any:
        return build_store(self)


@dataclass(frozen=True)
class SessionBytesStoreSupplier:
    """Names a session store: persistence and retention."""

    name: str
    persistent: bool
    retention_ms: int
    kind: ClassVar[StoreKind] = StoreKind.SESSION

    def __post_init__(self) -> None:
        _durations(self, "retention_ms")

    def typed_store(self, inner: Any, key_serde: Any, value_serde: Any) -> SessionStore:
        return SessionStore(self.name, inner, key_serde, value_serde, self.retention_ms)


@dataclass(frozen=True)
class SessionStoreBuilder(KeyValueStoreBuilder):
    """A session store to build per task."""

    def build(self) -> Any:
        return build_store(self)


class Stores:
    """Factory of store suppliers and builders, named as Kafka Streams' ``Stores``."""

    @staticmethod
    def persistent_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        """A RocksDB key-value store."""
        return KeyValueBytesStoreSupplier(name, True)

    @staticmethod
    def in_memory_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        """An in-memory key-value store (restored from its changelog when logged)."""
        return KeyValueBytesStoreSupplier(name, False)

    @staticmethod
    def persistent_window_store(name: str, retention_ms: int, window_size_ms: int,
                                retain_duplicates: bool = False) -> WindowBytesStoreSupplier:
        """A RocksDB window store keeping windows for ``retention_ms``."""
        return WindowBytesStoreSupplier(name, True, retention_ms, window_size_ms, retain_duplicates)

    @staticmethod
    def in_memory_window_store(name: str, retention_ms: int, window_size_ms: int,
                               retain_duplicates: bool = False) -> WindowBytesStoreSupplier:
        return WindowBytesStoreSupplier(name, False, retention_ms, window_size_ms,
                                        retain_duplicates)

    @staticmethod
    def window_store_builder(supplier: WindowBytesStoreSupplier, key_serde: Any,
                             value_serde: Any) -> WindowStoreBuilder:
        return WindowStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def persistent_session_store(name: str, retention_ms: int) -> SessionBytesStoreSupplier:
        return SessionBytesStoreSupplier(name, True, retention_ms)

    @staticmethod
    def in_memory_session_store(name: str, retention_ms: int) -> SessionBytesStoreSupplier:
        return SessionBytesStoreSupplier(name, False, retention_ms)

    @staticmethod
    def session_store_builder(supplier: SessionBytesStoreSupplier, key_serde: Any,
                              value_serde: Any) -> SessionStoreBuilder:
        return SessionStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def persistent_timestamped_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        """A RocksDB key-value store for :meth:`timestamped_key_value_store_builder`."""
        return KeyValueBytesStoreSupplier(name, True)

    @staticmethod
    def timestamped_key_value_store_builder(supplier: KeyValueBytesStoreSupplier, key_serde: Any,
                                            value_serde: Any) -> KeyValueStoreBuilder:
        """A store of ``ValueAndTimestamp(value, timestamp)`` values (the DSL's own kind:
        a processor shares it with DSL tables)."""
        return KeyValueStoreBuilder(supplier, key_serde, ValueAndTimestampSerde(value_serde))

    @staticmethod
    def persistent_timestamped_window_store(name: str, retention_ms: int, window_size_ms: int,
                                            retain_duplicates: bool = False
                                            ) -> WindowBytesStoreSupplier:
        return WindowBytesStoreSupplier(name, True, retention_ms, window_size_ms, retain_duplicates)

    @staticmethod
    def timestamped_window_store_builder(supplier: WindowBytesStoreSupplier, key_serde: Any,
                                         value_serde: Any) -> WindowStoreBuilder:
        """A window store of ``ValueAndTimestamp`` values."""
        return WindowStoreBuilder(supplier, key_serde, ValueAndTimestampSerde(value_serde))

    @staticmethod
    def persistent_versioned_key_value_store(name: str, history_retention_ms: Any
                                             ) -> VersionedBytesStoreSupplier:
        """A versioned store (KIP-889): reads as of a timestamp within ``history_retention_ms``
        of the store's stream time. ``Materialized.as_`` it to make a versioned table."""
        return VersionedBytesStoreSupplier(name, history_retention_ms)

    @staticmethod
    def versioned_key_value_store_builder(supplier: VersionedBytesStoreSupplier, key_serde: Any,
                                          value_serde: Any) -> VersionedKeyValueStoreBuilder:
        return VersionedKeyValueStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def delayed_records_store_builder(supplier: KeyValueBytesStoreSupplier, key_serde: Any,
                                      value_serde: Any) -> DelayedRecordsStoreBuilder:
        """A delayed-records store (KIP-311) for a processor that calls
        ``context.schedule_record(record, delay_ms)``; the serdes are the records' (None: the
        default serdes).

        Example:
            >>> from kspark import Serdes
            >>> b = Stores.delayed_records_store_builder(
            ...     Stores.persistent_key_value_store("retries"), Serdes.String(), Serdes.Json())
            >>> b.name
            'retries'
        """
        return DelayedRecordsStoreBuilder(supplier, key_serde, value_serde)

    @staticmethod
    def key_value_store_builder(supplier: KeyValueBytesStoreSupplier, key_serde: Any,
                                value_serde: Any) -> KeyValueStoreBuilder:
        return KeyValueStoreBuilder(supplier, key_serde, value_serde)
