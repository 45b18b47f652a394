"""KTable-KTable joins: a change on one side joins the other side's current value, read
through that table's value getter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.tables.change import Change, out_of_order

__all__ = ["TableTableJoinProcessor"]


class TableTableJoinProcessor(Processor):
    """One side of a table-table join: a change on this side joins the other side's value.

    ``kind`` is "inner", "left" or "outer"; ``this_is_left`` says which side this processor
    is on, so the joiner always gets (left value, right value).
    """

    def __init__(self, other: Any, joiner: Callable[[Any, Any], Any], kind: str,
                 this_is_left: bool):
        self.other, self.joiner = other, joiner  # other: the other table's ValueGetter
        self.kind, self.this_is_left = kind, this_is_left

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.lookup = self.other.bind(context)

    def _join(self, mine: Any, other: Any) -> Any:
        left, right = (mine, other) if self.this_is_left else (other, mine)
        if left is None and right is None:
            return None
        if self.kind == "inner" and (left is None or right is None):
            return None
        if self.kind == "left" and left is None:
            return None
        return self.joiner(left, right)

    def process(self, record: Record) -> None:
        change: Change = record.value
        if out_of_order(self.context, record, "a table-table join"):
            return
        other, other_ts = self.lookup(record.key)
        new, old = self._join(change.new, other), self._join(change.old, other)
        # Java's inner join, and a left join's left side, forward a delete whenever the other
        # side has a value (KTableKTableInnerJoin, KTableKTableLeftJoin)
        tombstone = other is not None and (self.kind == "inner" or
                                           (self.kind == "left" and self.this_is_left))
        if new is None and old is None and not tombstone:
            return
        ts = max(record.timestamp, other_ts)
        self.context.forward(Record(record.key, Change(new, old), ts, record.headers))
