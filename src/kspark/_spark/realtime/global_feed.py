"""A real-time stream thread's view of the global stores (KIP-406 included)."""

from __future__ import annotations

import time
from typing import Any

from kspark._host.context import HostContext
from kspark.errors import KSparkError

__all__ = ["GlobalFeed"]


class GlobalFeed:
    """This worker's copy of the global stores (``_spark/globals.py``, KIP-406 included),
    brought to the global topics' current ends before the thread's tasks open and then every
    commit interval, at least every second: Kafka Streams' global thread, between polls."""

    def __init__(self, ctx: HostContext, every_s: float):
        self.ctx = ctx
        counts = ctx.plan.partition_counts
        self.tps = [(t, p) for t in ctx.graph.global_topics() for p in range(counts[t])]
        self.every_s = min(every_s, 1.0)
        self.next = 0.0
        self.pins: dict[str, dict[str, int]] = {}  # the last ends read, per topic

    def refresh(self) -> Any:
        """The worker's global state, caught up to the topics' read_committed ends; a
        global topic missing for a moment (deleted and being created again) keeps its last
        ends, so the thread goes on (KIP-406), as the micro-batch source does."""
        from kspark._spark.globals import global_state

        admin, patience = self.ctx.admin(), self.ctx.settings.task_timeout_ms / 1000
        present = set(admin.partition_counts(patience))
        tps = [tp for tp in self.tps if tp[0] in present]
        try:
            ends = admin.end_offsets(tps)
        except KSparkError:
            if {t for t, _ in tps} <= set(admin.partition_counts(patience)):
                raise
            ends = {}  # a topic went between the two calls: its last ends stay
        for (t, p), end in ends.items():
            self.pins.setdefault(t, {})[str(p)] = end
        self.next = time.monotonic() + self.every_s
        return global_state(self.ctx.graph, self.ctx.config, self.pins, self.ctx.settings)

    def maybe_refresh(self) -> None:
        if time.monotonic() >= self.next:
            self.refresh()
