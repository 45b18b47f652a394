"""How the DSL adds an aggregation: the aggregating node(s), their store and the result table.

Grouped streams and cogroups share it, as Kafka Streams' ``GroupedStreamAggregateBuilder``
and ``CogroupedStreamAggregateBuilder`` do: each function takes the grouped stream's
:class:`~kspark.dsl._upstream.Upstream` and, for a cogroup, its other streams as ``more``
((upstream, aggregator) pairs).

Example:
    >>> from kspark import Serdes
    >>> from kspark._graph.graph import SourceSpec, TopologyGraph
    >>> g = TopologyGraph()
    >>> _ = g.add(SourceSpec("src", ("words",)))
    >>> counts = aggregate(Upstream(g, "src", Serdes.String(), Serdes.String()),
    ...                    "KSTREAM-AGGREGATE", lambda: 0, lambda k, v, n: n + 1, None,
    ...                    Serdes.Long())
    >>> sorted(g.stores)
    ['KSTREAM-AGGREGATE-STATE-STORE-0000000000']
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine.aggregates.stream import StreamAggregateProcessor
from kspark._engine.operators import PassThroughProcessor
from kspark._graph.graph import ProcessorSpec
from kspark._graph.naming import burn, processor_name, store_name, suffixed_name
from kspark.dsl._upstream import Upstream, copartition, repartitioned
from kspark.dsl.materialized import Materialized
from kspark.errors import TopologyError
from kspark._engine.tables.processors import OldValues
from kspark._engine.aggregates.windows import (TimeWindowedSerde, SlidingWindows,
                                               SessionWindowedSerde)
from kspark.state.stores import (WindowBytesStoreSupplier, WindowStoreBuilder,
                                 SessionBytesStoreSupplier, SessionStoreBuilder)
from kspark._engine.aggregates.sliding import (SlidingWindowAggregateProcessor,
                                               sliding_store_retention)
from kspark._engine.aggregates.windowed import WindowAggregateProcessor, SessionAggregateProcessor
from kspark._engine.state.timestamped import ValueAndTimestampSerde

if TYPE_CHECKING:
    from kspark.dsl.ktable import KTable

__all__ = ["Aggregator", "Part", "add_aggregation", "aggregate", "windowed_aggregate",
           "session_aggregate"]

Aggregator = Callable[[Any, Any, Any], Any]
Part = tuple[Upstream, Aggregator]  # one of a cogroup's other grouped streams


class GivenName(str):
    """A processor name the user gave (``Named``), used as is where a prefix is expected;
    ``prefix`` is the one its generated name would have had (Java burns its index)."""

    prefix: str


def name_or(prefix: str, named: Any) -> str:
    """``named``'s name (a ``Named`` or a str) as a :class:`GivenName`, else ``prefix``."""
    from kspark.dsl._forms import named_of

    given = named_of(named)
    if not given:
        return prefix
    out = GivenName(given)
    out.prefix = prefix
    return out


def add_aggregation(up: Upstream, prefix: str, materialized: Materialized | None,
                    value_serde: Any, make_processor: Callable[..., Any],
                    make_builder: Callable[[Materialized, str, Any, Any], Any],
                    table_key_serde: Callable[[Any], Any] = lambda ks: ks,
                    grace_ms: int | None = None, more: tuple[Part, ...] = (),
                    burn_store: bool = False) -> KTable:
    """Add an aggregation node and its store after ``up``; returns the resulting KTable.

    Names as Java's: ``burn_store`` (``count(materialized)``) first burns a store name when
    the Materialized names none; then the store's name, the node's, and (a changed key) the
    repartition's, named for the grouping or the store (``_upstream.repartitioned``).

    A cogroup passes its other streams as ``more``: each stream gets its own aggregating
    node, all writing the one store, and their results meet in a merge node (as Java's
    CogroupedStreamAggregateBuilder)."""
    from kspark.dsl.ktable import KTable

    g = up.graph
    m = materialized or Materialized()
    given = prefix if isinstance(prefix, GivenName) else None
    gen = given.prefix if given else prefix
    if burn_store and materialized is not None and m.store_name is None:
        burn(g)  # Java's count(materialized) burns a store name; count() does not
    store = m.store_name or store_name(g, gen, m.logging)
    if more:
        return _cogroup(up, gen, given, store, m, value_serde, make_processor, make_builder,
                        table_key_serde, grace_ms, more)
    name = processor_name(g, gen, given)
    up = repartitioned(up, store)
    key_serde = m.key_serde if m.key_serde is not None else up.key_serde
    value_serde = m.value_serde if m.value_serde is not None else value_serde
    builder = make_builder(m, store, key_serde, value_serde)  # may refuse: before any node
    g.add(ProcessorSpec(name, make_processor(store), (up.node,)))
    g.add_store(builder, (name,))
    return KTable(g, name, None if key_serde is None else table_key_serde(key_serde),
                  value_serde, store, window_grace=grace_ms)


def _cogroup(first: Upstream, gen: str, given: str | None, store: str, m: Materialized,
             value_serde: Any, make_processor: Callable[..., Any],
             make_builder: Callable[[Materialized, str, Any, Any], Any],
             table_key_serde: Callable[[Any], Any], grace_ms: int | None,
             more: tuple[Part, ...]) -> KTable:
    """A cogroup's nodes, named as Java's ``CogroupedStreamAggregateBuilder``: each grouped
    stream repartitioned if its key changed, then one aggregating node per stream
    (``<name>-cogroup-agg-<i>``), all writing ``store``, and their merge."""
    from kspark.dsl.ktable import KTable

    g = first.graph
    parts = [repartitioned(up, store) for up in (first, *(o for o, _ in more))]
    key_serde = m.key_serde if m.key_serde is not None else first.key_serde
    value_serde = m.value_serde if m.value_serde is not None else value_serde
    builder = make_builder(m, store, key_serde, value_serde)  # may refuse: before any node
    nodes = []
    for i, (up, aggregator) in enumerate(zip(parts, (None, *(a for _, a in more)),
                                             strict=True)):
        nodes.append(suffixed_name(g, given, f"-cogroup-agg-{i}", gen))
        g.add(ProcessorSpec(nodes[-1], make_processor(store, *(
            (aggregator,) if aggregator else ())), (up.node,)))
    g.add_store(builder, tuple(nodes))
    name = suffixed_name(g, given, "-cogroup-merge", "COGROUPKSTREAM-MERGE")
    g.add(ProcessorSpec(name, PassThroughProcessor, tuple(nodes)))
    copartition(g, *(up.node for up in parts))
    return KTable(g, name, None if key_serde is None else table_key_serde(key_serde),
                  value_serde, store, window_grace=grace_ms)


def aggregate(up: Upstream, prefix: str, initializer: Callable[[], Any] | None,
              aggregator: Aggregator, materialized: Materialized | None, value_serde: Any,
              more: tuple[Part, ...] = (), count: bool = False) -> KTable:
    """A key-value aggregation of ``up`` (and of a cogroup's ``more``). The result table
    sends old values only once an operator downstream asks (Kafka Streams'
    enableSendingOldValues); until then a cache flush does not read them."""
    old = OldValues(False)
    table = add_aggregation(
        up, prefix, materialized, value_serde,
        lambda store, agg=aggregator: functools.partial(StreamAggregateProcessor, store,
                                                        initializer, agg, old),
        lambda m, store, ks, vs: m.builder(store, ks, vs), more=more, burn_store=count)
    table._old = old  # noqa: SLF001 - the table's switch is its processors'
    return table


def windowed_aggregate(up: Upstream, windows: Any, final: bool, prefix: str,
                       initializer: Callable[[], Any] | None, aggregator: Aggregator,
                       materialized: Materialized | None, value_serde: Any,
                       more: tuple[Part, ...] = (), count: bool = False) -> KTable:
    """An aggregation in time or sliding windows; ``final``: emit on window close;
    ``count``: a ``count()``, whose store name Java burns first (not for sliding windows)."""
    processor, size, retention, minimum, cache_final = _window_layout(windows)
    return add_aggregation(
        up, prefix, materialized, value_serde,
        lambda store, agg=aggregator: functools.partial(processor, store, windows,
                                                        initializer, agg, final),
        _timestamped_builder(WindowStoreBuilder, lambda store, m: WindowBytesStoreSupplier(
            store, m.persistent, _retention(m, retention, minimum),
            size, time_first=final and m.persistent),
            uncached=final and not cache_final),
        lambda ks: TimeWindowedSerde(ks, size), windows.grace_ms, more, burn_store=count)


def _window_layout(windows: Any) -> tuple[Any, int, int, str, bool]:
    """The aggregating processor, the window size, the store's retention, what that
    retention must cover, and whether a final-results store is cached: Kafka Streams caches
    one of time windows, not of sliding windows (SlidingWindowStoreMaterializer)."""
    if isinstance(windows, SlidingWindows):
        return (SlidingWindowAggregateProcessor, windows.time_difference_ms,
                sliding_store_retention(windows), "twice its time difference plus grace", False)

    return (WindowAggregateProcessor, windows.size_ms, windows.size_ms + windows.grace_ms,
            "its window size plus grace", True)


def session_aggregate(up: Upstream, windows: Any, final: bool, prefix: str,
                      initializer: Callable[[], Any] | None, aggregator: Aggregator,
                      merger: Aggregator, materialized: Materialized | None, value_serde: Any,
                      more: tuple[Part, ...] = (), count: bool = False) -> KTable:
    """An aggregation in session windows; ``merger(key, agg1, agg2)`` joins two sessions."""
    w = windows
    return add_aggregation(
        up, prefix, materialized, value_serde,
        lambda store, agg=aggregator: functools.partial(SessionAggregateProcessor, store, w,
                                                        initializer, agg, merger, final),
        _timestamped_builder(SessionStoreBuilder, lambda store, m: SessionBytesStoreSupplier(
            store, m.persistent, _retention(m, w.gap_ms + w.grace_ms,
                                            "its inactivity gap plus grace")),
            uncached=final),  # as Java's SessionStoreMaterializer for final results
        SessionWindowedSerde, w.gap_ms + w.grace_ms, more,  # suppress: gap + grace, as Java
        burn_store=count)


def _retention(m: Materialized, minimum: int, what: str) -> int:
    """The store retention ``m`` asks for (by default ``minimum``), refused if too short."""
    if m.retention_ms is None:
        return minimum
    if m.retention_ms < minimum:
        raise TopologyError(
            f"the retention period of the store {m.store_name or '(unnamed)'} must be no smaller "
            f"than {what} ({minimum} ms); got retention {m.retention_ms} ms: raise it with "
            f"Materialized.with_retention")
    return m.retention_ms


def _timestamped_builder(builder_cls: Any, supplier: Callable[[str, Materialized], Any],
                         uncached: bool = False) -> Callable:
    """A ``make_builder`` for window and session stores holding ValueAndTimestamp values;
    ``uncached``: never cache the store, whatever ``Materialized`` says."""
    def make(m: Materialized, store: str, key_serde: Any, value_serde: Any) -> Any:
        if m.history_retention_ms is not None:
            raise TopologyError(f"store {store!r}: a windowed aggregation cannot be kept in a "
                                f"versioned key-value store; use a window or session store")
        return builder_cls(supplier(store, m), key_serde, ValueAndTimestampSerde(value_serde),
                           logging_enabled=m.logging, log_config=m.log_config,
                           caching_enabled=False if uncached else m.caching)

    return make
