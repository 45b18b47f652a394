"""The driver's assignor at work: a lost thread's tasks to their standby copies, and back.

With standby replicas (``num.standby.replicas``), :class:`AssignmentWatch` looks, twice a
second, where each stream thread's Spark task runs. When its executor is no longer alive,
the thread is lost: :func:`~kspark._plan.assignment.fail_over` hands each of its tasks to
the thread keeping its copy, and those threads end their epoch at once (a stop of that
epoch through the control topic) to start the next one with the new assignment, opening
the tasks from their copies (only the changelogs' tail is restored). Every other thread
runs on untouched. When Spark runs the lost thread again (on a replacement executor, or a
free slot), its next epoch keeps warm-up copies of its tasks; every
``probing.rebalance.interval.ms`` the tasks whose warm-up has caught up (within
``acceptable.recovery.lag``) move back home (:func:`~kspark._plan.assignment.move_back`).

Example (needs Spark, so not run)::

    watch = AssignmentWatch(Assignor(home, task_ids, 2, 10_000), where, alive, lags,
                            restart, done, probing_s=600)
    watch.start()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kspark._plan.assignment import Assignment, fail_over, move_back, spread_standbys

__all__ = ["Assignor", "AssignmentWatch"]

log = logging.getLogger("kspark")


class Assignor:
    """The run's current assignment, changed by losses and probing (thread-safe)."""

    def __init__(self, home: Assignment, task_ids: list[str], max_warmups: int,
                 acceptable_lag: int, copies: int = 0):
        self.home = self.current = home
        self.copies = copies  # num.standby.replicas
        self.task_ids, self.max_warmups, self.acceptable_lag = task_ids, max_warmups, acceptable_lag
        self.version = 0
        self.target: Assignment | None = None  # a move back, once its tasks are given up
        self._lock = threading.Lock()

    def assignment(self) -> tuple[int, Assignment]:
        with self._lock:
            return self.version, self.current

    def spread(self, executor_of: dict[int, str], tags: dict[str, dict[str, str]]) -> bool:
        """Before any loss or move (version 0): place the copies by the executors' client
        ``tags`` (``executor_of``: each thread's executor), as the home assignment too;
        whether that changed anything (a new version to send)."""
        with self._lock:
            if self.version != 0:
                return False
            self.home = spread_standbys(self.home, executor_of, tags, self.copies)
            log.info("standby copies by client tags: stream threads %s run %s and keep "
                     "copies of %s", {i: executor_of[i] for i in sorted(executor_of)},
                     *({i: [self.task_ids[t] for t in tasks] for i, tasks in enumerate(a)}
                       for a in (self.home.active, self.home.standby)))
            return self._set(self.home)

    def lost(self, thread: int) -> bool:
        """``thread`` was lost: its tasks go to their copies' keepers; whether that changed
        anything (a new version to send)."""
        with self._lock:
            return self._set(fail_over(self.current, thread, self.max_warmups))

    def probe(self, lags: dict[tuple[int, str], int]) -> bool:
        """Caught-up warm-ups (``lags``: (thread, task id) -> records behind) move home:
        first their tasks are taken from the threads running them (a new version)."""
        index = {t: i for i, t in enumerate(self.task_ids)}
        by_index = {(th, index[t]): n for (th, t), n in lags.items() if t in index}
        with self._lock:
            if self.target is not None:
                return False
            target = move_back(self.current, self.home, by_index, self.acceptable_lag)
            if target == self.current:
                return False
            moving = {t for i, tasks in enumerate(target.active) for t in tasks
                      if t not in self.current.active[i]}
            self.target = target
            return self._set(Assignment(
                tuple(tuple(t for t in tasks if t not in moving) for tasks in self.current.active),
                self.current.standby))

    def settle(self, running: set[str]) -> bool:
        """A move back whose tasks no thread reports running any more (``running``: task
        ids) completes: their home threads take them (a new version)."""
        with self._lock:
            target = self.target
            if target is None or any(self.task_ids[t] in running for tasks in target.active
                                     for t in tasks if not any(t in a for a in
                                                               self.current.active)):
                return False
            self.target = None
            return self._set(target)

    def _set(self, new: Assignment) -> bool:
        if new == self.current:
            return False
        changed = [i for i, (a, b) in enumerate(zip(self.current.active, new.active,
                                                      strict=True)) if a != b]
        self.version += 1
        log.info("assignment %d: stream threads %s run %s", self.version, changed,
                 {i: [self.task_ids[t] for t in new.active[i]] for i in changed})
        self.current = new
        return True


class AssignmentWatch(threading.Thread):
    """Watches for lost threads and probes warm-ups (see the module). ``where``: the
    executor a thread's running Spark task is on (None: not known or not running);
    ``alive``: the live executors; ``reports``: the standby copies' lags and the tasks
    running, as the threads last reported them; ``publish``: send the new assignment;
    ``done``: set when the run ends."""

    def __init__(self, assignor: Assignor, where: Callable[[int], str | None],
                 alive: Callable[[], set[str]],
                 reports: Callable[[], tuple[dict[tuple[int, str], int], set[str]]],
                 publish: Callable[[], None], done: threading.Event,
                 probing_s: float, every_s: float = 0.5,
                 tags: dict[str, dict[str, str]] | None = None):
        super().__init__(name="kspark-assignment-watch", daemon=True)
        self.assignor, self.where, self.alive, self.reports = assignor, where, alive, reports
        self.publish, self.done, self.probing_s, self.every_s = publish, done, probing_s, every_s
        self.handled: dict[int, str] = {}  # thread -> the lost executor it was moved off
        self.tags = tags  # executor -> its client tags: copies are placed by them, once

    def run(self) -> None:
        next_probe = time.monotonic() + self.probing_s
        while not self.done.wait(self.every_s):
            try:
                self.spread_by_tags()
                self.check_lost()
                lags, running = self.reports()
                if self.assignor.settle(running):
                    self.publish()
                if time.monotonic() >= next_probe:
                    next_probe = time.monotonic() + self.probing_s
                    if self.assignor.probe(lags):
                        self.publish()
            except Exception as e:  # noqa: BLE001 - looked at again in half a second
                log.warning("watching the stream threads failed: %s", e)

    def spread_by_tags(self) -> None:
        """With client tags: once every thread's executor is known, place the copies by
        the tags (``Assignor.spread``)."""
        if not self.tags:
            return
        executor_of = {i: self.where(i) for i in range(len(self.assignor.home.active))}
        known = {i: e for i, e in executor_of.items() if e is not None}
        if len(known) == len(executor_of):
            tags, self.tags = self.tags, None
            if self.assignor.spread(known, tags):
                self.publish()

    def check_lost(self) -> None:
        """A thread whose executor is gone: hand its tasks to their copies, once."""
        alive = self.alive()
        for thread in range(len(self.assignor.home.active)):
            where = self.where(thread)
            if where is None:
                continue
            if where in alive:
                self.handled.pop(thread, None)
            elif self.handled.get(thread) != where:
                self.handled[thread] = where
                log.warning("stream thread %d's executor %s is lost: its tasks move to their "
                            "standby copies", thread, where)
                if self.assignor.lost(thread):
                    self.publish()
