"""The task runtime's decisions, as small pure functions (their tests: ``test_host_rules.py``).

==========================================  =============================================
what a worker finds when a task opens        what happens
==========================================  =============================================
it kept the task, and the task's marker in   the kept task runs on (:func:`keep_if_current`)
Kafka is the kept task's last commit, and
its changelogs end where it left them
Kafka holds another task's marker (another   the kept task is closed; a new one is built
worker committed since)                      and restored from the changelogs
Kafka holds no marker, but the kept task     closed: the application was reset (or its
committed one                                group's offsets deleted); its stores and
                                             stream time are of before the reset
a changelog moved past where the kept task   closed (another worker wrote it since)
left it
the batch is one this task committed (Spark  closed: its stores already hold the batch
runs it again)
==========================================  =============================================

The commit is one order in both execution modes (:data:`COMMIT_STEPS`), Kafka Streams'
``prepareCommit`` / commit / ``postCommit``: the checkpoint is invalidated and the stores
and output flushed; then the transaction (exactly-once) or the input offsets with the
marker (at-least-once) are committed; only then does the host record the marker as the
task's last commit (it records what Kafka holds, never what it hopes to write); last, the
stores are checkpointed. A crash before the commit leaves no marker and no checkpoint; a
crash between the commit and the checkpoint leaves the marker and no checkpoint, so the
next owner restores from the changelogs. Either way no stale local state survives.

When Kafka itself fails (a broker restarts, a coordinator moves) a task retries in place
for up to ``task.timeout.ms`` (``_kafka/retry.py``); what only a new attempt can resolve (a
transaction whose outcome is unknown, or one that must be aborted) ends the attempt with a
TransientKafkaError, and the run starts again from the last commit — in both modes, by
:func:`restart_after`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from kspark.errors import TransientKafkaError

__all__ = ["COMMIT_STEPS", "same_commit", "keep_if_current", "restart_after",
           "replace_allowed", "RESTARTS_PER_TIMEOUT"]

TP = tuple[str, int]

# The one commit order (see the module docstring); HostedTask.commit follows it.
COMMIT_STEPS = ("invalidate_checkpoint", "flush", "commit", "record_marker", "checkpoint")


def same_commit(mine: Any, committed: Any) -> bool:
    """Whether ``committed`` (the task's marker in Kafka, or None) is the commit ``mine``
    (the marker a kept task recorded last, or None) made: the same batch by the same
    producer. Neither having committed counts as the same.

    Example:
        >>> from kspark._kafka.transactions import Marker
        >>> a = Marker("q", 3, None, None, producer="p1")
        >>> same_commit(a, a), same_commit(a, Marker("q", 3, None, None, producer="p2"))
        (True, False)
        >>> same_commit(None, None), same_commit(a, None), same_commit(None, a)
        (True, False, False)
    """
    if mine is None or committed is None:
        return mine is None and committed is None
    return (mine.query, mine.batch, mine.producer) == (committed.query, committed.batch,
                                                         committed.producer)


def keep_if_current(mine: Any, committed: Any, kept_ends: Mapping[TP, int],
                    ends_now: Callable[[], Mapping[TP, int]], again: bool = False) -> bool:
    """Whether a worker may run on with the task it kept: it made the task's last commit
    (:func:`same_commit`), its changelogs still end where it left them (``ends_now`` is
    asked only then: it reads Kafka), and the batch to run is not one it committed
    already (``again``). One rule for both execution modes.

    Example:
        >>> from kspark._kafka.transactions import Marker
        >>> m = Marker("q", 3, None, None, producer="p1")
        >>> keep_if_current(m, m, {("c", 0): 5}, lambda: {("c", 0): 5})
        True
        >>> keep_if_current(m, None, {}, lambda: {})  # Kafka forgot it: a reset
        False
    """
    if again or not same_commit(mine, committed):
        return False
    return not kept_ends or dict(ends_now()) == dict(kept_ends)


# At most this many restarts after transient Kafka failures within task.timeout.ms.
RESTARTS_PER_TIMEOUT = 10

# Spark's own failures that a new attempt resolves: a Python worker that did not connect
# back within Spark's fixed 10 s (a fresh interpreter starting on a machine busy enough);
# nothing of the run was written, so it starts again from its last commit like any other.
SPARK_TRANSIENT = ("Python worker failed to connect back",)

# A task attempt fenced by a newer attempt of the same task: within one application (a
# second instance is refused at start) that is an attempt of the run before, still finishing
# after its run failed (Spark cancels a job's other tasks without waiting for their Python
# workers), which opened its producer after the new run's. As Kafka Streams' thread rejoins
# after a TaskMigratedException, the run starts again: its new attempt fences the zombie.
FENCED = "kspark.errors.TaskFencedError"


def transient_names() -> tuple[str, ...]:
    """The qualified names of TransientKafkaError and its kinds (a schema registry away,
    ...), as a failed run's text names them.

    >>> "kspark.errors.SchemaRegistryUnreachableError" in transient_names()
    True
    """
    kinds = [TransientKafkaError]
    for kind in kinds:
        kinds.extend(kind.__subclasses__())
    return tuple(f"kspark.errors.{k.__name__}" for k in kinds)


def restart_after(failure: str, restarts: list[float], now: float,
                  task_timeout_ms: int) -> bool:
    """Whether a run (a micro-batch query, a real-time epoch) that failed with ``failure``
    (its text) starts again: only after a TransientKafkaError (the attempt was abandoned
    while the cluster recovered; the new one fences it and replays from the last commit),
    a task attempt fenced by another (:data:`FENCED`) or one of Spark's own transient
    failures (:data:`SPARK_TRANSIENT`), never after a
    TaskTimeoutError (the cluster stayed away longer than task.timeout.ms) or
    any other error, and at most RESTARTS_PER_TIMEOUT times within task.timeout.ms
    (``restarts``: the monotonic times of the earlier restarts).

    >>> restart_after("kspark.errors.TransientKafkaError: task 0_1: ...", [], 100.0, 300_000)
    True
    >>> restart_after("kspark.errors.TaskTimeoutError: task 0_1: ...", [], 100.0, 300_000)
    False
    """
    transient = (*transient_names(), FENCED, *SPARK_TRANSIENT)
    if not any(name in failure for name in transient) or "TaskTimeoutError" in failure:
        return False
    recent = [t for t in restarts if now - t < task_timeout_ms / 1000]
    return len(recent) < RESTARTS_PER_TIMEOUT


def replace_allowed(restarts: list[float], now: float, task_timeout_ms: int) -> bool:
    """Whether a run the uncaught exception handler asked to replace (REPLACE_THREAD) may
    start again: as after a transient failure, at most RESTARTS_PER_TIMEOUT times within
    task.timeout.ms, so a task that fails on every attempt ends the application.

    >>> replace_allowed([], 100.0, 300_000)
    True
    >>> replace_allowed([99.0] * RESTARTS_PER_TIMEOUT, 100.0, 300_000)
    False
    """
    return len([t for t in restarts if now - t < task_timeout_ms / 1000]) < RESTARTS_PER_TIMEOUT
