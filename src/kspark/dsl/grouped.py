"""KGroupedStream: a stream grouped by key, ready to aggregate into a KTable."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine.aggregates.stream import StreamAggregateProcessor
from kspark._engine.operators import PassThroughProcessor
from kspark._graph.graph import ProcessorSpec
from kspark.dsl.materialized import Materialized

if TYPE_CHECKING:
    from kspark.dsl.cogrouped import CogroupedKStream
    from kspark.dsl.kstream import KStream
    from kspark.dsl.ktable import KTable

__all__ = ["KGroupedStream", "TimeWindowedKStream", "SlidingWindowedKStream",
           "SessionWindowedKStream"]


def _add_aggregation(stream: "KStream", prefix: str, materialized: Materialized | None,
                     value_serde: Any, make_processor: Callable[[str], Any],
                     make_builder: Callable[[Materialized, str, Any, Any], Any],
                     table_key_serde: Callable[[Any], Any] = lambda ks: ks,
                     grace_ms: int | None = None,
                     more: tuple[tuple["KStream", Any], ...] = ()) -> "KTable":
    """Add an aggregation node and its store after ``stream``; returns the resulting KTable.

    A cogroup passes its other streams as ``more`` ((stream, aggregator) pairs): each
    stream gets its own aggregating node, all writing the one store, and their results
    meet in a merge node (as Java's CogroupedStreamAggregateBuilder)."""
    from kspark.dsl.kstream import _copartition
    from kspark.dsl.ktable import KTable

    g = stream._graph
    m = materialized or Materialized()
    name = g.next_name(prefix)
    store = m.store_name or f"{name}-STATE-STORE"
    key_serde = m.key_serde if m.key_serde is not None else stream._key_serde
    value_serde = m.value_serde if m.value_serde is not None else value_serde
    builder = make_builder(m, store, key_serde, value_serde)  # may refuse: before any node
    g.add(ProcessorSpec(name, make_processor(store), (stream._node,)))
    nodes = [name]
    for other, aggregator in more:
        nodes.append(g.next_name(prefix))
        g.add(ProcessorSpec(nodes[-1], make_processor(store, aggregator), (other._node,)))
    g.add_store(builder, tuple(nodes))
    if more:
        name = g.next_name("COGROUPKSTREAM-MERGE")
        g.add(ProcessorSpec(name, PassThroughProcessor, tuple(nodes)))
        _copartition(g, stream, *(other for other, _ in more))
    table = KTable(g, name, None if key_serde is None else table_key_serde(key_serde),
                   value_serde, store)
    table._window_grace = grace_ms
    return table


def _retention(m: Materialized, minimum: int, what: str) -> int:
    """The store retention ``m`` asks for (by default ``minimum``), refused if too short."""
    from kspark.errors import TopologyError

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
    from kspark._engine.state.timestamped import ValueAndTimestampSerde

    def make(m: Materialized, store: str, key_serde: Any, value_serde: Any) -> Any:
        if m.history_retention_ms is not None:
            from kspark.errors import TopologyError

            raise TopologyError(f"store {store!r}: a windowed aggregation cannot be kept in a "
                                f"versioned key-value store; use a window or session store")
        return builder_cls(supplier(store, m), key_serde, ValueAndTimestampSerde(value_serde),
                           logging_enabled=m.logging, log_config=m.log_config,
                           caching_enabled=False if uncached else m.caching)

    return make


class KGroupedStream:
    """Returned by ``group_by_key`` / ``group_by``. Records with a null key or value are skipped.

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> counts = b.stream("words", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
        ...           .group_by_key().count()
    """

    def __init__(self, stream: "KStream"):
        self._stream = stream
        self._graph = stream._graph

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   aggregator: Callable[[Any, Any, Any], Any], materialized: Materialized | None,
                   value_serde: Any, more: tuple = ()) -> "KTable":
        return _add_aggregation(
            self._stream, prefix, materialized, value_serde,
            lambda store, agg=aggregator: functools.partial(StreamAggregateProcessor, store,
                                                            initializer, agg),
            lambda m, store, ks, vs: m.builder(store, ks, vs), more=more)

    def cogroup(self, aggregator: Callable[[Any, Any, Any], Any]) -> CogroupedKStream:
        """Start a cogroup: several grouped streams, each with its own
        ``aggregator(key, value, aggregate)``, folded into one aggregate per key (add the
        others with ``.cogroup(grouped, aggregator)``, then ``.aggregate(initializer)``).

        Example:
            >>> from kspark import StreamsBuilder, Serdes
            >>> b = StreamsBuilder()
            >>> S, L = Serdes.String(), Serdes.Long()
            >>> clicks = b.stream("clicks", key_serde=S, value_serde=L).group_by_key()
            >>> views = b.stream("views", key_serde=S, value_serde=L).group_by_key()
            >>> totals = (clicks.cogroup(lambda k, v, agg: agg + v)
            ...           .cogroup(views, lambda k, v, agg: agg + 10 * v)
            ...           .aggregate(lambda: 0))
        """
        from kspark.dsl.cogrouped import CogroupedKStream

        return CogroupedKStream([(self, aggregator)])

    def windowed_by(self, windows: Any) -> TimeWindowedKStream | SessionWindowedKStream:
        """Aggregate per key and window: ``TimeWindows``, ``SlidingWindows`` or ``SessionWindows``."""
        from kspark._engine.aggregates.windows import SessionWindows, SlidingWindows

        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows)
        if isinstance(windows, SlidingWindows):
            return SlidingWindowedKStream(self, windows)
        return TimeWindowedKStream(self, windows)

    def count(self, materialized: Materialized | None = None) -> "KTable":
        """The number of records per key (values default to Serdes.Long())."""
        from kspark.serde import Serdes

        return self._aggregate("KSTREAM-AGGREGATE", lambda: 0, lambda k, v, agg: agg + 1,
                               materialized, Serdes.Long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | None = None) -> "KTable":
        """Combine each key's values with ``reducer(aggregate, value)``."""
        return self._aggregate("KSTREAM-REDUCE", None, lambda k, v, agg: reducer(agg, v),
                               materialized, self._stream._value_serde)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None) -> "KTable":
        """Fold each key's values: ``aggregator(key, value, aggregate)`` from ``initializer()``."""
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, materialized, None)


class TimeWindowedKStream:
    """A grouped stream cut into time windows: aggregations give a KTable of Windowed keys."""

    _minimum = "its window size plus grace"  # the shortest store retention
    # Kafka Streams caches a final-results (emit on window close) store of time windows,
    # but not of sliding windows (SlidingWindowStoreMaterializer)
    _cache_final = True

    def __init__(self, grouped: KGroupedStream, windows: Any):
        self._grouped = grouped
        self._windows = windows
        self._final = False

    def emit_strategy(self, strategy: Any) -> TimeWindowedKStream:
        """``EmitStrategy.on_window_close()``: forward only each window's final result, once
        it closes (window end plus grace); ``on_window_update()`` (the default): each update.

        Example:
            >>> from kspark import StreamsBuilder, Serdes, TimeWindows, EmitStrategy
            >>> b = StreamsBuilder()
            >>> final_counts = (b.stream("clicks", key_serde=Serdes.String(),
            ...                          value_serde=Serdes.String()).group_by_key()
            ...     .windowed_by(TimeWindows.of_size_and_grace(60_000, 5_000))
            ...     .emit_strategy(EmitStrategy.on_window_close()).count())
        """
        self._final = strategy.final
        return self

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   aggregator: Callable[[Any, Any, Any], Any], materialized: Materialized | None,
                   value_serde: Any, more: tuple = ()) -> "KTable":
        from kspark._engine.aggregates.windows import TimeWindowedSerde
        from kspark.state.stores import WindowBytesStoreSupplier, WindowStoreBuilder

        processor, size, retention = self._layout()
        return _add_aggregation(
            self._grouped._stream, prefix, materialized, value_serde,
            lambda store, agg=aggregator: functools.partial(processor, store, self._windows,
                                                            initializer, agg, self._final),
            _timestamped_builder(WindowStoreBuilder, lambda store, m: WindowBytesStoreSupplier(
                store, m.persistent, _retention(m, retention, self._minimum),
                size, time_first=self._final and m.persistent),
                uncached=self._final and not self._cache_final),
            lambda ks: TimeWindowedSerde(ks, size), self._windows.grace_ms, more)

    def _layout(self) -> tuple[Any, int, int]:
        """The aggregating processor, the window size and the store's retention."""
        from kspark._engine.aggregates.windowed import WindowAggregateProcessor

        w = self._windows
        return WindowAggregateProcessor, w.size_ms, w.size_ms + w.grace_ms

    def count(self, materialized: Materialized | None = None) -> "KTable":
        from kspark.serde import Serdes

        return self._aggregate("KSTREAM-AGGREGATE", lambda: 0, lambda k, v, agg: agg + 1,
                               materialized, Serdes.Long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | None = None) -> "KTable":
        return self._aggregate("KSTREAM-REDUCE", None, lambda k, v, agg: reducer(agg, v),
                               materialized, self._grouped._stream._value_serde)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None) -> "KTable":
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, materialized, None)


class SlidingWindowedKStream(TimeWindowedKStream):
    """A grouped stream in sliding windows (``SlidingWindows``): ``count``, ``reduce`` and
    ``aggregate`` give a KTable of Windowed keys whose windows are ``[start, start + d]``.

    Example:
        >>> from kspark import StreamsBuilder, Serdes, SlidingWindows
        >>> b = StreamsBuilder()
        >>> table = (b.stream("clicks", key_serde=Serdes.String(), value_serde=Serdes.String())
        ...           .group_by_key()
        ...           .windowed_by(SlidingWindows.of_time_difference_and_grace(5000, 1000))
        ...           .count())
    """

    _minimum = "twice its time difference plus grace"
    _cache_final = False

    def _layout(self) -> tuple[Any, int, int]:
        from kspark._engine.aggregates.sliding import (SlidingWindowAggregateProcessor,
                                                       sliding_store_retention)

        w = self._windows
        return SlidingWindowAggregateProcessor, w.time_difference_ms, sliding_store_retention(w)


class SessionWindowedKStream:
    """A grouped stream cut into sessions: aggregations give a KTable of Windowed keys."""

    def __init__(self, grouped: KGroupedStream, windows: Any):
        self._grouped = grouped
        self._windows = windows
        self._final = False

    def emit_strategy(self, strategy: Any) -> "SessionWindowedKStream":
        """``EmitStrategy.on_window_close()``: forward each session once, when it closes
        (end plus gap plus grace passed), and no deletes for merged sessions."""
        self._final = strategy.final
        return self

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   aggregator: Callable[[Any, Any, Any], Any], merger: Callable[[Any, Any, Any], Any],
                   materialized: Materialized | None, value_serde: Any,
                   more: tuple = ()) -> "KTable":
        from kspark._engine.aggregates.windowed import SessionAggregateProcessor
        from kspark._engine.aggregates.windows import SessionWindowedSerde
        from kspark.state.stores import SessionBytesStoreSupplier, SessionStoreBuilder

        w = self._windows
        return _add_aggregation(
            self._grouped._stream, prefix, materialized, value_serde,
            lambda store, agg=aggregator: functools.partial(SessionAggregateProcessor, store, w,
                                                            initializer, agg, merger, self._final),
            _timestamped_builder(SessionStoreBuilder, lambda store, m: SessionBytesStoreSupplier(
                store, m.persistent, _retention(m, w.gap_ms + w.grace_ms,
                                                "its inactivity gap plus grace")),
                uncached=self._final),  # as Java's SessionStoreMaterializer for final results
            SessionWindowedSerde, w.gap_ms + w.grace_ms, more)  # suppress: gap + grace, as Java

    def count(self, materialized: Materialized | None = None) -> "KTable":
        from kspark.serde import Serdes

        return self._aggregate("KSTREAM-AGGREGATE", lambda: 0, lambda k, v, agg: agg + 1,
                               lambda k, a, b: a + b, materialized, Serdes.Long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | None = None) -> "KTable":
        return self._aggregate("KSTREAM-REDUCE", None, lambda k, v, agg: reducer(agg, v),
                               lambda k, a, b: reducer(a, b), materialized,
                               self._grouped._stream._value_serde)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  merger: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None) -> "KTable":
        """``merger(key, agg1, agg2)`` combines two sessions' aggregates when a record joins them."""
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, merger,
                               materialized, None)
