"""State stores: build them with :class:`Stores`, attach them to processors.

Example:
    >>> from kspark import Serdes
    >>> from kspark.state import Stores
    >>> builder = Stores.key_value_store_builder(
    ...     Stores.persistent_key_value_store("counts"), Serdes.String(), Serdes.Long())
    >>> builder.name, builder.logging_enabled, builder.caching_enabled
    ('counts', True, False)
"""

from kspark._engine.state.delayed import DelayedRecordsStore
from kspark._engine.state.kv import KeyValue, KeyValueIterator, KeyValueStore
from kspark._engine.state.session import SessionStore
from kspark._engine.state.timestamped import ValueAndTimestamp
from kspark._engine.state.versioned import VersionedKeyValueStore, VersionedRecord
from kspark._engine.state.window import WindowStore
from kspark.state.stores import (
    DelayedRecordsStoreBuilder,
    KeyValueBytesStoreSupplier,
    KeyValueStoreBuilder,
    SessionBytesStoreSupplier,
    SessionStoreBuilder,
    Stores,
    VersionedBytesStoreSupplier,
    VersionedKeyValueStoreBuilder,
    WindowBytesStoreSupplier,
    WindowStoreBuilder,
)

__all__ = ["DelayedRecordsStore", "DelayedRecordsStoreBuilder", "KeyValue", "KeyValueIterator",
           "KeyValueStore", "KeyValueBytesStoreSupplier", "KeyValueStoreBuilder", "Stores",
           "WindowBytesStoreSupplier", "WindowStore", "WindowStoreBuilder", "SessionStore",
           "SessionBytesStoreSupplier", "SessionStoreBuilder", "ValueAndTimestamp",
           "VersionedBytesStoreSupplier", "VersionedKeyValueStore", "VersionedKeyValueStoreBuilder",
           "VersionedRecord"]
