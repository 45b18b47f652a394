"""KGroupedStream: a stream grouped by key, ready to aggregate into a KTable."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine.aggregates.stream import count_initializer, count_one
from kspark.dsl import _aggregation, _forms
from kspark.dsl._aggregation import name_or
from kspark.dsl._overloads import bind
from kspark.dsl._upstream import Upstream
from kspark.dsl.materialized import Materialized
from kspark._engine.aggregates.windows import SessionWindows, SlidingWindows
from kspark.serde import Serdes

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

    def windowed_by(self, *args: Any, **kwargs: Any
                    ) -> TimeWindowedKStream | SessionWindowedKStream:
        """Aggregate per key and window: ``TimeWindows``, ``SlidingWindows`` or
        ``SessionWindows``."""
        windows = bind("KGroupedStream.windowed_by", _forms.WINDOWED_BY, args,
                       kwargs)["windows"]
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self._upstream, windows)
        if isinstance(windows, SlidingWindows):
            return SlidingWindowedKStream(self._upstream, windows)
        return TimeWindowedKStream(self._upstream, windows)

    def count(self, *args: Any, **kwargs: Any) -> KTable:
        """The number of records per key (values default to Serdes.Long()):
        ``count([named][, materialized])``."""
        a = bind("KGroupedStream.count", _forms.COUNT, args, kwargs)
        return _aggregation.aggregate(self._upstream, name_or("KSTREAM-AGGREGATE", a["named"]),
                                      count_initializer, count_one, a["materialized"],
                                      Serdes.Long(), count=True)

    def reduce(self, *args: Any, **kwargs: Any) -> KTable:
        """Combine each key's values with ``reducer(aggregate, value)``:
        ``reduce(reducer[, named][, materialized])``."""
        a = bind("KGroupedStream.reduce", _forms.REDUCE, args, kwargs)
        reducer = a["reducer"]
        return _aggregation.aggregate(self._upstream, name_or("KSTREAM-REDUCE", a["named"]),
                                      None, lambda k, v, agg: reducer(agg, v), a["materialized"],
                                      self._upstream.value_serde)

    def aggregate(self, *args: Any, **kwargs: Any) -> KTable:
        """Fold each key's values: ``aggregator(key, value, aggregate)`` from
        ``initializer()``: ``aggregate(initializer, aggregator[, named][, materialized])``."""
        a = bind("KGroupedStream.aggregate", _forms.AGGREGATE, args, kwargs)
        return _aggregation.aggregate(self._upstream, name_or("KSTREAM-AGGREGATE", a["named"]),
                                      a["initializer"], a["aggregator"], a["materialized"], None)


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

    # Java's count() burns a store name first, except in sliding windows
    _count_burns = True

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None,
                   aggregator: Callable[[Any, Any, Any], Any], materialized: Materialized | None,
                   value_serde: Any, count: bool = False) -> KTable:
        return _aggregation.windowed_aggregate(self._upstream, self._windows, self._final, prefix,
                                               initializer, aggregator, materialized, value_serde,
                                               count=count and self._count_burns)

    def count(self, *args: Any, **kwargs: Any) -> KTable:
        """Records per key and window: ``count([named][, materialized])``."""
        a = bind("TimeWindowedKStream.count", _forms.COUNT, args, kwargs)
        return self._aggregate(name_or("KSTREAM-AGGREGATE", a["named"]), count_initializer,
                               count_one, a["materialized"], Serdes.Long(), count=True)

    def reduce(self, *args: Any, **kwargs: Any) -> KTable:
        """``reduce(reducer(aggregate, value)[, named][, materialized])`` per window."""
        a = bind("TimeWindowedKStream.reduce", _forms.REDUCE, args, kwargs)
        reducer = a["reducer"]
        return self._aggregate(name_or("KSTREAM-REDUCE", a["named"]), None,
                               lambda k, v, agg: reducer(agg, v), a["materialized"],
                               self._upstream.value_serde)

    def aggregate(self, *args: Any, **kwargs: Any) -> KTable:
        """``aggregate(initializer, aggregator(key, value, aggregate)[, named]
        [, materialized])`` per window."""
        a = bind("TimeWindowedKStream.aggregate", _forms.AGGREGATE, args, kwargs)
        return self._aggregate(name_or("KSTREAM-AGGREGATE", a["named"]), a["initializer"],
                               a["aggregator"], a["materialized"], None)


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

    _count_burns = False


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
                   materialized: Materialized | None, value_serde: Any,
                   count: bool = False) -> KTable:
        return _aggregation.session_aggregate(self._upstream, self._windows, self._final, prefix,
                                              initializer, aggregator, merger, materialized,
                                              value_serde, count=count)

    def count(self, *args: Any, **kwargs: Any) -> KTable:
        """Records per key and session: ``count([named][, materialized])``."""
        a = bind("SessionWindowedKStream.count", _forms.COUNT, args, kwargs)
        return self._aggregate(name_or("KSTREAM-AGGREGATE", a["named"]), lambda: 0,
                               lambda k, v, agg: agg + 1, lambda k, x, y: x + y,
                               a["materialized"], Serdes.Long(), count=True)

    def reduce(self, *args: Any, **kwargs: Any) -> KTable:
        """``reduce(reducer(aggregate, value)[, named][, materialized])`` per session."""
        a = bind("SessionWindowedKStream.reduce", _forms.REDUCE, args, kwargs)
        reducer = a["reducer"]
        return self._aggregate(name_or("KSTREAM-REDUCE", a["named"]), None,
                               lambda k, v, agg: reducer(agg, v), lambda k, x, y: reducer(x, y),
                               a["materialized"], self._upstream.value_serde)

    def aggregate(self, *args: Any, **kwargs: Any) -> KTable:
        """``aggregate(initializer, aggregator(key, value, aggregate), merger(key, agg1,
        agg2)[, named][, materialized])``: the merger combines two sessions' aggregates
        when a record joins them."""
        a = bind("SessionWindowedKStream.aggregate", _forms.SESSION_AGGREGATE, args, kwargs)
        return self._aggregate(name_or("KSTREAM-AGGREGATE", a["named"]), a["initializer"],
                               a["aggregator"], a["merger"], a["materialized"], None)
