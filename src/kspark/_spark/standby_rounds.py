"""Standby copies in micro-batch mode: a round of copy updates on each executor, between
(and beside) the micro-batches.

The micro-batch mode has no thread that lives on an executor, so the copies of its tasks
(``num.standby.replicas``, ``_host/standby.py``) are kept by *rounds*: a small Spark job
with one partition per executor that keeps copies, placed on it (the placement shim),
which brings each of that executor's copies up to its changelogs' read_committed ends
(:class:`~kspark._host.standby.StandbyTask`) and reports how far each copy is. The driver
starts a round after a micro-batch when none runs (at most one every ``every_s``), in a
background thread: a micro-batch never waits for a round, except when its placement
moves a task, which may take a copy for its stores: then the round under way is
cancelled first (:meth:`StandbyRounds.halt`), so no copy is written while it becomes a
task's stores.

A partition that Spark runs elsewhere than placed (its executor was lost: Spark's
locality wait ran out) updates nothing: a copy belongs to its executor's disk.

Example (needs Spark, so not run)::

    rounds = StandbyRounds(spark, graph, config, plans, every_s=1.0)
    rounds.start({"1": ["0_0"], "2": ["0_1"]}, executors, disks)
    rounds.positions   # {("1", "0_0"): 4211, ...}: the copies' changelog positions
    rounds.halt()
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from kspark._host.context import HostContext
from kspark._plan.placement import fail_over_to_copies, keep_copies, settle_pins
from kspark._spark.located import located
from kspark._spark.probe import client_tags
from kspark._host.state import state_location

__all__ = ["StandbyRounds"]

log = logging.getLogger("kspark")


class StandbyRounds:
    """The rounds of copy updates of one micro-batch query (see the module). ``plans``: per
    sub-topology, its ``StagePlan``."""

    def __init__(self, spark: SparkSession, graph: Any, config: dict[str, Any],
                 plans: Mapping[int, Any], every_s: float):
        self.spark, self.every_s = spark, every_s
        self.app_id = config["application.id"]
        self.n = int(config["num.standby.replicas"])
        self.acceptable_lag = int(config["acceptable.recovery.lag"])
        self.max_warmups = int(config["max.warmup.replicas"])
        self.pinned: dict[str, str] = {}  # task -> the copy's executor it failed over to
        self.warmups: dict[str, str] = {}  # pinned task -> where its warm-up copy is kept
        self.contexts = {s: HostContext(graph, config, p) for s, p in plans.items()}
        # (executor id, task id) -> the changelog position (offsets summed) of its copy, and
        # the records its last update applied (how far behind it was)
        self.positions: dict[tuple[str, str], int] = {}
        self.lags: dict[tuple[str, str], int] = {}
        self.updated: dict[str, int] = {}  # task id -> records its copies applied, in all
        self.rounds = 0
        # the rack.aware.assignment.tags config, and each executor's client tags
        self.tag_config = {k: v for k, v in config.items()
                           if k == "rack.aware.assignment.tags" or k.startswith("client.tag.")}
        self.tags: dict[str, dict[str, str]] = {}
        self._kept: dict[str, list[str]] = {}  # the copies last kept (logged when changed)
        self._tag = f"kspark-standby-{uuid.uuid4().hex}"
        self._thread: threading.Thread | None = None
        self._started_at = 0.0
        self._lock = threading.Lock()

    def assign(self, balanced: Mapping[str, str], previous: Mapping[str, str],
               executors: Mapping[str, str]) -> dict[str, str]:
        """The placement of a micro-batch: ``balanced`` (``placement.place``), except that
        a task whose executor is gone (``previous``) goes to its freshest copy
        (``placement.fail_over_to_copies``) and stays there until its warm-up copy where
        ``balanced`` puts it has caught up (``placement.settle_pins``)."""
        self.forget(executors)
        lost = [t for t, e in previous.items() if e not in executors]
        pins = {t: e for t, e in self.pinned.items() if e in executors}
        moved = fail_over_to_copies(lost, self.copies())
        for task, e in sorted(moved.items()):
            log.info("application %r: task %s moves to executor %s, which keeps a warm copy "
                     "of its stores (it restores only the changelog's tail)", self.app_id,
                     task, e)
        with self._lock:
            lags = dict(self.lags)
        self.pinned = settle_pins({**pins, **moved}, balanced, lags, self.acceptable_lag)
        for task in sorted(set(pins) - set(self.pinned)):
            log.info("application %r: task %s moves back to executor %s, whose warm-up copy "
                     "of it has caught up", self.app_id, task, balanced.get(task))
        self.warmups = {t: balanced[t] for t in sorted(self.pinned)[:self.max_warmups]
                        if t in balanced}
        return {**balanced, **self.pinned}

    def covers(self, lost: list[str], executors: Mapping[str, str]) -> bool:
        """Whether some task of ``lost`` has a copy on a live executor (``executors``): it
        need not wait for a replacement executor."""
        held = [tasks for e, tasks in self.copies().items() if e in executors]
        return any(t in tasks for t in lost for tasks in held)

    def keep(self, assigned: Mapping[str, str], executors: Mapping[str, str]
             ) -> dict[str, list[str]]:
        """Per executor, the copies it keeps under ``assigned`` (standbys and warm-ups)."""
        keep = keep_copies(assigned, executors, self.n, self.warmups, self.tags)
        if keep != self._kept:
            self._kept = keep
            runs = {e: sorted(t for t, x in assigned.items() if x == e) for e in sorted(keep)}
            log.info("application %r: executors run tasks %s and keep copies of %s",
                     self.app_id, runs, keep)
        return keep

    def tag(self, environs: Mapping[str, Mapping[str, str]]) -> None:
        """Take the executors' client tags from their probed ``environs`` (``probe.py``)."""
        self.tags = client_tags(self.app_id, self.tag_config, environs)

    def start(self, keep: Mapping[str, list[str]], executors: Mapping[str, str],
              disks: Mapping[str, str]) -> bool:
        """Start a round over ``keep`` (executor id -> the tasks it keeps copies of) unless
        one runs or the last started less than ``every_s`` ago; whether it started."""
        keep = {e: list(t) for e, t in keep.items() if t and e in executors}
        if not keep or (self._thread is not None and self._thread.is_alive()) \
                or time.monotonic() - self._started_at < self.every_s:
            return False
        self._started_at = time.monotonic()
        self._thread = threading.Thread(target=self._round, args=(keep, dict(executors),
                                                                  dict(disks)),
                                        name="kspark-standby-round", daemon=True)
        self._thread.start()
        return True

    def halt(self) -> None:
        """Cancel the round under way, if any, and wait for it to end."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        self.spark.sparkContext.cancelJobsWithTag(self._tag)
        thread.join()

    def forget(self, executors: Mapping[str, str]) -> None:
        """Drop what is known of copies on executors no longer live."""
        with self._lock:
            for key in [k for k in self.positions if k[0] not in executors]:
                self.positions.pop(key, None)
                self.lags.pop(key, None)

    def stats(self) -> dict[str, list]:
        """The copies' records applied, per task, as Kafka Streams' ``update-total``/
        ``-rate`` counts of the task (``_engine/metrics/stats.py`` keys)."""
        with self._lock:
            updated = dict(self.updated)
        out: dict[str, list] = {}
        for task, n in updated.items():
            out[f"=shape-standby|{task}|"] = [1, 0, 0, 0]
            out[f"update|{task}|"] = [n, 0, 0, 0]
        return out

    def copies(self) -> dict[str, dict[str, int]]:
        """Per executor id, the changelog position of each copy it keeps (as last updated)."""
        out: dict[str, dict[str, int]] = {}
        with self._lock:
            for (executor, task), position in self.positions.items():
                out.setdefault(executor, {})[task] = position
        return out

    def _round(self, keep: dict[str, list[str]], executors: dict[str, str],
               disks: dict[str, str]) -> None:
        sc = self.spark.sparkContext
        sc.addJobTag(self._tag)
        try:
            rows = self._job(keep, executors, disks)
        except Exception as e:  # noqa: BLE001 - a round that fails is tried again later
            log.debug("application %r: a round of standby updates ended early: %s",
                      self.app_id, e)
            return
        finally:
            sc.removeJobTag(self._tag)
        with self._lock:
            for r in rows:
                self.positions[(r.executor, r.task)] = r.position
                self.lags[(r.executor, r.task)] = r.applied
                self.updated[r.task] = self.updated.get(r.task, 0) + r.applied
            self.rounds += 1
        if self.rounds == 1:
            log.info("application %r: standby copies kept (first round done): %s",
                     self.app_id, {e: sorted(t) for e, t in keep.items()})

    def _job(self, keep: dict[str, list[str]], executors: dict[str, str],
             disks: dict[str, str]) -> list[Any]:
        ids = sorted(keep)
        contexts, state_dir = self.contexts, next(iter(self.contexts.values())).state_dir
        plan = [(e, disks.get(e, ""), keep[e]) for e in ids]

        def update(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from kspark._host.standby import StandbyTask

            for b in batches:
                for i in b.column(0).to_pylist():
                    executor, disk, tasks = plan[i]
                    if disk and state_location(state_dir) != disk:
                        continue  # run elsewhere than placed: not this executor's copies
                    for task in tasks:
                        sub, _, part = task.partition("_")
                        copy = StandbyTask(contexts[int(sub)], int(part))
                        if copy.empty:
                            continue  # no persistent logged store: nothing to copy
                        applied = copy.update()
                        yield pa.RecordBatch.from_pylist([{
                            "executor": executor, "task": task, "applied": applied,
                            "position": sum(copy.position.values())}])

        df = located(self.spark, self.spark.range(0, len(ids), 1, len(ids)),
                     [[executors[e]] for e in ids])
        return df.mapInArrow(update, "executor string, task string, applied long, "
                                     "position long").collect()
