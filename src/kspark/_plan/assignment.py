"""Which stream thread runs each task, and which keep warm copies of it (real-time mode).

Kafka Streams' assignor (KIP-441) in kspark's terms: the driver decides, from what it
knows, a plain value (:class:`Assignment`) that each thread's next epoch takes; the rules
are pure functions here, tested by name in ``tests/unit/test_assignment.py``.

- :func:`initial_assignment`: thread ``i`` of ``n`` runs every ``n``-th task (its *home*
  tasks); with ``standbys`` copies, thread ``i``'s tasks are also kept warm by threads
  ``i+1 .. i+standbys`` (mod ``n``): other threads, which run on other executors.
- :func:`fail_over`: a thread lost with its executor hands each of its tasks to the live
  thread keeping a copy of it (that copy becomes the active store, restoring only the
  changelog's tail); a task without a live copy stays (Spark's retry of the thread
  restores it). The lost thread keeps its home tasks as *warm-up* copies, at most
  ``max_warmups`` at once.
- :func:`move_back`: a home task whose warm-up copy has caught up (within
  ``acceptable.recovery.lag``) moves back to its home thread, and the thread that ran it
  keeps a copy again: Kafka Streams' probing rebalance.
- :func:`spread_standbys`: with ``rack.aware.assignment.tags``, once every thread's
  executor is known, the copies go to threads on executors with other tag values.

Example:
    >>> a = initial_assignment(4, 2, 1)
    >>> a.active, a.standby
    (((0, 2), (1, 3)), ((1, 3), (0, 2)))
    >>> b = fail_over(a, 1, 2)
    >>> b.active, b.standby
    (((0, 1, 2, 3), ()), ((), (0, 1, 2, 3)))
    >>> c = move_back(b, a, {(1, 1): 0, (1, 3): 50}, 10)
    >>> c.active, c.standby
    (((0, 2, 3), (1,)), ((1,), (0, 2, 3)))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kspark._plan.racks import spread_copies

__all__ = ["Assignment", "initial_assignment", "fail_over", "move_back", "spread_standbys"]


@dataclass(frozen=True)
class Assignment:
    """Per thread, the tasks it runs (``active``) and those it keeps warm copies of
    (``standby``: standbys and warm-ups), as indices into the run's task list."""

    active: tuple[tuple[int, ...], ...]
    standby: tuple[tuple[int, ...], ...]

    def owner(self, task: int) -> int:
        """The thread running ``task``."""
        return next(i for i, tasks in enumerate(self.active) if task in tasks)

    def keepers(self, task: int) -> list[int]:
        """The threads keeping a copy of ``task``."""
        return [i for i, tasks in enumerate(self.standby) if task in tasks]


def initial_assignment(tasks: int, threads: int, standbys: int) -> Assignment:
    """Home tasks, and ``standbys`` copies of each on the next threads (at most one copy
    per other thread: fewer when there are fewer other threads).

    >>> initial_assignment(3, 3, 5).standby
    ((1, 2), (0, 2), (0, 1))
    >>> initial_assignment(2, 1, 1).standby
    ((),)
    """
    active = tuple(tuple(range(i, tasks, threads)) for i in range(threads))
    copies = min(standbys, threads - 1)
    standby = tuple(tuple(sorted(t for k in range(1, copies + 1)
                                 for t in active[(i - k) % threads]))
                    for i in range(threads))
    return Assignment(active, standby)


def fail_over(a: Assignment, lost: int, max_warmups: int) -> Assignment:
    """``lost``'s tasks to the first thread keeping a copy of each (which keeps the copy no
    longer: it is the active store now); ``lost`` keeps warm-up copies of up to
    ``max_warmups`` of them, besides its copies of other threads' tasks (rebuilt wherever
    it runs next)."""
    active = [list(t) for t in a.active]
    standby = [list(t) for t in a.standby]
    moved: list[int] = []
    for task in a.active[lost]:
        keeper = next((k for k in a.keepers(task) if k != lost), None)
        if keeper is None:
            continue  # no copy anywhere: the task waits for its thread's retry
        active[lost].remove(task)
        active[keeper].append(task)
        standby[keeper].remove(task)
        moved.append(task)
    standby[lost] += moved[:max_warmups]
    return _sorted(active, standby)


def move_back(a: Assignment, home: Assignment, lags: Mapping[tuple[int, int], int],
              acceptable_lag: int) -> Assignment:
    """Each task away from its home thread whose home keeps a copy with a known lag (``lags``:
    (thread, task) -> changelog records behind) within ``acceptable_lag`` goes back home;
    the thread that ran it keeps a copy of it again if ``home`` has it keep one."""
    active = [list(t) for t in a.active]
    standby = [list(t) for t in a.standby]
    for thread, tasks in enumerate(home.active):
        for task in tasks:
            owner = a.owner(task)
            lag = lags.get((thread, task))
            if owner == thread or task not in a.standby[thread] or lag is None \
                    or lag > acceptable_lag:
                continue
            active[owner].remove(task)
            active[thread].append(task)
            standby[thread].remove(task)
            if task in home.standby[owner]:
                standby[owner].append(task)
    return _sorted(active, standby)


def _sorted(active: list[list[int]], standby: list[list[int]]) -> Assignment:
    return Assignment(tuple(tuple(sorted(t)) for t in active),
                      tuple(tuple(sorted(t)) for t in standby))


def spread_standbys(a: Assignment, executor_of: Mapping[int, str],
                    tags: Mapping[str, Mapping[str, str]], copies: int) -> Assignment:
    """``a`` with its standby copies placed by client tags (``rack.aware.assignment.tags``,
    see ``racks.py``): each task's ``copies`` copies on threads of other executors
    (``executor_of``: thread -> the executor it runs on), those whose executor's ``tags``
    differ most from the active's and the other copies'; warm-ups are dropped (this is
    done once, before any loss).

    >>> a = initial_assignment(3, 3, 1)
    >>> spread_standbys(a, {0: "e0", 1: "e1", 2: "e2"},
    ...                 {"e0": {"zone": "a"}, "e1": {"zone": "a"}, "e2": {"zone": "b"}}, 1).standby
    ((2,), (), (0, 1))
    """
    owners = {t: i for i, tasks in enumerate(a.active) for t in tasks}
    threads = sorted(executor_of)
    spread = spread_copies(owners, threads, copies,
                           {i: tags.get(executor_of[i], {}) for i in threads},
                           machine=lambda i: executor_of[i])
    return _sorted([list(t) for t in a.active],
                   [spread.get(i, []) for i in range(len(a.active))])
