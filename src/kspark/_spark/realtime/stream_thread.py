"""The loop of one real-time stream thread (one long-running Spark task).

Thread ``i`` of ``n`` hosts every ``n``-th task of the topology (all sub-topologies, see
``layout.py``), the same ones in every epoch (a sticky assignment); each thread is a Spark
job of its own (see ``query.py``), so a thread that fails stops no other. It opens them
(``_host/task.py``: :class:`HostedTask`, the one task lifecycle of both modes), assigns its
consumer their input partitions (Kafka and repartition topics) at the group's committed
offsets, then runs Kafka Streams' loop: poll → hand each task its records → process the
tasks whose every input partition has records or is read to its end (so records are picked
by head timestamp across partitions) → punctuate on the wall clock → every
``commit.interval.ms`` commit every task, and every ``repartition.purge.interval.ms`` delete
the repartition records committed. It commits a last time and ends when the epoch is over or
the driver asks the run to stop. Any failure aborts every task's interval (their
transactions) and is returned to the driver as the thread's error, naming the task
(:func:`thread_job`): Spark itself retries only what it is for, a lost executor or Python
worker."""

from __future__ import annotations

import logging
import time
import traceback
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kspark._engine.nodes import RawRecord
from kspark._engine.offset_reset import assigned_start
from kspark._kafka.records import raw_record
from kspark._kafka.retry import transient
from kspark._spark.realtime.consumer_fault import ConsumerFault
from kspark._kafka.clients import committed_offsets
from kspark._kafka.stream_thread_clients import MetricsSender, StopWatch, thread_consumer
from kspark._spark.realtime.layout import TaskSpec
from kspark._spark.realtime.partition_group import PartitionGroup
from kspark._spark.routing import RoutingCollector
from kspark._spark.realtime.thread_metrics import ThreadReporter
from kspark._host.context import HostContext
from kspark._host.kafka_io import kafka_hosted_task
from kspark._host.standby import StandbyTask, StandbyUpdater, promote_standby
from kspark._host.task import HostedTask
from kspark.errors import KSparkError, StreamsError

__all__ = ["Epoch", "run_stream_thread", "thread_job", "open_live_task"]

log = logging.getLogger("kspark")
TP = tuple[str, int]


@dataclass(frozen=True)
class Epoch:
    """What the driver gives a thread for one of its epochs (travels by value)."""

    run: str  # unique to the thread's epoch: the batch stamp of its commits
    threads: int
    tasks: tuple[TaskSpec, ...]  # every task; thread i runs tasks[i::threads]
    resets: tuple[tuple[str, str], ...]  # per-topic offset reset of partitions not in starts
    interval_ms: int  # commit.interval.ms
    length_ms: int  # real_time.epoch.ms
    control_begin: int  # where the threads watch the control topic from
    purge_ms: int  # repartition.purge.interval.ms
    stop: tuple[tuple[tuple[str, int], int], ...] = ()  # a batch run's stop offsets (KIP-95)
    # the driver's resolved starts: (partition, group's offset it saw or -1, start offset
    # or OFFSET_BEGINNING); see kspark._engine.offset_reset.assigned_start
    starts: tuple[tuple[tuple[str, int], int, int], ...] = ()
    query: str = ""  # the whole run's stop key (a stop of it ends every thread)
    # the driver's assignment (kspark._plan.assignment), as indices into tasks: per thread,
    # the tasks it runs and those it keeps standby copies of; () : every n-th task, no copies
    active: tuple[tuple[int, ...], ...] = ()
    standby: tuple[tuple[int, ...], ...] = ()

    def mine(self, index: int) -> tuple[TaskSpec, ...]:
        """Thread ``index``'s tasks: its home tasks (every ``n``-th: a sticky assignment),
        unless the driver moved tasks (a lost thread's, to the threads with their copies)."""
        if self.active:
            return tuple(self.tasks[t] for t in self.active[index])
        return self.tasks[index::self.threads]

    def copies(self, index: int) -> tuple[TaskSpec, ...]:
        """The tasks thread ``index`` keeps standby copies of."""
        return tuple(self.tasks[t] for t in self.standby[index]) if self.standby else ()


def thread_job(contexts: dict[int, HostContext], index: int, epoch: Epoch
               ) -> dict[str, Any]:
    """One Spark task of thread ``index``'s job: its counts, or (``error``) the traceback of
    what failed it, for the driver to decide on (fail the run, or replace the thread: the
    uncaught exception handler); Spark retries the job's task only when the executor or the
    Python worker running it is lost."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is not None and context.attemptNumber() > 0:
        # Spark retried the task (its executor or Python worker was lost): the driver runs
        # the thread's next epoch itself, with its current assignment and placement
        return {"thread": index, "retried": True}
    try:
        return run_stream_thread(contexts, index, epoch)
    except Exception as e:  # noqa: BLE001 - the driver decides; every task was aborted
        return {"thread": index, "error": "".join(traceback.format_exception(e))}


def run_stream_thread(contexts: dict[int, HostContext], index: int,
                      epoch: Epoch) -> dict[str, Any]:
    """Run thread ``index`` for one epoch (``contexts``: per sub-topology); its counts
    (records in and out, commits)."""
    ctx = next(iter(contexts.values()))
    specs = epoch.mine(index)
    # Each attempt of the thread stamps its commits and changelog records with a run of its
    # own: a retried attempt of the same epoch (Spark retries a task lost with its executor)
    # must not take the committed records of the attempt before for its own (a restore
    # skips the records stamped by its own run: see recovery.stamped_by_this_batch_or_later)
    attempt_run = f"{epoch.run}.{uuid.uuid4().hex[:8]}"
    tasks: dict[TaskSpec, HostedTask] = {}
    watch = StopWatch(ctx.settings, ctx.app_id, epoch.control_begin, epoch.run, epoch.query)
    sender = MetricsSender(ctx.settings, ctx.app_id, epoch.run)
    consumer = None
    globals_ = _Globals(ctx, epoch) if ctx.graph.global_stores else None
    reporter = ThreadReporter(index, epoch, sender, attempt_run)
    standbys = StandbyUpdater([StandbyTask(contexts[s.sub_topology], s.partition)
                               for s in epoch.copies(index)], max(epoch.interval_ms / 1000, 0.5))
    reporter.standby = standbys.lags
    try:
        stores = None if globals_ is None else globals_.refresh().read_only()
        for s in specs:
            if epoch.standby:  # its copy here, if fresher than its own stores
                promote_standby(ctx.state_dir, ctx.app_id, s.task_id)
            tasks[s] = open_live_task(contexts[s.sub_topology], s.partition, attempt_run,
                                      stores)
        consumer = _assign(ctx, index, epoch, specs)
        _Loop(consumer, tasks, watch, epoch, ctx, reporter, globals_).run()
    except BaseException as e:
        raise _failed(list(tasks.values()), e) from e
    finally:
        standbys.close()
        watch.close()
        sender.close()
        if consumer is not None:
            consumer.close()
    for t in tasks.values():
        reporter.add(t.release())
    return {"thread": index, **reporter.counts(),
            "tasks_kept": sum(t.kept for t in tasks.values()), "async": reporter.async_raw}


def open_live_task(ctx: HostContext, partition: int, run: str,
                   global_stores: Any = None) -> HostedTask:
    """Task ``partition`` of ``ctx``'s sub-topology, opened for run ``run`` (exactly-once:
    fencing every older attempt), its fed-topic records going to Kafka (repartition
    topics)."""
    task = kafka_hosted_task(ctx, partition)
    producer = task.open((run, 0), fence=True)
    task.acquire(RoutingCollector(producer, ctx.plan, partition, shuffled=False,
                                  changelogs=ctx.changelogs), global_stores)
    return task


def _assign(ctx: HostContext, index: int, epoch: Epoch, specs: tuple[TaskSpec, ...]) -> Any:
    """The thread's consumer, assigned its tasks' partitions (after the tasks opened: under
    exactly-once their fencing ended any older attempt's transaction first) where
    ``assigned_start`` says: the driver's resolved start, or the group's committed offset;
    else (internal topics) the earliest offset."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

    tps = [tp for s in specs for tp in s.sources]
    committed = committed_offsets(ctx.settings, ctx.app_id, tps)
    resets, starts = dict(epoch.resets), {tp: (seen, at) for tp, seen, at in epoch.starts}
    consumer = thread_consumer(ctx.settings, ctx.app_id, index)
    consumer.assign([TopicPartition(t, p, assigned_start(committed.get((t, p)), starts.get(
        (t, p)), OFFSET_END if resets.get(t) == "latest" else OFFSET_BEGINNING))
        for t, p in tps])
    return consumer


class _Loop:
    """Kafka Streams' loop over one thread's tasks: poll, hand each task its records,
    process the tasks that are ready, punctuate; commit every interval and purge the
    committed repartition records every ``purge_ms``; end at the epoch's end or a stop."""

    def __init__(self, consumer: Any, tasks: dict[TaskSpec, HostedTask], watch: StopWatch,
                 epoch: Epoch, ctx: HostContext, reporter: ThreadReporter,
                 globals_: _Globals | None = None):
        self.consumer, self.tasks, self.watch, self.epoch, self.ctx = (
            consumer, tasks, watch, epoch, ctx)
        self.reporter, self.globals = reporter, globals_
        wait = ctx.max_task_idle_ms != -1  # -1: never wait (0: see ready())
        self.groups = {s: PartitionGroup(s.sources, wait) for s in tasks}
        self.owner = {tp: s for s in tasks for tp in s.sources}
        self.at_end: dict[TP, int] = {}  # partitions with nothing to fetch now: their end
        self.purged: dict[TP, int] = {}
        self.stop = dict(epoch.stop)  # a batch run: nothing at or after these is processed
        self.fault = ConsumerFault(consumer, min(self.owner, default=None), ctx.settings)

    def run(self) -> None:
        epoch = self.epoch
        now = time.monotonic()
        end, next_commit = now + epoch.length_ms / 1000, now + epoch.interval_ms / 1000
        next_purge, last_commit = now + epoch.purge_ms / 1000, now
        while True:
            if self.globals is not None:
                self.globals.maybe_refresh()
            self.poll(max(0.0, min(0.05, next_commit - time.monotonic())))
            for s, t in self.tasks.items():
                self.feed(s, t)
                t.punctuate()
            now = time.monotonic()
            stopping = now >= end or self.watch.stopped()
            drained = self.drained() and now >= last_commit + 0.1  # at most 10 a second
            if now >= next_commit or stopping or drained:
                self.commit()
                last_commit, next_commit = now, now + epoch.interval_ms / 1000
                if now >= next_purge or stopping:
                    self.purge()
                    next_purge = now + epoch.purge_ms / 1000
            self.reporter.maybe_report(self, stopping)
            if stopping:
                return

    def drained(self) -> bool:
        """A batch run's thread with every partition read to its stop offset or end and
        nothing held: it commits at once rather than at the next interval, so the run ends
        without waiting for the timer (a commit with nothing new does nothing)."""
        return bool(self.stop) and len(self.at_end) == len(self.owner) and not any(
            g.pending for g in self.groups.values())

    def commit(self) -> None:
        """Commit every task (a commit round), timed for the metrics."""
        began = time.monotonic()
        self.settle()
        done = [m for m in (t.commit() for t in self.tasks.values()) if m is not None]
        for m in done:
            self.reporter.add(m)
        if done:
            self.reporter.meter.committed(time.monotonic() - began)

    def lag(self) -> dict[TP, int]:
        """Per input partition, the records not processed yet (from the consumer's last
        fetched end; partitions it has not fetched yet are left out)."""
        from confluent_kafka import TopicPartition

        out = {}
        for tp, spec in self.owner.items():
            task = self.tasks[spec]
            _, high = self.consumer.get_watermark_offsets(TopicPartition(*tp), cached=True)
            position = task.inputs.get(tp, self.at_end.get(tp))
            if high is not None and high >= 0 and position is not None:
                out[tp] = max(0, high - position)
        return out

    def poll(self, wait_s: float) -> None:
        """Hand each task what has arrived; note the partitions read to their end."""
        from confluent_kafka import KafkaError

        by_tp: dict[TP, list[RawRecord]] = defaultdict(list)
        self.fault.check()
        for m in _poll(self.consumer, wait_s):
            tp, error = (m.topic(), m.partition()), m.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                if transient(error):  # a broker restarting: the consumer reconnects itself
                    self.fault.seen(tp[0], error.str())
                    continue
                raise StreamsError(f"reading topic {tp[0]!r} partition {tp[1]} failed: "
                                   f"{error.str()}")
            if error is not None:
                self.at_end[tp] = min(m.offset(), self.stop.get(tp, m.offset()))
                continue
            if tp in self.stop and m.offset() >= self.stop[tp]:
                self.reached_stop(tp)
                continue
            self.at_end.pop(tp, None)
            by_tp[tp].append(raw_record(m))
        for tp, records in by_tp.items():
            self.groups[self.owner[tp]].add(records)

    def feed(self, spec: TaskSpec, task: HostedTask) -> None:
        """Process what ``task`` holds once its partition group is ready."""
        group = self.groups[spec]
        if group.ready(self.at_end):
            task.feed(group.take())
            for tp, position in group.positions.items():
                task.advance(tp, position)

    def reached_stop(self, tp: TP) -> None:
        """A batch run's partition got to its stop offset: it is read no further (paused),
        and counts as read to its end there (KIP-95)."""
        from confluent_kafka import TopicPartition

        self.consumer.pause([TopicPartition(*tp)])
        self.at_end[tp] = self.stop[tp]

    def settle(self) -> None:
        """A partition read to its end with nothing held: its task commits the end (past
        any transaction marker, as Kafka Streams commits the consumer's position), so the
        group's lag reads 0."""
        for tp, end in self.at_end.items():
            spec = self.owner[tp]
            if tp not in self.groups[spec].pending:
                self.tasks[spec].advance(tp, end)

    def purge(self) -> None:
        """Delete the repartition records the tasks have committed (as Kafka Streams does
        after a commit); a failure is logged, not fatal (the records stay)."""
        todo = {tp: o for s, t in self.tasks.items() for tp, o in t.inputs.items()
                if tp[0] in s.purged and o > self.purged.get(tp, -1)}
        if not todo:
            return
        try:
            self.ctx.admin().delete_records(todo)
        except KSparkError as e:
            log.warning("could not purge committed repartition records: %s", e)
            return
        self.purged.update(todo)


class _Globals:
    """This worker's copy of the global stores (``_spark/globals.py``, KIP-406 included),
    brought to the global topics' current ends before the thread's tasks open and then every
    commit interval, at least every second: Kafka Streams' global thread, between polls."""

    def __init__(self, ctx: HostContext, epoch: Epoch):
        self.ctx = ctx
        counts = ctx.plan.partition_counts
        self.tps = [(t, p) for t in ctx.graph.global_topics() for p in range(counts[t])]
        self.every_s = min(epoch.interval_ms / 1000, 1.0)
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


def _poll(consumer: Any, wait_s: float) -> list[Any]:
    """What has arrived, up to 2,000 records: waits up to ``wait_s`` for the first only
    (``consume(n, timeout)`` would wait the whole timeout unless ``n`` arrived)."""
    first = consumer.poll(wait_s)
    return [] if first is None else [first, *consumer.consume(1999, 0)]


def _failed(tasks: list[HostedTask], error: BaseException) -> BaseException:
    """Abort every task's interval; the error to raise, naming the task when it is not a
    kspark error already."""
    causes = [t.abort(error) for t in tasks]
    cause = next((c for c in causes if c is not error), error)  # a fence explains the rest
    if isinstance(cause, KSparkError):
        return cause
    where = f"stream thread of task {tasks[0].task_id}" if tasks else "a stream thread"
    return StreamsError(f"{where} failed: {type(cause).__module__}."
                        f"{type(cause).__qualname__}: {cause}")
