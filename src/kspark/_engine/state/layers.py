"""Layers stacked over a byte store, as in Kafka Streams: change-logging, then caching."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ChangeLoggingLayer", "CachingLayer"]

Entry = tuple[bytes, bytes]


class _Layer:
    """Passes every call to the store below; layers override what they change."""

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


class ChangeLoggingLayer(_Layer):
    """Writes every change to the store's changelog topic through ``log(key, value)``."""

    def __init__(self, inner: Any, log: Callable[[bytes, bytes | None], None]):
        super().__init__(inner)
        self.log = log

    def put(self, key: bytes, value: bytes | None) -> None:
        self.inner.put(key, value)
        self.log(key, value)

    def delete(self, key: bytes) -> bytes | None:
        old = self.inner.delete(key)
        self.log(key, None)
        return old


class CachingLayer(_Layer):
    """Holds writes until :meth:`flush` (a commit), so each key's latest value goes down once.

    Reads see the held writes. ``on_flush(key, new, old)`` is told about each key written
    down, in the order of each key's last write (as Kafka Streams' NamedCache: a re-written
    key moves to the end).
    """

    def __init__(self, inner: Any, on_flush: Callable[[bytes, bytes | None, bytes | None], None] | None = None):
        super().__init__(inner)
        self._dirty: dict[bytes, bytes | None] = {}
        self.on_flush = on_flush

    def get(self, key: bytes) -> bytes | None:
        if key in self._dirty:
            return self._dirty[key]
        return self.inner.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        self._dirty.pop(key, None)
        self._dirty[key] = value

    def delete(self, key: bytes) -> bytes | None:
        old = self.get(key)
        self._dirty.pop(key, None)
        self._dirty[key] = None
        return old

    def range(self, lo: bytes | None, hi: bytes | None, reverse: bool = False) -> Iterator[Entry]:
        merged = dict(self.inner.range(lo, hi))
        for k, v in self._dirty.items():
            if (lo is None or k >= lo) and (hi is None or k <= hi):
                merged[k] = v
        for k in sorted(merged, reverse=reverse):
            if merged[k] is not None:
                yield k, merged[k]

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries() + sum(1 for v in self._dirty.values() if v)

    def flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        for k in dirty:
            old = self.inner.get(k) if self.on_flush else None
            self.inner.put(k, dirty[k])
            if self.on_flush:
                self.on_flush(k, dirty[k], old)
        self.inner.flush()

    def discard(self) -> None:
        """Drop the held writes (a failed batch)."""
        self._dirty.clear()
