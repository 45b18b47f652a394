"""Hooks a test injects into the Spark host's task lifecycle (faults, mostly).

Production code reads no test switch: a stage (micro-batch) or a stream thread's job
(real-time) carries the :class:`TaskHooks` of its ``HostContext``, given when it was made
(by value, to every worker). A test installs hooks in the driver before it starts an
application; contexts made after that carry them.

Example:
    >>> hook = FailAfterCommit(("0_1:3",))
    >>> hook("0_1", ("q", 2), 0), hook("0_1", ("q", 3), 1)
    (None, None)
    >>> hook("0_1", ("q", 3), 0)
    Traceback (most recent call last):
    ...
    RuntimeError: injected failure: task 0_1 after committing batch 3
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["TaskHooks", "FailAfterCommit", "install_task_hooks", "installed_task_hooks"]

# (task id, batch (query id, batch id) or None, attempt number) -> None
AfterCommit = Callable[[str, "tuple[str, int] | None", int], None]


@dataclass(frozen=True)
class TaskHooks:
    """``after_commit``: called at the end of each commit of a task
    (``HostedTask.commit``, in both execution modes), before the driver hears of it
    (raising there is an executor that died right after committing). It is told the task
    id, the commit's stamp and the attempt: micro-batch, (query id, batch id) and Spark's
    attempt number of the task; real-time, (the thread's run, the commit's number in it)
    and 0."""

    after_commit: AfterCommit | None = None


@dataclass(frozen=True)
class FailAfterCommit:
    """Fail the first attempt of each ``"<task id>:<batch id>"`` right after its commit."""

    specs: tuple[str, ...]

    def __call__(self, task_id: str, batch: tuple[str, int] | None, attempt: int) -> None:
        if batch is not None and attempt == 0 and f"{task_id}:{batch[1]}" in self.specs:
            raise RuntimeError(
                f"injected failure: task {task_id} after committing batch {batch[1]}")


_INSTALLED = [TaskHooks()]


def install_task_hooks(hooks: TaskHooks) -> None:
    """Hooks for the stages built from now on in this (driver) process."""
    _INSTALLED[0] = hooks


def installed_task_hooks() -> TaskHooks:
    return _INSTALLED[0]
