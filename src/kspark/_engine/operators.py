"""The DSL's stateless operators, one small processor each."""

from __future__ import annotations

import functools
import reprlib
from abc import abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark.errors import KSparkError

__all__ = ["InlinedOperator", "NullKeyFilter", "DelayProcessor", "FilterProcessor",
           "MapValuesProcessor", "MapProcessor", "PeekProcessor", "FlatMapProcessor",
           "SelectKeyProcessor", "PassThroughProcessor", "BranchProcessor", "is_pair", "not_a_pair"]

_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxdict, _SHORT.maxlist = 40, 60, 4, 6


def is_pair(result: Any) -> bool:
    """Whether a mapper's ``result`` is a key-value pair: a 2-tuple, or a ``KeyValue`` (a
    named 2-tuple). Callers test ``type(r) is tuple and len(r) == 2`` first, the common case."""
    return isinstance(result, tuple) and len(result) == 2


def not_a_pair(what: str, fn: Any, result: Any) -> TypeError:
    """The error for a mapper ``fn`` whose ``result`` is not a key-value pair (the processor
    node makes it a ProcessorError naming the task, the node and the record).

    >>> not_a_pair("map() must return", None, {"a": 1})
    TypeError("map() must return a KeyValue or a (key, value) tuple, got dict {'a': 1}")
    """
    return TypeError(f"{what} a KeyValue or a (key, value) tuple, got "
                     f"{type(result).__name__} {_SHORT.repr(result)}{_origin(fn)}")


def _origin(fn: Any) -> str:
    """`` (from name at file:line)`` for a user function, the line it is defined on."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    code = getattr(fn, "__code__", None)
    if code is None and callable(fn):  # a callable object: its __call__
        code = getattr(type(fn).__call__, "__code__", None)
    if code is None:
        return ""
    return f" (from {code.co_name} at {code.co_filename}:{code.co_firstlineno})"


class _Operator(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context


_new = tuple.__new__  # Record(...) without namedtuple's Python-level __new__
Children = list  # a node's children (``ProcessorNode.children``), each with ``process``
Failed = Callable[[Record, Exception], None]  # the node's failure handling (``failed``)


class InlinedOperator(_Operator):
    """An operator whose node may run it in the node's own call (``inline``), forwarding
    straight to the node's children: one Python call per node and record instead of three
    (node, processor, context). ``process`` stays the reference behaviour; each ``inline``
    does exactly what it does.

    >>> seen = []
    >>> class Child:
    ...     def process(self, record): seen.append(record)
    >>> step = MapValuesProcessor(str.upper).inline([Child()], None)
    >>> step(Record("k", "v", 5)); seen
    [Record(key='k', value='V', timestamp=5, headers=())]
    """

    @abstractmethod
    def inline(self, children: Children, failed: Failed) -> Callable[[Record], None]:
        """This operator's ``process`` forwarding to ``children``; what user code raises
        (other than a KSparkError) goes to ``failed(record, error)``."""



class FilterProcessor(InlinedOperator):
    """Forwards records for which ``predicate(key, value)`` is true (false with ``negate``)."""

    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool = False):
        self.predicate = predicate
        self.negate = negate

    def process(self, record: Record) -> None:
        if bool(self.predicate(record.key, record.value)) != self.negate:
            self.context.forward(record)

    def inline(self, children: Children, failed: Failed) -> Callable[[Record], None]:
        predicate, negate = self.predicate, self.negate

        def process(record: Record) -> None:
            try:
                keep = bool(predicate(record.key, record.value)) != negate
            except KSparkError:
                raise
            except Exception as e:  # noqa: BLE001 - user code: the handler decides
                failed(record, e)
                return
            if keep:
                for child in children:
                    child.process(record)
        return process


class NullKeyFilter(_Operator):
    """A repartition's filter: drops null-key records unless ``keep.on`` (a left or outer
    join downstream wants them, KIP-962)."""

    def __init__(self, keep: Any):
        self.keep = keep

    def process(self, record: Record) -> None:
        if record.key is not None or self.keep.on:
            self.context.forward(record)


class MapValuesProcessor(InlinedOperator):
    """Replaces the value by ``fn(value)``, or ``fn(key, value)`` with ``with_key``."""

    def __init__(self, fn: Callable[..., Any], with_key: bool = False):
        self.fn = fn
        self.with_key = with_key

    def process(self, record: Record) -> None:
        value = self.fn(record.key, record.value) if self.with_key else self.fn(record.value)
        self.context.forward(record.with_value(value))

    def inline(self, children: Children, failed: Failed) -> Callable[[Record], None]:
        fn, with_key = self.fn, self.with_key

        def process(record: Record) -> None:
            try:
                value = fn(record.key, record.value) if with_key else fn(record.value)
            except KSparkError:
                raise
            except Exception as e:  # noqa: BLE001 - user code: the handler decides
                failed(record, e)
                return
            out = _new(Record, (record.key, value, record.timestamp, record.headers))
            for child in children:
                child.process(out)
        return process


class MapProcessor(InlinedOperator):
    """Replaces key and value by ``fn(key, value) -> (key2, value2)``."""

    def __init__(self, fn: Callable[[Any, Any], tuple[Any, Any]]):
        self.fn = fn

    def process(self, record: Record) -> None:
        kv = self.fn(record.key, record.value)
        if not (type(kv) is tuple and len(kv) == 2) and not is_pair(kv):
            raise not_a_pair("map() must return", self.fn, kv)
        self.context.forward(Record(kv[0], kv[1], record.timestamp, record.headers))

    def inline(self, children: Children, failed: Failed) -> Callable[[Record], None]:
        fn = self.fn

        def process(record: Record) -> None:
            try:
                kv = fn(record.key, record.value)
                if not (type(kv) is tuple and len(kv) == 2) and not is_pair(kv):
                    raise not_a_pair("map() must return", fn, kv)
            except KSparkError:
                raise
            except Exception as e:  # noqa: BLE001 - user code: the handler decides
                failed(record, e)
                return
            out = _new(Record, (kv[0], kv[1], record.timestamp, record.headers))
            for child in children:
                child.process(out)
        return process


class PeekProcessor(InlinedOperator):
    """Calls ``action(key, value)`` and forwards the record unchanged (``forward=False``: a
    terminal foreach)."""

    def __init__(self, action: Callable[[Any, Any], None], forward: bool = True):
        self.action = action
        self.forward = forward

    def process(self, record: Record) -> None:
        self.action(record.key, record.value)
        if self.forward:
            self.context.forward(record)

    def inline(self, children: Children, failed: Failed) -> Callable[[Record], None]:
        action, forward = self.action, self.forward

        def process(record: Record) -> None:
            try:
                action(record.key, record.value)
            except KSparkError:
                raise
            except Exception as e:  # noqa: BLE001 - user code: the handler decides
                failed(record, e)
                return
            if forward:
                for child in children:
                    child.process(record)
        return process


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
            for v in _iterable(self.fn, values, "flat_map_values() must return an iterable of "
                               "values"):
                self.context.forward(record.with_value(v))
        else:
            for kv in _iterable(self.fn, self.fn(record.key, record.value)):
                if not (type(kv) is tuple and len(kv) == 2) and not is_pair(kv):
                    raise not_a_pair("each element flat_map() returns must be", self.fn, kv)
                self.context.forward(Record(kv[0], kv[1], record.timestamp, record.headers))


def _iterable(fn: Any, result: Any,
              what: str = "flat_map() must return an iterable of KeyValue or (key, value) "
                          "tuples") -> Any:
    """flat_map()'s (or flat_map_values()') ``result`` if it is an iterable of items (a
    dict is not: iterating it yields its keys; nor is a str or bytes: their characters)."""
    if type(result) is list or type(result) is tuple:
        return result
    if not isinstance(result, (Mapping, str, bytes, bytearray)):
        try:
            return iter(result)
        except TypeError:
            pass
    raise TypeError(f"{what} (say, a list), got {type(result).__name__} "
                    f"{_SHORT.repr(result)}{_origin(fn)}")


class SelectKeyProcessor(InlinedOperator):
    """Sets the key to ``fn(key, value)``, keeping the value."""

    def __init__(self, fn: Callable[[Any, Any], Any]):
        self.fn = fn

    def process(self, record: Record) -> None:
        self.context.forward(record.with_key(self.fn(record.key, record.value)))

    def inline(self, children: Children, failed: Failed) -> Callable[[Record], None]:
        fn = self.fn

        def process(record: Record) -> None:
            try:
                key = fn(record.key, record.value)
            except KSparkError:
                raise
            except Exception as e:  # noqa: BLE001 - user code: the handler decides
                failed(record, e)
                return
            out = _new(Record, (key, record.value, record.timestamp, record.headers))
            for child in children:
                child.process(out)
        return process


class PassThroughProcessor(InlinedOperator):
    """Forwards every record unchanged (merge, branch children, repartition targets)."""

    def process(self, record: Record) -> None:
        self.context.forward(record)

    def inline(self, children: Children, failed: Failed) -> Callable[[Record], None]:
        def process(record: Record) -> None:
            for child in children:
                child.process(record)
        return process


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
