"""A running real-time thread taking tasks (``_spark/realtime/reassign.py``): the tasks
given to it open beside its loop, which goes on meanwhile; they join once open, and a
failed open fails the thread (raised by the loop)."""

from __future__ import annotations

import threading
from types import SimpleNamespace as N

import pytest

from kspark._spark.realtime import reassign as module
from kspark._spark.realtime.reassign import Reassigner


class TaskSpec(N):
    """What the Reassigner reads of a task's spec (hashable, as the loop's keys are)."""

    def __init__(self, sub_topology: int, partition: int, task_id: str):
        super().__init__(sub_topology=sub_topology, partition=partition, task_id=task_id)

    def __hash__(self) -> int:
        return hash(self.task_id)


class _Loop:
    """What the Reassigner uses of a ThreadLoop: its tasks and a watch with assignments."""

    def __init__(self, tasks):
        self.tasks = dict.fromkeys(tasks, "running")
        self.watch = N(assignment=lambda: self.assignment)
        self.assignment = None
        self.added, self.commits = [], 0
        self.reporter = N(add=lambda m: None, watch_standbys=lambda s: None)

    def commit(self):
        self.commits += 1

    def add_task(self, spec, task, starts):
        self.tasks[spec] = task
        self.added.append(spec)

    def drop_task(self, spec):
        self.tasks.pop(spec)
        return N(release=lambda: None)


def _reassigner(monkeypatch, opened: threading.Event, release: threading.Event,
                fail: bool = False):
    specs = [TaskSpec(0, i, f"0_{i}") for i in range(2)]

    def open_live_task(ctx, partition, run, stores):
        opened.set()
        assert release.wait(30)
        if fail:
            raise RuntimeError("fenced")
        return f"task {partition}"

    monkeypatch.setattr(module, "open_live_task", open_live_task)
    monkeypatch.setattr(module, "start_offsets", lambda ctx, epoch, s: [])
    monkeypatch.setattr(module, "standby_updater", lambda c, copies, e: N(copies=[],
                                                                          close=lambda: None))
    epoch = N(version=0, tasks=tuple(specs), interval_ms=100)
    standbys = N(copies=[], close=lambda: None)
    return Reassigner({0: None}, 0, epoch, "run", None, standbys), specs


def test_a_given_task_opens_beside_the_loop_and_joins_it_once_open(monkeypatch):
    opened, release = threading.Event(), threading.Event()
    r, (own, given) = _reassigner(monkeypatch, opened, release)
    loop = _Loop([own])
    loop.assignment = (1, ((0, 1),), ((),))
    r.check(loop)
    assert opened.wait(30)
    r.check(loop)  # the loop goes on while the task opens: nothing joined, nothing waited
    assert loop.added == [] and list(loop.tasks) == [own] and loop.commits == 0
    release.set()
    r.opening.join(30)
    r.check(loop)
    assert loop.added == [given] and loop.tasks[given] == "task 1"


def test_a_failed_open_fails_the_thread_from_its_loop(monkeypatch):
    opened, release = threading.Event(), threading.Event()
    r, (own, _) = _reassigner(monkeypatch, opened, release, fail=True)
    loop = _Loop([own])
    loop.assignment = (1, ((0, 1),), ((),))
    r.check(loop)
    release.set()
    r.opening.join(30)
    with pytest.raises(RuntimeError, match="fenced"):
        r.check(loop)
