"""The task runtime's ports: what a hosted task asks of the cluster, and of its worker.

:class:`TaskIO` is what it asks of Kafka: :class:`~kspark._host.kafka_io.KafkaTaskIO`
implements it over confluent-kafka; the unit tests implement it in memory
(``tests/unit/test_hosted_task.py``), so every transition of the lifecycle is tested without
a broker. The rest is what its worker hands it (``task_manager.py``): where tasks are kept
between batches (:class:`TaskShelf`), who answers interactive queries for them
(:class:`QueryListener`), and what the task's records go to (:class:`CountingCollector`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["TaskIO", "Output", "Transaction", "CountingCollector", "TaskShelf",
           "QueryListener"]

TP = tuple[str, int]


class Transaction(Protocol):
    """One task's transactional producer (``_kafka/transactions.py::TaskTransactions``)."""

    instance: str  # this producer instance's id, kept in the markers it commits

    def begin(self) -> None: ...

    def commit(self, marker: Any, input_offsets: Mapping[TP, int]) -> None: ...

    def fail(self, error: BaseException) -> BaseException: ...


@dataclass
class Output:
    """Where a task writes, opened for a batch: its last ``marker`` in Kafka (None: it
    never committed), its ``producer`` (a record collector) and, under exactly-once, its
    ``tx`` (None under at-least-once, and for a ``replay``: a batch the marker shows
    committed already, which writes nothing)."""

    marker: Any
    producer: Any
    tx: Transaction | None = None
    replay: bool = False


class TaskIO(Protocol):
    """What one task needs of Kafka (see the module docstring)."""

    def open_output(self, batch: tuple[str, int] | None, fence: bool) -> Output:
        """The task's marker and producer (exactly-once: its transaction, not begun; a new
        producer whose ``init_transactions`` fences older attempts when ``fence``, or when
        this worker's producer did not make the last commit)."""
        ...

    def commit_offsets(self, inputs: Mapping[TP, int], marker: Any) -> None:
        """At-least-once: the input offsets and the marker, in one request."""
        ...

    def changelog_ends(self, task: Any) -> dict[TP, int]:
        """The end offsets of the task's logged stores' changelog partitions."""
        ...

    def restore(self, task: Any, batch: tuple[str, int] | None, saved: Any, again: bool,
                host: Any) -> dict[TP, int]:
        """Bring a new task's stores to its changelogs' ends and resume ``saved`` progress
        (``_host/restore.py::restore_task``); the changelog ends."""
        ...

    def invalidate_checkpoint(self, task: Any) -> None:
        """Delete the task's local checkpoint (before its stores are written down)."""
        ...

    def checkpoint(self, task: Any, host: Any) -> dict[TP, int]:
        """Write the task's local checkpoint after a commit; the changelog ends."""
        ...


class CountingCollector(Protocol):
    """A task's record collector (``_spark/routing.py::RoutingCollector`` in both modes),
    counting what it sent: ``sent`` records to Kafka, of which ``logged`` to changelogs."""

    sent: int
    logged: int

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
             headers: Any, partition: int | None) -> None: ...

    def flush(self) -> None: ...


class TaskShelf(Protocol):
    """Where a worker keeps tasks between its batches or epochs (key: application id, task
    id), each with its host state."""

    def take(self, key: tuple[str, str]) -> tuple[Any, Any] | None:
        """The task kept under ``key`` and its host state, removed; None if none is."""
        ...

    def keep(self, key: tuple[str, str], task: Any, host: Any) -> None: ...


class QueryListener(Protocol):
    """Who answers interactive queries for a worker's tasks (``_iq/host.py::QueryHost``),
    told what happens to each."""

    def hold(self, hosted: Any, task: Any = None, restoring: bool = False) -> None:
        """``hosted``'s task (or ``task``, while it restores) answers from here now."""
        ...

    def drop(self, app_id: str, task_id: str) -> None:
        """The task's stores close: nothing is answered for it here any more."""
        ...

    def committed(self, hosted: Any) -> None:
        """After a commit (under the task's lock): the position it reflects."""
        ...

    def to_disk(self, hosted: Any, task: Any) -> None:
        """``hosted``'s ``task`` closes its persistent stores: answer from their files."""
        ...
