"""KTable processors: a table's source, filter, mapper and materialization, its changelog
as a stream, re-grouping, and the aggregation of a re-grouped table. Those with a store write
it and forward Change(new, old): at once, or at commit when the store caches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.context import record_dropped
from kspark._engine.operators import is_pair, not_a_pair
from kspark._engine.state.layers import CachingLayer
from kspark._engine.state.timestamped import ValueAndTimestamp
from kspark._engine.tables.change import Change, out_of_order
from kspark._engine.state.versioned import (PUT_RETURN_CODE_NOT_PUT,
                                            PUT_RETURN_CODE_VALID_TO_UNDEFINED)

__all__ = ["TableStoreProcessor", "TableSourceProcessor", "TableFilterProcessor",
           "TableMapValuesProcessor", "TableToStreamProcessor", "TablePassThroughProcessor",
           "OldValues", "Switch",
           "TableMaterializeProcessor", "TableGroupByProcessor", "TableAggregateProcessor"]


class TableStoreProcessor(Processor):
    """Writes to a timestamped store and forwards Change(new, old): at once, or at commit when
    the store caches (then each key's latest change of the commit goes out once).

    Subclassed by the table, aggregation and foreign-key join processors; without a store
    (``store_name`` None) it only forwards.
    """

    context: ProcessorContext
    store: Any  # the store connected as ``store_name``, of the kind the subclass writes
    emit_on_flush: bool  # changes go out when the store's cache flushes them
    forward_now: bool  # each change goes out at once (not cached, not held for final results)
    # whether a cache flush must read each key's old value for the change it forwards (a
    # Switch: whether the result table sends old values); None: always
    flush_old_values: "Switch | None" = None

    def __init__(self, store_name: str | None, materialized: "Switch | None" = None):
        self.store_name = store_name
        # off: used as an unmaterialized table (no cache holds updates back), as Java does
        # with a result table nobody named, joined or asked old values of
        self.materialized = materialized

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        if self.store_name is None:  # an unmaterialized filter or mapper: forwards only
            self.emit_on_flush, self.forward_now = False, True
            return
        self.store = context.get_state_store(self.store_name)
        self.emit_on_flush = self.store.caching_enabled and (
            self.materialized is None or self.materialized.on) and not getattr(self, "final", False)
        self._deleted_at: dict[bytes, int] = {}  # cached deletes: their records' timestamps
        if self.emit_on_flush:
            layer = self.store.layer(CachingLayer)
            if layer is not None:
                layer.on_flush = self._flushed
                layer.old_values = self.flush_old_values
            else:
                self.emit_on_flush = False
        # each update goes out at once: not held by a cache, not held for final results
        self.forward_now = not self.emit_on_flush and not getattr(self, "final", False)

    def _flushed(self, key: bytes, new: bytes | None, old: bytes | None) -> None:
        name, vs = self.store_name, self.store.value_serde
        k = self.store.decode_key(key)
        expired = getattr(self.store, "below_retention", None)
        if old is not None and expired is not None and expired(key):
            old = None  # as Java's caching stores: the old value is the store's, expired
        n, o = vs.deserialize(name, new), vs.deserialize(name, old)
        deleted_at = self._deleted_at.pop(key, None)
        if n is None and o is None:
            return
        # a delete carries its own record's timestamp, as in Kafka Streams' cache
        ts = n.timestamp if n is not None else o.timestamp if deleted_at is None else deleted_at
        self.context.forward(Record(k, Change(n and n.value, o and o.value), ts))

    def _write(self, record: Record, new: Any, old: Any, timestamp: int | None = None) -> None:
        ts = record.timestamp if timestamp is None else timestamp
        if getattr(self.store, "history_retention_ms", None) is not None:
            self._write_version(record, new, old, ts)
            return
        if self.emit_on_flush:
            if new is None:
                self._deleted_at[self.store.encode_key(record.key)] = ts
            else:
                self._deleted_at.pop(self.store.encode_key(record.key), None)
        self.store.put(record.key, None if new is None else ValueAndTimestamp(new, ts))
        if not self.emit_on_flush:
            self.context.forward(Record(record.key, Change(new, old), ts, record.headers))

    def _write_version(self, record: Record, new: Any, old: Any, ts: int) -> None:
        """A versioned store (never cached): an update older than its history retention is
        neither stored nor forwarded; an out-of-order one goes on marked not latest."""
        code = self.store.put(record.key, new, ts)
        if code == PUT_RETURN_CODE_NOT_PUT:
            record_dropped(
                self.context,
                f"update of key {record.key!r} at {ts} is older than versioned store "
                f"{self.store_name!r}'s history retention")
            return
        self.context.forward(Record(record.key, Change(
            new, old, code == PUT_RETURN_CODE_VALID_TO_UNDEFINED), ts, record.headers))

    def _get(self, key: Any) -> Any:
        vt = self.store.get(key)
        return None if vt is None else vt.value


class TableSourceProcessor(TableStoreProcessor):
    """Materializes a topic as a table: a value upserts, a null value (tombstone) deletes.
    As KTableSource, a tombstone for a key the table never had is still forwarded (as a
    change from None to None) unless the store caches (a cache has nothing to flush)."""

    @property
    def unused_store(self) -> str | None:
        """The store's name when nothing materializes it (Java has no store there, so no
        metrics: metrics/shape.py reads this), else None."""
        unused = self.materialized is not None and not self.materialized.on
        return self.store_name if unused else None

    def init(self, context: ProcessorContext) -> None:
        if self.materialized is not None and not self.materialized.on:
            self.context = context  # unmaterialized: the topology has no store for it
            return
        super().init(context)

    def process(self, record: Record) -> None:
        if record.key is None:
            record_dropped(self.context, "a table source skips a record with a null key")
            return
        if self.materialized is not None and not self.materialized.on:
            # KTableSource without a store: forward, keep nothing
            self.context.forward(Record(record.key, Change(record.value, None),
                                        record.timestamp, record.headers))
            return
        self._write(record, record.value, self._get(record.key))


class Switch:
    """A property of a table node that operators added later may switch on while the
    topology is built, read by its processor when it runs.

    As ``OldValues``: whether the node sends old values downstream (Kafka Streams'
    sendOldValues; group_by, suppress, left/outer and foreign-key joins need them); a filter
    without them forwards a delete for every update that fails its predicate, as Java's
    KTableFilter does. For a source table: whether it is materialized (named, joined or
    needing old values); unmaterialized it forwards every update at once, uncached.
    """

    def __init__(self, on: bool = False):
        self.on = on


OldValues = Switch


class TableFilterProcessor(TableStoreProcessor):
    """Keeps rows that match (``negate``: that do not); others read as deleted. Materialized
    (``store_name``), it writes its result to its own store too."""

    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool = False,
                 old_values: OldValues | None = None, store_name: str | None = None,
                 versioned: bool = False):
        super().__init__(store_name)
        self.predicate, self.negate = predicate, negate
        self.old_values = old_values if old_values is not None else OldValues(True)
        # reading a versioned table, Java forwards even a change from nothing to nothing
        self.versioned = versioned

    def _keep(self, key: Any, v: Any) -> Any:
        return v if v is not None and bool(self.predicate(key, v)) != self.negate else None

    def process(self, record: Record) -> None:
        ch, send_old = record.value, self.old_values.on
        new = self._keep(record.key, ch.new)
        old = None
        if send_old:
            old = (self._keep(record.key, ch.old) if self.store_name is None
                   else self._get(record.key))
            if new is None and old is None and not self.versioned:
                return
        if self.store_name is None:
            self.context.forward(record.with_value(Change(new, old, ch.is_latest)))
        else:
            self._write(record, new, old)


class TableMapValuesProcessor(TableStoreProcessor):
    """Maps new and old values with ``fn(value)`` (``fn(key, value)`` with_key); materialized
    (``store_name``), it writes its result to its own store too."""

    def __init__(self, fn: Callable[..., Any], with_key: bool = False,
                 store_name: str | None = None):
        super().__init__(store_name)
        self.fn, self.with_key = fn, with_key

    def _map(self, key: Any, v: Any) -> Any:
        if v is None:
            return None
        return self.fn(key, v) if self.with_key else self.fn(v)

    def process(self, record: Record) -> None:
        ch = record.value
        new = self._map(record.key, ch.new)
        if self.store_name is None:
            self.context.forward(record.with_value(Change(new, self._map(record.key, ch.old),
                                                          ch.is_latest)))
        else:
            self._write(record, new, self._get(record.key))


class TableMaterializeProcessor(TableStoreProcessor):
    """Writes each change's new value to a store and forwards it (a materialized join)."""

    def process(self, record: Record) -> None:
        self._write(record, record.value.new, record.value.old)


class TableToStreamProcessor(Processor):
    """The table's changelog as a stream: each change's new value (None for a delete)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(record.value.new))


class TablePassThroughProcessor(Processor):
    """Forwards changes unchanged (the merge point of a table-table join's two sides)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        self.context.forward(record)


class TableGroupByProcessor(Processor):
    """Re-keys a table's changes (KTableRepartitionMap). An update that stays in its group
    goes as one record carrying old and new (KIP-904); otherwise the old row is subtracted
    under its old group, then the new row added under its new group. A selection whose key
    or value is None is dropped."""

    def __init__(self, selector: Callable[[Any, Any], tuple[Any, Any]]):
        self.selector = selector

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def _select(self, key: Any, value: Any) -> tuple[Any, Any] | None:
        if value is None:
            return None
        pair = self.selector(key, value)
        if pair is None:
            return None
        if not (type(pair) is tuple and len(pair) == 2) and not is_pair(pair):
            raise not_a_pair("group_by()'s selector must return", self.selector, pair)
        return pair if pair[0] is not None and pair[1] is not None else None

    def process(self, record: Record) -> None:
        change: Change = record.value
        if out_of_order(self.context, record, "a table's group_by", counted=False):
            return
        old, new = self._select(record.key, change.old), self._select(record.key, change.new)
        ts, headers = record.timestamp, record.headers
        if old is not None and new is not None and old[0] == new[0]:
            self.context.forward(Record(old[0], Change(new[1], old[1]), ts, headers))
            return
        if old is not None:
            self.context.forward(Record(old[0], Change(None, old[1]), ts, headers))
        if new is not None:
            self.context.forward(Record(new[0], Change(new[1], None), ts, headers))


class TableAggregateProcessor(TableStoreProcessor):
    """Aggregates a re-grouped table: ``adder`` for new rows, ``subtractor`` for old ones."""

    def __init__(self, store_name: str, initializer: Callable[[], Any],
                 adder: Callable[[Any, Any, Any], Any], subtractor: Callable[[Any, Any, Any], Any]):
        super().__init__(store_name)
        self.initializer, self.adder, self.subtractor = initializer, adder, subtractor

    def process(self, record: Record) -> None:
        if record.key is None:
            return
        change: Change = record.value
        old_vt = self.store.get(record.key)
        old = None if old_vt is None else old_vt.value
        # As KTableAggregate: subtract (only from an existing aggregate), then add; one
        # update, stamped max(record, aggregate) once the old aggregate took part.
        agg, ts = old, record.timestamp
        if change.old is not None and old is not None:
            agg = self.subtractor(record.key, change.old, old)
            ts = max(ts, old_vt.timestamp)
        if change.new is not None:
            agg = self.adder(record.key, change.new, self.initializer() if agg is None else agg)
            if old_vt is not None:
                ts = max(ts, old_vt.timestamp)
        self._write(record, agg, old, ts)
