"""One task's work over one micro-batch on a Spark worker, as a named lifecycle.

:class:`TaskBatch` goes through ``open`` (the pinned global offsets and clock, the global
stores, the task's marker and its producer or transaction), ``acquire_task`` (the task this
worker kept, if still current, else a new one restored from its changelogs), ``process``
(the records), then ``commit`` (flush, the transaction or the offsets with the marker, the
checkpoint) and ``release`` (keep the task for the next batch or close it), or ``abort``
when anything fails. A batch that an earlier attempt committed is a *replay*: it writes
nothing and gives back, from :meth:`TaskBatch.replay_rows`, the rows the committed attempt
fed downstream. Like Kafka Streams' ``StreamTask`` (``prepareCommit``/``postCommit``) and
Quix Streams' ``Checkpoint.commit``, each step is a method a test or a second execution
mode can call.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kspark._engine.async_.metrics import async_metrics
from kspark._engine.collector import RecordCollector
from kspark._engine.nodes import RawRecord
from kspark._engine.state.build import bottom, discard_buffered
from kspark._graph.graph import TopologyGraph
from kspark._graph.instantiate import build_task
from kspark._kafka.clients import commit_offsets, read_range, task_producer
from kspark._kafka.settings import as_settings
from kspark._kafka.transactions import (Marker, encode_marker, progress_topic, read_marker,
                                        task_transactions)
from kspark._spark.globals import global_state, pins_from_offset_log
from kspark._spark.hooks import TaskHooks
from kspark._spark.host_state import TaskHostState, moved, state_location
from kspark._spark.routing import (DISCARD, Ordered, RoutingCollector, in_writer_order,
                                   ranges_of, shuffled_records)
from kspark._spark.state import (admin_for, checkpoint_task, invalidate_checkpoint,
                                 logged_partitions, restore_task)
from kspark._spark.plan import StagePlan
from kspark._spark.wire import Range, markers_in
from kspark._worker import registry
from kspark.config import EXACTLY_ONCE_V2
from kspark.errors import StreamsError, TaskFencedError


__all__ = ["StageContext", "TaskBatch", "run_task_batch"]

log = logging.getLogger("kspark")


class StageContext:
    """What every task of one sub-topology shares; travels to the workers by value."""

    def __init__(self, graph: TopologyGraph, config: dict[str, Any], plan: StagePlan,
                 counters: tuple[Any, ...] | None = None, hooks: TaskHooks | None = None):
        self.graph, self.config, self.plan = graph, config, plan
        self.counters, self.hooks = counters, hooks or TaskHooks()
        self.settings = as_settings(config)  # every client's settings (security included)
        self.app_id = config["application.id"]
        self.eos = config["processing.guarantee"] == EXACTLY_ONCE_V2
        self.builders = {name: b for name, (b, _) in graph.stores.items()}
        # Under exactly-once a refused delivery aborts the transaction: it always fails the task.
        self.skip_failed = config.get("production.exception.handler") == "log_and_continue"
        self.read_timeout_ms = int(config["source.read.timeout.ms"])
        self.delays = bool(graph.delayed_stores())
        self.checkpoint = config["checkpoint.location"] or os.path.join(
            config["state.dir"], self.app_id, "checkpoint")

    def read(self, ranges: list[Range], ends: dict[tuple[str, int], int]
             ) -> Iterator[list[RawRecord]]:
        """The records of ``ranges`` from Kafka (read_committed), a few thousand at a time;
        notes where each range ends in ``ends``."""
        for topic, p, start, end in ranges:
            for msgs in read_range(self.settings, topic, p, start, end, self.read_timeout_ms):
                yield [RawRecord(m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.key(),
                                 m.value(), tuple(m.headers() or ())) for m in msgs]
            ends[(topic, p)] = max(ends.get((topic, p), 0), end)


class TaskBatch:
    """Task ``partition`` of ``ctx``'s sub-topology over micro-batch ``batch`` (Spark query
    id, batch id; None outside a streaming query), attempt ``attempt``."""

    def __init__(self, ctx: StageContext, partition: int, batch: tuple[str, int] | None,
                 attempt: int = 0):
        self.ctx, self.partition, self.batch, self.attempt = ctx, partition, batch, attempt
        self.task_id = f"{ctx.plan.stage}_{partition}"
        self.key = (ctx.app_id, self.task_id)
        self.marker_tp = (progress_topic(ctx.app_id), ctx.plan.first_marker + partition)
        self.pins: dict | None = None
        self.clock: int | None = None
        self.global_stores: Any = None
        self.tx: Any = None
        self.marker: Marker | None = None
        self.replay = False  # committed already: write nothing, feed downstream the same rows
        self.again = False  # Spark runs a batch this task committed: restore from changelogs
        self.task: Any = None  # a StreamTask, from acquire_task
        self.host = TaskHostState()  # the task's, from acquire_task
        self.collector: RoutingCollector  # from open
        self.inputs: dict[tuple[str, int], int] = {}  # the offsets to commit, per partition
        self.read_count = 0

    # -- open: what the micro-batch pinned, and the task's marker ---------------------------

    def open(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Read the pins and clock from the task's markers, open the global stores at the
        pinned offsets, read the task's marker and get its producer (or its transaction,
        begun); returns ``batches`` to process."""
        ctx = self.ctx
        if ctx.graph.global_stores or ctx.delays:
            batches = self._read_pins(batches)
        if ctx.graph.global_stores:
            if self.pins is None and self.batch is not None:  # a source that does not pin them
                self.pins = pins_from_offset_log(ctx.checkpoint, self.batch[1],
                                                 ctx.graph.global_topics())
            if self.pins is None:
                raise StreamsError(f"task {self.task_id} got no global store offsets with "
                                   f"micro-batch {self.batch}: its markers carry none "
                                   "(a kspark bug)")
            self.global_stores = global_state(ctx.graph, ctx.config, self.pins).read_only()
        producer = self._open_output()
        self.again = self.marker is not None and self.marker.covers(self.batch)
        self.collector = RoutingCollector(producer, ctx.plan, self.partition, self.pins,
                                          self.clock)
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

    def _open_output(self) -> RecordCollector:
        ctx = self.ctx
        if ctx.eos:
            self.tx, self.marker = task_transactions(ctx.settings, ctx.app_id, self.task_id,
                                                     self.marker_tp, self.batch)
            self.replay = self.tx is None
            return DISCARD if self.replay else self.tx.producer
        # the progress is in Kafka under both guarantees: never a stale local copy
        self.marker = read_marker(ctx.settings, ctx.app_id, self.task_id, self.marker_tp)
        return task_producer(ctx.settings, f"{ctx.app_id}-{self.task_id}-producer",
                             skip_failed=ctx.skip_failed)

    # -- acquire_task: the kept task if current, else a restored one ------------------------

    def acquire_task(self) -> bool:
        """Take the task this worker kept, if its stores are current, else build one and
        restore it; False when there is nothing to run (a replay of a task that feeds no
        other task: its rows are :meth:`rows`)."""
        kept = registry().pop("tasks", self.key)
        if self.again and kept is not None:  # its stores hold the batch already
            kept[0].close()
            kept = None
        if self.replay:
            log.warning("task %s: batch %s is already committed; replaying it without writing",
                        self.task_id, self.batch)
            if not self.ctx.plan.fed:
                return False
        kept = None if kept is None else self._current(*kept)
        if kept is None:
            kept = self._build()
        self.task, self.host = kept
        task = self.task
        task.collector = self.collector
        task.partition_counts = self.ctx.plan.partition_counts
        task.batch = self.batch
        task.batch_clock_ms = self.clock
        return True

    def _current(self, task: Any, host: TaskHostState) -> tuple[Any, TaskHostState] | None:
        """``(task, host)`` if the kept task's in-memory stores are still at their
        changelogs' end (and, under exactly-once, it made the task's last commit); else
        closes it."""
        mine, marker = host.marker, self.marker
        if marker is not None and (mine is None or (mine.query, mine.batch, mine.producer) !=
                                   (marker.query, marker.batch, marker.producer)):
            task.close()  # another worker committed this task since
            return None
        parts = logged_partitions(task, self.ctx.builders)
        if parts and admin_for(task.config).end_offsets(parts.values()) != host.changelog_offsets:
            task.close()  # another worker ran this task since: rebuild and restore
            return None
        return task, host

    def _build(self) -> tuple[Any, TaskHostState]:
        ctx, host, marker = self.ctx, TaskHostState(), self.marker
        saved = None if marker is None else marker.previous if self.again else marker.progress
        task = build_task(ctx.graph, self.task_id, ctx.config, self.collector,
                          only=ctx.plan.nodes, batch_buffer=True, global_stores=self.global_stores,
                          restore=lambda t: restore_task(t, ctx.builders, self.batch, saved,
                                                         self.again, host=host))
        host.changelog_offsets = dict(task.restored or {})
        return task, host

    # -- process ----------------------------------------------------------------------------

    def process(self, batches: Iterator[pa.RecordBatch]) -> None:
        """Feed the task the micro-batch's records, then punctuate on wall-clock time."""
        task, ctx = self.task, self.ctx
        if ctx.plan.streaming:  # one partition per task: offset order is processing order
            for b in batches:
                for part in ctx.read(ranges_of(b), self.inputs):
                    self.read_count += len(part)
                    task.add_records(part)
                    task.process_buffered()
        else:
            records: list[Ordered] = []
            ranges: list[Range] = []
            for b in batches:
                ranges += ranges_of(b)
                records.extend(shuffled_records(b))
            for part in ctx.read(ranges, self.inputs):
                self.read_count += len(part)
                records.extend(((r.offset, 0), r) for r in part)
            task.add_records(in_writer_order(records))
            task.process_buffered()
        task.maybe_punctuate_wall_clock()

    # -- commit, release, abort -------------------------------------------------------------

    def commit(self) -> None:
        """Write down the stores and flush the output; commit the transaction (exactly-once)
        or, after the output, the input offsets with the task's marker (at-least-once);
        checkpoint the stores; count the batch in the query's metrics."""
        ctx, task, host = self.ctx, self.task, self.host
        if task.stores:
            invalidate_checkpoint(task)
        task.flush()
        if self.tx is not None:
            host.marker = self._new_marker(self.tx.instance)
            self.tx.commit(host.marker, self.inputs)
        host.changelog_offsets = checkpoint_task(task, ctx.builders, host=host)
        if self.tx is None:  # at-least-once: the group learns the input offsets after the output
            host.marker = self._new_marker(host.instance_id)
            commit_offsets(ctx.settings, ctx.app_id, self.inputs,
                           (self.marker_tp, encode_marker(host.marker)))
        self._count()
        if ctx.hooks.after_commit is not None:
            ctx.hooks.after_commit(self.task_id, self.batch, self.attempt)

    def _new_marker(self, producer: str) -> Marker:
        q, n = self.batch if self.batch is not None else ("", -1)
        return Marker(q, n, self.task.progress(),
                      None if self.marker is None else self.marker.progress, producer,
                      state_location(self.ctx.config["state.dir"]))

    def _count(self) -> None:
        counters, task = self.ctx.counters, self.task
        if counters is None:  # Spark keeps a task's additions only if it succeeds
            return
        counters[0].add(self.read_count)
        counters[1].add(self.collector.sent)
        if task.async_nodes:
            counters[2].add(async_metrics(task, take=True))
        restored = self.host.take_restored()
        if restored:  # a task that restored records here (it moved, or was rebuilt)
            counters[3].add(restored)
            counters[4].add(1)
        here = state_location(self.ctx.config["state.dir"])
        if moved(self.marker, here):
            counters[5].add(1)  # its last commit was made elsewhere
        if len(counters) > 6:  # where it committed: the next batch's placement (placement.py)
            counters[6].add({self.task_id: here})

    def release(self) -> None:
        """Keep the task for this worker's next batch of it; a task with RocksDB stores is
        closed instead (whichever worker runs it next reopens them)."""
        if any(bottom(s).persistent for s in self.task.stores.values()):
            self.task.close()
        else:
            registry().put("tasks", self.key, (self.task, self.host))

    def discard(self) -> None:
        """Throw away what the batch did to the task's stores, and the task: a failed or
        replayed batch runs next from a fresh task, restored from changelogs."""
        if self.task is not None:
            for store in self.task.stores.values():
                discard_buffered(store)
            self.task.close()

    def abort(self, exc: BaseException) -> BaseException:
        """Discard the batch and abort its transaction; the exception to raise for ``exc``
        (a fenced producer's, when another attempt fenced this one)."""
        self.discard()
        if self.tx is None:
            return exc
        cause = self.tx.fail(exc)
        if isinstance(cause, TaskFencedError):
            log.warning("%s", cause)
        return cause

    def rows(self) -> pa.RecordBatch:
        """The rows this batch feeds downstream tasks (see ``routing.RoutingCollector``)."""
        return self.collector.take_batch()

    def replay_rows(self) -> pa.RecordBatch:
        """A replay's rows, recomputed from the state the batch started from; its stores'
        changes are thrown away."""
        self.discard()
        return self.rows()


def run_task_batch(ctx: StageContext, partition: int, batches: Iterator[pa.RecordBatch],
                   batch: tuple[str, int] | None, attempt: int = 0) -> Iterator[pa.RecordBatch]:
    """Run task ``partition`` over micro-batch ``batch``: the lifecycle of :class:`TaskBatch`.
    Yields the rows it feeds downstream."""
    tb = TaskBatch(ctx, partition, batch, attempt)
    batches = tb.open(batches)
    if not tb.acquire_task():
        yield tb.rows()
        return
    try:
        tb.process(batches)
        if tb.replay:
            rows = tb.replay_rows()
        else:
            tb.commit()
    except BaseException as e:
        cause = tb.abort(e)
        if cause is not e:
            raise cause from None
        raise
    if not tb.replay:
        tb.release()
        rows = tb.rows()
    yield rows
