"""One kspark task kept open for a whole epoch of a stream thread.

:class:`LiveTask` builds the task once (its stores restored from their changelogs, its
progress resumed from its marker in Kafka), then goes through ``begin`` / ``feed`` /
``commit`` once per commit interval, as Kafka Streams' ``StreamTask`` does between its
thread's commits: the producer, the transaction, the stores and RocksDB stay open. Under
exactly_once_v2 its transactional producer's ``init_transactions`` fences every older
attempt of the task (a zombie thread of an earlier epoch or a retried Spark task).
"""

from __future__ import annotations

import logging
from collections.abc import Container
from typing import Any

from kspark._engine.nodes import RawRecord
from kspark._engine.state.build import bottom, discard_buffered
from kspark._graph.instantiate import build_task
from kspark._kafka.clients import commit_offsets, task_producer
from kspark._kafka.transactions import (Marker, TaskTransactions, encode_marker, progress_topic,
                                        read_marker)
from kspark._spark.host_state import TaskHostState, moved, state_location
from kspark._spark.routing import RoutingCollector
from kspark._spark.state import (admin_for, checkpoint_task, invalidate_checkpoint,
                                 logged_partitions, restore_task)
from kspark._spark.task_batch import StageContext
from kspark._worker import registry
from kspark.errors import TaskFencedError

__all__ = ["LiveTask"]

log = logging.getLogger("kspark")


class LiveTask:
    """Task ``partition`` of ``ctx``'s sub-topology, run by a stream thread in run ``run``
    (an id unique to the epoch: the batch stamp of its commits is ``(run, n)``), reading
    the topic-partitions ``sources``."""

    def __init__(self, ctx: StageContext, partition: int, run: str,
                 sources: tuple[tuple[str, int], ...] = ()):
        self.ctx, self.partition, self.run = ctx, partition, run
        self.sources = sources
        self.pending: dict[tuple[str, int], list[RawRecord]] = {}  # polled, not processed
        self.task_id = f"{ctx.plan.stage}_{partition}"
        self.key = (ctx.app_id, "real_time", self.task_id)  # in the worker's registry
        self.kept = False  # reused from this worker's previous epoch
        self.moved = False  # its last commit was made on another host or state directory
        self.restored = 0  # changelog records restored when it opened
        self.here = state_location(ctx.config["state.dir"])
        self.marker_tp = (progress_topic(ctx.app_id), ctx.plan.first_marker + partition)
        self.host = TaskHostState()
        self.tx: TaskTransactions | None = None
        self.task: Any = None
        self.commits = 0
        self.inputs: dict[tuple[str, int], int] = {}  # next offset per input partition
        self.read = self.sent = 0
        self._began = False
        self._dirty = False
        self._previous: dict | None = None

    def open(self, global_stores: dict[str, Any] | None = None) -> None:
        """The producer (exactly-once: fencing older attempts), the marker, and the task,
        restored from its changelogs and resumed from the marker's progress
        (``global_stores``: the worker's global stores, read-only, kept up to date by the
        thread)."""
        ctx = self.ctx
        if ctx.eos:
            self.tx = TaskTransactions(ctx.settings, ctx.app_id, self.task_id, self.marker_tp)
            self.tx.init()
            marker, producer = self.tx.marker(), self.tx.producer
        else:
            marker = read_marker(ctx.settings, ctx.app_id, self.task_id, self.marker_tp)
            producer = task_producer(ctx.settings, f"{ctx.app_id}-{self.task_id}-producer",
                                     skip_failed=ctx.skip_failed)
        self.collector = RoutingCollector(producer, ctx.plan, self.partition, shuffled=False)
        saved = None if marker is None else marker.progress
        self.moved = moved(marker, self.here)
        batch = (self.run, 0)
        kept = self._kept(marker)
        if kept is not None:  # this worker ran the task's last commit: its stores are current
            self.task, self.host = kept
            self.task.collector = self.collector
            self.kept = True
        else:
            self.task = build_task(
                ctx.graph, self.task_id, ctx.config, self.collector, only=ctx.plan.nodes,
                batch_buffer=True, global_stores=global_stores, restore=lambda t: restore_task(
                    t, ctx.builders, batch, saved, False, host=self.host))
            self.host.changelog_offsets = dict(self.task.restored or {})
            self.restored = self.host.take_restored()
        self.task.partition_counts = ctx.plan.partition_counts
        self.task.batch = batch
        self._previous = saved

    def _kept(self, marker: Marker | None) -> tuple[Any, TaskHostState] | None:
        """The task as this worker kept it at the end of an earlier epoch, if it made the
        task's last commit and its changelogs have not moved since; else None (closed)."""
        kept = registry().pop("tasks", self.key)
        if kept is None:
            return None
        task, host = kept
        mine = host.marker
        same = (marker is None and mine is None) or (
            marker is not None and mine is not None
            and (mine.query, mine.batch, mine.producer) == (marker.query, marker.batch,
                                                            marker.producer))
        parts = logged_partitions(task, self.ctx.builders)
        if same and parts:
            same = admin_for(task.config).end_offsets(parts.values()) == host.changelog_offsets
        if not same:
            task.close()
            return None
        return task, host

    def begin(self) -> None:
        """Start a commit interval: its batch stamp, and its transaction (exactly-once)."""
        if not self._began:
            self.task.batch = (self.run, self.commits + 1)
            if self.tx is not None:
                self.tx.begin()
            self._began = True

    def add(self, records: list[RawRecord]) -> None:
        """Hold polled records (of one of the task's partitions, in offset order) until
        :meth:`ready`."""
        if records:
            self.pending.setdefault((records[0].topic, records[0].partition), []).extend(records)

    def advance(self, tp: tuple[str, int], end: int) -> None:
        """Commit ``end`` for ``tp`` next, if beyond the last record processed: the task has
        read everything before it (the rest were transaction markers or aborted)."""
        if end > self.inputs.get(tp, -1):
            self.inputs[tp] = end
            self._dirty = True

    def ready(self, at_end: Container[tuple[str, int]]) -> bool:
        """Whether to process what is held: every input partition has records held or has
        none left to fetch (``at_end``), as Kafka Streams' partition group waits
        (``max.task.idle.ms=0``), so that records are picked by head timestamp across the
        partitions."""
        return bool(self.pending) and all(tp in self.pending or tp in at_end
                                          for tp in self.sources)

    def feed_pending(self) -> None:
        """Process every record held (see :meth:`ready`)."""
        records = [r for rs in self.pending.values() for r in rs]
        self.pending.clear()
        self.feed(records)

    def feed(self, records: list[RawRecord]) -> None:
        """Process ``records`` (of this task's partitions, in offset order per partition)."""
        self.begin()
        self.task.add_records(records)
        self.task.process_buffered()
        for r in records:
            self.inputs[(r.topic, r.partition)] = r.offset + 1
        self.read += len(records)
        self._dirty = True

    def punctuate(self) -> None:
        """Wall-clock punctuation and delayed records that are due (the real clock)."""
        self.begin()
        if self.task.maybe_punctuate_wall_clock():
            self._dirty = True

    def commit(self) -> bool:
        """Flush the task and commit: the transaction with the input offsets and the marker
        (exactly-once), or the offsets with the marker after the output (at-least-once);
        then checkpoint the stores. Nothing happens when the interval did nothing."""
        if not self._dirty and self.collector.sent == self.sent:
            return False
        ctx, task, host = self.ctx, self.task, self.host
        if task.stores:
            invalidate_checkpoint(task)
        task.flush()
        marker = Marker(self.run, self.commits + 1, task.progress(), self._previous,
                        self.tx.instance if self.tx is not None else host.instance_id,
                        self.here)
        if self.tx is not None:
            self.tx.commit(marker, self.inputs)
        host.marker = marker
        host.changelog_offsets = checkpoint_task(task, ctx.builders, host=host)
        if self.tx is None:
            commit_offsets(ctx.settings, ctx.app_id, self.inputs,
                           (self.marker_tp, encode_marker(marker)))
        self._previous = marker.progress
        self.commits += 1
        self.sent = self.collector.sent
        self._began = self._dirty = False
        return True

    def abort(self, exc: BaseException) -> BaseException:
        """Throw away the interval (stores' buffered writes, the transaction) and close the
        task; the exception to raise for ``exc``."""
        if self.task is not None:
            for store in self.task.stores.values():
                discard_buffered(store)
            self.task.close()
            self.task = None
        if self.tx is None:
            return exc
        cause = self.tx.fail(exc)
        if isinstance(cause, TaskFencedError):
            log.warning("%s", cause)
        return cause

    def close(self) -> None:
        """After a last commit: keep the task in this worker for its next epoch (unless it
        has persistent stores: whichever worker runs it next reopens them from its local
        checkpoint), and close the producer."""
        if self.task is not None:
            if any(bottom(s).persistent for s in self.task.stores.values()):
                self.task.close()
            else:
                registry().put("tasks", self.key, (self.task, self.host))
            self.task = None
        if self.tx is not None:
            self.tx.close()

