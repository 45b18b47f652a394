"""The scenario language's steps for the DSL that issue 10 added (lang.py delegates here):
cogroup, emit strategies, transform_values, process_values, to_stream with a mapper and
versioned tables. ``Reference.java`` has the same steps and the same named functions.

    op c cogroup <grouped> <grouped2>  first folds +value, second -2*value; then aggregate
    op e emit_final <windowed>         EmitStrategy.on_window_close()
    op t transform_values <table> [<store>]   value*1000 + calls (deletes counted), None stays
    op s process_values <stream>       value*10, timestamp+1, key kept
    op s to_stream_by <table> <keyfn>  to_stream(mapper)
    op t vtable <topic> <history_ms>   a table over a versioned store named v-<topic>
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark import EmitStrategy, Materialized, Serdes
from kspark.processor import Processor
from kspark.state import Stores

__all__ = ["op", "aggregate"]

S, L = Serdes.String(), Serdes.Long()


class _Calls:
    """A value transformer numbering its calls: value * 1000 + calls (None stays None)."""

    def init(self, context: Any) -> None:
        self.calls = 0

    def transform(self, key: Any, value: Any) -> Any:
        self.calls += 1
        return None if value is None else value * 1000 + self.calls

    def close(self) -> None:
        pass


class _Tenfold(Processor):
    def init(self, context: Any) -> None:
        self.context = context

    def process(self, record: Any) -> None:
        v = record.value
        self.context.forward(record.with_value(None if v is None else v * 10)
                             .with_timestamp(record.timestamp + 1))


def op(b: Any, v: dict[str, Any], t: list[str], p: str, key_of: Callable, mat: Callable,
       plus: Callable) -> Any:
    """The step ``t`` (an ``op`` line), or raise ValueError if it is not one of these."""
    x = v.get(t[3]) if len(t) > 3 else None
    kind = t[2]
    if kind == "cogroup":
        return x.cogroup(lambda k, w, agg: plus(agg, w)).cogroup(
            v[t[4]], lambda k, w, agg: agg - 2 * (w or 0))
    if kind == "emit_final":
        return x.emit_strategy(EmitStrategy.on_window_close())
    if kind == "transform_values":
        if len(t) > 4:
            return x.transform_values(_Calls, mat(t, 4, p))
        return x.transform_values(_Calls)
    if kind == "process_values":
        return x.process_values(_Tenfold)
    if kind == "to_stream_by":
        return x.to_stream(lambda k, w: key_of(t[4], k, w))
    if kind == "vtable":
        store = Stores.persistent_versioned_key_value_store(f"v-{p}{t[3]}", int(t[4]))
        return b.table(p + t[3], key_serde=S, value_serde=L,
                       materialized=Materialized.as_(store).with_key_serde(S).with_value_serde(L))
    raise ValueError(f"unknown op {kind}")


def aggregate(x: Any, m: Materialized, plus: Callable) -> Any:
    """``aggregate`` of a cogroup (None: ``x`` is not one)."""
    name = type(x).__name__
    if name in ("CogroupedKStream", "TimeWindowedCogroupedKStream"):
        return x.aggregate(lambda: 0, m)
    if name == "SessionWindowedCogroupedKStream":
        return x.aggregate(lambda: 0, lambda k, a, c: plus(a, c), m)
    return None
