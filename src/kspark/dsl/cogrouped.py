"""Cogrouped streams: several grouped streams folded into one aggregate per key (KIP-150).

Example:
    >>> from kspark import StreamsBuilder, Serdes
    >>> b = StreamsBuilder()
    >>> S, L = Serdes.String(), Serdes.Long()
    >>> a = b.stream("a", key_serde=S, value_serde=L).group_by_key()
    >>> c = b.stream("c", key_serde=S, value_serde=L).group_by_key()
    >>> both = a.cogroup(lambda k, v, agg: agg + v).cogroup(c, lambda k, v, agg: agg - v)
    >>> table = both.aggregate(lambda: 0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark.dsl.materialized import Materialized

if TYPE_CHECKING:
    from kspark.dsl.grouped import KGroupedStream
    from kspark.dsl.ktable import KTable

__all__ = ["CogroupedKStream", "TimeWindowedCogroupedKStream", "SessionWindowedCogroupedKStream"]

Aggregator = Callable[[Any, Any, Any], Any]


class CogroupedKStream:
    """Grouped streams with their aggregators. As Kafka Streams, each stream's records are
    folded by that stream's aggregator into the key's one aggregate (null keys and values
    skipped); a result carries max(record timestamp, previous aggregate's timestamp)."""

    def __init__(self, parts: list[tuple["KGroupedStream", Aggregator]]):
        self._parts = parts

    def cogroup(self, grouped: "KGroupedStream", aggregator: Aggregator) -> "CogroupedKStream":
        """Add ``grouped``, folded with ``aggregator(key, value, aggregate)``; returns self.
        A grouped stream added again keeps its place and takes the new aggregator."""
        for i, (g, _) in enumerate(self._parts):
            if g is grouped:
                self._parts[i] = (grouped, aggregator)
                return self
        self._parts.append((grouped, aggregator))
        return self

    def _more(self) -> tuple:
        return tuple((g._stream, agg) for g, agg in self._parts[1:])

    def aggregate(self, initializer: Callable[[], Any],
                  materialized: Materialized | None = None) -> "KTable":
        """The aggregate per key, starting from ``initializer()``."""
        first, aggregator = self._parts[0]
        return first._aggregate("COGROUPKSTREAM-AGGREGATE", initializer, aggregator,
                                materialized, None, self._more())

    def windowed_by(self, windows: Any
                    ) -> TimeWindowedCogroupedKStream | SessionWindowedCogroupedKStream:
        """Aggregate per key and window: ``TimeWindows``, ``SlidingWindows`` or ``SessionWindows``."""
        from kspark._engine.aggregates.windows import SessionWindows

        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self, windows)
        return TimeWindowedCogroupedKStream(self, windows)


class TimeWindowedCogroupedKStream:
    """A cogroup in time or sliding windows."""

    def __init__(self, cogrouped: CogroupedKStream, windows: Any):
        self._cogrouped, self._windows = cogrouped, windows

    def aggregate(self, initializer: Callable[[], Any],
                  materialized: Materialized | None = None) -> "KTable":
        first, aggregator = self._cogrouped._parts[0]
        return first.windowed_by(self._windows)._aggregate(
            "COGROUPKSTREAM-AGGREGATE", initializer, aggregator, materialized, None,
            self._cogrouped._more())


class SessionWindowedCogroupedKStream:
    """A cogroup in session windows; ``merger(key, agg1, agg2)`` joins two sessions."""

    def __init__(self, cogrouped: CogroupedKStream, windows: Any):
        self._cogrouped, self._windows = cogrouped, windows

    def aggregate(self, initializer: Callable[[], Any], merger: Aggregator,
                  materialized: Materialized | None = None) -> "KTable":
        first, aggregator = self._cogrouped._parts[0]
        return first.windowed_by(self._windows)._aggregate(
            "COGROUPKSTREAM-AGGREGATE", initializer, aggregator, merger, materialized, None,
            self._cogrouped._more())
