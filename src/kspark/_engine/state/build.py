"""Build a store from its builder for one task: byte store, then logging, caching, typing."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kspark._engine.state.bytes_stores import InMemoryBytesStore, RocksDBBytesStore
from kspark._engine.state.kv import KeyValueStore
from kspark._engine.state.layers import CachingLayer, ChangeLoggingLayer, RecordCache, WriteBuffer
from kspark.errors import StateStoreError

__all__ = ["build_store", "store_kind", "changelog_topic", "task_store_dir", "bottom",
           "discard_buffered", "private_state_dir"]


def changelog_topic(application_id: str, store: str) -> str:
    """``<application.id>-<store>-changelog``, as Kafka Streams names it."""
    return f"{application_id}-{store}-changelog"


def build_store(builder: Any, directory: Path | None = None,
                log: Callable[[bytes, bytes | None], None] | None = None,
                batch_buffer: bool = False, cache: RecordCache | None = None) -> Any:
    """The store ``builder`` describes; ``log`` receives changes when logging is enabled.

    ``batch_buffer`` holds every write until the batch commits (a write buffer under the
    cache, if any), so a failed batch leaves the store as the batch found it. ``cache`` is
    the task's record-cache budget that a caching store shares (unbounded if None).
    """
    supplier = builder.supplier
    if supplier.persistent:
        where = directory or Path(tempfile.mkdtemp(prefix="kspark-store-"))
        inner: Any = RocksDBBytesStore(supplier.name, Path(where) / supplier.name)
    else:
        inner = InMemoryBytesStore(supplier.name)
    if builder.logging_enabled and log is not None:
        inner = ChangeLoggingLayer(inner, log)
    if batch_buffer:
        inner = WriteBuffer(inner)
    kind = store_kind(builder)
    if builder.caching_enabled:
        inner = CachingLayer(inner, cache=cache, fill_on_read=kind == "kv")
    if kind == "delayed":
        from kspark._engine.state.delayed import DelayedRecordsStore

        store: Any = DelayedRecordsStore(supplier.name, inner, builder.key_serde,
                                         builder.value_serde)
    elif kind == "versioned":
        from kspark._engine.state.versioned import VersionedKeyValueStore

        store = VersionedKeyValueStore(supplier.name, inner, builder.key_serde,
                                            builder.value_serde, supplier.history_retention_ms)
    elif kind == "session":
        from kspark._engine.state.session import SessionStore

        store = SessionStore(supplier.name, inner, builder.key_serde, builder.value_serde,
                                  supplier.retention_ms)
    elif kind == "window":
        from kspark._engine.state.window import WindowStore

        store = WindowStore(supplier.name, inner, builder.key_serde, builder.value_serde,
                            supplier.retention_ms, supplier.window_size_ms,
                            supplier.retain_duplicates, supplier.time_first)
    else:
        store = KeyValueStore(supplier.name, inner, builder.key_serde, builder.value_serde)
    store.caching_enabled = bool(builder.caching_enabled)
    return store


def store_kind(builder: Any) -> str:
    """``kv``, ``window``, ``session``, ``versioned`` or ``delayed``: what ``builder`` builds."""
    supplier = builder.supplier
    if getattr(builder, "delayed_records", False):
        return "delayed"
    if hasattr(supplier, "history_retention_ms"):
        return "versioned"
    if hasattr(supplier, "window_size_ms"):
        return "window"
    if hasattr(supplier, "retention_ms"):
        return "session"
    return "kv"


def bottom(store: KeyValueStore) -> Any:
    """The byte store under all layers (restoration writes there, unlogged)."""
    inner = store.inner
    while hasattr(inner, "inner"):
        inner = inner.inner
    return inner


def discard_buffered(store: KeyValueStore) -> None:
    """Drop writes held by a write buffer or a cache (the batch failed)."""
    inner = store.inner
    while inner is not None:
        if isinstance(inner, (CachingLayer, WriteBuffer)):
            inner.discard()
        inner = getattr(inner, "inner", None)


def task_store_dir(state_dir: str, application_id: str, task_id: str) -> Path:
    """``<state.dir>/<application.id>/<task>``: where a task's persistent stores live."""
    private_state_dir(state_dir)
    return Path(os.path.join(state_dir, application_id, task_id))


_CHECKED: set[str] = set()


def private_state_dir(state_dir: str) -> Path:
    """Create ``state_dir`` readable by its owner only (0700) if it is missing; refuse one
    that another user owns (its stores could be read or planted by that user).

    >>> import tempfile, os, stat
    >>> d = os.path.join(tempfile.mkdtemp(), "state")
    >>> oct(stat.S_IMODE(private_state_dir(d).stat().st_mode))
    '0o700'
    """
    path = Path(state_dir)
    if state_dir in _CHECKED:
        return path
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        owner = path.stat().st_uid
    except OSError as e:
        raise StateStoreError(f"state.dir {state_dir!r} cannot be created or read "
                              f"({e.strerror}); set state.dir to a directory you own") from None
    if hasattr(os, "getuid") and owner != os.getuid():
        raise StateStoreError(
            f"state.dir {state_dir!r} belongs to another user (uid {owner}); kspark refuses "
            "it, since that user could read or plant state. Set state.dir to a directory you "
            "own (the default is per user)")
    _CHECKED.add(state_dir)
    return path
