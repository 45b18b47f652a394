"""The base of the layers stacked over a byte store (:class:`Layer`), and the batched
calls every store and layer answers, in one call where it can (:func:`put_all`,
:func:`get_many`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["Layer", "layer_stack", "put_all", "get_many", "Entry"]

Entry = tuple[bytes, bytes]


class Layer:
    """Passes every call to the store below (``inner``); layers override what they change."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.persistent = inner.persistent

    def get(self, key: bytes) -> bytes | None:
        return self.inner.get(key)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """Each key's value, in order (a layer that changes ``get`` changes this too)."""
        return get_many(self.inner, keys)

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


def get_many(store: Any, keys: list[bytes]) -> list[bytes | None]:
    """The value of each of ``keys`` in ``store`` (None: absent), in order: in one read
    when it can (``store.get_many``: a RocksDB multi-get), else one ``get`` each.

    Example:
        >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
        >>> s = InMemoryBytesStore("s"); s.put(b"a", b"1")
        >>> get_many(s, [b"b", b"a"]), get_many(Layer(s), [b"a"])
        ([None, b'1'], [b'1'])
    """
    many = getattr(store, "get_many", None)
    if many is not None:
        return many(keys)
    return [store.get(k) for k in keys]


def layer_stack(top: Any) -> Iterator[Any]:
    """``top`` and every layer below it, ending with the byte store they stack over.

    Example:
        >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
        >>> [type(x).__name__ for x in layer_stack(Layer(InMemoryBytesStore("s")))]
        ['Layer', 'InMemoryBytesStore']
    """
    while isinstance(top, Layer):
        yield top
        top = top.inner
    yield top
