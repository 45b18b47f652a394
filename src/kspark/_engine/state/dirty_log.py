"""Change-logging at commit time, as Java's suppress buffer logs (its
InMemoryTimeOrderedKeyValueChangeBuffer): every key changed since the last commit once,
with its value then (a tombstone if it is gone), in the order Java's ``HashSet<Bytes>`` of
dirty keys iterates.

That order is the keys' hash buckets (``Arrays.hashCode`` of the key's signed bytes,
spread as ``HashMap.hash`` does, masked by the table's capacity), then, within a bucket,
the order the keys were first changed. The table starts at 16 buckets and doubles when it
holds more than three quarters of that; ``clear()`` (each commit) keeps its size. (A bucket
of 8 keys or more in a table of 64 buckets or more becomes a tree in Java, whose order
kspark does not follow: so many colliding dirty keys at once are unlikely.)

Example:
    >>> java_hash_set_order([b"e", b"b", b"d", b"c"], 16)
    [b'b', b'c', b'd', b'e']
    >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
    >>> logged = []
    >>> s = CommitLoggingLayer(InMemoryBytesStore("s"), lambda k, v: logged.append((k, v)))
    >>> s.put(b"a", b"1"); s.put(b"a", b"2"); s.put(b"b", b"3"); _ = s.delete(b"b"); logged
    []
    >>> s.flush(); logged
    [(b'a', b'2'), (b'b', None)]
"""

from __future__ import annotations

from collections.abc import Callable

from kspark._engine.state.layers import Layer, put_all

__all__ = ["CommitLoggingLayer", "java_hash_set_order"]


def _bucket(key: bytes, capacity: int) -> int:
    h = 1
    for c in key:
        h = (31 * h + (c - 256 if c > 127 else c)) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def java_hash_set_order(keys: list[bytes], capacity: int) -> list[bytes]:
    """``keys`` (in the order each was first added) as a Java ``HashSet<Bytes>`` of
    ``capacity`` buckets iterates them."""
    return sorted(keys, key=lambda k: _bucket(k, capacity))  # stable: insertion order within


class CommitLoggingLayer(Layer):
    """Logs through ``log(key, value)`` at :meth:`flush` (a commit), not at each write:
    each key changed since once, its value then (None: deleted), in Java's order."""

    def __init__(self, inner: object, log: Callable[[bytes, bytes | None], None]):
        super().__init__(inner)
        self.log = log
        self._dirty: dict[bytes, None] = {}
        self._capacity = 16  # of Java's HashSet: grows, never shrinks

    def _mark(self, key: bytes) -> None:
        self._dirty.setdefault(key, None)
        while len(self._dirty) > self._capacity * 3 // 4:
            self._capacity *= 2

    def put(self, key: bytes, value: bytes | None) -> None:
        self.inner.put(key, value)
        self._mark(key)

    def put_all(self, items: list[tuple[bytes, bytes | None]]) -> None:
        put_all(self.inner, items)
        for k, _ in items:
            self._mark(k)

    def delete(self, key: bytes) -> bytes | None:
        old = self.inner.delete(key)
        self._mark(key)
        return old

    def flush(self) -> None:
        dirty, self._dirty = list(self._dirty), {}
        for key in java_hash_set_order(dirty, self._capacity):
            self.log(key, self.inner.get(key))
        self.inner.flush()
