"""The Stores factory, store suppliers and builders."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kspark._engine.state.build import build_store
from kspark._engine.state.kv import KeyValueStore

__all__ = ["Stores", "KeyValueBytesStoreSupplier", "KeyValueStoreBuilder",
           "WindowBytesStoreSupplier", "WindowStoreBuilder", "SessionBytesStoreSupplier",
           "SessionStoreBuilder"]


@dataclass(frozen=True)
class KeyValueBytesStoreSupplier:
    """Names a key-value store and says whether it is persistent (RocksDB) or in memory."""

    name: str
    persistent: bool


@dataclass(frozen=True)
class KeyValueStoreBuilder:
    """A store to build per task: supplier, serdes, logging and caching."""

    supplier: KeyValueBytesStoreSupplier
    key_serde: Any
    value_serde: Any
    logging_enabled: bool = True
    log_config: tuple[tuple[str, str], ...] = ()
    caching_enabled: bool | None = False  # None: as statestore.cache.max.bytes says (DSL stores)

    @property
    def name(self) -> str:
        return self.supplier.name

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
class WindowBytesStoreSupplier:
    """Names a window store: persistence, retention, window size, duplicates (for joins)."""

    name: str
    persistent: bool
    retention_ms: int
    window_size_ms: int
    retain_duplicates: bool = False


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
        return WindowBytesStoreSupplier(name, False, retention_ms, window_size_ms, retain_duplicates)

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
    def key_value_store_builder(supplier: KeyValueBytesStoreSupplier, key_serde: Any,
                                value_serde: Any) -> KeyValueStoreBuilder:
        return KeyValueStoreBuilder(supplier, key_serde, value_serde)
