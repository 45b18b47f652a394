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

from typing import TYPE_CHECKING, Any

from kspark.dsl import _aggregation, _forms
from kspark.dsl._aggregation import name_or
from kspark.dsl._overloads import bind
from kspark.dsl._aggregation import Aggregator, Part
from kspark._engine.aggregates.windows import SessionWindows

if TYPE_CHECKING:
    from kspark.dsl.grouped import KGroupedStream
    from kspark.dsl.ktable import KTable

__all__ = ["CogroupedKStream", "TimeWindowedCogroupedKStream", "SessionWindowedCogroupedKStream"]

_PREFIX = "COGROUPKSTREAM-AGGREGATE"


class CogroupedKStream:
    """Grouped streams with their aggregators. As Kafka Streams, each stream's records are
    folded by that stream's aggregator into the key's one aggregate (null keys and values
    skipped); a result carries max(record timestamp, previous aggregate's timestamp)."""

    def __init__(self, parts: list[Part]):
        self._parts = parts  # each grouped stream's node and serdes, with its aggregator

    def cogroup(self, grouped: KGroupedStream, aggregator: Aggregator) -> CogroupedKStream:
        """Add ``grouped``, folded with ``aggregator(key, value, aggregate)``; returns self.
        A grouped stream added again keeps its place and takes the new aggregator."""
        alone: CogroupedKStream = grouped.cogroup(aggregator)  # its part, as a cogroup of one
        (part,) = alone._parts
        for i, (upstream, _) in enumerate(self._parts):
            if upstream is part[0]:
                self._parts[i] = part
                return self
        self._parts.append(part)
        return self

    def aggregate(self, *args: Any, **kwargs: Any) -> KTable:
        """The aggregate per key, starting from ``initializer()``:
        ``aggregate(initializer[, named][, materialized])``."""
        a = bind("CogroupedKStream.aggregate", _forms.COGROUP_AGGREGATE, args, kwargs)
        (first, aggregator), *more = self._parts
        return _aggregation.aggregate(first, name_or(_PREFIX, a["named"]), a["initializer"],
                                      aggregator, a["materialized"], None, tuple(more))

    def windowed_by(self, *args: Any, **kwargs: Any
                    ) -> TimeWindowedCogroupedKStream | SessionWindowedCogroupedKStream:
        """Aggregate per key and window: ``TimeWindows``, ``SlidingWindows`` or
        ``SessionWindows``."""
        windows = bind("CogroupedKStream.windowed_by", _forms.WINDOWED_BY, args,
                       kwargs)["windows"]
        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self._parts, windows)
        return TimeWindowedCogroupedKStream(self._parts, windows)


class TimeWindowedCogroupedKStream:
    """A cogroup in time or sliding windows."""

    def __init__(self, parts: list[Part], windows: Any):
        self._parts, self._windows = parts, windows  # parts: the cogroup's, as it grows

    def aggregate(self, *args: Any, **kwargs: Any) -> KTable:
        """``aggregate(initializer[, named][, materialized])`` per window."""
        a = bind("TimeWindowedCogroupedKStream.aggregate", _forms.COGROUP_AGGREGATE, args,
                 kwargs)
        (first, aggregator), *more = self._parts
        return _aggregation.windowed_aggregate(first, self._windows, False,
                                               name_or(_PREFIX, a["named"]), a["initializer"],
                                               aggregator, a["materialized"], None, tuple(more))


class SessionWindowedCogroupedKStream:
    """A cogroup in session windows; ``merger(key, agg1, agg2)`` joins two sessions."""

    def __init__(self, parts: list[Part], windows: Any):
        self._parts, self._windows = parts, windows  # parts: the cogroup's, as it grows

    def aggregate(self, *args: Any, **kwargs: Any) -> KTable:
        """``aggregate(initializer, session_merger(key, agg1, agg2)[, named]
        [, materialized])`` per session."""
        a = bind("SessionWindowedCogroupedKStream.aggregate", _forms.COGROUP_SESSION_AGGREGATE,
                 args, kwargs)
        (first, aggregator), *more = self._parts
        return _aggregation.session_aggregate(first, self._windows, False,
                                              name_or(_PREFIX, a["named"]), a["initializer"],
                                              aggregator, a["merger"], a["materialized"], None,
                                              tuple(more))
