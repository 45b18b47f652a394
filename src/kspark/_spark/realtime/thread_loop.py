"""Kafka Streams' loop of one real-time stream thread over its tasks (see
``stream_thread.py``), and how the thread opens a task and reads its partitions."""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from operator import itemgetter
from typing import Any

from kspark._engine.offset_reset import assigned_start
from kspark._host.context import HostContext
from kspark._host.task import HostedTask
from kspark._host.task_manager import TaskManager, task_manager
from kspark._kafka.clients import committed_offsets
from kspark._kafka.records import raw_records
from kspark._kafka.retry import transient
from kspark._control.control_topic import StopWatch, thread_consumer
from kspark._spark.realtime.consumer_fault import ConsumerFault
from kspark._spark.realtime.epoch import Epoch
from kspark._spark.realtime.global_feed import GlobalFeed
from kspark._spark.realtime.layout import TaskSpec
from kspark._spark.realtime.polled import PolledRecords
from kspark._spark.realtime.thread_metrics import ThreadReporter
from kspark._spark.routing import RoutingCollector
from kspark.errors import KSparkError, StreamsError

__all__ = ["ThreadLoop", "open_live_task", "open_live_tasks", "assign_consumer",
           "start_offsets"]

log = logging.getLogger("kspark")
TP = tuple[str, int]
_TOPIC_PARTITION = itemgetter(0, 1)  # a RawRecord's (topic, partition)


def open_live_task(ctx: HostContext, partition: int, run: str, global_stores: Any = None,
                   tasks: TaskManager | None = None) -> HostedTask:
    """Task ``partition`` of ``ctx``'s sub-topology, opened for run ``run`` (exactly-once:
    fencing every older attempt), its fed-topic records going to Kafka (repartition
    topics); made by ``tasks`` (default: this worker's task manager)."""
    task = (tasks if tasks is not None else task_manager()).hosted(ctx, partition)
    producer = task.open((run, 0), fence=True)
    task.acquire(RoutingCollector(producer, ctx.plan, partition, shuffled=False,
                                  changelogs=ctx.changelogs), global_stores)
    return task


def open_live_tasks(contexts: dict[int, HostContext], specs: Any, run: str,
                    global_stores: Any, into: dict[Any, HostedTask],
                    tasks: TaskManager | None = None) -> None:
    """Open the tasks ``specs`` (:func:`open_live_task`, for run ``run``, made by ``tasks``)
    at once, each in a thread of its own (a task's open mostly waits on the broker: its
    producer fencing the older attempt, its restore's reads), into ``into``; if one fails,
    the others opened are in ``into`` too (for the caller to abort) and the first error is
    raised."""
    if len(specs) <= 1:
        for s in specs:
            into[s] = open_live_task(contexts[s.sub_topology], s.partition, run, global_stores,
                                     tasks)
        return
    with ThreadPoolExecutor(len(specs), thread_name_prefix="kspark-open") as pool:
        futures = {s: pool.submit(open_live_task, contexts[s.sub_topology], s.partition, run,
                                  global_stores, tasks) for s in specs}
    errors: list[BaseException] = []
    for s, f in futures.items():
        error = f.exception()
        if error is None:
            into[s] = f.result()
        else:
            errors.append(error)
    if errors:
        raise errors[0]


def assign_consumer(ctx: HostContext, index: int, epoch: Epoch,
                    specs: tuple[TaskSpec, ...]) -> Any:
    """The thread's consumer, assigned its tasks' partitions (after the tasks opened: under
    exactly-once their fencing ended any older attempt's transaction first) where
    ``assigned_start`` says: the driver's resolved start, or the group's committed offset;
    else (internal topics) the earliest offset."""
    consumer = thread_consumer(ctx.settings, ctx.app_id, index)
    starts = start_offsets(ctx, epoch, specs)
    _learn_leaders(consumer, {tp.topic for tp in starts if tp.offset < 0})
    consumer.assign(starts)
    return consumer


def _learn_leaders(consumer: Any, topics: set[str]) -> None:
    """Ask for ``topics``' metadata before assigning a logical start (earliest or latest):
    a consumer that does not know a partition's leader yet retries its offset lookup after
    librdkafka's fixed 500 ms, which every new stream thread would wait at start. Best
    effort: the assignment works without it, only later."""
    for topic in sorted(topics):
        try:
            consumer.list_topics(topic, timeout=5)
        except Exception:  # noqa: BLE001 - a start-up shortcut only; the poll loop reports faults
            return


def start_offsets(ctx: HostContext, epoch: Epoch, specs: Any) -> list[Any]:
    """Where the thread reads ``specs``' partitions from (see :func:`assign_consumer`), as
    TopicPartitions."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

    tps = [tp for s in specs for tp in s.sources]
    committed = committed_offsets(ctx.settings, ctx.app_id, tps) if tps else {}
    resets, starts = dict(epoch.resets), {tp: (seen, at) for tp, seen, at in epoch.starts}
    return [TopicPartition(t, p, assigned_start(committed.get((t, p)), starts.get(
        (t, p)), OFFSET_END if resets.get(t) == "latest" else OFFSET_BEGINNING))
        for t, p in tps]


class ThreadLoop:
    """Kafka Streams' loop over one thread's tasks: poll, hand each task its records,
    process the tasks that are ready, punctuate; commit every interval and purge the
    committed repartition records every ``purge_ms``; end at the epoch's end or a stop.
    ``reassign``: asked between polls whether the driver moved tasks to or from the thread
    (see ``reassign.py``)."""

    def __init__(self, consumer: Any, tasks: dict[TaskSpec, HostedTask], watch: StopWatch,
                 epoch: Epoch, ctx: HostContext, reporter: ThreadReporter,
                 globals_: GlobalFeed | None = None, reassign: Any = None):
        self.consumer, self.tasks, self.watch, self.epoch, self.ctx = (
            consumer, tasks, watch, epoch, ctx)
        self.reporter, self.globals, self.reassign = reporter, globals_, reassign
        wait = ctx.max_task_idle_ms != -1  # -1: never wait (0: see ready())
        self.groups = {s: PolledRecords(s.sources, wait) for s in tasks}
        self.owner = {tp: s for s in tasks for tp in s.sources}
        self.at_end: dict[TP, int] = {}  # partitions with nothing to fetch now: their end
        self.purged: dict[TP, int] = {}
        self.stop = dict(epoch.stop)  # a batch run: nothing at or after these is processed
        self.fault = ConsumerFault(consumer, min(self.owner, default=None), ctx.settings)

    def run(self) -> None:
        epoch = self.epoch
        now = time.monotonic()
        end = now + epoch.length_ms / 1000 if epoch.length_ms else math.inf  # 0: no end
        next_commit = now + epoch.interval_ms / 1000
        next_purge, last_commit = now + epoch.purge_ms / 1000, now
        while True:
            if self.globals is not None:
                self.globals.maybe_refresh()
            if self.reassign is not None:
                self.reassign.check(self)
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

    def add_task(self, spec: TaskSpec, task: HostedTask, starts: list[Any]) -> None:
        """Run ``task`` from now on, its partitions read from ``starts`` (TopicPartitions
        with their offsets)."""
        wait = self.ctx.max_task_idle_ms != -1
        self.tasks[spec] = task
        self.groups[spec] = PolledRecords(spec.sources, wait)
        self.owner.update({tp: spec for tp in spec.sources})
        if starts:
            self.consumer.incremental_assign(starts)

    def drop_task(self, spec: TaskSpec) -> HostedTask:
        """Stop running ``spec``'s task (committed: see ``reassign.py``): its partitions are
        no longer read; the task, to release."""
        from confluent_kafka import TopicPartition

        task = self.tasks.pop(spec)
        self.groups.pop(spec)
        for tp in spec.sources:
            self.owner.pop(tp, None)
            self.at_end.pop(tp, None)
        if spec.sources:
            self.consumer.incremental_unassign([TopicPartition(*tp) for tp in spec.sources])
        return task

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
        self.fault.check()
        messages = _poll(self.consumer, wait_s)
        if not self.stop and not [m for m in messages if m.error() is not None]:
            self.hand_over(messages)  # the common poll: records only, not a batch run
        else:
            self.hand_over_checked(messages)

    def hand_over(self, messages: list[Any]) -> None:
        """Hand records (no errors, no stop offsets) to their tasks, a partition's run at once."""
        at_end = self.at_end
        for tp, run in groupby(raw_records(messages), _TOPIC_PARTITION):
            if at_end:
                at_end.pop(tp, None)
            self.groups[self.owner[tp]].add(list(run))

    def hand_over_checked(self, messages: list[Any]) -> None:
        """As :meth:`hand_over`, message by message: an end of partition is noted, a
        transient error reported, another error raised, and records at or past a batch
        run's stop offset are not handed over (the partition pauses there)."""
        from confluent_kafka import KafkaError

        at_end, stop = self.at_end, self.stop
        by_tp: dict[TP, list[Any]] = defaultdict(list)  # the messages, made records at once
        for m in messages:
            tp, error = (m.topic(), m.partition()), m.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                if transient(error):  # a broker restarting: the consumer reconnects itself
                    self.fault.seen(tp[0], error.str())
                    continue
                raise StreamsError(f"reading topic {tp[0]!r} partition {tp[1]} failed: "
                                   f"{error.str()}")
            if error is not None:
                at_end[tp] = min(m.offset(), stop.get(tp, m.offset()))
                continue
            if stop and tp in stop and m.offset() >= stop[tp]:
                self.reached_stop(tp)
                continue
            if at_end:
                at_end.pop(tp, None)
            by_tp[tp].append(m)
        for tp, messages in by_tp.items():
            self.groups[self.owner[tp]].add(raw_records(messages))

    def feed(self, spec: TaskSpec, task: HostedTask) -> None:
        """Process what ``task`` holds once its partition group is ready."""
        group = self.groups[spec]
        if group.ready(self.at_end):
            task.feed(group.take(self.at_end))
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


def _poll(consumer: Any, wait_s: float) -> list[Any]:
    """What has arrived, up to 2,000 records: waits up to ``wait_s`` for the first only
    (``consume(n, timeout)`` would wait the whole timeout unless ``n`` arrived)."""
    first = consumer.poll(wait_s)
    return [] if first is None else [first, *consumer.consume(1999, 0)]
