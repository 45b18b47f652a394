"""Tasks moving to or from a running stream thread, as the driver's assignment says.

The driver's assignor (``rebalance.py``) publishes each new assignment (a version, and per
thread its active tasks and standby copies) to the control topic; every thread of the run
sees it between polls (its :class:`~kspark._kafka.stream_thread_clients.StopWatch`) and
:class:`Reassigner` applies its own part without ending the thread's epoch: every task
commits, a task taken away is released (its stores closed and checkpointed, its
partitions no longer read), a task given is opened (its standby copy here promoted to its
stores first, so only the changelogs' tail is restored; exactly-once: its producer fences
the lost owner's) and its partitions read from the group's committed offsets. Tasks that
stay are not touched: a thread taking over a lost thread's tasks never stops its own.
"""

from __future__ import annotations

import logging
from typing import Any

from kspark._host.context import HostContext
from kspark._host.standby import StandbyTask, StandbyUpdater, promote_standby
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
    """Thread ``index``'s part of each new assignment, applied to its running loop."""

    def __init__(self, contexts: dict[int, HostContext], index: int, epoch: Epoch, run: str,
                 global_stores: Any, standbys: StandbyUpdater):
        self.contexts, self.index, self.epoch, self.run = contexts, index, epoch, run
        self.global_stores, self.standbys = global_stores, standbys
        self.version = epoch.version
        self.opened = 0  # tasks opened mid-epoch (each with a run of its own)

    def check(self, loop: Any) -> None:
        """Apply the newest assignment the thread has seen, if newer than its own."""
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
            loop.commit()
        for s in removed:
            loop.reporter.add(loop.drop_task(s).release())
        if added:
            self.standbys.close()  # a copy about to become a task's stores is not updated
        for s in added:
            ctx = self.contexts[s.sub_topology]
            promote_standby(ctx.state_dir, ctx.app_id, s.task_id)
            self.opened += 1  # a run of its own: its stamps never repeat an earlier open's
            task = open_live_task(ctx, s.partition, f"{self.run}.{self.opened}",
                                  self.global_stores)
            loop.add_task(s, task, start_offsets(ctx, self.epoch, [s]))
        copies = [tasks[i] for i in standby[self.index] if tasks[i] not in wanted]
        if added or {c.task_id for c in self.standbys.copies} != {c.task_id for c in copies}:
            self.standbys.close()
            self.standbys = standby_updater(self.contexts, copies, self.epoch)
            loop.reporter.watch_standbys(self.standbys)
