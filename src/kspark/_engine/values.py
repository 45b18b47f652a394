"""Value-only user code: ``KStream.process_values`` (Kafka Streams' FixedKeyProcessor) and
``KTable.transform_values`` (ValueTransformerWithKey).

Example:
    >>> class Len:
    ...     def init(self, context): pass
    ...     def transform(self, key, value): return None if value is None else len(value)
    ...     def close(self): pass
    >>> Len().transform("k", "abc")
    3
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.tables.change import Change
from kspark._engine.tables.getters import Lookup, ValueGetter, _MISSING
from kspark._engine.tables.processors import OldValues, TableStoreProcessor
from kspark.errors import ProcessorError

__all__ = ["FixedKeyProcessor", "TableTransformValuesProcessor", "TransformGetter"]


class _FixedKeyContext:
    """The user processor's context: everything the task's context offers, but a record
    forwarded while an input record is processed must keep that record's key."""

    def __init__(self, inner: ProcessorContext, node: str):
        self._inner, self._node = inner, node
        self.current: Record | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def forward(self, record: Record, child_name: str | None = None) -> None:
        if self.current is not None and record.key != self.current.key:
            raise ProcessorError(
                f"process_values node {self._node!r} forwarded key {record.key!r} for an input "
                f"record with key {self.current.key!r}: a value processor cannot change keys; "
                f"use process() instead")
        self._inner.forward(record, child_name)


class _NoForwardContext:
    """A value transformer's context: all of the task's context but ``forward`` (Kafka
    Streams' ForwardingDisabledProcessorContext): its result is what it returns."""

    def __init__(self, inner: ProcessorContext, node: str):
        self._inner, self._node = inner, node

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def forward(self, record: Record, child_name: str | None = None) -> None:
        raise ProcessorError(f"transform_values at {self._node!r}: a value transformer cannot "
                             f"forward records; return the new value from transform()")


class FixedKeyProcessor(Processor):
    """Runs a user processor that may change values, timestamps and headers, not keys; so the
    stream stays partitioned as it was (no repartition before a later key-based step)."""

    def __init__(self, supplier: Callable[[], Processor], node: str):
        self.user, self.node = supplier(), node

    def init(self, context: ProcessorContext) -> None:
        self.context = _FixedKeyContext(context, self.node)
        self.user.init(self.context)  # type: ignore[arg-type]

    def process(self, record: Record) -> None:
        self.context.current = record
        try:
            self.user.process(record)
        finally:
            self.context.current = None

    def close(self) -> None:
        self.user.close()


class TableTransformValuesProcessor(TableStoreProcessor):
    """KTableTransformValues: ``transformer.transform(key, value)`` of each new value — a
    delete's None too — and, when old values are sent, of the old value (materialized: the
    old value is read from its own store instead)."""

    def __init__(self, supplier: Callable[[], Any], old_values: OldValues,
                 store_name: str | None = None, node: str = "KTABLE-TRANSFORMVALUES"):
        super().__init__(store_name)
        self.supplier, self.old_values, self.node = supplier, old_values, node

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.transformer = self.supplier()
        self.transformer.init(_NoForwardContext(context, self.node))

    def process(self, record: Record) -> None:
        ch, send_old = record.value, self.old_values.on
        new = self.transformer.transform(record.key, ch.new)
        if self.store_name is None:
            old = self.transformer.transform(record.key, ch.old) if send_old else None
            self.context.forward(record.with_value(Change(new, old, ch.is_latest)))
        else:
            self._write(record, new, self._get(record.key) if send_old else None)

    def close(self) -> None:
        self.transformer.close()


class TransformGetter(ValueGetter):
    """A transformed table without a store: its own transformer applied to the parent's row
    (None included, as Java's getter does); the row keeps the parent's timestamp."""

    def __init__(self, parent: ValueGetter, supplier: Callable[[], Any]):
        self.parent, self.supplier = parent, supplier
        self.stores = parent.stores

    def bind(self, context: ProcessorContext) -> Lookup:
        get_parent = self.parent.bind(context)
        transformer = self.supplier()
        transformer.init(_NoForwardContext(context, "a transformed table's reader"))

        def get(key: Any, as_of: int | None = None) -> tuple[Any, int]:
            v, ts = get_parent(key, as_of)
            out = transformer.transform(key, v)
            return _MISSING if out is None else (out, ts)
        return get
