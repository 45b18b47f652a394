"""Build a store from its builder for one task: byte store, then logging, caching, and the
typed store the builder names.

Every store supplier declares what kind of store it makes (:class:`StoreKind`, its
``kind``) and builds it (``typed_store``); a builder passes both on (a delayed-records
builder makes its own kind). :func:`build_store` only stacks the layers in between.
"""

from __future__ import annotations

import enum
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kspark._graph.resources import changelog_topic
from kspark._engine.state.bytes_stores import InMemoryBytesStore, RocksDBBytesStore
from kspark._engine.state.dirty_log import CommitLoggingLayer
from kspark._engine.state.kv import StoreBase
from kspark._engine.state.layers import CachingLayer, ChangeLoggingLayer, RecordCache, WriteBuffer
from kspark.errors import StateStoreError, TopologyError

__all__ = ["build_store", "StoreKind", "store_kind", "supplier_kind", "changelog_topic",
           "changelog_config",
           "task_store_dir", "bottom", "discard_buffered", "private_state_dir"]


class StoreKind(enum.Enum):
    """What a store supplier or builder makes."""

    KEY_VALUE = "kv"
    WINDOW = "window"
    SESSION = "session"
    VERSIONED = "versioned"
    DELAYED = "delayed"  # delayed records (KIP-311), over a key-value supplier


def supplier_kind(supplier: Any) -> StoreKind:
    """The kind of store ``supplier`` declares; a TopologyError naming it if it declares none.

    Example:
        >>> from kspark.state import Stores
        >>> supplier_kind(Stores.persistent_session_store("s", 100))
        <StoreKind.SESSION: 'session'>
        >>> supplier_kind("s")
        Traceback (most recent call last):
        ...
        kspark.errors.TopologyError: store supplier 's' (a str) declares no store kind ...
    """
    kind = getattr(type(supplier), "kind", None)
    if not isinstance(kind, StoreKind) or not callable(getattr(supplier, "typed_store", None)):
        raise TopologyError(
            f"store supplier {supplier!r} (a {type(supplier).__name__}) declares no store kind "
            f"and cannot build a typed store: kspark builds key-value, window, session and "
            f"versioned stores from the suppliers of kspark.state.Stores; make one there")
    return kind


def store_kind(builder: Any) -> StoreKind:
    """What ``builder`` builds (its declared ``kind``); a TopologyError naming its supplier
    if that declares none."""
    try:
        kind = builder.kind  # a builder of kspark.state: its supplier's (see supplier_kind)
    except AttributeError:
        kind = None
    if not isinstance(kind, StoreKind) or not callable(getattr(builder, "typed_store", None)):
        raise TopologyError(f"store builder {builder!r} (a {type(builder).__name__}) declares "
                            f"no store kind: make store builders with kspark.state.Stores")
    return kind


# Kafka Streams' internal topic defaults: the record's own timestamp is kept (a restore
# brings back the timestamps the task wrote)
_INTERNAL_TOPIC_DEFAULTS = {"message.timestamp.type": "CreateTime"}
_DAY_MS = 24 * 3600 * 1000


def changelog_config(builder: Any, topic_overrides: Mapping[str, Any] | None = None
                     ) -> dict[str, str]:
    """The topic configs of ``builder``'s changelog: compacted (its length tracks keys, not
    updates), record timestamps kept, and for a versioned store history kept at least its
    history retention plus a day before compaction, as Kafka Streams sets them. Then
    ``topic_overrides`` (the config's ``topic.*`` keys) and the store's own
    ``with_logging_enabled`` map, each over what comes before.

    Window and session stores' changelogs stay ``compact``: Kafka Streams makes them
    ``compact,delete`` with ``retention.ms`` = retention + 1 day, which the broker applies to
    the records' timestamps against its wall clock, so a run over older data (a reprocess,
    or timestamps from the past) would lose the changelog of windows still open in stream
    time, and a restore would silently miss them. Give a store that map yourself to have it.

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> S = Serdes.String()
        >>> b = Stores.key_value_store_builder(Stores.persistent_key_value_store("c"), S, S)
        >>> changelog_config(b)["cleanup.policy"]
        'compact'
        >>> w = Stores.window_store_builder(Stores.persistent_window_store("w", 1000, 100), S, S)
        >>> c = changelog_config(w, {"segment.bytes": 1 << 20})
        >>> c["cleanup.policy"], c["segment.bytes"]
        ('compact', '1048576')
    """
    out = {**_INTERNAL_TOPIC_DEFAULTS, "cleanup.policy": "compact"}
    supplier, own = builder.supplier, dict(builder.log_config)
    versioned = getattr(supplier, "kind", None) is StoreKind.VERSIONED
    if versioned and "min.compaction.lag.ms" not in own:
        out["min.compaction.lag.ms"] = str(supplier.history_retention_ms + _DAY_MS)
    out.update({k: str(v) for k, v in (topic_overrides or {}).items()})
    out.update({k: str(v) for k, v in own.items()})
    return out


def build_store(builder: Any, directory: Path | None = None,
                log: Callable[..., None] | None = None,
                batch_buffer: bool = False, cache: RecordCache | None = None,
                lock_wait_s: float = 0.0, durable_commits: bool = True) -> Any:
    """The store ``builder`` describes; ``log(key, value[, timestamp])`` receives changes
    when logging is enabled (a versioned store gives each version's timestamp).
    ``lock_wait_s``: how long a persistent store waits for a lock held elsewhere.
    ``durable_commits``: whether a persistent store's flush (a commit) writes RocksDB's
    memtable to disk (a host's); False: only its close does (the TopologyTestDriver's).

    ``batch_buffer`` holds every write until the batch commits (a write buffer under the
    cache, if any), so a failed batch leaves the store as the batch found it. ``cache`` is
    the task's record-cache budget that a caching store shares (unbounded if None).
    """
    kind = store_kind(builder)
    supplier = builder.supplier
    if supplier.persistent:
        where = directory or Path(tempfile.mkdtemp(prefix="kspark-store-"))
        inner: Any = RocksDBBytesStore(supplier.name, Path(where) / supplier.name, lock_wait_s,
                                       durable_commits)
    else:
        inner = InMemoryBytesStore(supplier.name)
    logged = builder.logging_enabled and log is not None
    if log is not None and logged and getattr(getattr(builder, "value_serde", None),
                                              "log_on_flush", False):
        inner = CommitLoggingLayer(inner, log)  # a suppress buffer: at commits, as Java's
    elif log is not None and logged and kind is not StoreKind.VERSIONED:  # a versioned
        inner = ChangeLoggingLayer(inner, log)  # store logs each version itself
    if batch_buffer:
        inner = WriteBuffer(inner)
    if builder.caching_enabled:
        inner = CachingLayer(inner, cache=cache, fill_on_read=kind is StoreKind.KEY_VALUE)
    store = builder.typed_store(inner)
    store.caching_enabled = bool(builder.caching_enabled)
    if logged and kind is StoreKind.VERSIONED:
        store.changelog = log  # log(key, value, valid_from), as Java's versioned changelog
    return store


def bottom(store: StoreBase) -> Any:
    """The byte store under all layers (restoration writes there, unlogged)."""
    return store.bottom()


def discard_buffered(store: StoreBase) -> None:
    """Drop writes held by a write buffer or a cache (the batch failed)."""
    for layer in store.layers():
        if isinstance(layer, (CachingLayer, WriteBuffer)):
            layer.discard()


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
