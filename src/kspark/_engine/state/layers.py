"""Layers stacked over a byte store, as in Kafka Streams: change-logging, a host's write
buffer, then the record cache (their base and batched calls: :mod:`.layer_base`)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

from kspark._engine.state.layer_base import Entry, Layer, get_many, layer_stack, put_all
from kspark._engine.state.sorted_keys import SortedKeys

__all__ = ["ChangeLoggingLayer", "WriteBuffer", "CachingLayer", "RecordCache", "ENTRY_OVERHEAD",
           "Layer", "layer_stack", "put_all", "get_many"]


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
        many = getattr(self.log, "many", None)  # a task's ChangelogWriter: all at once
        if many is not None:
            many(items)
            return
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

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """Held writes answer for their keys; the rest are read below in one call."""
        held = self._held
        below = [k for k in keys if k not in held]
        found = dict(zip(below, get_many(self.inner, below), strict=True))
        return [held[k] if k in held else found[k] for k in keys]

    def put(self, key: bytes, value: bytes | None) -> None:
        self._held.pop(key, None)
        self._held[key] = value

    def put_all(self, items: list[tuple[bytes, bytes | None]]) -> None:
        for k, v in items:
            self.put(k, v)

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
    down, all in one write (``put_all``: a RocksDB write batch); then ``on_flush(key, new,
    old)`` is told about each key written down, in the order of each key's last write (a
    re-written key moves to the end). Flushed entries stay in the
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
        # set beside on_flush: told a flush's (key, new, old) at once, in on_flush's order
        self.on_flush_many: Callable[[list[tuple[bytes, bytes | None, bytes | None]]],
                                     None] | None = None
        self.budget = cache or _NO_BUDGET
        self.fill_on_read = fill_on_read
        self._entries: dict[bytes, bytes | None] = {}  # least recently used first
        self._keys = SortedKeys(self._entries)  # the same keys, sorted when a range asks
        self._dirty: dict[bytes, None] = {}  # in the order of each key's last write
        self._flushes = 0  # write-downs so far (a multi-get's reads below are older)
        self.size = 0

    # -- the cache itself
    @staticmethod
    def _size(key: bytes, value: bytes | None) -> int:
        return len(key) + (0 if value is None else len(value)) + ENTRY_OVERHEAD

    def cached(self, key: bytes) -> bool:
        """Whether ``key`` has an entry in the cache (dirty or clean)."""
        return key in self._entries

    def peek(self, key: bytes, default: Any = None) -> Any:
        """``key``'s cached value (``default`` if not cached), leaving the recency order as
        it is (a range read's view of the cache)."""
        return self._entries.get(key, default)

    def _set(self, key: bytes, value: bytes | None) -> None:
        if key in self._entries:  # re-inserted below: now the most recently used
            self._grow(-self._size(key, self._entries.pop(key)))
        else:
            self._keys.add(key)
        self._entries[key] = value
        self._grow(self._size(key, value))

    def _drop(self, key: bytes) -> None:
        old = self._entries.pop(key)
        self._grow(-self._size(key, old))
        self._keys.remove(key)

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
        return self._lookup(key, self.inner.get)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """Each key's value, as a ``get`` of each in turn answers and leaves the cache (a
        hit becomes the most recently used, in the order given; a miss fills the cache if
        ``fill_on_read``, evicting as ``get`` does), reading every miss below in one call.

        Example:
            >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
            >>> c = CachingLayer(InMemoryBytesStore("s"), fill_on_read=True)
            >>> c.inner.put(b"b", b"2"); c.put(b"a", b"1")
            >>> c.get_many([b"a", b"b", b"c"]), c.cached(b"b")
            ([b'1', b'2', None], True)
        """
        entries = self._entries
        misses = list(dict.fromkeys(k for k in keys if k not in entries))
        below = dict(zip(misses, get_many(self.inner, misses), strict=True)) if misses else {}
        flushes = self._flushes

        def read(key: bytes) -> bytes | None:
            # read before any write down since (a callback told of a flush may write here)
            if key in below and self._flushes == flushes:
                return below[key]
            return self.inner.get(key)

        return [self._lookup(k, read) for k in keys]

    def _lookup(self, key: bytes, read: Callable[[bytes], bytes | None]) -> bytes | None:
        if key in self._entries:
            value = self._entries.pop(key)
            self._entries[key] = value  # now the most recently used
            return value
        value = read(key)
        if value is not None and self.fill_on_read:
            self._set(key, value)
            self._evict()
        return value

    def put(self, key: bytes, value: bytes | None) -> None:
        self._set(key, value)
        self._dirty.pop(key, None)
        self._dirty[key] = None
        self._evict()

    def put_many(self, items: list[tuple[bytes, bytes]]) -> None:
        """One :meth:`put` of each (non-null) value in turn, evictions checked once at the
        end: for a caller that made sure the puts cannot take the cache over its budget
        (an eviction between two puts would have written entries down; the batch path of
        ``count()`` checks that first).

        Example:
            >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
            >>> c = CachingLayer(InMemoryBytesStore("s"), cache=RecordCache(10_000))
            >>> c.put(b"a", b"1"); c.put_many([(b"b", b"2"), (b"a", b"3")])
            >>> list(c._dirty), c.size == 2 * (1 + 1 + ENTRY_OVERHEAD)
            ([b'b', b'a'], True)
        """
        entries, dirty, keys = self._entries, self._dirty, self._keys
        grow = 0
        for k, v in items:
            old: Any = entries.pop(k, _MISSING)
            if old is _MISSING:
                keys.add(k)
                grow += len(k) + len(v) + ENTRY_OVERHEAD
            else:
                grow += len(v) - (0 if old is None else len(old))
            entries[k] = v
            dirty.pop(k, None)
            dirty[k] = None
        self._grow(grow)
        self._evict()

    def delete(self, key: bytes) -> bytes | None:
        old = self.get(key)
        self.put(key, None)
        return old

    def range_tagged(self, lo: bytes | None, hi: bytes | None,
                     reverse: bool = False) -> Iterator[tuple[bytes, bytes, bool]]:
        """``(key, value, from_cache)`` in key order: the cache's entries over the store's
        (a cached delete hides the store's entry)."""
        keys = self._keys.sorted()
        i = 0 if lo is None else bisect.bisect_left(keys, lo)
        j = len(keys) if hi is None else bisect.bisect_right(keys, hi)
        mine = keys[i:j]
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
        """Write every dirty entry down (``evicted``, already out of the cache, first) in one
        write, then tell ``on_flush`` and ``on_write_down`` of each in that order; flushed
        deletes leave the cache, the rest stay clean."""
        if evicted is not None:
            self._dirty.pop(evicted[0], None)
        order = ([evicted] if evicted is not None else []) + [
            (k, self._entries[k]) for k in self._dirty]
        self._dirty = {}
        self._flushes += 1
        down = self._to_write_down(order)
        put_all(self.inner, [(k, v) for k, v, _ in down])
        on_flush, on_write_down = self.on_flush, self.on_write_down
        if self.on_flush_many is not None and on_write_down is None:
            self.on_flush_many(down)  # the same calls, at once (a count's DirectEmit)
            down = []
        for k, v, old in down:
            if on_flush:
                on_flush(k, v, old)
            if on_write_down:
                on_write_down(k)
        for k, v in order:
            if v is None and self._entries.get(k, _MISSING) is None:
                self._drop(k)

    def _to_write_down(self, order: list[tuple[bytes, bytes | None]]
                       ) -> list[tuple[bytes, bytes | None, bytes | None]]:
        """``(key, new, old)`` of each entry of ``order`` to write down: with ``on_flush``,
        the old values it needs (read below in one call) and no delete of a key the store
        below lacks (as Java's caching stores: nothing to write down or forward)."""
        if not self.on_flush:
            return [(k, v, None) for k, v in order]
        read_old = self.old_values is None or self.old_values.on
        need = [k for k, v in order if read_old or v is None]
        olds = dict(zip(need, get_many(self.inner, need), strict=True)) if need else {}
        return [(k, v, olds.get(k)) for k, v in order if v is not None or olds.get(k) is not None]

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
