"""The driver side of real-time mode: epochs of long-running Spark tasks, stop, progress.

:class:`RealTimeQuery` runs, in a background thread, one Spark job per epoch: ``threads``
Spark tasks, each :func:`~kspark._spark.realtime.stream_thread.run_stream_thread`. When an
epoch ends (every thread committed), the next one starts at once. :meth:`stop` asks the
running epoch's threads to commit and end through the control topic, and cancels the job
if they do not within a commit interval plus ``grace_s``. It offers what
``SparkApplication`` uses of a streaming query: ``isActive``, ``awaitTermination``,
``stop`` and ``exception``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kspark._kafka.clients import committed_offsets
from kspark._kafka.stream_thread_clients import MetricsReader, control_end, send_stop
from kspark._plan.plan import QueryPlan
from kspark._spark.connect import default_parallelism, is_connect
from kspark._spark.realtime.batch_end import BatchEnd
from kspark._spark.realtime.checks import free_slots, real_time_members, threads_for
from kspark._spark.realtime.layout import task_specs
from kspark._spark.realtime.stream_thread import Epoch, run_stream_thread
from kspark._spark.realtime.thread_metrics import LiveTotals
from kspark._engine.metrics.view import MetricsView
from kspark._host.context import HostContext
from kspark._host.metrics import application_metrics, thread_id
from kspark._host.rules import restart_after
from kspark._host.progress import progress_of

__all__ = ["RealTimeQuery", "RealTimeRunError", "real_time_query"]


def _tag(run: str) -> str:
    """The Spark job tag of an epoch (run ``run``) on Spark Connect."""
    return f"kspark-{run}"


def _connect_epoch(spark: Any, contexts: dict[int, HostContext], epoch: Epoch) -> list[Any]:
    """An epoch on Spark Connect (no RDDs there): a barrier ``mapInArrow`` over one row per
    thread, tagged so that stop() can cancel it. (A classic session runs the RDD barrier
    job: measured, its Python workers keep their threads' tasks from one epoch to the next,
    which this path's did not in a test of in-memory stores.)"""

    def threads(batches: Any) -> Any:
        import pyarrow as pa

        for b in batches:
            for slot in b.column(0).to_pylist():
                row = run_stream_thread(contexts, slot, epoch)
                yield pa.RecordBatch.from_pylist([{"row": json.dumps(row)}])

    spark.addTag(_tag(epoch.run))
    try:
        return [json.loads(r.row) for r in spark.range(0, epoch.threads, 1, epoch.threads)
                .mapInArrow(threads, "row string", barrier=True).collect()]
    finally:
        spark.removeTag(_tag(epoch.run))

log = logging.getLogger("kspark")


# How many epochs in a row may lose an executor or a Python worker before the run fails (as
# Spark's spark.stage.maxConsecutiveAttempts)
MAX_LOST_EPOCHS = 4
_LOST = ("ExecutorLostFailure", "Python worker exited unexpectedly", "Executor heartbeat timed out")


def lost_worker(error: BaseException) -> bool:
    """Whether an epoch's Spark job failed because an executor or a Python worker was lost
    (a new epoch is then the retry), not because a thread raised (kspark's or the topology's
    error: the run fails with it).

    >>> lost_worker(RuntimeError("Job aborted ... ExecutorLostFailure (executor 1 exited ...)"))
    True
    >>> lost_worker(RuntimeError("... ExecutorLostFailure ... PythonException: Traceback ..."))
    False
    """
    text = str(error)
    return "PythonException" not in text and any(s in text for s in _LOST)


def _first_line(error: BaseException) -> str:
    lines = [x for x in str(error).splitlines() if x.strip()]
    cause = next((x for x in lines if any(s in x for s in _LOST)), lines[0] if lines else "")
    return cause.strip()[:300]


class RealTimeRunError(Exception):
    """The run's failure, as :meth:`RealTimeQuery.awaitTermination` raises it; ``desc`` holds
    the whole text of the cause (with the Python worker's traceback)."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.desc = str(cause)
        self.cause = cause


def real_time_query(spark: Any, graph: Any, config: Any, plan: QueryPlan,
                    interval_ms: int, stop: dict[tuple[str, int], int] | None = None,
                    starts: tuple[tuple[tuple[str, int], int, int], ...] = ()
                    ) -> RealTimeQuery:
    """The real-time run of every sub-topology of ``plan`` (``stop``: a batch run's stop
    offsets, KIP-95; ``starts``: the source partitions' starts the driver resolved, see
    ``Epoch.starts``)."""
    from kspark._plan.plan import kafka_sources

    members = real_time_members(plan, graph, config)
    specs = task_specs(plan, graph)
    threads = threads_for(config["num.stream.threads"], len(specs),
                          free_slots(default_parallelism(spark), graph.spark_sinks,
                                     config["autostop.at"] == "eol"))
    contexts = {m.sub_topology: HostContext(graph, config.as_dict(), m.stage_plan)
                for m in members}
    epoch = Epoch("", threads, tuple(specs), tuple(sorted(kafka_sources(graph)[1].items())),
                  interval_ms, int(config["real_time.epoch.ms"]), 0,
                  int(config["repartition.purge.interval.ms"]),
                  tuple(sorted((stop or {}).items())), starts)
    log.info("application %r: real-time mode, %d stream threads for %d tasks of %d "
             "sub-topologies, commit every %d ms", plan.application_id, threads, len(specs),
             len(members), interval_ms)
    return RealTimeQuery(spark, contexts, epoch)


class RealTimeQuery:
    """Epoch after epoch of stream threads running every sub-topology (``contexts``)."""

    def __init__(self, spark: Any, contexts: dict[int, HostContext], epoch: Epoch,
                 grace_s: float = 30.0):
        self.spark, self.contexts, self.grace_s = spark, contexts, grace_s
        self.ctx = next(iter(contexts.values()))  # the settings and id all share
        self.task_timeout_ms = self.ctx.settings.task_timeout_ms
        self._position = 0  # the group's committed position, as progress() last read it
        self._template = epoch
        self._epoch: Epoch | None = None
        self._stopping = False
        self._error: BaseException | None = None
        # asked when an epoch fails for good: True runs a new epoch (the uncaught exception
        # handler's REPLACE_THREAD, see KafkaStreams.set_uncaught_exception_handler)
        self.on_failure: Callable[[BaseException, list[float]], bool] | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.epochs = 0
        self.batch_end: BatchEnd | None = None  # a batch run's end (autostop.at=eol)
        if epoch.stop:
            drained = sorted({tp for t in epoch.tasks for tp in t.sources if tp[0] in t.purged})
            self.batch_end = BatchEnd(self.ctx.settings, self.ctx.config, self.ctx.app_id,
                                      dict(epoch.stop), drained)
        self.live = LiveTotals()
        self._view = MetricsView()
        self._reader: MetricsReader | None = None
        self._metrics_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="kspark-real-time", daemon=True)

    def start(self) -> RealTimeQuery:
        ctx = self.ctx
        self._reader = MetricsReader(ctx.settings, ctx.app_id,
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
                    epoch = self._epoch
                if epoch is not None:
                    send_stop(self.ctx.settings, self.ctx.app_id, epoch.run)
                return

    def _read_reports(self) -> None:
        """Take in the threads' latest metrics (the caller holds ``_metrics_lock``)."""
        if self._reader is not None:
            for run, report in self._reader.read():
                self.live.add_report(run, report)

    @property
    def isActive(self) -> bool:  # noqa: N802 - a streaming query's name
        return not self._done.is_set()

    def exception(self) -> BaseException | None:
        return self._error

    def awaitTermination(self, timeout: float | None = None) -> bool:  # noqa: N802
        """Wait for the run to end; raises its failure (the Spark job's error)."""
        done = self._done.wait(timeout)
        if done and self._error is not None:
            raise RealTimeRunError(self._error)
        return done

    def stop(self) -> None:
        """Ask the threads to commit and end; cancel the epoch if they do not in time."""
        with self._lock:
            self._stopping = True
            epoch = self._epoch
        if epoch is not None:
            send_stop(self.ctx.settings, self.ctx.app_id, epoch.run)
        if not self._done.wait(epoch.interval_ms / 1000 + self.grace_s if epoch else 5):
            log.warning("real-time threads did not stop within %.0f s: cancelling the epoch",
                        self.grace_s)
            if is_connect(self.spark):
                self.spark.interruptTag(_tag(epoch.run if epoch else ""))
            else:
                self.spark.sparkContext.cancelJobGroup(epoch.run if epoch else "")
            self._done.wait(self.grace_s)
        with self._metrics_lock:
            if self._reader is not None:
                self._read_reports()
                self._reader.close()
                self._reader = None

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
        """``KafkaStreams.metrics()``: the finished epochs' counts and the running epoch's
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

    def _run(self) -> None:
        failed = 0  # epochs in a row that lost an executor or a Python worker
        restarts: list[float] = []  # epochs started again after a transient Kafka failure
        try:
            while True:
                with self._lock:
                    if self._stopping:
                        return
                    self._epoch = self._next_epoch()
                try:
                    self._run_epoch(self._epoch)
                    failed = 0
                except Exception as e:
                    if not self._stopping and restart_after(
                            str(e), restarts, time.monotonic(), self.task_timeout_ms):
                        restarts.append(time.monotonic())
                        self._epoch_lost(e, "a task ended on a transient failure",
                                         len(restarts))
                        continue
                    if self._stopping or not lost_worker(e) or failed >= MAX_LOST_EPOCHS:
                        if not self._stopping and self._replaced(e, restarts):
                            continue
                        raise
                    failed += 1
                    with self._metrics_lock:  # its threads' counts went with them
                        self.live.end_epoch(self._epoch.run, [])
                    # Spark cannot retry a barrier job: a new epoch is the retry (its threads
                    # resume from the committed offsets; fencing ends the lost attempt's
                    # transactions)
                    log.warning("real-time epoch %d lost a Spark executor or Python worker "
                                "(%s); starting a new epoch (%d of %d in a row)", self.epochs,
                                _first_line(e), failed, MAX_LOST_EPOCHS)
        except BaseException as e:  # noqa: BLE001 - kept for awaitTermination and stop
            if not self._stopping:
                self._error = e
        finally:
            self._done.set()

    def _replaced(self, error: BaseException, restarts: list[float]) -> bool:
        """The uncaught exception handler answered REPLACE_THREAD: a new epoch."""
        if self.on_failure is None or not self.on_failure(RealTimeRunError(error), restarts):
            return False
        restarts.append(time.monotonic())
        self._epoch_lost(error, "the uncaught exception handler replaced it", len(restarts))
        return True

    def ready(self) -> bool:
        """Whether every stream thread of the running epoch reported (its tasks are open
        and restored); False between epochs."""
        with self._metrics_lock:
            self._read_reports()
            epoch = self._epoch
            if epoch is None or self._done.is_set():
                return False
            return sum(1 for run, _ in self.live.live if run == epoch.run) >= epoch.threads

    def _epoch_lost(self, error: BaseException, why: str, count: int) -> None:
        """A new epoch retries the lost one from the last commits (fencing the old)."""
        with self._metrics_lock:  # its threads' counts went with them
            self.live.end_epoch(self._epoch.run if self._epoch else "", [])
        log.warning("real-time epoch %d ended: %s (%s); starting a new epoch from the last "
                    "commits (restart %d)", self.epochs, why, _first_line(error), count)

    def _next_epoch(self) -> Epoch:
        t = self._template
        return replace(t, run=f"rt-{uuid.uuid4().hex[:12]}-{self.epochs}",
                       control_begin=control_end(self.ctx.settings, self.ctx.app_id))

    def _run_epoch(self, epoch: Epoch) -> None:
        contexts = self.contexts
        # a barrier stage: every thread starts at once (or none does), and the threads can
        # agree on who is who (see thread_identity)
        if not is_connect(self.spark):
            sc = self.spark.sparkContext
            sc.setJobGroup(epoch.run, f"kspark {self.ctx.app_id}: real-time epoch "
                           f"{self.epochs}", interruptOnCancel=True)
            rows = (sc.parallelize(range(epoch.threads), epoch.threads).barrier()
                    .mapPartitions(lambda slots: [run_stream_thread(contexts, s, epoch)
                                                  for s in slots]).collect())
        else:
            rows = _connect_epoch(self.spark, contexts, epoch)
        with self._metrics_lock:
            self._read_reports()
            self.live.end_epoch(epoch.run, rows)
        self.epochs += 1
