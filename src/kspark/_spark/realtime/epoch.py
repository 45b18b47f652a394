"""What the driver gives a real-time stream thread for one of its epochs (a plain value)."""

from __future__ import annotations

from dataclasses import dataclass

from kspark._spark.realtime.layout import TaskSpec

__all__ = ["Epoch"]


@dataclass(frozen=True)
class Epoch:
    """What the driver gives a thread for one of its epochs (travels by value)."""

    run: str  # unique to the thread's epoch: the batch stamp of its commits
    threads: int
    tasks: tuple[TaskSpec, ...]  # every task; thread i runs tasks[i::threads]
    resets: tuple[tuple[str, str], ...]  # per-topic offset reset of partitions not in starts
    interval_ms: int  # commit.interval.ms
    length_ms: int  # real_time.epoch.ms (0: no scheduled end)
    control_begin: int  # where the threads watch the control topic from
    purge_ms: int  # repartition.purge.interval.ms
    stop: tuple[tuple[tuple[str, int], int], ...] = ()  # a batch run's stop offsets (KIP-95)
    # the driver's resolved starts: (partition, group's offset it saw or -1, start offset
    # or OFFSET_BEGINNING); see kspark._engine.offset_reset.assigned_start
    starts: tuple[tuple[tuple[str, int], int, int], ...] = ()
    query: str = ""  # the whole run's stop key (a stop of it ends every thread)
    # the driver's assignment (kspark._plan.assignment), as indices into tasks: per thread,
    # the tasks it runs and those it keeps standby copies of; () : every n-th task, no copies
    active: tuple[tuple[int, ...], ...] = ()
    standby: tuple[tuple[int, ...], ...] = ()
    version: int = 0  # the assignment's: a thread applies only newer ones it is sent

    def mine(self, index: int) -> tuple[TaskSpec, ...]:
        """Thread ``index``'s tasks: its home tasks (every ``n``-th: a sticky assignment),
        unless the driver moved tasks (a lost thread's, to the threads with their copies)."""
        if self.active:
            return tuple(self.tasks[t] for t in self.active[index])
        return self.tasks[index::self.threads]

    def copies(self, index: int) -> tuple[TaskSpec, ...]:
        """The tasks thread ``index`` keeps standby copies of."""
        return tuple(self.tasks[t] for t in self.standby[index]) if self.standby else ()
