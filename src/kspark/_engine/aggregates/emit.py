"""Emit strategies of windowed aggregations (KIP-825): every update, or only final results.

With ``EmitStrategy.on_window_close()`` a windowed aggregation forwards nothing while a
window is open; after each record it forwards, in one pass, every window that has closed
since the last pass (as Kafka Streams' ``maybeForwardFinalResult``): time windows once
``end + grace <= stream time``, sliding windows and sessions once ``end + grace < stream
time`` (sessions: ``end + gap + grace``). Results carry no old value; time and sliding
windows carry their newest record's timestamp, sessions their end.

Kafka Streams throttles this pass to once per second of wall-clock time
(``__emit.interval.ms.kstreams.windowed.aggregation__``) except in its test driver;
kspark runs it after every record, as the test driver does, so replays stay exact.

Example:
    >>> EmitStrategy.on_window_close().final, EmitStrategy.on_window_update().final
    (True, False)
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kspark._engine.api import Record
from kspark._engine.context import count_metric
from kspark._engine.tables.change import Change

__all__ = ["EmitStrategy", "FinalResults", "windows_starting_between"]


@dataclass(frozen=True)
class EmitStrategy:
    """When a windowed aggregation forwards: each update (the default) or final results."""

    final: bool

    @staticmethod
    def on_window_close() -> "EmitStrategy":
        return EmitStrategy(True)

    @staticmethod
    def on_window_update() -> "EmitStrategy":
        return EmitStrategy(False)


class FinalResults:
    """Mixed into a windowed aggregation processor: ``last_emit`` (the close time of the last
    pass, kept in the task's progress) and the pass itself. The processor supplies
    ``_final_range(close)`` -> (lower, upper) or None and ``_closed(lower, upper)`` ->
    [(Windowed key, value, timestamp)] in Java's order."""

    metric_kinds = ("window-agg",)  # read by metrics/shape.py: final emits are metered
    final = False
    last_emit = -1

    def _final_range(self, close: int) -> tuple[int, int] | None:
        raise NotImplementedError

    def _closed(self, lower: int, upper: int) -> Iterable[tuple[Any, Any, int]]:
        raise NotImplementedError

    def _emit_final(self, record: Record, close: int) -> None:
        if not self.final or (self.last_emit != -1 and self.last_emit >= close):
            return
        bounds = self._final_range(close)
        if bounds is None:
            return

        began = time.monotonic()
        emitted = 0
        for key, value, ts in list(self._closed(*bounds)):
            self.context.forward(Record(key, Change(value, None), ts,  # type: ignore[attr-defined]
                                        record.headers))
            emitted += 1
        self.last_emit = close
        if emitted:  # Kafka Streams' window-aggregate-final-emit-* metrics
            count_metric(self.context, "final-emit-latency",  # type: ignore[attr-defined]
                         1000 * (time.monotonic() - began))
            for _ in range(emitted):
                count_metric(self.context, "final-emit")  # type: ignore[attr-defined]


def windows_starting_between(store: Any, lower: int, upper: int) -> list[Any]:
    """A window store's windows starting in ``[lower, upper]``, in order of (start, key
    bytes), as Kafka Streams' time-ordered window store returns them."""
    with store.fetch_all(lower, upper) as found:
        rows = [(kv.key.window.start, store.key_serde.serialize(store.name(), kv.key.key), kv)
                for kv in found]
    rows.sort(key=lambda r: (r[0], r[1]))
    return [kv for *_, kv in rows]
