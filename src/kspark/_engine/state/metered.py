"""Kafka Streams' state-store metrics (``stream-state-metrics``) and the record cache's hit
ratio (``stream-record-cache-metrics``), recorded as Java's metered stores and named caches
record them: at DEBUG the latency (ns) of each call to a store (``put``, ``get``, ``range``,
``fetch``, ``flush``, ...), at TRACE also the end-to-end latency of each record put, and at
DEBUG the cache's hit ratio at each lookup.

Below DEBUG nothing here runs: a task's stores stay as they were built (no wrapper, no
clock read). At DEBUG :func:`meter_store` makes each store an instance of a subclass of its
class whose metered methods are timed (every ``isinstance`` still holds), as Java stacks its
metered store on top: a call that another metered call makes inside the
store (``put_if_absent`` calling ``put``) is not counted twice. A range's latency runs from
the call until its iterator is exhausted or dropped (Java: until it is closed).

Example:
    >>> from kspark import Serdes
    >>> from kspark.state import Stores
    >>> from kspark._engine.metrics.stats import TaskStats
    >>> S = Serdes.String()
    >>> store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"), S, S
    ...     ).with_logging_disabled().build()
    >>> stats = TaskStats("0_0", level=1)
    >>> meter_store(store, stats)
    >>> store.put("a", "1"); store.put_if_absent("a", "2"); [kv.key for kv in store.all()]
    '1'
    ['a']
    >>> sorted(k for k in stats.peek() if not k.startswith("="))
    ['store-all|0_0|s', 'store-put-if-absent|0_0|s', 'store-put|0_0|s']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from kspark._engine.state.kv import KeyValueIterator
from kspark._engine.state.layers import CachingLayer
from kspark._engine.state.kv import KeyValueStore
from kspark._engine.state.versioned import VersionedKeyValueStore

__all__ = ["meter_store", "meter_cache", "store_scope", "OPERATIONS"]

# per store type, each metered method and the operation (Java's sensor) it counts as
_KV = {"put": "put", "put_if_absent": "put-if-absent", "put_all": "put-all", "get": "get",
       "delete": "delete", "range": "range", "reverse_range": "range", "all": "all",
       "reverse_all": "all", "prefix_scan": "prefix-scan", "flush": "flush"}
_WINDOW = {"put": "put", "fetch": "fetch", "backward_fetch": "fetch", "fetch_all": "fetch",
           "backward_fetch_all": "fetch", "all": "fetch", "backward_all": "fetch",
           "flush": "flush"}
_SESSION = {"put": "put", "remove": "remove", "fetch": "fetch", "backward_fetch": "fetch",
            "fetch_session": "fetch", "find_sessions": "fetch",
            "backward_find_sessions": "fetch", "flush": "flush"}
_VERSIONED = {"put": "put", "get": "get", "delete": "delete", "flush": "flush"}
OPERATIONS = {"kv": _KV, "window": _WINDOW, "session": _SESSION, "versioned": _VERSIONED}
_PUTS = {"put", "put-if-absent", "put-all"}  # followed by the record's end-to-end latency


def _type(store: Any) -> str | None:
    from kspark._engine.state.session import SessionStore
    from kspark._engine.state.window import WindowStore

    for cls, name in ((KeyValueStore, "kv"), (WindowStore, "window"),
                      (SessionStore, "session"), (VersionedKeyValueStore, "versioned")):
        if isinstance(store, cls):
            return name
    return None  # delayed records (a kspark store Java has no metered store of)


def store_scope(store: Any) -> str | None:
    """The store type Java names a store's metrics by (its ``<type>-state-id`` tag):
    ``rocksdb``, ``in-memory``, ``rocksdb-window``, ``in-memory-session``, ...; None for a
    store Java has no metered store of.

    >>> from kspark.state import Stores
    >>> from kspark import Serdes
    >>> S = Serdes.String()
    >>> store_scope(Stores.window_store_builder(Stores.persistent_window_store("w", 9, 3), S,
    ...                                         S).with_logging_disabled().build())
    'rocksdb-window'
    """
    kind = _type(store)
    if kind is None:
        return None
    base = "rocksdb" if store.persistent() else "in-memory"
    return f"{base}-{kind}" if kind in ("window", "session") else base


def meter_store(store: Any, stats: Any, clock: Callable[[], int] | None = None,
                timestamp: Callable[[], int] | None = None) -> None:
    """Time ``store``'s calls into ``stats`` (a TaskStats at DEBUG or above); with ``clock``
    and ``timestamp`` (TRACE), each put also records ``clock() - timestamp()``, the
    record's end-to-end latency. The store becomes an instance of a metered subclass of its
    class (same name; a copy of it, such as the test driver's view, is metered too)."""
    kind = _type(store)
    if kind is None:
        return
    store._meter = (stats, clock if timestamp is not None else None, timestamp, [0])  # noqa: SLF001
    store.__class__ = _metered_class(type(store), kind)


_CLASSES: dict[type, type] = {}


def _metered_class(cls: type, kind: str) -> type:
    sub = _CLASSES.get(cls)
    if sub is None:
        methods = {m: _timed(getattr(cls, m), f"store-{op}", op in _PUTS)
                   for m, op in OPERATIONS[kind].items() if hasattr(cls, m)}
        sub = _CLASSES[cls] = type(cls.__name__, (cls,), {
            **methods, "__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return sub


def _timed(call: Callable[..., Any], stat: str, put: bool) -> Callable[..., Any]:
    now = time.perf_counter_ns

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        stats, clock, timestamp, depth = self._meter
        if depth[0]:  # inside another metered call of this store: counted there
            return call(self, *args, **kwargs)
        depth[0] += 1
        began = now()
        try:
            out = call(self, *args, **kwargs)
        finally:
            depth[0] -= 1
        where = self._name
        if isinstance(out, KeyValueIterator):
            out._it = _until_done(out._it, began, stat, where, stats)  # noqa: SLF001
        else:
            stats.record(stat, now() - began, where)
        if put and clock is not None:
            stats.record("store-e2e", clock() - timestamp(), where)
        return out

    timed.__name__ = call.__name__
    timed.__doc__ = call.__doc__
    return timed


def _until_done(entries: Iterator[Any], began: int, stat: str, where: str,
                stats: Any) -> Iterator[Any]:
    try:
        yield from entries
    finally:
        stats.record(stat, time.perf_counter_ns() - began, where)


def meter_cache(store: Any, stats: Any) -> bool:
    """Record the hit ratio of ``store``'s record cache (if it has one) at each lookup, as
    Java's named cache: hits over lookups so far (a multi-get: one lookup per key, each
    answered as a ``get``). Whether it has one."""
    layer = store.layer(CachingLayer) if callable(getattr(store, "layer", None)) else None
    if layer is None:
        return False
    get, entries, name, seen = layer.get, layer._entries, store.name(), [0, 0]  # noqa: SLF001

    def counted(key: bytes) -> bytes | None:
        seen[0] += key in entries
        seen[1] += 1
        stats.record("cache-hit-ratio", seen[0] / seen[1], name)
        return get(key)

    layer.get = counted
    layer.get_many = lambda keys: [counted(k) for k in keys]
    return True
