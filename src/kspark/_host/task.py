"""One task's lifecycle on a host, once for every execution mode.

:class:`HostedTask` wraps the engine's ``StreamTask`` with what a host does around it, as
Kafka Streams' ``StreamTask`` does between its thread's commits:

1. :meth:`~HostedTask.open`: the task's marker in Kafka and its producer or transaction
   (exactly-once: fencing older attempts);
2. :meth:`~HostedTask.acquire`: the task this worker kept, if current
   (:func:`~kspark._host.rules.keep_if_current`), else a new one restored from its
   changelogs;
3. :meth:`~HostedTask.begin`: an interval's host fields handed to the task in one call,
   and its transaction begun;
4. :meth:`~HostedTask.feed`, :meth:`~HostedTask.advance`, :meth:`~HostedTask.punctuate`;
5. :meth:`~HostedTask.commit` (in :data:`~kspark._host.rules.COMMIT_STEPS` order),
   returning the interval's :class:`~kspark._host.metrics.TaskMetrics`;
6. :meth:`~HostedTask.abort` on any failure, or :meth:`~HostedTask.release` at the end.

The micro-batch driver runs 1-6 once per micro-batch; the real-time loop runs 1-2 once per
epoch and 3-5 once per commit interval. A task reaches only what it is handed when it is
made (by its worker's :class:`~kspark._host.task_manager.TaskManager`): Kafka through the
:class:`~kspark._host.port.TaskIO` port, the worker's kept tasks through a
:class:`~kspark._host.port.TaskShelf`, interactive queries through a
:class:`~kspark._host.port.QueryListener`, and the application's test hooks (``after_commit``
runs at the end of every commit, in both modes).
"""

from __future__ import annotations

import logging
from typing import Any

from kspark._engine.async_.metrics import async_metrics
from kspark._engine.state.build import bottom, discard_buffered
from kspark._graph.instantiate import build_task
from kspark._host.context import HostContext
from kspark._host.hooks import TaskHooks
from kspark._host.port import CountingCollector, Output, QueryListener, TaskIO, TaskShelf
from kspark._host.metrics import TaskMetrics
from kspark._host.rules import keep_if_current
from kspark._host.standby import promote_standby
from kspark._host.state import TaskHostState, moved, state_location
from kspark._kafka.transactions import Marker
from kspark.errors import TaskFencedError

__all__ = ["HostedTask"]

log = logging.getLogger("kspark")


class HostedTask:
    """Task ``partition`` of ``ctx``'s sub-topology on this worker, reaching Kafka through
    ``io``, its worker's kept tasks through ``shelf``, and telling ``queries`` what happens
    to it; ``hooks``: the application's test hooks, told ``attempt`` (Spark's attempt number
    of a micro-batch's task; 0 in real-time mode). Made by ``TaskManager.hosted``."""

    def __init__(self, ctx: HostContext, partition: int, io: TaskIO, *, shelf: TaskShelf,
                 queries: QueryListener, hooks: TaskHooks, attempt: int = 0):
        self.ctx, self.partition, self.io = ctx, partition, io
        self.shelf, self.queries, self.hooks, self.attempt = shelf, queries, hooks, attempt
        self.task_id = f"{ctx.plan.stage}_{partition}"
        self.key = (ctx.app_id, self.task_id)  # on the worker's shelf
        self.here = state_location(ctx.state_dir)
        self.out = Output(None, None)
        self.again = False  # the batch is one this task committed: restore from before it
        self.task: Any = None  # the engine's StreamTask, from acquire
        self.host = TaskHostState()
        self.collector: Any = None  # a CountingCollector, from acquire
        self.kept = False  # reused from this worker's previous batch or epoch
        self.moved = False  # its last commit was made on another host or state directory
        self.kept_count = 0  # the kept task reused, not counted yet
        self.batch: tuple[str, int] | None = None  # the stamp of the interval
        self.commits = 0
        self.inputs: dict[tuple[str, int], int] = {}  # next offset to commit per input
        self.read = 0  # records fed since open
        self._previous: dict | None = None  # the progress of the task's last commit
        self._began = self._dirty = False
        self._pending = TaskMetrics()  # counted since the last commit
        self._sent = self._logged = 0  # the collector's counts at the last commit

    @property
    def replay(self) -> bool:
        """Whether the batch is committed already (exactly-once): it writes nothing."""
        return self.out.replay

    @property
    def marker(self) -> Marker | None:
        """The task's last commit in Kafka when it opened."""
        return self.out.marker

    # -- open and acquire ---------------------------------------------------------------

    def open(self, batch: tuple[str, int] | None, fence: bool = False) -> Any:
        """Read the task's marker and open its output for ``batch`` (query or run id, batch
        number); returns the producer (a record collector) to route the task's output to."""
        self.out = self.io.open_output(batch, fence)
        marker = self.out.marker
        self.batch = batch
        self.again = marker is not None and marker.covers(batch)
        self._previous = None if marker is None else marker.progress
        self.moved = moved(marker, self.here)
        return self.out.producer

    def acquire(self, collector: CountingCollector,
                global_stores: dict[str, Any] | None = None) -> None:
        """Take the task this worker kept if current, else build one writing to
        ``collector`` and restore it (``global_stores``: read-only, this worker's)."""
        self.collector = collector
        self._sent, self._logged = collector.sent, collector.logged
        kept = self.shelf.take(self.key)
        if kept is not None:
            task, host = kept
            if keep_if_current(host.marker, self.marker, host.changelog_offsets,
                               lambda: self.io.changelog_ends(task), self.again):
                self.task, self.host, self.kept = task, host, True
                self.kept_count = 1
                self.queries.hold(self)
                return
            with host.lock:
                self.queries.drop(self.ctx.app_id, self.task_id)
                task.close()
        marker, ctx = self.marker, self.ctx
        if ctx.standbys:  # its warm copy on this disk, if fresher than its own stores
            promote_standby(ctx.state_dir, ctx.app_id, self.task_id)
        saved = None if marker is None else marker.previous if self.again else marker.progress
        self.task = build_task(
            ctx.graph, self.task_id, ctx.config, self.collector, only=ctx.plan.nodes,
            batch_buffer=True, global_stores=global_stores,
            restore=lambda t: self._restore(t, saved))
        self.host.changelog_offsets = dict(self.task.restored or {})
        self.host.position = dict(self.host.changelog_offsets)
        self.queries.hold(self)
        restored = self.host.take_restored()
        self._pending.restored_records += restored
        self._pending.restores += restored > 0
        if restored and self.task.stats.debug:  # task-level restore-total, -rate (DEBUG)
            self.task.stats.count("restore", restored)

    def _restore(self, task: Any, saved: dict | None) -> Any:
        """Restore ``task``'s stores (queryable meanwhile only by stale queries)."""
        self.queries.hold(self, task, restoring=True)
        return self.io.restore(task, self.batch, saved, self.again, self.host)

    # -- an interval ----------------------------------------------------------------------

    def begin(self, batch: tuple[str, int] | None = None, clock: int | None = None) -> None:
        """Start an interval (once until its commit): the task's host fields in one call
        (its collector, the partition counts, the batch stamp, the micro-batch's pinned
        ``clock``), and its transaction. ``batch``: the stamp; by default the next of the
        run this task opened with."""
        if self._began:
            return
        if batch is not None:
            self.batch = batch
        elif self.batch is not None:
            self.batch = (self.batch[0], self.commits + 1)
        self.task.begin_interval(self.collector, self.ctx.plan.partition_counts, self.batch,
                                 clock)
        if self.out.tx is not None:
            self.out.tx.begin()
        self._began = True

    def feed(self, records: list[Any], read: int | None = None) -> None:
        """Process ``records`` (offset order per partition); ``read``: how many of them were
        read from Kafka (all, by default)."""
        self.begin()
        self.task.add_records(records)
        self.task.process_buffered()
        n = len(records) if read is None else read
        self.read += n
        self._pending.records_in += n
        self._dirty = True

    def advance(self, tp: tuple[str, int], end: int) -> None:
        """Commit ``end`` for ``tp`` next, if beyond what is there: the task has read
        everything of ``tp`` before it."""
        if end > self.inputs.get(tp, -1):
            self.inputs[tp] = end
            self._dirty = True

    def punctuate(self) -> bool:
        """Wall-clock punctuation and delayed records that are due; whether any ran."""
        self.begin()
        ran = bool(self.task.maybe_punctuate_wall_clock())
        self._dirty = self._dirty or ran
        return ran

    def commit(self, force: bool = False) -> TaskMetrics | None:
        """Commit the interval (see ``rules.COMMIT_STEPS``): invalidate the checkpoint,
        flush; commit the transaction with the input offsets and the marker (exactly-once)
        or the offsets with the marker (at-least-once); record the marker; checkpoint; then
        the hooks' ``after_commit``. None when the interval did nothing and ``force`` is not
        set."""
        if not force and not self._dirty and self.collector.sent == self._sent:
            return None
        self.begin()
        task, host, tx = self.task, self.host, self.out.tx
        with host.lock:  # an interactive query reads the stores before or after, not during
            if task.stores:
                self.io.invalidate_checkpoint(task)
            task.flush()
            query, n = self.batch if self.batch is not None else ("", -1)
            marker = Marker(query, n, task.progress(), self._previous,
                            tx.instance if tx is not None else host.instance_id, self.here)
            if tx is not None:
                tx.commit(marker, self.inputs)
            else:
                self.io.commit_offsets(self.inputs, marker)
            host.marker = marker  # what Kafka holds now
            host.committed_inputs = dict(self.inputs)
        host.changelog_offsets = self.io.checkpoint(task, host)
        with host.lock:  # until here a query reports the position before (it is behind)
            host.position = {**host.changelog_offsets,
                             **{tp: end - 1 for tp, end in self.inputs.items()}}
            self.queries.committed(self)
        self._previous = marker.progress
        self.commits += 1
        self._began = self._dirty = False
        done = self._take_metrics()
        if self.hooks.after_commit is not None:  # a test's: a worker dying right after it
            self.hooks.after_commit(self.task_id, self.batch, self.attempt)
        return done

    def _take_metrics(self) -> TaskMetrics:
        out, self._pending = self._pending, TaskMetrics()
        sent, logged = self.collector.sent, self.collector.logged
        out.changelog_records = logged - self._logged
        out.records_out = sent - self._sent - out.changelog_records
        self._sent, self._logged = sent, logged
        out.commits = 1
        out.moves, self.moved = int(self.moved), False  # counted once per open
        out.kept, self.kept_count = self.kept_count, 0
        out.where = {self.task_id: self.here}
        if self.task.async_nodes:
            out.async_ = async_metrics(self.task, take=True)
        out.streams = self.task.take_stats()
        return out

    # -- the end ----------------------------------------------------------------------------

    def discard(self) -> None:
        """Throw away what the interval did to the stores, and close the task: whoever runs
        it next restores it from its changelogs."""
        if self.task is not None:
            with self.host.lock:
                self.queries.drop(self.ctx.app_id, self.task_id)
                for store in self.task.stores.values():
                    discard_buffered(store)
                self.task.close()
            self.task = None

    def abort(self, exc: BaseException) -> BaseException:
        """Discard the interval and abort its transaction; the exception to raise for
        ``exc`` (a fenced producer's, when another attempt fenced this one)."""
        self.discard()
        tx = self.out.tx
        if tx is None:
            return exc
        cause = tx.fail(exc)
        if isinstance(cause, TaskFencedError):
            log.warning("%s", cause)
        return cause

    def release(self) -> TaskMetrics:
        """After a commit: keep the task for this worker's next batch or epoch; a task with
        persistent stores is closed instead (whichever worker runs it next reopens them from
        its local checkpoint). Returns what no commit counted yet (the restore and the move
        of a task that had nothing to commit)."""
        task, self.task = self.task, None
        left, self._pending = self._pending, TaskMetrics()
        left.moves, self.moved = int(self.moved), False
        left.kept, self.kept_count = self.kept_count, 0
        if task is None:
            return left
        left.streams = task.take_stats()  # a task with nothing to commit: its metrics exist
        if any(bottom(s).persistent for s in task.stores.values()):
            with self.host.lock:
                self.queries.to_disk(self, task)
                task.close()
        else:
            self.shelf.keep(self.key, task, self.host)
        return left
