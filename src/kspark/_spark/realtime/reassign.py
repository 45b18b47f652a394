"""Tasks moving to or from a running stream thread, as the driver's assignment says.

The driver's assignor (``rebalance.py``) publishes each new assignment (a version, and per
thread its active tasks and standby copies) to the control topic; every thread of the run
sees it between polls (its :class:`~kspark._control.control_topic.StopWatch`) and
:class:`Reassigner` applies its own part without ending the thread's epoch: every task
commits, a task taken away is released (its stores closed and checkpointed, its
partitions no longer read), a task given is opened (its standby copy here promoted to its
stores first, so only the changelogs' tail is restored; exactly-once: its producer fences
the lost owner's) and its partitions read from the group's committed offsets. Tasks that
stay are not touched: a thread taking over a lost thread's tasks never stops its own.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kspark._host.context import HostContext
from kspark._host.standby import StandbyTask, StandbyUpdater
from kspark._spark.realtime.epoch import Epoch
from kspark._spark.realtime.layout import TaskSpec
from kspark._spark.realtime.thread_loop import open_live_task, start_offsets

__all__ = ["Reassigner", "standby_updater"]

log = logging.getLogger("kspark")


def standby_updater(contexts: dict[int, HostContext], copies: list[TaskSpec],
                    epoch: Epoch) -> StandbyUpdater:
    """The updater of a thread's standby ``copies``."""
    return StandbyUpdater([StandbyTask(contexts[s.sub_topology], s.partition) for s in copies],
                          max(epoch.interval_ms / 1000, 0.5))


class Reassigner:
    """Thread ``index``'s part of each new assignment, applied to its running loop. Tasks
    given to the thread are opened beside the loop (:class:`_Opening`: the copies' updates
    stopped, each task's copy promoted, its producer fencing the lost owner's, the tail
    restored) while the thread's own tasks go on; they join the loop once all are open. A
    newer assignment waits for that."""

    def __init__(self, contexts: dict[int, HostContext], index: int, epoch: Epoch, run: str,
                 global_stores: Any, standbys: StandbyUpdater):
        self.contexts, self.index, self.epoch, self.run = contexts, index, epoch, run
        self.global_stores, self.standbys = global_stores, standbys
        self.version = epoch.version
        self.opened = 0  # tasks opened mid-epoch (each with a run of its own)
        self.opening: _Opening | None = None

    def check(self, loop: Any) -> None:
        """Apply the newest assignment the thread has seen, if newer than its own (once the
        tasks of the one before are open)."""
        if self.opening is not None:
            if self.opening.is_alive():
                return
            self._join(loop)
        new = loop.watch.assignment()
        if new is None or new[0] <= self.version:
            return
        self.version, active, standby = new
        tasks = self.epoch.tasks
        wanted = [tasks[i] for i in active[self.index]]
        removed = [s for s in loop.tasks if s not in wanted]
        added = [s for s in wanted if s not in loop.tasks]
        if removed or added:
            log.info("stream thread %d: assignment %d: takes %s, gives %s", self.index,
                     self.version, [s.task_id for s in added], [s.task_id for s in removed])
        if removed:
            loop.commit()
        for s in removed:
            loop.reporter.add(loop.drop_task(s).release())
        copies = [tasks[i] for i in standby[self.index] if tasks[i] not in wanted]
        if added:
            runs = [f"{self.run}.{self.opened + i + 1}" for i in range(len(added))]
            self.opened += len(added)  # a run of its own each: stamps never repeat an open's
            self.opening = _Opening(self, added, runs, copies)
        elif {c.task_id for c in self.standbys.copies} != {c.task_id for c in copies}:
            self._copies(loop, copies)

    def _join(self, loop: Any) -> None:
        """The opening ended: its tasks join the loop (or its error fails the thread)."""
        opening, self.opening = self.opening, None
        assert opening is not None
        if opening.error is not None:
            raise opening.error
        for s, task, starts in opening.done:
            loop.add_task(s, task, starts)
        self._copies(loop, opening.copies)

    def _copies(self, loop: Any, copies: list[TaskSpec]) -> None:
        self.standbys.close()
        self.standbys = standby_updater(self.contexts, copies, self.epoch)
        loop.reporter.watch_standbys(self.standbys)

    def close(self) -> None:
        """The thread ends: wait for an opening under way; release what it opened."""
        opening, self.opening = self.opening, None
        if opening is None:
            return
        opening.join()
        for s, task, _ in opening.done:
            try:
                task.release()
            except Exception as e:  # noqa: BLE001 - its next owner restores it anyway
                log.warning("task %s: releasing it as its thread ends failed: %s", s.task_id, e)


class _Opening(threading.Thread):
    """Opens the tasks ``added`` (each for its run of ``runs``) beside the loop: first the
    copies' updates stop (a copy about to become a task's stores is not written), then
    each task opens (taking its copy here: ``HostedTask.acquire``). ``done``: (spec, task,
    its partitions' starts); ``error``: what failed, for the loop to raise."""

    def __init__(self, owner: Reassigner, added: list[TaskSpec], runs: list[str],
                 copies: list[TaskSpec]):
        super().__init__(name=f"kspark-opening-{owner.index}", daemon=True)
        self.owner, self.added, self.runs, self.copies = owner, added, runs, copies
        self.done: list[tuple[TaskSpec, Any, list[Any]]] = []
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        o = self.owner
        try:
            o.standbys.close()
            for s, run in zip(self.added, self.runs, strict=True):
                ctx = o.contexts[s.sub_topology]
                task = open_live_task(ctx, s.partition, run, o.global_stores)
                self.done.append((s, task, start_offsets(ctx, o.epoch, [s])))
        except BaseException as e:  # noqa: BLE001 - raised by the loop's thread
            self.error = e
