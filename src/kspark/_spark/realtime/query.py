"""The driver side of real-time mode: each stream thread supervised on its own, stop, progress.

:class:`RealTimeQuery` runs, per stream thread, a supervisor (a driver thread) that runs the
thread's epochs one after another, each a Spark job of one long-running task
(``thread_jobs.py``). A thread's epoch that ends (its tasks committed) is followed at once
by its next; one lost with its executor or Python worker past Spark's own retries is
started again (up to :data:`MAX_LOST_EPOCHS` in a row); one that raised is started again
after a transient failure or when the uncaught exception handler replaces the thread, else
it fails the run. No thread's failure stops another (Kafka Streams' threads, KIP-429):
there is no barrier. :meth:`stop` asks every thread to commit and end through the control
topic, and cancels their jobs if they do not within a commit interval plus ``grace_s``. It is
the real-time mode's :class:`~kspark._host.supervision.RunHandle`; each thread's restarts are
its own :class:`~kspark._host.supervision.Restarts`."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import replace
from typing import Any

from kspark._kafka.clients import committed_offsets
from kspark._control.control_topic import control_end, send_assignment, send_stop
from kspark._control.messages import ThreadReport
from kspark._control.reports import ControlReader
from kspark._plan.plan import QueryPlan
from kspark._spark.connect import default_parallelism
from kspark._spark.realtime.batch_end import BatchEnd
from kspark._spark.realtime.failures import (
    MAX_LOST_EPOCHS, ThreadFailureError, first_line, lost_in_a_row, lost_worker)
from kspark._spark.restarting import run_failed
from kspark._plan.assignment import initial_assignment
from kspark._host.standby import standbys_for
from kspark._spark.realtime.checks import free_slots, real_time_members, threads_for
from kspark._spark.realtime.layout import task_specs
from kspark._spark.realtime.rebalance import AssignmentWatch, Assignor
from kspark._spark.realtime.epoch import Epoch
from kspark._spark.realtime.thread_jobs import ThreadJobs
from kspark._spark.realtime.thread_metrics import LiveTotals
from kspark._engine.metrics.view import MetricsView
from kspark._host.context import HostContext
from kspark._host.metrics import application_metrics, thread_id
from kspark._host.progress import progress_of
from kspark._host.supervision import FailureHandler, Restart, Restarts, RunHandle, announce
from kspark.errors import RunFailedError
from kspark._plan.plan import kafka_sources

__all__ = ["RealTimeQuery", "real_time_query"]

log = logging.getLogger("kspark")


def real_time_query(spark: Any, graph: Any, config: Any, plan: QueryPlan,
                    interval_ms: int, stop: dict[tuple[str, int], int] | None = None,
                    starts: tuple[tuple[tuple[str, int], int, int], ...] = (),
                    on_failure: FailureHandler | None = None) -> RealTimeQuery:
    """The real-time run of every sub-topology of ``plan`` (``stop``: a batch run's stop
    offsets, KIP-95; ``starts``: the source partitions' starts the driver resolved, see
    ``Epoch.starts``; ``on_failure``: the uncaught exception handler's say)."""

    members = real_time_members(plan, graph, config)
    specs = task_specs(plan, graph)
    threads = threads_for(config["num.stream.threads"], len(specs),
                          free_slots(default_parallelism(spark), graph.spark_sinks,
                                     config["autostop.at"] == "eol"))
    contexts = {m.sub_topology: HostContext(graph, config.as_dict(), m.stage_plan)
                for m in members}
    home = initial_assignment(len(specs), threads, standbys_for(config))
    epoch = Epoch("", threads, tuple(specs), tuple(sorted(kafka_sources(graph)[1].items())),
                  interval_ms, int(config["real_time.epoch.ms"]), 0,
                  int(config["repartition.purge.interval.ms"]),
                  tuple(sorted((stop or {}).items())), starts, active=home.active,
                  standby=home.standby)
    log.info("application %r: real-time mode, %d stream threads for %d tasks of %d "
             "sub-topologies, commit every %d ms, %d standby copies of each task",
             plan.application_id, threads, len(specs), len(members), interval_ms,
             len(home.standby[0]) // max(1, len(home.active[0])) if home.active[0] else 0)
    assignor = Assignor(home, [s.task_id for s in specs], int(config["max.warmup.replicas"]),
                        int(config["acceptable.recovery.lag"]), standbys_for(config))
    query = RealTimeQuery(spark, contexts, epoch, assignor=assignor,
                          probing_s=int(config["probing.rebalance.interval.ms"]) / 1000)
    query.on_failure = on_failure
    return query


class RealTimeQuery(RunHandle):
    """Stream threads running every sub-topology (``contexts``), each supervised on its own
    (see the module)."""

    def __init__(self, spark: Any, contexts: dict[int, HostContext], epoch: Epoch,
                 grace_s: float = 30.0, assignor: Assignor | None = None,
                 probing_s: float = 600.0):
        self.spark, self.contexts, self.grace_s = spark, contexts, grace_s
        self.assignor, self.probing_s = assignor, probing_s
        self.ctx = next(iter(contexts.values()))  # the settings and id all share
        self.task_timeout_ms = self.ctx.settings.task_timeout_ms
        self._position = 0  # the group's committed position, as progress() last read it
        self.key = f"rt-{uuid.uuid4().hex[:12]}"  # the run's stop key and Spark job tag
        self._template = replace(epoch, query=self.key)
        self._current: dict[int, Epoch] = {}  # each thread's running epoch
        self._finished = [0] * epoch.threads  # each thread's finished epochs
        self._stopping = False
        self._error: RunFailedError | None = None
        # asked when a thread fails for good: True starts it again (the uncaught exception
        # handler's REPLACE_THREAD, see KafkaStreams.set_uncaught_exception_handler)
        self.on_failure: FailureHandler | None = None
        self._restarts: dict[int, Restarts] = {}  # per thread, each bounded on its own
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.jobs = ThreadJobs(spark, contexts, self.key, self.ctx.app_id, self.ctx.state_dir)
        self.batch_end: BatchEnd | None = None  # a batch run's end (autostop.at=eol)
        if epoch.stop:
            drained = sorted({tp for t in epoch.tasks for tp in t.sources if tp[0] in t.purged})
            self.batch_end = BatchEnd(self.ctx.settings, self.ctx.config, self.ctx.app_id,
                                      dict(epoch.stop), drained)
        self.live = LiveTotals()
        self._view = MetricsView()
        self._reader: ControlReader | None = None
        self._metrics_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="kspark-real-time", daemon=True)

    @property
    def epochs(self) -> int:
        """Epochs every thread has finished."""
        return min(self._finished, default=0)

    def start(self) -> RealTimeQuery:
        ctx = self.ctx
        self._reader = ControlReader(ctx.settings, ctx.app_id,
                                     control_end(ctx.settings, ctx.app_id))
        self._thread.start()
        if self.batch_end is not None:
            threading.Thread(target=self._watch_end, name="kspark-batch-end",
                             daemon=True).start()
        return self

    def _watch_end(self) -> None:
        """A batch run: stop the threads once it is over (see ``batch_end.py``)."""
        assert self.batch_end is not None
        while not self._done.wait(0.5):
            try:
                over = self.batch_end.reached()
            except Exception as e:  # noqa: BLE001 - looked at again in half a second
                log.warning("checking whether the batch run is over failed: %s", e)
                continue
            if over:
                with self._lock:
                    self._stopping = True
                send_stop(self.ctx.settings, self.ctx.app_id, self.key)
                return

    def _read_reports(self) -> None:
        """Take in the threads' latest metrics (the caller holds ``_metrics_lock``)."""
        if self._reader is not None:
            for message in self._reader.read():
                if isinstance(message, ThreadReport):
                    self.live.add_report(message)

    def is_active(self) -> bool:
        return not self._done.is_set()

    def exception(self) -> RunFailedError | None:
        return self._error

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait for the run to end; raises its failure (a thread's, as a RunFailedError)."""
        done = self._done.wait(timeout)
        if done and self._error is not None:
            raise self._error
        return done

    def stop(self) -> None:
        """Ask the threads to commit and end; cancel their jobs if they do not in time."""
        with self._lock:
            self._stopping = True
        send_stop(self.ctx.settings, self.ctx.app_id, self.key)
        self._end_threads()
        with self._metrics_lock:
            if self._reader is not None:
                self._read_reports()
                self._reader.close()
                self._reader = None

    def _end_threads(self) -> None:
        """Wait a commit interval plus ``grace_s`` for the threads asked to stop to end,
        then cancel their Spark jobs."""
        if not self._done.wait(self._template.interval_ms / 1000 + self.grace_s):
            log.warning("real-time threads did not stop within %.0f s: cancelling them",
                        self.grace_s)
            self.jobs.cancel()
            self._done.wait(self.grace_s)

    def progress(self, topics: list[str]) -> dict[str, int]:
        """Epochs run, the group's committed position over ``topics`` (live: it moves with
        every commit) and the counts of the finished epochs."""
        tps = [tp for s in self._template.tasks for tp in s.sources if tp[0] in topics]
        try:  # a second at most: progress() answers while a broker restarts
            self._position = sum(committed_offsets(self.ctx.settings, self.ctx.app_id, tps,
                                                   timeout_s=1.0, stable=False,
                                                   patience_s=1.0).values())
        except Exception as e:  # noqa: BLE001 - the last known position is shown
            log.info("progress(): the committed position is not known now (%s)", e)
        position = self._position
        with self._metrics_lock:
            self._read_reports()
            live = self.live.progress()
            return progress_of(self.epochs, position, live["lag"], live)

    def metrics(self) -> Any:
        """``KafkaStreams.metrics()``: the finished epochs' counts and the running epochs'
        threads' latest reports (see ``thread_metrics.py``)."""
        app = self.ctx.app_id
        with self._metrics_lock:
            self._read_reports()
            live = self.live
            stats = live.streams_stats()
            threads = {thread_id(app, i): v for i, v in live.thread_values().items()}
            return application_metrics(
                self._view, stats, lambda task: thread_id(app, live.thread_of_task.get(task, 0)),
                live.lag(), app, live.async_summary(), threads)

    def ready(self) -> bool:
        """Whether every stream thread reported from its running epoch (its tasks are open
        and restored)."""
        with self._metrics_lock:
            self._read_reports()
            with self._lock:
                current = dict(self._current)
            if self._done.is_set() or len(current) < self._template.threads:
                return False
            return all((e.run, i) in self.live.live for i, e in current.items())

    def _run(self) -> None:
        """Start a supervisor per thread; end when all have ended (a stop, a batch run's
        end, or a thread's failure, which stops the others)."""
        t = self._template
        try:
            self.jobs.prepare([[s.task_id for s in t.mine(i)] for i in range(t.threads)])
            supervisors = [threading.Thread(target=self._supervise, args=(i,), daemon=True,
                                            name=f"kspark-stream-thread-{i}")
                           for i in range(t.threads)]
            for s in supervisors:
                s.start()
            self._watch()
            for s in supervisors:
                s.join()
        except BaseException as e:  # noqa: BLE001 - kept for await_termination and stop
            if not self._stopping:
                self._error = run_failed(e)
        finally:
            self._done.set()

    def _watch(self) -> None:
        """With standby copies (and a classic session placing threads): watch for lost
        threads and warm-ups that caught up (``rebalance.py``)."""
        if self.assignor is None or not any(self._template.standby) or not self.jobs.placing:
            return
        AssignmentWatch(self.assignor, self.jobs.where, self.jobs.alive, self._thread_reports,
                        self._publish, self._done, self.probing_s, tags=self.jobs.tags).start()

    def _thread_reports(self) -> tuple[dict[tuple[int, str], int], set[str]]:
        """As the threads last reported from their running epochs: per (thread, task id)
        the lag of the thread's copy of the task, and the tasks running."""
        with self._metrics_lock:
            self._read_reports()
            with self._lock:
                runs = {e.run: i for i, e in self._current.items()}
            live = [(runs[run], r) for (run, _), r in self.live.live.items() if run in runs]
            return ({(i, task): int(n) for i, r in live for task, n in
                     r.standby.items()},
                    {task for _, r in live for task in r.active})

    def _lost(self, index: int) -> None:
        """Thread ``index`` was lost with its executor or Python worker: with standby
        copies, its tasks move to their keepers (once: the watch may have moved them)."""
        if self.assignor is not None and any(self._template.standby) and \
                self.assignor.lost(index):
            self._publish()

    def _publish(self) -> None:
        """Send the assignor's current assignment to the running threads."""
        assert self.assignor is not None
        version, a = self.assignor.assignment()
        send_assignment(self.ctx.settings, self.ctx.app_id, self.key, version, a.active,
                        a.standby)

    def _supervise(self, index: int) -> None:
        """Thread ``index``'s epochs, one after another, until the run stops or fails."""
        lost = 0  # epochs in a row lost with an executor or a Python worker
        while True:
            with self._lock:
                if self._stopping:
                    return
                epoch = self._current[index] = self._next_epoch(index)
            began = time.monotonic()
            try:
                row = self.jobs.run(epoch, index)
            except Exception as e:  # noqa: BLE001 - the Spark job's failure, decided on here
                if self._stopping:
                    return
                lost = lost_in_a_row(lost, time.monotonic() - began)
                if lost_worker(e) and lost < MAX_LOST_EPOCHS:
                    lost += 1
                    self._lost(index)
                    self._epoch_lost(index, epoch, first_line(e), f"lost with its executor or "
                                     f"Python worker, {lost} of {MAX_LOST_EPOCHS} in a row")
                    continue
                failure: BaseException = e
            else:
                if row.get("retried"):  # Spark ran the task again: the driver does, placed
                    lost = lost_in_a_row(lost, time.monotonic() - began) + 1
                    self._lost(index)
                    if lost <= MAX_LOST_EPOCHS:
                        self._epoch_lost(index, epoch, "Spark ran its task again", "lost with "
                                         "its executor or Python worker, "
                                         f"{lost} of {MAX_LOST_EPOCHS} in a row")
                        continue
                    row = {"error": f"stream thread {index} was lost {lost} times in a row "
                                    "(its executor or Python worker)"}
                if "error" not in row:
                    lost = 0
                    with self._metrics_lock:
                        self._read_reports()
                        self.live.end_epoch(epoch.run, [row])
                    self._finished[index] += 1
                    continue
                failure = ThreadFailureError(row["error"], row.get("traceback", ""))
            if self._stopping:
                return
            restart = self._again(index, epoch, failure)
            if restart is None:
                self._fail(failure)
                return
            self._back_off(restart.delay_s)

    def _again(self, index: int, epoch: Epoch, failure: BaseException) -> Restart | None:
        """Whether thread ``index`` starts again after ``failure``, as its own
        :class:`~kspark._host.supervision.Restarts` decides (None: the run fails)."""
        error = run_failed(failure)
        with self._lock:
            restarts = self._restarts.setdefault(index, Restarts(
                self.task_timeout_ms, self.ctx.settings.retry_backoff_ms, self.on_failure))
            restart = restarts.decide(str(error), error)
        if restart is not None:
            self._epoch_lost(index, epoch, restart.cause, restart.reason())
        return restart

    def _back_off(self, delay_s: float) -> None:
        """Pause ``delay_s`` before a thread starts again, unless the run stops meanwhile."""
        deadline = time.monotonic() + delay_s
        while not self._stopping and time.monotonic() < deadline:
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    def _fail(self, failure: BaseException) -> None:
        """A thread failed for good: the run fails with it at once, and every other
        thread's job is cancelled (as the barrier epoch's failure did; under exactly-once
        their open transactions are aborted, by the next attempt's fencing or the
        transaction timeout). No graceful stop: it would need the cluster, which may be
        the very thing that failed (a broker away longer than task.timeout.ms)."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            self._error = run_failed(failure)
        log.error("application %r: a stream thread failed; cancelling the other threads",
                  self.ctx.app_id)
        self.jobs.cancel()

    def _epoch_lost(self, index: int, epoch: Epoch, cause: str, why: str) -> None:
        """Thread ``index``'s epoch is started again from its tasks' last commits (the new
        attempt fences the old)."""
        with self._metrics_lock:  # its counts since its last report went with it
            self.live.end_epoch(epoch.run, [])
        announce(self.ctx.app_id, f"real-time stream thread {index}'s epoch", cause, why,
                 "starting a new epoch of it")

    def _next_epoch(self, index: int) -> Epoch:
        t, n = self._template, self._finished[index]
        # the threads' epochs end at staggered times, so that an epoch's end finds its
        # Python worker the only idle one (it takes its thread's open tasks back); 0: no end
        length = max(1, t.length_ms if n else t.length_ms * (index + 1) // t.threads) \
            if t.length_ms else 0
        # where the thread watches the control topic from, then the assignment (so that a
        # newer one sent meanwhile is one the thread sees)
        begin = control_end(self.ctx.settings, self.ctx.app_id)
        if self.assignor is not None:
            version, a = self.assignor.assignment()
            t = replace(t, active=a.active, standby=a.standby, version=version)
        return replace(t, run=f"{self.key}-{index}-{n}-{uuid.uuid4().hex[:6]}",
                       length_ms=length, control_begin=begin)
