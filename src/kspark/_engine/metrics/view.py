"""The driver's view of the metrics: summed task counts, rates over a window, and the
metrics kspark adds beside Kafka Streams' own (the consumer lag, the stream threads, the
async processors).

Example:
    >>> from kspark._engine.metrics.stats import TaskStats
    >>> t = [0.0]
    >>> view = MetricsView(clock=lambda: t[0])
    >>> s = TaskStats("0_0"); s.shape("task"); s.count("dropped-records", 4)
    >>> view.add(s.take()); t[0] = 2.0
    >>> m = view.metrics(lambda task: "main")
    >>> [(k.name, v.metric_value()) for k, v in m.items() if k.name.startswith("dropped")]
    [('dropped-records-rate', 2.0), ('dropped-records-total', 4)]
    >>> lag = lag_metrics({("in", 0): 7}, "app-consumer")
    >>> [(k.group, k.name, k.tags["partition"], v.metric_value()) for k, v in lag.items()]
    [('consumer-fetch-manager-metrics', 'records-lag', '0', 7)]
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from kspark._engine.metrics.catalog import THREAD_GROUP, build_metrics
from kspark._engine.metrics.names import Metric, MetricName
from kspark._engine.metrics.stats import Stat, merge_stats

__all__ = ["MetricsView", "lag_metrics", "async_processor_metrics", "thread_metrics",
           "RATE_WINDOW_S"]

RATE_WINDOW_S = 30.0  # Java's rates: two 30 s samples; here the last 30 s of readings


class MetricsView:
    """Sums task counts (:meth:`add`) and turns them into metrics (:meth:`metrics`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.totals: dict[str, Stat] = {}
        self.lock = threading.Lock()  # a scrape and a user's call may come at once
        self._clock = clock
        self._born = clock()
        self._seen: dict[str, deque[tuple[float, float]]] = {}

    def add(self, stats: Mapping[str, Stat]) -> None:
        merge_stats(self.totals, stats)

    def replace(self, totals: Mapping[str, Stat]) -> None:
        """Take ``totals`` as the sums so far (a host that sums them itself)."""
        self.totals = {k: list(v) for k, v in totals.items()}

    def rate(self, key: str, count: float) -> float:
        """Per second, over the readings of the last :data:`RATE_WINDOW_S` (since the view
        began, before that)."""
        now = self._clock()
        seen = self._seen.setdefault(key, deque([(self._born, 0.0)]))
        while len(seen) > 1 and now - seen[1][0] >= RATE_WINDOW_S:
            seen.popleft()
        then, before = seen[0]
        seen.append((now, count))
        return (count - before) / (now - then) if now > then else 0.0

    def metrics(self, thread_of: Callable[[str], str]) -> dict[MetricName, Metric]:
        """Every task's, node's and topic's metrics (``catalog.py``)."""
        return build_metrics(self.totals, thread_of, self.rate)


def lag_metrics(lag: Mapping[tuple[str, int], int], client_id: str) -> dict[MetricName, Metric]:
    """The input lag per partition, as Kafka's consumer reports it (``records-lag`` in
    ``consumer-fetch-manager-metrics``)."""
    out = {}
    for (topic, partition), n in sorted(lag.items()):
        name = MetricName("records-lag", "consumer-fetch-manager-metrics",
                          "The latest lag of the partition",
                          {"client-id": client_id, "topic": topic, "partition": str(partition)})
        out[name] = Metric(name, n)
    return out


_ASYNC = {"in_flight": ("in-flight", "Calls in flight now"),
          "in_flight_peak": ("in-flight-peak", "The most calls in flight at once"),
          "completed": ("completed-total", "Calls completed"),
          "retried": ("retried-total", "Attempts after the first"),
          "dead_lettered": ("dead-lettered-total", "Records sent to the dead-letter topic"),
          "latency_avg_ms": ("latency-avg", "The average latency of a call, in ms")}


def async_processor_metrics(summary: Mapping[str, Mapping[str, float]]
                            ) -> dict[MetricName, Metric]:
    """The async processors' (KIP-311) figures, kspark's own group
    ``kspark-async-processor-metrics``, one tag ``processor-node-id``."""
    out = {}
    for node, figures in sorted(summary.items()):
        for field, value in figures.items():
            name_desc = _ASYNC.get(field)
            if name_desc is not None:
                name = MetricName(name_desc[0], "kspark-async-processor-metrics", name_desc[1],
                                  {"processor-node-id": node})
                out[name] = Metric(name, value)
    return out


_THREAD = {"process-total": "The total number of calls to process",
           "process-rate": "The average number of calls to process per second",
           "commit-total": "The total number of calls to commit",
           "commit-rate": "The average number of calls to commit per second",
           "commit-latency-avg": "The average commit latency",
           "commit-latency-max": "The maximum commit latency"}


def thread_metrics(thread_id: str, values: Mapping[str, Any]) -> dict[MetricName, Metric]:
    """A stream thread's metrics (``stream-thread-metrics``, tag ``thread-id``) from
    ``values`` by Java name (those :data:`_THREAD` knows)."""
    out = {}
    for key, desc in _THREAD.items():
        if key in values:
            name = MetricName(key, THREAD_GROUP, desc, {"thread-id": thread_id})
            out[name] = Metric(name, values[key])
    return out
