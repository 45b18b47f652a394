"""The micro-batch driver of one task: a :class:`~kspark._host.task.HostedTask` over one
micro-batch on a Spark worker.

:class:`TaskBatch` adds to the task's lifecycle (``_host/task.py``) only what a micro-batch
brings: the global offsets and the clock the micro-batch pinned (read from the task's
markers), the Arrow rows in and out, and the replay of a batch an earlier attempt
committed (it writes nothing and gives back, from :meth:`TaskBatch.replay_rows`, the rows
the committed attempt fed downstream). Its task comes from the worker's task manager
(``_host/task_manager.py``) and its Kafka ranges from a reader: a test hands it its own of
both, and runs it with no broker and no Spark.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from kspark._engine.nodes import RawRecord
from kspark._host.context import HostContext
from kspark._host.task_manager import TaskManager, task_manager
from kspark._kafka.clients import read_range
from kspark._kafka.records import raw_records
from kspark._spark.globals import global_state, pins_from_offset_log
from kspark._spark.routing import (Ordered, RoutingCollector, in_writer_order, ranges_of,
                                   shuffled_records)
from kspark._spark.wire import Range, markers_in
from kspark.errors import StreamsError
from kspark._control.messages import TaskReport
from kspark._control.reports import ReportSender

__all__ = ["TaskBatch", "run_task_batch", "RangeReader"]

log = logging.getLogger("kspark")

# (topic, partition, start, end) -> the records of the range, a few thousand at a time
RangeReader = Callable[[str, int, int, int], Iterator[list[RawRecord]]]


def kafka_reader(ctx: HostContext) -> RangeReader:
    """The reader of ``ctx``'s Kafka ranges (read_committed)."""
    def read(topic: str, partition: int, start: int, end: int) -> Iterator[list[RawRecord]]:
        for msgs in read_range(ctx.settings, topic, partition, start, end, ctx.read_timeout_ms):
            yield raw_records(msgs)
    return read


class TaskBatch:
    """Task ``partition`` of ``ctx``'s sub-topology over micro-batch ``batch`` (Spark query
    id, batch id; None outside a streaming query), attempt ``attempt``; a committed batch
    sends its ``TaskMetrics`` to the control topic if ``report`` (a ``TaskReport``, through
    ``_control/reports.py``).
    ``tasks``: the worker's task manager (default: this process's); ``read``: the reader of
    the task's Kafka ranges (default: :func:`kafka_reader`)."""

    def __init__(self, ctx: HostContext, partition: int, batch: tuple[str, int] | None,
                 attempt: int = 0, report: bool = False, *, tasks: TaskManager | None = None,
                 read: RangeReader | None = None):
        self.ctx, self.partition, self.batch, self.attempt = ctx, partition, batch, attempt
        self.report = report
        manager = tasks if tasks is not None else task_manager()
        self.hosted = manager.hosted(ctx, partition, attempt=attempt)
        self.read_range = read if read is not None else kafka_reader(ctx)
        self.task_id = self.hosted.task_id
        self.pins: dict | None = None
        self.clock: int | None = None
        self.collector: RoutingCollector  # from open

    @property
    def replay(self) -> bool:
        return self.hosted.replay

    def open(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Read the pins and clock from the task's markers, open the task's output (its
        marker, producer or transaction); returns ``batches`` to process."""
        ctx = self.ctx
        if ctx.graph.global_stores or ctx.delays:
            batches = self._read_pins(batches)
        producer = self.hosted.open(self.batch)
        self.collector = RoutingCollector(producer, ctx.plan, self.partition, self.pins,
                                          self.clock, changelogs=ctx.changelogs)
        return batches

    def _read_pins(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The global topics' offsets and the clock the micro-batch pinned, from the task's
        markers (the first batch holds the source's marker of a streaming task; others read
        all their rows anyway). Markers of several upstream tasks may carry several clocks
        (one per source): the latest counts, which a replay finds again."""
        held = [next(batches, None)] if self.ctx.plan.streaming else list(batches)
        held = [b for b in held if b is not None]
        for m in (m for b in held for m in markers_in(b)):
            if self.pins is None and m.globals is not None:
                self.pins = m.globals
            if m.clock is not None:
                self.clock = max(self.clock or 0, m.clock)
        if self.ctx.delays and self.clock is None:
            raise StreamsError(f"task {self.task_id} got no pinned clock with micro-batch "
                               f"{self.batch}: its markers carry none (a kspark bug)")
        return itertools.chain(held, batches)

    def _global_stores(self) -> Any:
        """The global stores at the offsets the micro-batch pinned (read-only)."""
        ctx = self.ctx
        if self.pins is None and self.batch is not None:  # a source that does not pin them
            self.pins = pins_from_offset_log(ctx.checkpoint, self.batch[1],
                                             ctx.graph.global_topics())
        if self.pins is None:
            raise StreamsError(f"task {self.task_id} got no global store offsets with "
                               f"micro-batch {self.batch}: its markers carry none "
                               "(a kspark bug)")
        return global_state(ctx.graph, ctx.config, self.pins, ctx.settings).read_only()

    def acquire_task(self) -> bool:
        """The kept task if current, else a restored one; False when there is nothing to run
        (a replay of a task that feeds no other task: its rows are :meth:`rows`)."""
        if self.replay:
            log.warning("task %s: batch %s is already committed; replaying it without writing",
                        self.task_id, self.batch)
            plan = self.ctx.plan
            if not any(t in plan.routes for t in plan.fed):  # it shuffles nothing downstream
                return False
        stores = self._global_stores() if self.ctx.graph.global_stores else None
        self.hosted.acquire(self.collector, stores)
        self.hosted.begin(self.batch, self.clock)
        return True

    def process(self, batches: Iterator[pa.RecordBatch]) -> None:
        """Feed the task the micro-batch's records, then punctuate on wall-clock time."""
        hosted, plan = self.hosted, self.ctx.plan
        if plan.streaming:  # one partition per task: offset order is processing order
            for b in batches:
                for part in self._read(ranges_of(b)):
                    hosted.feed(part)
        else:
            records: list[Ordered] = []
            ranges: list[Range] = []
            for b in batches:
                ranges += ranges_of(b)
                records.extend(shuffled_records(b))
            read = 0
            for part in self._read(ranges):
                read += len(part)
                records.extend(((r.offset, 0), r) for r in part)
            hosted.feed(in_writer_order(records), read=read)
        hosted.punctuate()

    def _read(self, ranges: list[Range]) -> Iterator[list[RawRecord]]:
        """The records of ``ranges`` from Kafka (read_committed), a few thousand at a time;
        each range's end becomes the offset to commit for its partition."""
        for topic, p, start, end in ranges:
            yield from self.read_range(topic, p, start, end)
            self.hosted.advance((topic, p), end)

    def commit(self) -> None:
        """Commit the batch (``HostedTask.commit``, which calls the test hooks) and report
        its counts to the driver."""
        done = self.hosted.commit(force=True)
        if self.report and done is not None:
            ReportSender.of(self.ctx.settings, self.ctx.app_id).send(TaskReport(
                self.task_id, None if self.batch is None else self.batch[1], done.to_dict()))

    def release(self) -> None:
        self.hosted.release()

    def abort(self, exc: BaseException) -> BaseException:
        return self.hosted.abort(exc)

    def rows(self) -> pa.RecordBatch:
        """The rows this batch feeds downstream tasks (see ``routing.RoutingCollector``)."""
        return self.collector.take_batch()

    def replay_rows(self) -> pa.RecordBatch:
        """A replay's rows, recomputed from the state the batch started from; its stores'
        changes are thrown away."""
        self.hosted.discard()
        return self.rows()

    def run(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The lifecycle over ``batches`` (the micro-batch's rows): open, acquire, process,
        commit (or, for a batch committed already, replay), release; any failure aborts the
        batch (the error raised: a fenced producer's when another attempt fenced this one).
        Yields the rows it feeds downstream."""
        batches = self.open(batches)
        try:
            if not self.acquire_task():
                yield self.rows()
                return
            self.process(batches)
            if self.replay:
                rows = self.replay_rows()
            else:
                self.commit()
        except BaseException as e:
            cause = self.abort(e)
            if cause is not e:
                raise cause from None
            raise
        if not self.replay:
            self.release()
            rows = self.rows()
        yield rows


def run_task_batch(ctx: HostContext, partition: int, batches: Iterator[pa.RecordBatch],
                   batch: tuple[str, int] | None, attempt: int = 0,
                   report: bool = False) -> Iterator[pa.RecordBatch]:
    """Run task ``partition`` over micro-batch ``batch`` (:meth:`TaskBatch.run`). Yields the
    rows it feeds downstream."""
    yield from TaskBatch(ctx, partition, batch, attempt, report).run(batches)
