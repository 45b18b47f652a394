"""The DSL's stateless operators, one small processor each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record

__all__ = ["NullKeyFilter", "DelayProcessor", "FilterProcessor", "MapValuesProcessor",
           "MapProcessor", "PeekProcessor", "FlatMapProcessor", "SelectKeyProcessor",
           "PassThroughProcessor", "BranchProcessor"]


class _Operator(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context


class FilterProcessor(_Operator):
    """Forwards records for which ``predicate(key, value)`` is true (false with ``negate``)."""

    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool = False):
        self.predicate = predicate
        self.negate = negate

    def process(self, record: Record) -> None:
        if bool(self.predicate(record.key, record.value)) != self.negate:
            self.context.forward(record)


class NullKeyFilter(_Operator):
    """A repartition's filter: drops null-key records unless ``keep.on`` (a left or outer
    join downstream wants them, KIP-962)."""

    def __init__(self, keep: Any):
        self.keep = keep

    def process(self, record: Record) -> None:
        if record.key is not None or self.keep.on:
            self.context.forward(record)


class MapValuesProcessor(_Operator):
    """Replaces the value by ``fn(value)``, or ``fn(key, value)`` with ``with_key``."""

    def __init__(self, fn: Callable[..., Any], with_key: bool = False):
        self.fn = fn
        self.with_key = with_key

    def process(self, record: Record) -> None:
        value = self.fn(record.key, record.value) if self.with_key else self.fn(record.value)
        self.context.forward(record.with_value(value))


class MapProcessor(_Operator):
    """Replaces key and value by ``fn(key, value) -> (key2, value2)``."""

    def __init__(self, fn: Callable[[Any, Any], tuple[Any, Any]]):
        self.fn = fn

    def process(self, record: Record) -> None:
        key, value = self.fn(record.key, record.value)
        self.context.forward(Record(key, value, record.timestamp, record.headers))


class PeekProcessor(_Operator):
    """Calls ``action(key, value)`` and forwards the record unchanged (``forward=False``: a
    terminal foreach)."""

    def __init__(self, action: Callable[[Any, Any], None], forward: bool = True):
        self.action = action
        self.forward = forward

    def process(self, record: Record) -> None:
        self.action(record.key, record.value)
        if self.forward:
            self.context.forward(record)


class FlatMapProcessor(_Operator):
    """Forwards each ``(key, value)`` of ``fn(key, value)``; ``values_only``: each value of
    ``fn(value)``."""

    def __init__(self, fn: Callable[..., Any], values_only: bool = False, with_key: bool = False):
        self.fn = fn
        self.values_only = values_only
        self.with_key = with_key

    def process(self, record: Record) -> None:
        if self.values_only:
            values = self.fn(record.key, record.value) if self.with_key else self.fn(record.value)
            for v in values:
                self.context.forward(record.with_value(v))
        else:
            for k, v in self.fn(record.key, record.value):
                self.context.forward(Record(k, v, record.timestamp, record.headers))


class SelectKeyProcessor(_Operator):
    """Sets the key to ``fn(key, value)``, keeping the value."""

    def __init__(self, fn: Callable[[Any, Any], Any]):
        self.fn = fn

    def process(self, record: Record) -> None:
        self.context.forward(record.with_key(self.fn(record.key, record.value)))


class PassThroughProcessor(_Operator):
    """Forwards every record unchanged (merge, branch children, repartition targets)."""

    def process(self, record: Record) -> None:
        self.context.forward(record)


class BranchProcessor(_Operator):
    """Forwards each record to the child of the first predicate it matches (or the default).

    ``branches`` is a list of ``(predicate or None, child name)``; it may still grow after the
    supplier is made, as the DSL's ``split()`` adds branches one call at a time.
    """

    def __init__(self, branches: list[tuple[Callable[[Any, Any], bool] | None, str]]):
        self.branches = branches

    def process(self, record: Record) -> None:
        for predicate, child in self.branches:
            if predicate is None or predicate(record.key, record.value):
                self.context.forward(record, child)
                return


class DelayProcessor(Processor):
    """``KStream.delay``: schedules each record ``delay_ms`` ahead and forwards it when it
    comes back (KIP-311's delayed processing)."""

    def __init__(self, delay_ms: int):
        self.delay_ms = delay_ms

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        if self.context.is_delayed_delivery():
            self.context.forward(record)
        else:
            self.context.schedule_record(record, self.delay_ms)
