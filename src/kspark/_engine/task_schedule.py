"""When a :class:`~kspark._engine.task.StreamTask` runs code no input record triggers:
punctuations on stream time or on the wall clock, and delayed records (KIP-311) that fall
due.

Example:
    >>> from kspark._engine.collector import MemoryCollector
    >>> from kspark._engine.punctuation import PunctuationType
    >>> from kspark._engine.task import StreamTask
    >>> task = StreamTask("0_0", {}, [], {"application.id": "app", "state.dir": "/tmp"},
    ...                   MemoryCollector(), clock=lambda: 1_000)
    >>> class Node: name = "PROC"
    >>> fired = []
    >>> _ = task.schedule(Node(), 100, PunctuationType.WALL_CLOCK_TIME, fired.append)
    >>> task.maybe_punctuate_wall_clock()  # due at 1,100
    0
    >>> task.clock = lambda: 1_100
    >>> task.maybe_punctuate_wall_clock(), fired
    (1, [1100])
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from kspark._engine.api import Record
from kspark._engine.nodes import ProcessorNode, RawRecord
from kspark._engine.punctuation import (
    Cancellable,
    PunctuationQueue,
    PunctuationSchedule,
    PunctuationType,
)
from kspark._engine.state.delayed import DelayedRecordsStore
from kspark.errors import KSparkError, TopologyError

__all__ = ["TaskScheduling"]


class TaskScheduling:
    """Punctuations and delayed records of :class:`~kspark._engine.task.StreamTask` (a
    mixin: the task sets the attributes below)."""

    task_id: str
    stats: Any  # metrics/stats.py's TaskStats
    nodes: list[ProcessorNode]
    stores: dict[str, Any]
    clock: Callable[[], int]
    stream_time: int
    current_timestamp: int
    batch_clock_ms: int | None
    delayed_delivery: bool
    _current: RawRecord | None
    _stream_punctuations: PunctuationQueue
    _wall_punctuations: PunctuationQueue
    _delayed_stores: list[DelayedRecordsStore]
    _resume_schedules: dict[str, tuple[int, int]]
    _schedule_counts: dict[str, int]
    punctuation_failed: Callable[[Any, int, Exception], None]  # task_errors.RecordErrors

    @contextlib.contextmanager
    def processing(self, raw: RawRecord | None) -> Any:
        """Act as if ``raw`` were the input record being processed (an async step's result,
        a delayed record), so dead letters and errors name it."""
        current, self._current = self._current, raw
        try:
            yield
        finally:
            self._current = current

    def schedule(self, node: ProcessorNode, interval_ms: int, kind: PunctuationType,
                 callback: Callable[[int], None]) -> Cancellable:
        """Schedule ``callback`` for ``node``; stream time starts at 0, wall clock at now +
        interval."""
        if interval_ms < 1:
            raise TopologyError(f"processor {node.name!r} in task {self.task_id} scheduled a "
                                f"punctuation every {interval_ms} ms; the interval must be >= 1")
        if kind == PunctuationType.STREAM_TIME:
            n = self._schedule_counts.get(node.name, 0)
            self._schedule_counts[node.name] = n + 1
            key = f"{node.name}#{n}"
            saved_interval, saved_next = self._resume_schedules.get(key, (interval_ms, 0))
            first = saved_next if saved_interval == interval_ms else 0
            return self._stream_punctuations.add(
                PunctuationSchedule(node, interval_ms, callback, first, key=key))
        first = self.clock() + interval_ms
        return self._wall_punctuations.add(PunctuationSchedule(node, interval_ms, callback, first))

    def maybe_punctuate_stream_time(self) -> int:
        """Fire the stream-time punctuations that are due; returns how many fired."""
        if self.stream_time < 0 or not self._stream_punctuations.schedules:
            return 0
        return self._fire(self._stream_punctuations.due(self.stream_time), self.stream_time)

    def maybe_punctuate_wall_clock(self) -> int:
        """Fire the wall-clock punctuations that are due, then the delayed records that are
        due; returns how many punctuations fired."""
        now = self.clock()
        fired = self._fire(self._wall_punctuations.due(now), now)
        if self._delayed_stores:
            self.fire_delayed()
        return fired

    def _fire(self, schedules: list[PunctuationSchedule], now: int) -> int:
        stats = self.stats
        for s in schedules:
            self.current_timestamp = now
            if stats.debug:
                began = time.perf_counter_ns()
                self._punctuate(s, now)
                stats.record("punctuate", time.perf_counter_ns() - began)
            else:
                self._punctuate(s, now)
        return len(schedules)

    def _punctuate(self, s: PunctuationSchedule, now: int) -> None:
        """Run one punctuation; what its user code raises goes to the processing exception
        handler, with no record (as Java's StreamTask.punctuate)."""
        try:
            s.callback(now)
        except KSparkError:  # kspark's own, or a failure a node already decided
            raise
        except Exception as e:  # noqa: BLE001 - user code: processing.exception.handler decides
            self.punctuation_failed(s.node, now, e)

    def now_ms(self) -> int:
        """The time delayed records are due against: the micro-batch's pinned clock on
        Spark, else the (mockable) wall clock."""
        return self.batch_clock_ms if self.batch_clock_ms is not None else self.clock()

    def schedule_record(self, node: ProcessorNode, record: Record, delay_ms: int) -> None:
        """Process ``record`` again with ``node``'s processor ``delay_ms`` from now (wall
        clock), kept in a delayed-records store connected to ``node`` (KIP-311)."""
        stores = [self.stores[n] for n in sorted(node.store_names)
                  if isinstance(self.stores.get(n), DelayedRecordsStore)]
        if not stores:
            raise TopologyError(
                f"processor {node.name!r} in task {self.task_id} called schedule_record() but "
                "has no delayed-records store: add one with Stores.delayed_records_store_builder("
                "...) and connect it to the processor (or use KStream.delay())")
        if delay_ms < 0:
            raise TopologyError(f"processor {node.name!r} in task {self.task_id} scheduled a "
                                f"record {delay_ms} ms ahead; the delay must be >= 0")
        raw = self._current
        origin = None if raw is None else (raw.topic, raw.partition, raw.offset)
        stores[0].schedule(record, self.now_ms() + delay_ms, node.name, origin)

    def fire_delayed(self) -> int:
        """Re-process the scheduled records that are due, in due order; how many fired."""
        fired = 0
        now = self.now_ms()
        for store in self._delayed_stores:
            for due in store.take_due(now):
                node = self._node_named(due.node)
                raw = RawRecord(*(due.origin or ("", -1, -1)), due.record.timestamp,
                                due.key_bytes, due.value_bytes, due.record.headers)
                self.current_timestamp = due.record.timestamp
                with self.processing(raw if due.origin else None):
                    self.delayed_delivery = True
                    try:
                        node.process(due.record)
                    finally:
                        self.delayed_delivery = False
                fired += 1
        return fired

    def _node_named(self, name: str) -> ProcessorNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise TopologyError(f"task {self.task_id}: a delayed record is due for processor "
                            f"{name!r}, which the topology no longer has")
