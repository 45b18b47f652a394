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
worker. What the thread reaches the cluster and its worker through (its tasks' manager, its
stop watch, metrics sender and consumer) is a :class:`ThreadClients`: a test hands it fakes
and runs a thread with no broker and no Spark."""

from __future__ import annotations

import logging
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kspark._host.context import HostContext
from kspark._host.task import HostedTask
from kspark._host.task_manager import TaskManager, task_manager
from kspark._control.control_topic import StopWatch
from kspark._control.reports import ReportSender
from kspark._spark.realtime.epoch import Epoch
from kspark._spark.realtime.global_feed import GlobalFeed
from kspark._spark.realtime.layout import TaskSpec
from kspark._spark.realtime.reassign import Reassigner, standby_updater
from kspark._spark.realtime.thread_loop import (ThreadLoop, assign_consumer, open_live_task,
                                                open_live_tasks)
from kspark._spark.realtime.thread_metrics import ThreadReporter
from kspark.errors import KSparkError, StreamsError

__all__ = ["Epoch", "run_stream_thread", "thread_job", "open_live_task", "ThreadClients"]

log = logging.getLogger("kspark")


def _stop_watch(ctx: HostContext, epoch: Epoch) -> StopWatch:
    return StopWatch(ctx.settings, ctx.app_id, epoch.control_begin, epoch.run, epoch.query)


def _metrics_sender(ctx: HostContext, epoch: Epoch) -> ReportSender:
    return ReportSender(ctx.settings, ctx.app_id, wait=False)  # the loop does not wait


@dataclass(frozen=True)
class ThreadClients:
    """What a stream thread reaches its worker and the cluster through: ``tasks``, the
    worker's task manager (None: this process's); ``watch`` and ``sender``, its view of the
    control topic (a ``StopWatch``) and its metrics' sender (a ``ReportSender``), for a
    context and the epoch; ``consumer``: its consumer, assigned its tasks' partitions
    (``assign_consumer``)."""

    tasks: TaskManager | None = None
    watch: Callable[[HostContext, Epoch], Any] = _stop_watch
    sender: Callable[[HostContext, Epoch], Any] = _metrics_sender
    consumer: Callable[[HostContext, int, Epoch, tuple[TaskSpec, ...]], Any] = assign_consumer


def thread_job(contexts: dict[int, HostContext], index: int, epoch: Epoch
               ) -> dict[str, Any]:
    """One Spark task of thread ``index``'s job: its counts, or (``error``) what failed it
    (``Type: message``, the raised error alone: the driver decides by it; ``traceback``: the
    whole of it, for the log), for the driver to decide on (fail the run, or replace the thread: the
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
        return {"thread": index, "error": f"{type(e).__module__}.{type(e).__qualname__}: {e}",
                "traceback": "".join(traceback.format_exception(e))}


def run_stream_thread(contexts: dict[int, HostContext], index: int, epoch: Epoch,
                      clients: ThreadClients = ThreadClients()) -> dict[str, Any]:
    """Run thread ``index`` for one epoch (``contexts``: per sub-topology); its counts
    (records in and out, commits)."""
    ctx = next(iter(contexts.values()))
    manager = clients.tasks if clients.tasks is not None else task_manager()
    specs = epoch.mine(index)
    # Each attempt of the thread stamps its commits and changelog records with a run of its
    # own: a retried attempt of the same epoch (Spark retries a task lost with its executor)
    # must not take the committed records of the attempt before for its own (a restore
    # skips the records stamped by its own run: see recovery.stamped_by_this_batch_or_later)
    attempt_run = f"{epoch.run}.{uuid.uuid4().hex[:8]}"
    tasks: dict[TaskSpec, HostedTask] = {}
    watch = clients.watch(ctx, epoch)
    sender = clients.sender(ctx, epoch)
    consumer = None
    globals_ = GlobalFeed(ctx, epoch.interval_ms / 1000) if ctx.graph.global_stores else None
    reporter = ThreadReporter(index, epoch, sender, attempt_run)
    reassign = None
    try:
        stores = None if globals_ is None else globals_.refresh().read_only()
        # each takes its copy here if fresher (HostedTask.acquire)
        open_live_tasks(contexts, specs, attempt_run, stores, tasks, manager)
        standbys = standby_updater(contexts, list(epoch.copies(index)), epoch)
        reporter.watch_standbys(standbys)
        reassign = Reassigner(contexts, index, epoch, attempt_run, stores, standbys)
        consumer = clients.consumer(ctx, index, epoch, specs)
        ThreadLoop(consumer, tasks, watch, epoch, ctx, reporter, globals_, reassign).run()
    except BaseException as e:
        raise _failed(list(tasks.values()), e) from e
    finally:
        if reassign is not None:
            reassign.close()
            reassign.standbys.close()
        watch.close()
        sender.close()
        if consumer is not None:
            consumer.close()
    for t in tasks.values():
        reporter.add(t.release())
    return {"thread": index, **reporter.counts(),
            "tasks_kept": sum(t.kept for t in tasks.values()), "async": reporter.async_raw}


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
