"""KGroupedTable: a table's rows re-grouped by a new key, ready to aggregate into a KTable
that adds each new row and subtracts the row it replaces."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine.tables import processors as tables
from kspark._graph.graph import ProcessorSpec
from kspark._graph.naming import processor_name, store_name, suffixed_name
from kspark.dsl import _forms
from kspark.dsl._overloads import bind
from kspark.dsl._upstream import Upstream
from kspark.dsl.materialized import Materialized
from kspark._engine.tables.change import ChangeSerde
from kspark._engine.tables.processors import TableAggregateProcessor
from kspark._graph.graph import SinkSpec, SourceSpec
from kspark.serde import Serdes

if TYPE_CHECKING:
    from kspark.dsl.ktable import KTable

__all__ = ["KGroupedTable"]


class KGroupedTable:
    """A re-grouped table: aggregations add new rows and subtract replaced or deleted ones.

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> users = b.table("users", key_serde=Serdes.String(), value_serde=Serdes.String())
        >>> per_city = users.group_by(lambda user, city: (city, user)).count()
    """

    def __init__(self, table: Upstream, selector: Callable, key_serde: Any, value_serde: Any,
                 name: str | None = None):
        g = table.graph
        # the select node (Java's order: made by group_by), named "<name>" for Grouped's
        # name, which also names the repartition topic "<name>-repartition"
        self._select = processor_name(g, "KTABLE-SELECT", name)
        g.add(ProcessorSpec(self._select, functools.partial(tables.TableGroupByProcessor,
                                                            selector),
                            (table.node,), key_changing=True))
        self._table = table
        self._key_serde, self._value_serde = key_serde, value_serde  # of the regrouped rows
        self._name = name

    def _aggregate(self, initializer: Callable[[], Any], adder: Callable, subtractor: Callable,
                   materialized: Materialized | None, value_serde: Any,
                   named: Any = None, prefix: str = "KTABLE-AGGREGATE") -> KTable:
        from kspark.dsl.ktable import KTable

        g = self._table.graph
        m = materialized or Materialized()
        # Java's names: the store's, the repartition sink's and source's, the node's
        store = m.store_name or store_name(g, "KTABLE-AGGREGATE", m.logging)
        given = _forms.named_of(named)
        sink = suffixed_name(g, given, "-sink", "KSTREAM-SINK")
        src = suffixed_name(g, given, "-source", "KSTREAM-SOURCE")
        name = processor_name(g, prefix, given)
        topic = f"{self._name or store}-repartition"
        if topic not in {t for s in g.sources() for t in s.topics}:  # a named grouping: once
            g.add(SinkSpec(sink, topic, (self._select,), self._key_serde,
                           ChangeSerde(self._value_serde), internal=True))
            g.add(SourceSpec(src, (topic,), self._key_serde, ChangeSerde(self._value_serde),
                             internal=True))
        else:
            src = next(s.name for s in g.sources() if topic in s.topics)
        ks = m.key_serde if m.key_serde is not None else self._key_serde
        vs = m.value_serde if m.value_serde is not None else value_serde
        g.add(ProcessorSpec(name, functools.partial(
            TableAggregateProcessor, store, initializer, adder, subtractor), (src,)))
        g.add_store(m.builder(store, ks, vs), (name,))
        return KTable(g, name, ks, vs, store)

    def count(self, *args: Any, **kwargs: Any) -> KTable:
        """The number of rows per new key: ``count([named][, materialized])``."""
        a = bind("KGroupedTable.count", _forms.COUNT, args, kwargs)
        return self._aggregate(lambda: 0, lambda k, v, agg: agg + 1, lambda k, v, agg: agg - 1,
                               a["materialized"], Serdes.Long(), a["named"])

    def reduce(self, *args: Any, **kwargs: Any) -> KTable:
        """``adder(agg, new_value)`` and ``subtractor(agg, old_value)``:
        ``reduce(adder, subtractor[, named][, materialized])``."""
        a = bind("KGroupedTable.reduce", _forms.TABLE_REDUCE, args, kwargs)
        adder, subtractor = a["adder"], a["subtractor"]
        return self._aggregate(lambda: None, lambda k, v, agg: v if agg is None else adder(agg, v),
                               lambda k, v, agg: subtractor(agg, v), a["materialized"],
                               self._value_serde, a["named"], "KTABLE-REDUCE")

    def aggregate(self, *args: Any, **kwargs: Any) -> KTable:
        """``adder(key, value, agg)`` / ``subtractor(key, value, agg)`` from
        ``initializer()``: ``aggregate(initializer, adder, subtractor[, named]
        [, materialized])``."""
        a = bind("KGroupedTable.aggregate", _forms.TABLE_AGGREGATE, args, kwargs)
        return self._aggregate(a["initializer"], a["adder"], a["subtractor"],
                               a["materialized"], None, a["named"])
