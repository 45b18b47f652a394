"""Aggregation of a grouped stream into a table: count / reduce / aggregate per key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.api import Record
from kspark._engine.tables.processors import TableStoreProcessor
from kspark._engine.context import record_dropped

__all__ = ["StreamAggregateProcessor", "count_initializer", "count_one"]


def count_initializer() -> int:
    """``count()``'s initializer (the batch path recognizes a count by these two)."""
    return 0


def count_one(key: Any, value: Any, aggregate: int) -> int:
    """``count()``'s aggregator: one more."""
    return aggregate + 1


class StreamAggregateProcessor(TableStoreProcessor):
    """count / reduce / aggregate of a grouped stream; null keys and values are skipped, and
    a result carries max(record timestamp, previous aggregate's timestamp)."""

    def __init__(self, store_name: str, initializer: Callable[[], Any] | None,
                 aggregator: Callable[[Any, Any, Any], Any], old_values: Any = None):
        super().__init__(store_name)
        self.initializer = initializer
        self.aggregator = aggregator
        # the result table's sendOldValues switch: off, a cache flush reads no old value
        self.flush_old_values = old_values

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            record_dropped(self.context, "an aggregation skips a record with a null "
                                         f"{'key' if record.key is None else 'value'}")
            return
        old_vt = self.store.get(record.key)
        old = None if old_vt is None else old_vt.value
        if old is None:
            # as KStreamAggregate: a first aggregate's old value is the initializer's
            old = None if self.initializer is None else self.initializer()
            new = record.value if self.initializer is None else self.aggregator(
                record.key, record.value, old)
        else:
            new = self.aggregator(record.key, record.value, old)
        # As KStreamAggregate/KStreamReduce: the aggregate carries the newest timestamp it saw.
        ts = record.timestamp if old_vt is None else max(record.timestamp, old_vt.timestamp)
        self._write(record, new, old, ts)
