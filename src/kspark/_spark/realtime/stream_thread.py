"""The loop of one real-time stream thread (one long-running Spark task).

Thread ``i`` of ``n`` hosts tasks ``i, i + n, i + 2n, ...`` of the sub-topology, in every
epoch (a fixed, sticky assignment). It opens them (:class:`LiveTask`), assigns its consumer
their input partitions at the group's committed offsets, then runs Kafka Streams' loop: poll
→ process each task's records → punctuate on the wall clock → every ``commit.interval.ms``
commit every task; it commits a last time and ends when the epoch is over or the driver
asks the run to stop. Any failure aborts every task's interval (their transactions) and
fails the Spark task, naming the task.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kspark._engine.nodes import RawRecord
from kspark._kafka.clients import committed_offsets
from kspark._kafka.stream_thread_clients import StopWatch, thread_consumer
from kspark._spark.realtime.live_task import LiveTask
from kspark._spark.task_batch import StageContext
from kspark.errors import KSparkError, StreamsError

__all__ = ["Epoch", "run_stream_thread"]


@dataclass(frozen=True)
class Epoch:
    """What the driver gives every thread of one epoch (travels by value)."""

    run: str  # unique to the epoch: the batch stamp of its commits
    threads: int
    task_count: int  # tasks of the sub-topology: task p reads partition p of each topic
    topics: tuple[str, ...]  # the sub-topology's input topics
    resets: tuple[tuple[str, str], ...]  # per-topic offset reset (earliest by default)
    interval_ms: int  # commit.interval.ms
    length_ms: int  # real_time.epoch.ms
    control_begin: int  # where the threads watch the control topic from


def run_stream_thread(ctx: StageContext, index: int, epoch: Epoch) -> dict[str, Any]:
    """Run thread ``index`` for one epoch; its counts (records in and out, commits)."""
    tasks = {p: LiveTask(ctx, p, epoch.run)
             for p in range(index, epoch.task_count, epoch.threads)}
    watch = StopWatch(ctx.settings, ctx.app_id, epoch.control_begin, epoch.run)
    consumer = None
    try:
        for t in tasks.values():
            t.open()
        consumer = _assign(ctx, index, epoch, tasks)
        _loop(consumer, tasks, watch, epoch)
    except BaseException as e:
        raise _failed(tasks, e) from e
    finally:
        watch.close()
        if consumer is not None:
            consumer.close()
    for t in tasks.values():
        t.close()
    return {"thread": index, "records_in": sum(t.read for t in tasks.values()),
            "records_out": sum(t.sent for t in tasks.values()),
            "commits": sum(t.commits for t in tasks.values())}


def _assign(ctx: StageContext, index: int, epoch: Epoch, tasks: dict[int, LiveTask]) -> Any:
    """The thread's consumer, assigned its tasks' partitions at the group's committed
    offsets (after the tasks opened: under exactly-once their fencing ended any older
    attempt's transaction first), else each topic's reset policy."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

    counts = ctx.plan.partition_counts
    tps = [(t, p) for p in tasks for t in epoch.topics if p < counts[t]]
    committed = committed_offsets(ctx.settings, ctx.app_id, tps)
    resets = dict(epoch.resets)
    consumer = thread_consumer(ctx.settings, ctx.app_id, index)
    consumer.assign([TopicPartition(t, p, committed.get((t, p), OFFSET_END if resets.get(t) ==
                                                        "latest" else OFFSET_BEGINNING))
                     for t, p in tps])
    return consumer


def _loop(consumer: Any, tasks: dict[int, LiveTask], watch: StopWatch, epoch: Epoch) -> None:
    """Poll, process, punctuate; commit every interval; end at the epoch's end or a stop."""
    now = time.monotonic()
    end, next_commit = now + epoch.length_ms / 1000, now + epoch.interval_ms / 1000
    while True:
        wait = max(0.0, min(0.05, next_commit - time.monotonic()))
        by_task: dict[int, list[RawRecord]] = defaultdict(list)
        for m in _poll(consumer, wait):
            if m.error() is not None:
                raise StreamsError(f"reading topic {m.topic()!r} partition {m.partition()} "
                                   f"failed: {m.error().str()}")
            by_task[m.partition()].append(RawRecord(
                m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value(),
                tuple(m.headers() or ())))
        for p, records in by_task.items():
            tasks[p].feed(records)
        for t in tasks.values():
            t.punctuate()
        now = time.monotonic()
        stopping = now >= end or watch.stopped()
        if now >= next_commit or stopping:
            for t in tasks.values():
                t.commit()
            next_commit = now + epoch.interval_ms / 1000
        if stopping:
            return


def _poll(consumer: Any, wait_s: float) -> list[Any]:
    """What has arrived, up to 2,000 records: waits up to ``wait_s`` for the first only
    (``consume(n, timeout)`` would wait the whole timeout unless ``n`` arrived)."""
    first = consumer.poll(wait_s)
    return [] if first is None else [first, *consumer.consume(1999, 0)]


def _failed(tasks: dict[int, LiveTask], error: BaseException) -> BaseException:
    """Abort every task's interval; the error to raise, naming the task when it is not a
    kspark error already."""
    causes = [t.abort(error) for t in tasks.values()]
    cause = next((c for c in causes if c is not error), error)  # a fence explains the rest
    if isinstance(cause, KSparkError):
        return cause
    first = next(iter(tasks.values()), None)
    where = f"stream thread of task {first.task_id}" if first else "a stream thread"
    return StreamsError(f"{where} failed: {type(cause).__module__}."
                        f"{type(cause).__qualname__}: {cause}")
