"""A worker's task manager: what every hosted task on the worker is handed when it is made.

A worker process (a Spark Python worker) runs task after task: micro-batch after
micro-batch, or epoch after epoch of its stream threads. What outlives one of them is the
worker's: the tasks it keeps for its next batch or epoch (their in-memory stores are still
current), the query host that answers interactive queries for them, and the Kafka clients.
:class:`TaskManager` is the one place a hosted task's collaborators come from, as Kafka
Streams' ``TaskManager`` makes its thread's tasks: it keeps the tasks (:meth:`take`,
:meth:`keep`), and :meth:`~TaskManager.hosted` hands each new
:class:`~kspark._host.task.HostedTask` that shelf, the query listener, the application's
test hooks and its :class:`~kspark._host.port.TaskIO`. So ``task.py`` reaches no
process-wide singleton, and a test runs either driver over a manager of its own
(in-memory shelf, no queries, a fake port).

:func:`task_manager` is this process's (its registry's ``tasks``, its query host, Kafka);
reached through a function of an importable module, as every per-process thing is (see
``_worker.py``).

Example:
    >>> m = TaskManager()
    >>> m.keep(("app", "0_0"), "task", "host")
    >>> m.take(("app", "0_0")), m.take(("app", "0_0"))
    (('task', 'host'), None)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._host.context import HostContext
from kspark._host.port import QueryListener, TaskIO
from kspark._iq.host import query_host
from kspark._host.task import HostedTask
from kspark._worker import WorkerRegistry, registry
from kspark._host.kafka_io import kafka_task_io

__all__ = ["TaskManager", "task_manager", "NO_QUERIES"]

TaskIOFor = Callable[[HostContext, int], TaskIO]  # (context, partition) -> the task's port


class _NoQueries:
    """A listener that answers no queries (a test's manager's, by default)."""

    def hold(self, hosted: Any, task: Any = None, restoring: bool = False) -> None:
        pass

    def drop(self, app_id: str, task_id: str) -> None:
        pass

    def committed(self, hosted: Any) -> None:
        pass

    def to_disk(self, hosted: Any, task: Any) -> None:
        pass


NO_QUERIES: QueryListener = _NoQueries()


def _kafka_io(ctx: HostContext, partition: int) -> TaskIO:
    return kafka_task_io(ctx, partition)


class TaskManager:
    """One worker's tasks: ``kept`` holds the tasks kept between batches or epochs (its
    ``tasks`` entries, closed with their application), ``queries`` hears what happens to
    each task, ``io`` makes a task's port to Kafka. By default: a registry of its own, no
    queries, Kafka."""

    def __init__(self, kept: WorkerRegistry | None = None, queries: QueryListener | None = None,
                 io: TaskIOFor | None = None):
        self.kept = kept if kept is not None else WorkerRegistry()
        self.queries = queries if queries is not None else NO_QUERIES
        self.io = io if io is not None else _kafka_io

    def take(self, key: tuple[str, str]) -> tuple[Any, Any] | None:
        """The task kept under ``key`` (application id, task id) and its host state,
        removed from the shelf; None if none is."""
        return self.kept.pop("tasks", key)

    def keep(self, key: tuple[str, str], task: Any, host: Any) -> None:
        """Keep ``task`` (with its host state) for this worker's next batch or epoch."""
        self.kept.put("tasks", key, (task, host))

    def hosted(self, ctx: HostContext, partition: int, io: TaskIO | None = None,
               attempt: int = 0) -> HostedTask:
        """Task ``partition`` of ``ctx``'s sub-topology on this worker, handed what it uses:
        this manager as its shelf, the query listener, ``ctx``'s hooks, and ``io`` (by
        default this manager's port for it); ``attempt``: Spark's attempt number of the
        micro-batch's task (0 in real-time mode), which the hooks are told."""
        return HostedTask(ctx, partition, io if io is not None else self.io(ctx, partition),
                          shelf=self, queries=self.queries, hooks=ctx.hooks, attempt=attempt)


_MANAGER = TaskManager(registry(), query_host(), _kafka_io)


def task_manager() -> TaskManager:
    """This process's task manager: the tasks its registry keeps, its query host, Kafka."""
    return _MANAGER
