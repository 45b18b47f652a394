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

from kspark._plan.assignment import Assignment, fail_over, move_back

__all__ = ["Assignor", "AssignmentWatch"]

log = logging.getLogger("kspark")


class Assignor:
    """The run's current assignment, changed by losses and probing (thread-safe)."""

    def __init__(self, home: Assignment, task_ids: list[str], max_warmups: int,
                 acceptable_lag: int):
        self.home = self.current = home
        self.task_ids, self.max_warmups, self.acceptable_lag = task_ids, max_warmups, acceptable_lag
        self._lock = threading.Lock()

    def assignment(self) -> Assignment:
        with self._lock:
            return self.current

    def lost(self, thread: int) -> list[int]:
        """``thread`` was lost: the threads that take tasks over (their epochs must end)."""
        with self._lock:
            return self._set(fail_over(self.current, thread, self.max_warmups))

    def probe(self, lags: dict[tuple[int, str], int]) -> list[int]:
        """Move caught-up warm-ups home (``lags``: (thread, task id) -> records behind); the
        threads whose tasks changed."""
        index = {t: i for i, t in enumerate(self.task_ids)}
        by_index = {(th, index[t]): n for (th, t), n in lags.items() if t in index}
        with self._lock:
            return self._set(move_back(self.current, self.home, by_index, self.acceptable_lag))

    def _set(self, new: Assignment) -> list[int]:
        changed = [i for i, (a, b) in enumerate(zip(self.current.active, new.active,
                                                      strict=True)) if a != b]
        if changed:
            log.info("stream threads %s take new tasks: %s", changed,
                     {i: [self.task_ids[t] for t in new.active[i]] for i in changed})
        self.current = new
        return changed


class AssignmentWatch(threading.Thread):
    """Watches for lost threads and probes warm-ups (see the module). ``where``: the
    executor a thread's running Spark task is on (None: not known or not running);
    ``alive``: the live executors; ``lags``: the standby copies' lags the threads last
    reported; ``restart``: end these threads' epochs; ``done``: set when the run ends."""

    def __init__(self, assignor: Assignor, where: Callable[[int], str | None],
                 alive: Callable[[], set[str]], lags: Callable[[], dict[tuple[int, str], int]],
                 restart: Callable[[list[int]], None], done: threading.Event,
                 probing_s: float, every_s: float = 0.5):
        super().__init__(name="kspark-assignment-watch", daemon=True)
        self.assignor, self.where, self.alive, self.lags = assignor, where, alive, lags
        self.restart, self.done, self.probing_s, self.every_s = restart, done, probing_s, every_s
        self.handled: dict[int, str] = {}  # thread -> the lost executor it was moved off

    def run(self) -> None:
        next_probe = time.monotonic() + self.probing_s
        while not self.done.wait(self.every_s):
            try:
                self.check_lost()
                if time.monotonic() >= next_probe:
                    next_probe = time.monotonic() + self.probing_s
                    self.restart(self.assignor.probe(self.lags()))
            except Exception as e:  # noqa: BLE001 - looked at again in half a second
                log.warning("watching the stream threads failed: %s", e)

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
                self.restart(self.assignor.lost(thread))
