"""How a real-time stream thread's epoch failed, and what the driver makes of it.

>>> lost_worker(RuntimeError("Job aborted ... ExecutorLostFailure (executor 1 exited ...)"))
True
>>> first_line(RuntimeError("\\n Lost task 0.0: ExecutorLostFailure (executor 1)\\n at ..."))
'Lost task 0.0: ExecutorLostFailure (executor 1)'
"""

from __future__ import annotations

__all__ = ["MAX_LOST_EPOCHS", "HEALTHY_RUN_S", "lost_worker", "lost_in_a_row", "first_line",
           "ThreadFailureError"]


# How many epochs in a row may lose an executor or a Python worker before the run fails (as
# Spark's spark.stage.maxConsecutiveAttempts)
MAX_LOST_EPOCHS = 4
# An epoch that ran this long before it was lost counts as a healthy run: the losses before
# it are not "in a row" with the next (an epoch without a scheduled end ends only so)
HEALTHY_RUN_S = 60.0
_LOST = ("ExecutorLostFailure", "Python worker exited unexpectedly", "Executor heartbeat timed out")


def lost_in_a_row(lost: int, ran_s: float) -> int:
    """The epochs lost in a row before one that ran ``ran_s`` seconds and then ended: those
    before it (``lost``), or none when it ran :data:`HEALTHY_RUN_S` or more.

    >>> lost_in_a_row(3, 2.0), lost_in_a_row(3, 600.0)
    (3, 0)
    """
    return 0 if ran_s >= HEALTHY_RUN_S else lost


def lost_worker(error: BaseException) -> bool:
    """Whether an epoch's Spark job failed because an executor or a Python worker was lost
    (a new epoch is then the retry), not because a thread raised (kspark's or the topology's
    error: the run fails with it).

    >>> lost_worker(RuntimeError("Job aborted ... ExecutorLostFailure (executor 1 exited ...)"))
    True
    >>> lost_worker(RuntimeError("... ExecutorLostFailure ... PythonException: Traceback ..."))
    False
    """
    text = str(error)
    return "PythonException" not in text and any(s in text for s in _LOST)


def first_line(error: BaseException) -> str:
    """The line of ``error``'s text naming what was lost, else its first line."""
    lines = [x for x in str(error).splitlines() if x.strip()]
    cause = next((x for x in lines if any(s in x for s in _LOST)), lines[0] if lines else "")
    return cause.strip()[:300]


class ThreadFailureError(Exception):
    """A stream thread's own failure, as its Spark task returned it: ``Type: message`` of
    the error it raised (the topology's or kspark's, naming the task: what the driver
    decides by), and its ``traceback`` (for the log; its code lines may name any error: the
    run's :class:`~kspark.errors.RunFailedError` takes it as its ``desc``)."""

    def __init__(self, error: str, traceback: str = ""):
        super().__init__(error)
        self.traceback = traceback
