"""Value getters: a table's current row for a key, read through the stores it derives from
(Kafka Streams' KTableValueGetter). They let a filtered, mapped or joined table that has no
store of its own be joined all the same.

Example:
    >>> g = FilterGetter(StoreGetter("prices"), lambda k, v: v > 10)
    >>> g.stores
    ('prices',)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.api import ProcessorContext

__all__ = ["ValueGetter", "StoreGetter", "FilterGetter", "MapGetter", "JoinGetter"]

# (key, as_of) -> (value or None, timestamp or -1); as_of (a stream record's timestamp)
# matters only to a versioned store, read as of that time (KIP-914)
Lookup = Callable[..., tuple[Any, int]]
_MISSING = (None, -1)


class ValueGetter:
    """Reads a table's row for a key; ``stores`` are the stores its processor must reach."""

    stores: tuple[str, ...] = ()

    def bind(self, context: ProcessorContext) -> Lookup:
        raise NotImplementedError


class StoreGetter(ValueGetter):
    """A materialized table: its own (timestamped) store."""

    def __init__(self, store: str):
        self.stores = (store,)

    def bind(self, context: ProcessorContext) -> Lookup:
        store = context.get_state_store(self.stores[0])
        versioned = getattr(store, "history_retention_ms", None) is not None

        def get(key: Any, as_of: int | None = None) -> tuple[Any, int]:
            vt = store.get(key, as_of) if versioned and as_of is not None else store.get(key)
            return _MISSING if vt is None else (vt.value, vt.timestamp)
        return get


class FilterGetter(ValueGetter):
    """A filtered table: the parent's row if it passes (or, negated, fails) the predicate."""

    def __init__(self, parent: ValueGetter, predicate: Callable[[Any, Any], bool],
                 negate: bool = False):
        self.parent, self.predicate, self.negate = parent, predicate, negate
        self.stores = parent.stores

    def bind(self, context: ProcessorContext) -> Lookup:
        get_parent = self.parent.bind(context)

        def get(key: Any, as_of: int | None = None) -> tuple[Any, int]:
            v, ts = get_parent(key, as_of)
            keep = v is not None and bool(self.predicate(key, v)) != self.negate
            return (v, ts) if keep else _MISSING
        return get


class MapGetter(ValueGetter):
    """A mapped table: ``fn(value)`` (``fn(key, value)`` with_key) of the parent's row."""

    def __init__(self, parent: ValueGetter, fn: Callable[..., Any], with_key: bool = False):
        self.parent, self.fn, self.with_key = parent, fn, with_key
        self.stores = parent.stores

    def bind(self, context: ProcessorContext) -> Lookup:
        get_parent = self.parent.bind(context)

        def get(key: Any, as_of: int | None = None) -> tuple[Any, int]:
            v, ts = get_parent(key, as_of)
            out = None if v is None else self.fn(key, v) if self.with_key else self.fn(v)
            # a row mapped to None has no timestamp either (Java's ValueAndTimestamp.make)
            return _MISSING if out is None else (out, ts)
        return get


class JoinGetter(ValueGetter):
    """A table-table join's row, computed from both sides (KTableKTable*JoinValueGetter)."""

    def __init__(self, left: ValueGetter, right: ValueGetter,
                 joiner: Callable[[Any, Any], Any], kind: str):
        self.left, self.right, self.joiner, self.kind = left, right, joiner, kind
        self.stores = tuple(dict.fromkeys(left.stores + right.stores))

    def bind(self, context: ProcessorContext) -> Lookup:
        get_left, get_right = self.left.bind(context), self.right.bind(context)

        def get(key: Any, as_of: int | None = None) -> tuple[Any, int]:  # never versioned
            lv, lts = get_left(key)
            if lv is None and self.kind != "outer":
                return _MISSING
            rv, rts = get_right(key)
            if rv is None and (self.kind == "inner" or lv is None):
                return _MISSING
            return self.joiner(lv, rv), max(lts, rts)
        return get
