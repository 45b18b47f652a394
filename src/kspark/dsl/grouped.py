"""KGroupedStream: a stream grouped by key, ready to aggregate into a KTable."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.dsl import _aggregation
from kspark.dsl._upstream import Upstream
from kspark.dsl.materialized import Materialized

if TYPE_CHECKING:
    from kspark.dsl.cogrouped import CogroupedKStream
    from kspark.dsl.ktable import KTable

__all__ = ["KGroupedStream", "TimeWindowedKStream", "SlidingWindowedKStream",
           "SessionWindowedKStream"]


class KGroupedStream:
    """Returned by ``group_by_key`` / ``group_by``. Records with a null key or value are skipped.

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> counts = b.stream("words", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
        ...           .group_by_key().count()
    """

    def __init__(self, upstream: Upstream):
        self._upstream = upstream  # the grouped records: already partitioned by their key

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

        return CogroupedKStream([(self._upstream, aggregator)])

    def windowed_by(self, windows: Any) -> TimeWindowedKStream | SessionWindowedKStream:
        """Aggregate per key and window: ``TimeWindows``, ``SlidingWindows`` or
        ``SessionWindows``."""
        from kspark._engine.aggregates.windows import SessionWindows, SlidingWindows

        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self._upstream, windows)
        if isinstance(windows, SlidingWindows):
            return SlidingWindowedKStream(self._upstream, windows)
        return TimeWindowedKStream(self._upstream, windows)

    def count(self, materialized: Materialized | None = None) -> KTable:
        """The number of records per key (values default to Serdes.Long())."""
        from kspark.serde import Serdes

        return _aggregation.aggregate(self._upstream, "KSTREAM-AGGREGATE", lambda: 0,
                                      lambda k, v, agg: agg + 1, materialized, Serdes.Long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | None = None) -> KTable:
        """Combine each key's values with ``reducer(aggregate, value)``."""
        return _aggregation.aggregate(self._upstream, "KSTREAM-REDUCE", None,
                                      lambda k, v, agg: reducer(agg, v), materialized,
                                      self._upstream.value_serde)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None) -> KTable:
        """Fold each key's values: ``aggregator(key, value, aggregate)`` from ``initializer()``."""
        return _aggregation.aggregate(self._upstream, "KSTREAM-AGGREGATE", initializer,
                                      aggregator, materialized, None)


class TimeWindowedKStream:
    """A grouped stream cut into time windows: aggregations give a KTable of Windowed keys."""

    def __init__(self, upstream: Upstream, windows: Any):
        self._upstream = upstream
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
                   value_serde: Any) -> KTable:
        return _aggregation.windowed_aggregate(self._upstream, self._windows, self._final, prefix,
                                               initializer, aggregator, materialized, value_serde)

    def count(self, materialized: Materialized | None = None) -> KTable:
        from kspark.serde import Serdes

        return self._aggregate("KSTREAM-AGGREGATE", lambda: 0, lambda k, v, agg: agg + 1,
                               materialized, Serdes.Long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | None = None) -> KTable:
        return self._aggregate("KSTREAM-REDUCE", None, lambda k, v, agg: reducer(agg, v),
                               materialized, self._upstream.value_serde)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None) -> KTable:
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


class SessionWindowedKStream:
    """A grouped stream cut into sessions: aggregations give a KTable of Windowed keys."""

    def __init__(self, upstream: Upstream, windows: Any):
        self._upstream = upstream
        self._windows = windows
        self._final = False

    def emit_strategy(self, strategy: Any) -> SessionWindowedKStream:
        """``EmitStrategy.on_window_close()``: forward each session once, when it closes
        (end plus gap plus grace passed), and no deletes for merged sessions."""
        self._final = strategy.final
        return self

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   aggregator: Callable[[Any, Any, Any], Any],
                   merger: Callable[[Any, Any, Any], Any],
                   materialized: Materialized | None, value_serde: Any) -> KTable:
        return _aggregation.session_aggregate(self._upstream, self._windows, self._final, prefix,
                                              initializer, aggregator, merger, materialized,
                                              value_serde)

    def count(self, materialized: Materialized | None = None) -> KTable:
        from kspark.serde import Serdes

        return self._aggregate("KSTREAM-AGGREGATE", lambda: 0, lambda k, v, agg: agg + 1,
                               lambda k, a, b: a + b, materialized, Serdes.Long())

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Materialized | None = None) -> KTable:
        return self._aggregate("KSTREAM-REDUCE", None, lambda k, v, agg: reducer(agg, v),
                               lambda k, a, b: reducer(a, b), materialized,
                               self._upstream.value_serde)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  merger: Callable[[Any, Any, Any], Any],
                  materialized: Materialized | None = None) -> KTable:
        """``merger(key, agg1, agg2)`` combines two sessions' aggregates when a record joins
        them."""
        return self._aggregate("KSTREAM-AGGREGATE", initializer, aggregator, merger,
                               materialized, None)
