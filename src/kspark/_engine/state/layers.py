"""Layers stacked over a byte store, as in Kafka Streams: change-logging, a host's write
buffer, then the record cache."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ChangeLoggingLayer", "WriteBuffer", "CachingLayer", "RecordCache", "ENTRY_OVERHEAD",
           "Layer", "layer_stack", "put_all"]

Entry = tuple[bytes, bytes]


class Layer:
    """Passes every call to the store below (``inner``); layers override what they change."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.persistent = inner.persistent

    def get(self, key: bytes) -> bytes | None:
        return self.inner.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.inner.put(key, value)

    def delete(self, key: bytes) -> bytes | None:
        return self.inner.delete(key)

    def range(self, lo: bytes | None, hi: bytes | None, reverse: bool = False) -> Iterator[Entry]:
        return self.inner.range(lo, hi, reverse)

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()

    def destroy(self) -> None:
        self.inner.destroy()


def put_all(store: Any, items: list[tuple[bytes, bytes | None]]) -> None:
    """Write ``items`` (in order; a None value deletes) to ``store``: in one write when it
    can (``store.put_all``: a RocksDB write batch), else one ``put`` each.

    Example:
        >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
        >>> s = InMemoryBytesStore("s")
        >>> put_all(s, [(b"a", b"1"), (b"b", b"2"), (b"a", None)]); s.get(b"a"), s.get(b"b")
        (None, b'2')
    """
    many = getattr(store, "put_all", None)
    if many is not None:
        many(items)
        return
    for k, v in items:
        store.put(k, v)


def layer_stack(top: Any) -> Iterator[Any]:
    """``top`` and every layer below it, ending with the byte store they stack over.

    Example:
        >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
        >>> [type(x).__name__ for x in layer_stack(WriteBuffer(InMemoryBytesStore("s")))]
        ['WriteBuffer', 'InMemoryBytesStore']
    """
    while isinstance(top, Layer):
        yield top
        top = top.inner
    yield top


class ChangeLoggingLayer(Layer):
    """Writes every change to the store's changelog topic through ``log(key, value)``."""

    def __init__(self, inner: Any, log: Callable[[bytes, bytes | None], None]):
        super().__init__(inner)
        self.log = log

    def put(self, key: bytes, value: bytes | None) -> None:
        self.inner.put(key, value)
        self.log(key, value)

    def put_all(self, items: list[tuple[bytes, bytes | None]]) -> None:
        put_all(self.inner, items)
        for k, v in items:
            self.log(k, v)

    def delete(self, key: bytes) -> bytes | None:
        old = self.inner.delete(key)
        self.log(key, None)
        return old


class WriteBuffer(Layer):
    """Holds every write until :meth:`flush` (the end of a host's batch), so a failed batch
    leaves the store below as the batch found it (:meth:`discard`). Reads see the held
    writes; nothing else changes (it is not a cache: nothing is forwarded on flush).

    Example:
        >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
        >>> b = WriteBuffer(InMemoryBytesStore("s"))
        >>> b.put(b"k", b"v"); b.inner.get(b"k"), b.get(b"k")
        (None, b'v')
        >>> b.flush(); b.inner.get(b"k")
        b'v'
    """

    def __init__(self, inner: Any):
        super().__init__(inner)
        self._held: dict[bytes, bytes | None] = {}

    def get(self, key: bytes) -> bytes | None:
        if key in self._held:
            return self._held[key]
        return self.inner.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        self._held.pop(key, None)
        self._held[key] = value

    def delete(self, key: bytes) -> bytes | None:
        old = self.get(key)
        self.put(key, None)
        return old

    def range(self, lo: bytes | None, hi: bytes | None, reverse: bool = False) -> Iterator[Entry]:
        held = {k: v for k, v in self._held.items()
                if (lo is None or k >= lo) and (hi is None or k <= hi)}
        if not held:
            yield from self.inner.range(lo, hi, reverse)
            return
        merged = dict(self.inner.range(lo, hi))
        merged.update(held)
        for k in sorted(merged, reverse=reverse):
            if merged[k] is not None:
                yield k, merged[k]

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries() + sum(1 for v in self._held.values() if v)

    def flush(self) -> None:
        held, self._held = self._held, {}
        put_all(self.inner, list(held.items()))
        self.inner.flush()

    def discard(self) -> None:
        """Drop the held writes (a failed batch)."""
        self._held.clear()


# Kafka Streams' estimate of a cache entry's memory beyond its key and value bytes: the LRU
# node's three references (24), the dirty flag (1), the record context's timestamp, offset
# and partition (20)
ENTRY_OVERHEAD = 45


class RecordCache:
    """The byte budget that every caching layer of a task shares (Kafka Streams'
    ``ThreadCache``): ``statestore.cache.max.bytes``. A put that takes the total past the
    budget evicts least recently used entries of the cache it was made to.

    Example:
        >>> c = RecordCache(1000); c.max_bytes, c.size
        (1000, 0)
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max(0, int(max_bytes))
        self.size = 0


_NO_BUDGET = RecordCache(1 << 62)


class CachingLayer(Layer):
    """Kafka Streams' record cache over one store (its ``NamedCache``).

    Writes stay dirty in the cache until :meth:`flush` (a commit) or an eviction writes them
    down; ``on_flush(key, new, old)`` is told about each key written down, in the order of
    each key's last write (a re-written key moves to the end). Flushed entries stay in the
    cache, clean, until evicted (deleted ones are dropped), so reads keep finding them, also
    after the store below has let them expire, as Java's caching stores do. Entries are
    evicted least recently used first (a write or ``get`` makes an entry recent) when the
    task's :class:`RecordCache` is over budget; evicting a dirty entry flushes every dirty
    entry of this cache first, the evicted one leading.

    ``fill_on_read``: a ``get`` that misses the cache puts the store's value in, clean (a
    key-value store's cache does; window and session caches do not).

    ``old_values``: a switch (``.on``) saying whether ``on_flush`` needs a written-down
    key's old value; when it is off, the store below is read only for deletes and ``old`` is
    None otherwise, as Java's caching key-value store reads the old value only with
    sendOldValues or for a delete. None (the default): always read.

    Example:
        >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
        >>> c = CachingLayer(InMemoryBytesStore("s"), cache=RecordCache(10_000))
        >>> c.put(b"a", b"1"); c.inner.get(b"a"), c.get(b"a")
        (None, b'1')
        >>> c.flush(); c.inner.get(b"a"), c.cached(b"a")
        (b'1', True)
    """

    def __init__(self, inner: Any,
                 on_flush: Callable[[bytes, bytes | None, bytes | None], None] | None = None,
                 cache: RecordCache | None = None, fill_on_read: bool = False):
        super().__init__(inner)
        self.on_flush = on_flush
        # told each key written down, after on_flush: a window or session store's stream
        # time advances then, as Java's store below its cache sees writes only then
        self.on_write_down: Callable[[bytes], None] | None = None
        self.old_values: Any = None
        self.budget = cache or _NO_BUDGET
        self.fill_on_read = fill_on_read
        self._entries: dict[bytes, bytes | None] = {}  # least recently used first
        self._keys: list[bytes] = []  # the same keys, sorted, for ranges
        self._dirty: dict[bytes, None] = {}  # in the order of each key's last write
        self.size = 0

    # -- the cache itself
    @staticmethod
    def _size(key: bytes, value: bytes | None) -> int:
        return len(key) + (0 if value is None else len(value)) + ENTRY_OVERHEAD

    def cached(self, key: bytes) -> bool:
        """Whether ``key`` has an entry in the cache (dirty or clean)."""
        return key in self._entries

    def _set(self, key: bytes, value: bytes | None) -> None:
        if key in self._entries:  # re-inserted below: now the most recently used
            self._grow(-self._size(key, self._entries.pop(key)))
        else:
            bisect.insort(self._keys, key)
        self._entries[key] = value
        self._grow(self._size(key, value))

    def _drop(self, key: bytes) -> None:
        old = self._entries.pop(key)
        self._grow(-self._size(key, old))
        del self._keys[bisect.bisect_left(self._keys, key)]

    def _grow(self, n: int) -> None:
        self.size += n
        self.budget.size += n

    def _evict(self) -> None:
        while self.budget.size > self.budget.max_bytes and self._entries:
            eldest = next(iter(self._entries))
            value = self._entries[eldest]
            self._drop(eldest)
            if eldest in self._dirty:
                self._flush_dirty((eldest, value))

    # -- the store interface
    def get(self, key: bytes) -> bytes | None:
        if key in self._entries:
            value = self._entries.pop(key)
            self._entries[key] = value  # now the most recently used
            return value
        value = self.inner.get(key)
        if value is not None and self.fill_on_read:
            self._set(key, value)
            self._evict()
        return value

    def put(self, key: bytes, value: bytes | None) -> None:
        self._set(key, value)
        self._dirty.pop(key, None)
        self._dirty[key] = None
        self._evict()

    def delete(self, key: bytes) -> bytes | None:
        old = self.get(key)
        self.put(key, None)
        return old

    def range_tagged(self, lo: bytes | None, hi: bytes | None,
                     reverse: bool = False) -> Iterator[tuple[bytes, bytes, bool]]:
        """``(key, value, from_cache)`` in key order: the cache's entries over the store's
        (a cached delete hides the store's entry)."""
        i = 0 if lo is None else bisect.bisect_left(self._keys, lo)
        j = len(self._keys) if hi is None else bisect.bisect_right(self._keys, hi)
        mine = self._keys[i:j]
        if reverse:
            mine.reverse()
        below = self.inner.range(lo, hi, reverse)
        entries = self._entries
        before = (lambda a, b: a > b) if reverse else (lambda a, b: a < b)
        n, pending = 0, next(below, None)
        while n < len(mine) or pending is not None:
            if pending is not None and (n == len(mine) or before(pending[0], mine[n])):
                yield pending[0], pending[1], False
                pending = next(below, None)
            else:
                k = mine[n]
                n += 1
                if pending is not None and pending[0] == k:
                    pending = next(below, None)
                v = entries.get(k)
                if v is not None:
                    yield k, v, True

    def range(self, lo: bytes | None, hi: bytes | None, reverse: bool = False) -> Iterator[Entry]:
        for k, v, _ in self.range_tagged(lo, hi, reverse):
            yield k, v

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries() + sum(
            1 for k in self._dirty if self._entries.get(k) is not None)

    def _flush_dirty(self, evicted: tuple[bytes, bytes | None] | None = None) -> None:
        """Write every dirty entry down (``evicted``, already out of the cache, first) and
        tell ``on_flush``; flushed deletes leave the cache, the rest stay clean."""
        if evicted is not None:
            self._dirty.pop(evicted[0], None)
        order = ([evicted] if evicted is not None else []) + [
            (k, self._entries[k]) for k in self._dirty]
        self._dirty = {}
        read_old = self.old_values is None or self.old_values.on
        for k, v in order:
            if self.on_flush:
                old = self.inner.get(k) if read_old or v is None else None
                if v is None and old is None:
                    continue  # as Java's caching stores: nothing to write down or forward
                self.inner.put(k, v)
                self.on_flush(k, v, old)
            else:
                self.inner.put(k, v)
            if self.on_write_down:
                self.on_write_down(k)
        for k, v in order:
            if v is None and self._entries.get(k, _MISSING) is None:
                self._drop(k)

    def flush(self) -> None:
        self._flush_dirty()
        self.inner.flush()

    def discard(self) -> None:
        """Forget everything cached (a failed batch: the task is rebuilt from its store)."""
        self._grow(-self.size)
        self._entries.clear()
        self._keys.clear()
        self._dirty.clear()

    def close(self) -> None:
        self.discard()
        self.inner.close()


_MISSING = object()
