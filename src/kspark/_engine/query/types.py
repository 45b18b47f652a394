"""Which store a query type may read: the kind of an engine store (:func:`store_shape`),
the check of a QueryableStoreType against it (:func:`check_store_type`) and the error for a
store name the topology does not have (:func:`unknown_store`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kspark._engine.state.kv import KeyValueStore
from kspark._engine.state.session import SessionStore
from kspark._engine.state.timestamped import ValueAndTimestampSerde
from kspark._engine.state.versioned import VersionedKeyValueStore
from kspark._engine.state.window import WindowStore
from kspark.errors import InvalidStateStoreError, UnknownStateStoreError

__all__ = ["store_shape", "is_timestamped", "check_store_type", "unknown_store", "GETTERS"]

_KINDS = ((VersionedKeyValueStore, "versioned key-value"), (WindowStore, "window"),
          (SessionStore, "session"), (KeyValueStore, "key-value"))
# a store kind: the QueryableStoreTypes getters of (plain values, values with timestamps)
GETTERS = {"key-value": ("key_value_store", "timestamped_key_value_store"),
           "window": ("window_store", "timestamped_window_store"),
           "session": ("session_store", "session_store"),
           "versioned key-value": ("versioned_key_value_store", "versioned_key_value_store")}


def is_timestamped(store: Any) -> bool:
    """Whether ``store`` keeps its values with their timestamps (a DSL store)."""
    return isinstance(getattr(store, "value_serde", None), ValueAndTimestampSerde)


def store_shape(store: Any) -> tuple[str, bool]:
    """(kind, whether its values carry timestamps) of an engine store: kind is
    ``key-value``, ``versioned key-value``, ``window``, ``session`` or its class name.

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> s = Stores.window_store_builder(Stores.in_memory_window_store("w", 100, 10),
        ...     Serdes.String(), Serdes.Long()).build()
        >>> store_shape(s)
        ('window', False)
    """
    kind = next((k for cls, k in _KINDS if isinstance(store, cls)), type(store).__name__)
    return kind, is_timestamped(store)


def check_store_type(name: str, store: Any, store_type: Any) -> None:
    """An InvalidStateStoreError unless ``store_type`` (a QueryableStoreType: its ``kind``
    and whether it reads ``timestamped`` values) can read ``store``; the message says what
    the store is and which type reads it.

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> from kspark.state.queryable import QueryableStoreTypes
        >>> s = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"),
        ...     Serdes.String(), Serdes.Long()).build()
        >>> check_store_type("kv", s, QueryableStoreTypes.key_value_store())
        >>> check_store_type("kv", s, QueryableStoreTypes.window_store())
        Traceback (most recent call last):
        ...
        kspark.errors.InvalidStateStoreError: state store 'kv' is a key-value store, not a \
window store: query it with QueryableStoreTypes.key_value_store()
    """
    actual, stamped = store_shape(store)
    if actual == store_type.kind and (stamped or not store_type.timestamped):
        return
    what = f"{actual} store{' with timestamps' if stamped else ''}"
    wanted = f"{'timestamped ' if store_type.timestamped else ''}{store_type.kind} store"
    if actual in GETTERS:
        how = f"query it with QueryableStoreTypes.{GETTERS[actual][stamped]}()"
    else:
        how = "interactive queries cannot read it"
    raise InvalidStateStoreError(f"state store {name!r} is a {what}, not a {wanted}: {how}")


def unknown_store(name: str, names: Iterable[str]) -> UnknownStateStoreError:
    """The error for a query of store ``name`` the topology does not have.

    Example:
        >>> unknown_store("x", ["b", "a"])
        UnknownStateStoreError("Cannot get state store 'x' because no such store is \
registered in the topology; it has ['a', 'b']")
    """
    return UnknownStateStoreError(f"Cannot get state store {name!r} because no such store is "
                                  f"registered in the topology; it has {sorted(names)}")
