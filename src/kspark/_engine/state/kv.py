"""The typed KeyValueStore processors use, over a stack of byte-store layers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, TypeVar

from kspark._engine.state.layers import CachingLayer, layer_stack

__all__ = ["KeyValue", "KeyValueIterator", "KeyValueStore", "StoreBase", "tagged_range"]


class KeyValue(NamedTuple):
    """A key and its value, as store iterators return them and as ``map``, ``flat_map`` and
    a table's ``group_by`` may return them (Java's ``KeyValue``; a 2-tuple works too)."""

    key: Any
    value: Any

    @classmethod
    def pair(cls, key: Any, value: Any) -> "KeyValue":
        """``KeyValue(key, value)``, named as Java's ``KeyValue.pair``."""
        return cls(key, value)


class KeyValueIterator:
    """A closeable iterator of KeyValue, usable in ``with`` and ``for``.

    Example:
        >>> it = KeyValueIterator(iter([KeyValue("a", 1)]))
        >>> with it:
        ...     [kv.key for kv in it]
        ['a']
    """

    def __init__(self, entries: Iterator[KeyValue]):
        self._it = entries
        self._peeked: list[KeyValue] = []
        self.closed = False

    def __iter__(self) -> "KeyValueIterator":
        return self

    def __next__(self) -> KeyValue:
        if self.closed:
            raise StopIteration
        if self._peeked:
            return self._peeked.pop()
        return next(self._it)

    def has_next(self) -> bool:
        if not self._peeked:
            try:
                self._peeked.append(next(self._it))
            except StopIteration:
                return False
        return True

    def peek_next_key(self) -> Any:
        if not self.has_next():
            raise StopIteration("no more entries")
        return self._peeked[-1].key

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> "KeyValueIterator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def tagged_range(layer: Any, lo: bytes | None, hi: bytes | None,
                 reverse: bool = False) -> Iterator[tuple[bytes, bytes, bool]]:
    """``(key, value, from_cache)`` of ``layer``'s range: ``from_cache`` is True for entries
    a record cache returns (a caching layer's ``range_tagged``), False for the store's own.

    Example:
        >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
        >>> s = InMemoryBytesStore("s"); s.put(b"a", b"1")
        >>> list(tagged_range(s, None, None))
        [(b'a', b'1', False)]
    """
    if isinstance(layer, CachingLayer):
        return layer.range_tagged(lo, hi, reverse)
    return ((k, v, False) for k, v in layer.range(lo, hi, reverse))


L = TypeVar("L")


class StoreBase:
    """What every typed store shares: its name, persistence, flush and close, and the stack
    of byte-store layers under it (:meth:`layers`, :meth:`layer`, :meth:`bottom`).

    Example:
        >>> from kspark.state import Stores
        >>> from kspark import Serdes
        >>> store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"),
        ...     Serdes.String(), Serdes.Long()).with_caching_enabled().build()
        >>> [type(x).__name__ for x in store.layers()]
        ['CachingLayer', 'InMemoryBytesStore']
        >>> store.layer(CachingLayer) is store.inner, type(store.bottom()).__name__
        (True, 'InMemoryBytesStore')
    """

    _name: str
    inner: Any
    is_open: bool

    def name(self) -> str:
        return self._name

    def layers(self) -> list[Any]:
        """The layers under this store, top first, ending with the byte store."""
        return list(layer_stack(self.inner))

    def layer(self, kind: type[L]) -> L | None:
        """The topmost layer of type ``kind`` under this store (None if it has none)."""
        for layer in layer_stack(self.inner):
            if isinstance(layer, kind):
                return layer
        return None

    def bottom(self) -> Any:
        """The byte store under all layers (restoration writes there, unlogged)."""
        return self.layers()[-1]

    def persistent(self) -> bool:
        return bool(self.inner.persistent)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        if self.is_open:
            self.inner.flush()
            self.inner.close()
            self.is_open = False


class KeyValueStore(StoreBase):
    """A key-value store of typed keys and values; range order follows the serialized keys.

    Example:
        >>> from kspark.state import Stores
        >>> from kspark import Serdes
        >>> store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"),
        ...     Serdes.String(), Serdes.Integer()).with_logging_disabled().build()
        >>> store.put("b", 2); store.put("a", 1)
        >>> [tuple(kv) for kv in store.all()]
        [('a', 1), ('b', 2)]
    """

    def __init__(self, name: str, inner: Any, key_serde: Any, value_serde: Any):
        self._name = name
        self.inner = inner
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.is_open = True
        self.caching_enabled = False  # set by build_store: changes are emitted at commit

    def _k(self, key: Any) -> bytes:
        if key is None:
            raise ValueError(f"store {self._name!r} does not accept a None key")
        return self.key_serde.serialize(self._name, key)

    def _v(self, raw: bytes | None) -> Any:
        return None if raw is None else self.value_serde.deserialize(self._name, raw)

    def encode_key(self, key: Any) -> bytes:
        return self._k(key)

    def decode_key(self, raw: bytes) -> Any:
        return self.key_serde.deserialize(self._name, raw)

    def encode_value(self, value: Any) -> bytes:
        return self.value_serde.serialize(self._name, value)

    def get(self, key: Any) -> Any:
        return self._v(self.inner.get(self._k(key)))

    def put(self, key: Any, value: Any) -> None:
        """Store ``value`` under ``key``; a None value deletes the key."""
        self.inner.put(self._k(key), self.value_serde.serialize(self._name, value))

    def put_if_absent(self, key: Any, value: Any) -> Any:
        """Put only if there is no value yet; returns the value that was there (or None)."""
        old = self.get(key)
        if old is None:
            self.put(key, value)
        return old

    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None:
        for k, v in entries:
            self.put(k, v)

    def delete(self, key: Any) -> Any:
        """Remove ``key``; returns its old value."""
        return self._v(self.inner.delete(self._k(key)))

    def _iter(self, lo: Any, hi: Any, reverse: bool) -> KeyValueIterator:
        lo_b = None if lo is None else self._k(lo)
        hi_b = None if hi is None else self._k(hi)
        if lo_b is not None and hi_b is not None and lo_b > hi_b:
            return KeyValueIterator(iter(()))
        return KeyValueIterator(
            KeyValue(self.key_serde.deserialize(self._name, k), self._v(v))
            for k, v in self.inner.range(lo_b, hi_b, reverse))

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator:
        """Entries with ``from_key <= key <= to_key`` in serialized-key order (None: open end)."""
        return self._iter(from_key, to_key, False)

    def reverse_range(self, from_key: Any, to_key: Any) -> KeyValueIterator:
        return self._iter(from_key, to_key, True)

    def all(self) -> KeyValueIterator:
        return self._iter(None, None, False)

    def reverse_all(self) -> KeyValueIterator:
        return self._iter(None, None, True)

    def prefix_scan(self, prefix: Any, prefix_key_serializer: Any) -> KeyValueIterator:
        """Entries whose serialized key starts with the serialized ``prefix``."""
        p = prefix_key_serializer.serialize(self._name, prefix)

        def entries() -> Iterator[KeyValue]:
            for k, v in self.inner.range(p, None):
                if not k.startswith(p):
                    return
                yield KeyValue(self.key_serde.deserialize(self._name, k), self._v(v))

        return KeyValueIterator(entries())

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()
