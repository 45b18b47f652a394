"""KGroupedStream: a stream grouped by key, ready to aggregate into a KTable."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine.tables import StreamAggregateProcessor
from kspark._graph.graph import ProcessorSpec
from kspark.dsl.materialized import Materialized

if TYPE_CHECKING:
    from kspark.dsl.kstream import KStream
    from kspark.dsl.ktable import KTable

__all__ = ["KGroupedStream", "TimeWindowedKStream", "SlidingWindowedKStream",
           "SessionWindowedKStream"]


def _add_aggregation(stream: "KStream", prefix: str, materialized: Materialized | None,
                     value_serde: Any, make_processor: Callable[[str], Any],
                     make_builder: Callable[[Materialized, str, Any, Any], Any],
                     table_key_serde: Callable[[Any], Any] = lambda ks: ks,
                     grace_ms: int | None = None) -> "KTable":
    """Add an aggregation node and its store after ``stream``; returns the resulting KTable."""
    from kspark.dsl.ktable import KTable

    g = stream._graph
    m = materialized or Materialized()
    name = g.next_name(prefix)
    store = m.store_name or f"{name}-STATE-STORE"
    key_serde = m.key_serde if m.key_serde is not None else stream._key_serde
    value_serde = m.value_serde if m.value_serde is not None else value_serde
    g.add(ProcessorSpec(name, make_processor(store), (stream._node,)))
    g.add_store(make_builder(m, store, key_serde, value_serde), (name,))
    table = KTable(g, name, None if key_serde is None else table_key_serde(key_serde),
                   value_serde, store)
    table._window_grace = grace_ms
    return table


def _timestamped_builder(builder_cls: Any, supplier: Callable[[str, Materialized], Any]) -> Callable:
    """A ``make_builder`` for window and session stores holding ValueAndTimestamp values."""
    from kspark._engine.state.timestamped import ValueAndTimestampSerde

    def make(m: Materialized, store: str, key_serde: Any, value_serde: Any) -> Any:
        return builder_cls(supplier(store, m), key_serde, ValueAndTimestampSerde(value_serde),
                           logging_enabled=m.logging, log_config=m.log_config,
                           caching_enabled=m.caching)

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
                   value_serde: Any) -> "KTable":
        return _add_aggregation(
            self._stream, prefix, materialized, value_serde,
            lambda store: functools.partial(StreamAggregateProcessor, store, initializer, aggregator),
            lambda m, store, ks, vs: m.builder(store, ks, vs))

    def windowed_by(self, windows: Any) -> Any:
        """Aggregate per key and window: ``TimeWindows``, ``SlidingWindows`` or ``SessionWindows``."""
        from kspark._engine.windows import SessionWindows, SlidingWindows

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

    def __init__(self, grouped: KGroupedStream, windows: Any):
        self._grouped = grouped
        self._windows = windows

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   aggregator: Callable[[Any, Any, Any], Any], materialized: Materialized | None,
                   value_serde: Any) -> "KTable":
        from kspark._engine.windows import TimeWindowedSerde
        from kspark.state.stores import WindowBytesStoreSupplier, WindowStoreBuilder

        processor, size, retention = self._layout()
        return _add_aggregation(
            self._grouped._stream, prefix, materialized, value_serde,
            lambda store: functools.partial(processor, store, self._windows, initializer,
                                            aggregator),
            _timestamped_builder(WindowStoreBuilder, lambda store, m: WindowBytesStoreSupplier(
                store, m.persistent, retention, size)),
            lambda ks: TimeWindowedSerde(ks, size), self._windows.grace_ms)

    def _layout(self) -> tuple[Any, int, int]:
        """The aggregating processor, the window size and the store's retention."""
        from kspark._engine.tables import WindowAggregateProcessor

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

    def _layout(self) -> tuple[Any, int, int]:
        from kspark._engine.sliding import SlidingWindowAggregateProcessor, sliding_store_retention

        w = self._windows
        return SlidingWindowAggregateProcessor, w.time_difference_ms, sliding_store_retention(w)


class SessionWindowedKStream:
    """A grouped stream cut into sessions: aggregations give a KTable of Windowed keys."""

    def __init__(self, grouped: KGroupedStream, windows: Any):
        self._grouped = grouped
        self._windows = windows

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   aggregator: Callable[[Any, Any, Any], Any], merger: Callable[[Any, Any, Any], Any],
                   materialized: Materialized | None, value_serde: Any) -> "KTable":
        from kspark._engine.tables import SessionAggregateProcessor
        from kspark._engine.windows import SessionWindowedSerde
        from kspark.state.stores import SessionBytesStoreSupplier, SessionStoreBuilder

        w = self._windows
        return _add_aggregation(
            self._grouped._stream, prefix, materialized, value_serde,
            lambda store: functools.partial(SessionAggregateProcessor, store, w, initializer,
                                            aggregator, merger),
            _timestamped_builder(SessionStoreBuilder, lambda store, m: SessionBytesStoreSupplier(
                store, m.persistent, w.gap_ms + w.grace_ms)),
            SessionWindowedSerde, w.gap_ms + w.grace_ms)  # suppress waits gap + grace, as Java

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
