"""The micro-batch mode's ``foreachBatch``: place every task, then run the topology's batch.

The streaming query reads only the Kafka sources' task markers (``planner.build``); for
each micro-batch :class:`MicroBatchHost` builds the stages over them
(``planner.batch_frames``), places each stage's partitions with the placement shim
(``located.py``) as :func:`~kspark._plan.placement.place` decides, and runs the batch. So
a task runs on the executor holding its state, batch after batch; it moves only when that
executor is lost (to a replacement, if one starts within ``placement.replacement.wait.ms``)
or executors are added.

What the placement knows comes from the batches themselves: where each task last committed
(the task reports of the control topic, ``ReportedTotals``) and, when the set of executors
changes, a probe job on each executor telling where its ``state.dir`` is and which tasks'
state it holds.

An executor may also be lost while a batch runs (or between its placement and its job).
Spark then keeps the tasks placed there waiting for it (``spark.locality.wait.process``,
30 s), and every other task with them, since the next batch starts only when this one
ends. So while a placed batch runs, :class:`_LossWatch` looks at the executors; once
nothing of the batch runs any more and the replacements are there (or
``placement.replacement.wait.ms`` is over), it cancels the batch's job
(``placement.re_place_now``), and the batch runs again, placed anew, only its tasks that had
not finished (``placement.tasks_to_rerun``): the lost executor's, on its replacement. The
other tasks finished on their executors and stay there. This is done for topologies
without an exchange (each task's partition stands alone); with one, the lost tasks wait for
Spark's locality wait, as before.

Every batch's stages are told which batch they run (the streaming query's id, from its
checkpoint, and the batch id): a task recognises a batch it already committed by it.

On Spark Connect the host runs in a Python process of the Connect server (Spark pickles
it there) and places nothing: the placement shim is a JVM class, which a Connect client
cannot load (said once in the log; tasks then run where Spark puts them and restore their
state when they move).

Example (needs Spark, so not run)::

    host = MicroBatchHost(spark, built, config, totals)
    built.df.writeStream.foreachBatch(host).start()
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col

from kspark._host.metrics import ReportedTotals
from kspark._host.standby import standbys_for
from kspark._plan.placement import place, re_place_now, tasks_to_rerun
from kspark._plan.plan import Stage
from kspark._spark.checkpoint import SparkCheckpoint
from kspark._spark.connect import degraded, is_connect
from kspark._spark.located import Rows, live_executors, load, located, tagged_tasks
from kspark._spark.probe import probe_state
from kspark._spark.planner import SOURCE_TAG, BuiltQuery, batch_frames, source_tasks
from kspark._spark.standby_rounds import StandbyRounds
from kspark.config import checkpoint_location
from kspark.errors import StreamsError

__all__ = ["MicroBatchHost"]

log = logging.getLogger("kspark")


class MicroBatchHost:
    """The ``foreachBatch`` function of a micro-batch query (see the module)."""

    def __init__(self, spark: SparkSession, built: BuiltQuery, config: Any,
                 totals: ReportedTotals | None = None):
        self.spark: SparkSession | None = spark
        self.plan, self.functions = built.plan, built.functions
        self.app_id, self.state_dir = config["application.id"], config["state.dir"]
        self.checkpoint = checkpoint_location(config)
        self.replacement_wait_s = int(config["placement.replacement.wait.ms"]) / 1000
        self.totals = totals
        self.query_id: str | None = None
        if is_connect(spark):
            degraded("tasks are not placed on the executor holding their state",
                     "the placement shim is a JVM class a Connect client cannot load; a task "
                     "that moves restores its state from its changelog")
            self.placing = False
        else:
            self.placing = load(spark)
        self.groups = [[_task_id(stage, p) for p in range(stage.partitions)]
                       for stage in built.plan.stages]
        self.executors: dict[str, str] = {}  # executor id -> location string
        self.disks: dict[str, str] = {}  # executor id -> state location there
        self.held: dict[str, dict[str, int]] = {}  # executor id -> {task id: state held}
        self.assigned: dict[str, str] = {}  # task id -> executor id
        self.where: dict[str, str] = {}  # task id -> state location of its last commit
        self.placements = 0  # placements so far
        self.arrived: dict[str, int] = {}  # task id -> the placement that put it there
        self.sources = source_tasks(built.plan)  # sub-topology -> its tasks, in union order
        # a batch's tasks stand alone (no exchange: every stage reads Kafka and is terminal),
        # so a lost executor's tasks can run again without the others (see _LossWatch)
        self.rerunnable = all(s.exchange is None and s.terminal for s in built.plan.stages)
        # num.standby.replicas: warm copies kept by rounds of updates beside the batches
        self.rounds = _rounds(spark, built, config) if self.placing else None
        self.only: set[str] | None = None  # the tasks the job being built runs (None: all)
        self.ran: list[str] = []  # the tasks of the job being built, in its partition order

    def __getstate__(self) -> dict[str, Any]:
        """What a Connect server's Python process gets (no session, no Kafka clients)."""
        return {**self.__dict__, "spark": None, "totals": None, "placing": False,
                "rounds": None}

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        # the batch's own session: the query's, whose settings (no adaptive execution) the
        # stages keep, as they did inside the streaming query
        spark = batch.sparkSession
        if self.query_id is None:
            self.query_id = SparkCheckpoint(spark, self.checkpoint).query_id()
            if self.query_id is None:
                raise StreamsError(f"application {self.app_id!r}: micro-batch {batch_id} runs "
                                   f"but the query's checkpoint at {self.checkpoint} has no "
                                   "metadata (its id): was the checkpoint deleted while it ran?")
        if self.placing:
            self._place()
        if len(self.sources) == 1:  # the batch is the one source's markers

            def markers(sub_topology: int) -> DataFrame:
                return batch.drop(SOURCE_TAG)
        elif self.placing:
            rows = Rows.of(batch)  # planned once: each source's markers are a slice of it
            slices = self._slices(rows, batch_id)

            def markers(sub_topology: int) -> DataFrame:
                return located(spark, rows, None, slices[sub_topology]).drop(SOURCE_TAG)
        else:  # no shim: each source's rows by their tag (the others' partitions run empty)

            def markers(sub_topology: int) -> DataFrame:
                return batch.where(col(SOURCE_TAG) == sub_topology).drop(SOURCE_TAG)

        stamp = (self.query_id, batch_id)
        self._run(lambda: batch_frames(self.plan, self.functions, markers, self._located, stamp),
                  batch_id)
        if self.rounds is not None:  # the copies catch up beside the next batches
            self.rounds.start(self.rounds.keep(self.assigned, self.executors), self.executors,
                              self.disks)

    def standby_stats(self) -> dict[str, list]:
        """Kafka Streams' ``update-total``/``-rate`` counts of the standby copies (metric
        stat keys, ``_engine/metrics/stats.py``); none without standbys."""
        return {} if self.rounds is None else self.rounds.stats()

    def _run(self, frames: Callable[[], DataFrame], batch_id: int) -> None:
        """Run the batch (``frames``: its DataFrame, built with this batch's placement); if
        :class:`_LossWatch` stopped it, place it again and run the tasks it names."""
        self.only = None
        while True:
            self.ran = []
            df = frames()
            watch = self._watch(batch_id)
            try:
                df.write.format("noop").mode("overwrite").save()
                return
            except Exception:
                if watch is None or not watch.stopped:
                    raise
            finally:
                if watch is not None:
                    watch.close()
            self.only = set(watch.rerun)
            self._place(rerun=True)
            log.info("application %r: micro-batch %d runs again its tasks %s, placed on "
                     "executor(s) %s", self.app_id, batch_id, sorted(self.only),
                     sorted({self.assigned[t] for t in self.only}))

    def _watch(self, batch_id: int) -> _LossWatch | None:
        """A started :class:`_LossWatch` over the job about to run, if it places tasks whose
        executor may be lost (None: nothing to watch)."""
        if not (self.placing and self.rerunnable and len(self.executors) >= 2 and self.ran):
            return None
        assert self.spark is not None, "placing runs on a classic session"
        # with warm copies, the lost tasks go to them: no waiting for replacements
        wait_s = 0.0 if self.rounds is not None and self.rounds.copies() \
            else self.replacement_wait_s
        watch = _LossWatch(self.spark, self.app_id, batch_id, list(self.ran),
                           {self.assigned[t] for t in self.ran}, len(self.executors), wait_s)
        watch.start()
        return watch

    def _slices(self, rows: Rows, batch_id: int) -> dict[int, list[int]]:
        """Per source (sub-topology), its partitions in ``rows``: its tasks, or none when
        Spark left it out of the batch, as it does a source whose offsets did not change
        since the previous batch (it plans an empty relation in its place)."""
        out, first = {}, 0
        for (sub_topology, tasks), changed in zip(self.sources.items(),
                                                  self._changed(batch_id), strict=True):
            n = tasks if changed else 0
            out[sub_topology], first = list(range(first, first + n)), first + n
        if first != rows.partitions:
            raise RuntimeError(f"micro-batch {batch_id} has {rows.partitions} source "
                               f"partitions, but its sources' tasks are {first}: {out}")
        return out

    def _changed(self, batch_id: int) -> list[bool]:
        """Per source, in the query's order, whether its offsets in Spark's offset log
        differ from the previous batch's (Spark's own rule for reading a source)."""
        assert self.spark is not None, "placing runs on a classic session"
        offsets = (self.spark._jsparkSession.streams().get(self.query_id)  # noqa: SLF001
                   .streamingQuery().offsetLog())
        now = offsets.get(batch_id).get().offsets()
        before = offsets.get(batch_id - 1) if batch_id > 0 else None
        before = before.get().offsets() if before is not None and before.isDefined() else None
        out = []
        for i in range(now.size()):
            old = None if before is None or not before.apply(i).isDefined() else before.apply(i)
            new = now.apply(i)
            out.append(new.isDefined() and (old is None or old.get().json() != new.get().json()))
        if len(out) != len(self.sources):
            raise RuntimeError(f"micro-batch {batch_id} has offsets of {len(out)} sources, "
                               f"but the query has {len(self.sources)} Kafka sources")
        return out

    def _place(self, rerun: bool = False) -> None:
        """This batch's placement: probe the executors if they changed, then :func:`place`.
        ``rerun``: the batch's job was stopped to run its lost tasks again (see
        :class:`_LossWatch`), which waited for the replacements already; where the tasks
        last committed is as the batch found it (what its finished tasks reported since
        changes nothing: they committed where they were placed)."""
        assert self.spark is not None, "placing runs on a classic session"
        executors = live_executors(self.spark)
        if not rerun and len(executors) < len(self.executors) and not (
                self.rounds is not None and self.rounds.covers(
                    [t for t, e in self.assigned.items() if e not in executors], executors)):
            executors = self._await_replacements(executors)
        if set(executors) != set(self.executors):
            self.executors = executors
            self._probe()
        if not rerun and self.totals is not None:
            self.where = dict(self.totals.value().where)
        previous = self.assigned
        self.assigned = place(self.groups, self.disks, self.where, self.held, previous,
                              self.arrived)
        if self.rounds is not None:
            self.assigned = self.rounds.assign(self.assigned, previous, self.executors)
            if any(previous.get(t) != e for t, e in self.assigned.items()):
                self.rounds.halt()  # a moved task may take a copy: none is written meanwhile
        self.placements += 1
        for task, executor in self.assigned.items():
            if previous.get(task) != executor:
                self.arrived[task] = self.placements

    def _await_replacements(self, executors: dict[str, str]) -> dict[str, str]:
        """Executors were lost: wait up to ``placement.replacement.wait.ms`` for as many to be
        there again (a cluster manager starts replacements), so that the lost executors'
        tasks move once, to a replacement, rather than to a survivor and later again."""
        lost = sorted(set(self.executors) - set(executors))
        log.info("application %r: executor(s) %s lost; waiting up to %.0f s for "
                 "replacements before moving their tasks", self.app_id, lost,
                 self.replacement_wait_s)
        deadline = time.monotonic() + self.replacement_wait_s
        while len(executors) < len(self.executors) and time.monotonic() < deadline:
            time.sleep(0.2)
            executors = live_executors(self.spark)  # type: ignore[arg-type]
        return executors

    def _probe(self) -> None:
        """Ask each live executor where its ``state.dir`` is and which tasks' state it holds
        (one small task on each; with one executor, nothing to choose)."""
        ids = sorted(self.executors)
        if len(ids) < 2:
            self.disks, self.held = dict.fromkeys(ids, ""), {}
            return
        tasks = [t for group in self.groups for t in group]
        spark: Any = self.spark
        self.disks, self.held, environs = probe_state(spark, self.executors, self.app_id,
                                                      self.state_dir, tasks)
        if self.rounds is not None:  # rack.aware.assignment.tags: where copies go
            self.rounds.tag(environs)
        log.debug("application %r: executors %s, state held %s", self.app_id, self.disks,
                  self.held)

    def _located(self, stage: Stage, df: DataFrame) -> DataFrame:
        """The stage's input, each partition on its task's executor, only the partitions of
        the tasks to run (``only``, when a batch runs again: see :class:`_LossWatch`). A
        stage reading only a Kafka source without new data has no partitions, and with one
        executor there is no choice: nothing to place."""
        if not self.placing or (len(self.executors) < 2 and self.only is None):
            return df
        rows = Rows.of(df)
        if rows.partitions == 0:
            return df
        tasks = self.groups[stage.index]
        parents = [p for p, t in enumerate(tasks) if self.only is None or t in self.only]
        self.ran += [tasks[p] for p in parents]
        return located(df.sparkSession, rows,
                       [[self.executors[self.assigned[tasks[p]]]] for p in parents], parents)


class _LossWatch(threading.Thread):
    """Watches a running micro-batch job, whose partitions run the tasks ``ran`` (in order)
    on the executors ``on``, placed when ``expected`` executors were live: when executors of
    ``on`` are lost, it cancels the job as ``placement.re_place_now`` says, and names the
    tasks to run again (:attr:`rerun`, ``placement.tasks_to_rerun``). The job carries a tag
    of its own (set here, on the thread that runs it) for the cancel."""

    POLL_S = 0.2

    def __init__(self, spark: SparkSession, app_id: str, batch_id: int,
                 ran: list[str], on: set[str], expected: int, wait_s: float):
        super().__init__(name=f"kspark-loss-watch-{batch_id}", daemon=True)
        self.spark, self.app_id, self.batch_id = spark, app_id, batch_id
        self.ran, self.on, self.expected, self.wait_s = ran, on, expected, wait_s
        self.tag = f"kspark-micro-batch-{uuid.uuid4().hex}"
        self.stopped = False  # the job was cancelled to run its lost tasks again
        self.rerun: list[str] = []
        self._done = threading.Event()
        spark.sparkContext.addJobTag(self.tag)  # this thread's next job: the batch's

    def close(self) -> None:
        """The job ended (the caller's thread): stop watching, and untag the thread."""
        self._done.set()
        self.spark.sparkContext.removeJobTag(self.tag)
        self.join()

    def run(self) -> None:
        try:
            self._watch()
        except Exception as e:  # noqa: BLE001 - the job goes on as Spark runs it
            log.warning("application %r: micro-batch %d: watching its executors failed, so "
                        "a lost executor's tasks wait for Spark's locality wait: %s",
                        self.app_id, self.batch_id, e)

    def _watch(self) -> None:
        lost_at: float | None = None
        while not self._done.wait(self.POLL_S):
            live = live_executors(self.spark)
            lost = self.on - set(live)
            if not lost:
                continue
            if lost_at is None:
                lost_at = time.monotonic()
                log.info("application %r: micro-batch %d: executor(s) %s lost while it runs; "
                         "its tasks there run again once nothing else of it runs and the "
                         "replacements are there (at most %.0f s)", self.app_id,
                         self.batch_id, sorted(lost), self.wait_s)
            jobs, running, succeeded = tagged_tasks(self.spark, self.tag)
            if not jobs:  # the batch's job is not submitted yet: nothing to cancel
                continue
            if not re_place_now(lost, self.expected - len(live), running,
                                time.monotonic() - lost_at, self.wait_s):
                continue
            done = {self.ran[p] for p in succeeded if p < len(self.ran)}
            rerun = tasks_to_rerun(self.ran, done)
            if not rerun:
                continue  # every task finished: the job ends by itself
            self.rerun, self.stopped = rerun, True
            self.spark.sparkContext.cancelJobsWithTag(self.tag)
            log.info("application %r: micro-batch %d: cancelled its job, %.1f s after "
                     "executor(s) %s were lost, to run their tasks %s again", self.app_id,
                     self.batch_id, time.monotonic() - lost_at, sorted(lost), rerun)
            return


def _rounds(spark: SparkSession, built: BuiltQuery, config: Any) -> StandbyRounds | None:
    """The standby rounds of a query with ``num.standby.replicas`` (none without), one at
    most every ``commit.interval.ms`` (at least every second)."""
    if not standbys_for(config):
        return None
    return StandbyRounds(spark, built.graph, config.as_dict(),
                         {m.sub_topology: m.stage_plan for m in built.plan.members()},
                         max(1.0, int(config["commit.interval.ms"]) / 1000))


def _task_id(stage: Stage, partition: int) -> str:
    """The id (``<sub-topology>_<task>``) of the task run by a stage's partition."""
    for m in stage.members:
        if m.first <= partition < m.first + m.tasks:
            return f"{m.sub_topology}_{partition - m.first}"
    raise ValueError(f"stage partition {partition} belongs to no sub-topology")
