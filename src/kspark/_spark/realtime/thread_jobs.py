"""Each real-time stream thread's epoch as a Spark job of its own, placed where its state is.

A thread's epoch is one Spark job of one task (:func:`~kspark._spark.realtime.stream_thread.
thread_job`), so Spark's unit of failure is the thread: when an executor is lost, Spark
retries the lost threads' tasks on the executors that are left (or their replacements),
while every other thread's job goes on untouched (no barrier stage, whose one failed task
fails every task of the epoch).

:class:`ThreadJobs` submits those jobs. On a classic session with the placement shim
(``located.py``) and several executors, each job prefers an executor
(:func:`~kspark._plan.placement.choose_executor`): the one its thread ran on last, else the
one whose disk holds most of its tasks' state (asked once, before the threads start, while
every task slot is free: ``probe.py``), else the least loaded; only among executors with a
free task slot, so a job never waits behind a busy executor. On Spark Connect, or without
the shim, jobs run where Spark puts them.

Example (needs Spark, so not run)::

    jobs = ThreadJobs(spark, contexts, "rt-1a2b", app_id, state_dir)
    jobs.prepare([["0_0", "0_2"], ["0_1", "0_3"]])   # the threads' tasks
    row = jobs.run(epoch, 0)                          # blocks for the thread's epoch
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from kspark._host.context import HostContext
from kspark._plan.placement import choose_executor
from kspark._spark.connect import is_connect
from kspark._spark.realtime.stream_thread import Epoch, thread_job

__all__ = ["ThreadJobs"]

log = logging.getLogger("kspark")

# how long the driver waits for Spark's status store to record where a finished thread ran
_STATUS_WAIT_S = 2.0


class ThreadJobs:
    """Submits stream threads' epochs as Spark jobs tagged ``tag`` (see the module)."""

    def __init__(self, spark: Any, contexts: dict[int, HostContext], tag: str, app_id: str,
                 state_dir: str):
        self.spark, self.contexts, self.tag = spark, contexts, tag
        self.app_id, self.state_dir = app_id, state_dir
        self.connect = is_connect(spark)
        self.placing = False  # the placement shim is loaded
        self._lock = threading.Lock()
        self._threads: list[list[str]] = []  # each thread's task ids
        self._held: dict[str, dict[int, int]] = {}  # executor -> {thread: state held}
        self._last: dict[int, str] = {}  # thread -> the executor it last ran on
        self._groups: dict[int, str] = {}  # thread -> its running job's group
        self.tags: dict[str, dict[str, str]] = {}  # executor -> its client tags (racks.py)

    def prepare(self, threads: list[list[str]]) -> None:
        """Before the threads start: load the placement shim and, with several executors,
        ask each what state its disk holds (``threads``: each thread's task ids)."""
        self._threads = threads
        if self.connect:
            return
        from kspark._spark.located import live_executors, load
        from kspark._spark.probe import client_tags, probe_state

        self.placing = load(self.spark, long_wait=False)
        executors = live_executors(self.spark)  # those registered by now
        if not self.placing or len(executors) < 2:
            return
        _, held, environs = probe_state(self.spark, executors, self.app_id, self.state_dir,
                                        [t for tasks in threads for t in tasks])
        self.tags = client_tags(self.app_id, next(iter(self.contexts.values())).config,
                                environs)
        self._held = {e: {i: sum(h.get(t, 0) for t in tasks) for i, tasks in enumerate(threads)}
                      for e, h in held.items()}
        log.info("application %r: stream threads' state on executors %s", self.app_id,
                 {e: {i: n for i, n in h.items() if n} for e, h in self._held.items()})

    def run(self, epoch: Epoch, index: int) -> dict[str, Any]:
        """Run thread ``index``'s ``epoch`` as a Spark job (blocks until it ends); its row.
        Raises the Spark job's failure (a lost executor or Python worker, past Spark's
        retries, or a cancel)."""
        if self.connect:
            return self._run_connect(epoch, index)
        contexts = self.contexts
        sc = self.spark.sparkContext
        sc.setJobGroup(epoch.run, f"kspark {self.app_id}: real-time stream thread {index}",
                       interruptOnCancel=True)
        sc.addJobTag(self.tag)
        try:
            rdd = sc.parallelize([index], 1)
            prefer = self._prefer(index, epoch.run)
            if prefer is not None:
                from kspark._spark.located import located_rdd

                rdd = located_rdd(rdd, [[prefer]])
            (row,) = rdd.mapPartitions(
                lambda slots: [thread_job(contexts, s, epoch) for s in slots]).collect()
        finally:
            sc.removeJobTag(self.tag)
            self._ended(index, epoch.run)
        return row

    def where(self, index: int) -> str | None:
        """The executor thread ``index``'s running job's task is on (None: not known)."""
        from kspark._spark.located import ran_on

        with self._lock:
            group = self._groups.get(index)
        return None if group is None else ran_on(self.spark, group)

    def alive(self) -> set[str]:
        """The executors alive now."""
        from kspark._spark.located import executor_slots

        return set(executor_slots(self.spark))

    def cancel(self) -> None:
        """Cancel every thread's job (a stop that the threads did not obey in time)."""
        if self.connect:
            self.spark.interruptTag(self.tag)
        else:
            self.spark.sparkContext.cancelJobsWithTag(self.tag)

    def _run_connect(self, epoch: Epoch, index: int) -> dict[str, Any]:
        """Spark Connect has no RDDs: a ``mapInArrow`` over one row, tagged for cancel."""
        contexts = self.contexts

        def one(batches: Any) -> Any:
            import pyarrow as pa

            for b in batches:
                for slot in b.column(0).to_pylist():
                    row = thread_job(contexts, slot, epoch)
                    yield pa.RecordBatch.from_pylist([{"row": json.dumps(row)}])

        self.spark.addTag(self.tag)
        try:
            (r,) = (self.spark.range(index, index + 1, 1, 1)
                    .mapInArrow(one, "row string").collect())
            return dict(json.loads(r.row))
        finally:
            self.spark.removeTag(self.tag)

    def _prefer(self, index: int, group: str) -> str | None:
        """The location string thread ``index``'s job prefers (see the module), or None."""
        if not self.placing:
            return None
        from kspark._spark.located import executor_slots, ran_on

        with self._lock:
            executors = executor_slots(self.spark)
            busy: dict[str, int] = {}
            for thread, running in self._groups.items():
                where = ran_on(self.spark, running) or self._last.get(thread)
                if where is not None:
                    busy[where] = busy.get(where, 0) + 1
            free = {e: slots - busy.get(e, 0) for e, (_, slots) in executors.items()}
            held = {e: h.get(index, 0) for e, h in self._held.items()}
            choice = choose_executor(free, self._last.get(index), held)
            self._groups[index] = group
            if choice is not None:
                self._last[index] = choice
            if len(executors) < 2:  # one executor: nothing to choose
                return None
            log.info("application %r: stream thread %d to executor %s (free slots %s)",
                      self.app_id, index, choice, free)
            return None if choice is None else executors[choice][0]

    def _ended(self, index: int, group: str) -> None:
        """Thread ``index``'s job ended: note the executor it ran on last."""
        if not self.placing or len(self._last) == 0:
            with self._lock:
                self._groups.pop(index, None)
            return
        from kspark._spark.located import ran_on

        deadline = time.monotonic() + _STATUS_WAIT_S
        where = ran_on(self.spark, group)
        while where is None and time.monotonic() < deadline:
            time.sleep(0.05)
            where = ran_on(self.spark, group)
        with self._lock:
            self._groups.pop(index, None)
            if where is not None:
                self._last[index] = where
