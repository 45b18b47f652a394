"""KStream's async steps (KIP-311, docs/async.md): ``map_values_async``,
``flat_map_values_async`` and ``filter_async`` run a slow call (an ``async def``, or a
blocking function on a thread pool) for many records at once and keep their results in
input order; ``delay`` forwards each record a fixed wall-clock time after it arrives.

Example:
    >>> from kspark import StreamsBuilder, Serdes
    >>> async def lookup(user_id):
    ...     return f"profile of {user_id}"
    >>> s = StreamsBuilder().stream("ids", key_serde=Serdes.String(),
    ...                             value_serde=Serdes.String())
    >>> profiles = s.map_values_async(lookup, max_in_flight=8, ordering="key")
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine import operators as ops
from kspark._graph.graph import TopologyGraph
from kspark.errors import TopologyError
from kspark._engine.async_.processor import AsyncStepProcessor, check_async_options
from kspark.state.stores import Stores
from kspark._engine.durations import to_ms

if TYPE_CHECKING:
    from kspark.dsl.kstream import KStream

__all__ = ["AsyncSteps"]


class AsyncSteps:
    """The async steps of :class:`~kspark.dsl.kstream.KStream` (a mixin: KStream provides
    the graph, ``_then`` and the serdes)."""

    _graph: TopologyGraph
    _key_serde: Any
    _value_serde: Any
    _then: Callable[..., KStream]

    def map_values_async(self, fn: Callable[[Any], Any], name: str | None = None, *,
                         max_in_flight: int | None = None, ordering: str = "partition",
                         retry: Any = None, timeout_ms: int | None = None,
                         on_failure: str = "fail") -> KStream:
        """Like :meth:`map_values`, but ``fn(value)`` (an ``async def`` or a blocking function,
        run on a thread pool) runs for up to ``max_in_flight`` records at once (default:
        ``async.max.in.flight``); results go downstream in input order, per task
        (``ordering="partition"``) or per key (``"key"``). A failing call is retried per
        ``retry`` (a :class:`~kspark.processor.RetryPolicy`; default: no retry), each attempt
        limited to ``timeout_ms``; then the record is dead-lettered (``on_failure=
        "dead_letter"``) or fails the task (``"fail"``). KIP-311; see docs/async.md.
        """
        return self._async("KSTREAM-MAPVALUES-ASYNC", "map_values", fn, name, max_in_flight,
                           ordering, retry, timeout_ms, on_failure, value_serde=None)

    def flat_map_values_async(self, fn: Callable[[Any], Any], name: str | None = None, *,
                              max_in_flight: int | None = None, ordering: str = "partition",
                              retry: Any = None, timeout_ms: int | None = None,
                              on_failure: str = "fail") -> KStream:
        """As :meth:`map_values_async`; one record per item of ``fn(value)``'s result."""
        return self._async("KSTREAM-FLATMAPVALUES-ASYNC", "flat_map_values", fn, name,
                           max_in_flight, ordering, retry, timeout_ms, on_failure, value_serde=None)

    def filter_async(self, predicate: Callable[[Any], Any], name: str | None = None, *,
                     max_in_flight: int | None = None, ordering: str = "partition",
                     retry: Any = None, timeout_ms: int | None = None,
                     on_failure: str = "fail") -> KStream:
        """As :meth:`map_values_async`; keeps the records for which ``predicate(value)`` is true."""
        return self._async("KSTREAM-FILTER-ASYNC", "filter", predicate, name, max_in_flight,
                           ordering, retry, timeout_ms, on_failure, value_serde=self._value_serde)

    def _async(self, prefix: str, kind: str, fn: Callable, name: str | None,
               max_in_flight: int | None, ordering: str, retry: Any, timeout_ms: int | None,
               on_failure: str, value_serde: Any) -> KStream:
        check_async_options(max_in_flight, ordering, on_failure)
        sup = functools.partial(AsyncStepProcessor, fn, kind, max_in_flight, ordering, retry,
                                timeout_ms, on_failure)
        return self._then(prefix, sup, name, self._key_serde, value_serde, keep_serdes=False)

    def delay(self, delay_ms: Any, name: str | None = None, *, key_serde: Any = None,
              value_serde: Any = None) -> KStream:
        """Forward each record ``delay_ms`` of wall-clock time after it arrives, unchanged
        (KIP-311's delayed processing). Pending records wait in a changelog-backed store,
        ``<name>-store``, written with the stream's serdes (or ``key_serde``/``value_serde``),
        so they survive restarts; on Spark they go on at the first micro-batch after they
        are due (see docs/async.md). In the TopologyTestDriver they go on when
        ``advance_wall_clock_time`` passes their due time.

        Example:
            >>> from kspark import StreamsBuilder, Serdes
            >>> s = StreamsBuilder().stream("in", key_serde=Serdes.String(),
            ...                             value_serde=Serdes.String())
            >>> later = s.delay(5 * 60_000)  # "re-process in 5 minutes"
        """
        delay_ms = to_ms(delay_ms, "delay() delay_ms")
        if delay_ms < 0:
            raise TopologyError(f"delay() needs delay_ms >= 0, got {delay_ms}")
        name = name or self._graph.next_name("KSTREAM-DELAY")
        out = self._then("KSTREAM-DELAY", functools.partial(ops.DelayProcessor, delay_ms), name)
        self._graph.add_store(Stores.delayed_records_store_builder(
            Stores.persistent_key_value_store(f"{name}-store"), key_serde or self._key_serde,
            value_serde or self._value_serde), (name,))
        return out
