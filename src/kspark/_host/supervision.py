"""Supervision, written once for every execution mode: the handle of a running query, and
whether a failed run starts again.

A mode's driver starts its query and hands the application a :class:`RunHandle` (the
micro-batch mode's ``RestartingQuery``, the real-time mode's ``RealTimeQuery``); the
application asks it nothing else, and catches one error from it,
:class:`~kspark.errors.RunFailedError`.

Each supervised unit (the micro-batch query, or one real-time stream thread) keeps its own
:class:`Restarts`: when the unit fails, :meth:`Restarts.decide` says whether it starts again
and after how long a pause.

=============================================  ============================================
a unit ends with                               what happens
=============================================  ============================================
a TransientKafkaError (or a kind of it), a     it starts again from the last commit, after
task fenced by a zombie of the run before, or  :func:`back_off_s` (``retry.backoff.ms``,
one of Spark's own transient failures          doubled per restart, at most 10 s)
(:func:`~kspark._host.rules.restart_after`)
any other error, and the uncaught exception    the same (REPLACE_THREAD)
handler answers REPLACE_THREAD
either, but it restarted RESTARTS_PER_TIMEOUT  the run fails with that error
times within ``task.timeout.ms`` already
a TaskTimeoutError, or any other error the     the run fails with that error
handler does not replace
=============================================  ============================================

Example:
    >>> r = Restarts(task_timeout_ms=300_000, retry_backoff_ms=100)
    >>> again = r.decide("kspark.errors.TransientKafkaError: task 0_1: commit timed out",
    ...                  RuntimeError(), now=10.0)
    >>> again.count, again.why, again.delay_s
    (1, 'a transient failure', 0.1)
    >>> r.decide("kspark.errors.ProcessorError: task 0_1: boom", RuntimeError(), now=11.0)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kspark._host.rules import FENCED, replace_allowed, restart_after, transient_names

__all__ = ["RunHandle", "FailureHandler", "Restart", "Restarts", "back_off_s", "cause_of",
           "announce", "MAX_BACK_OFF_MS", "TRANSIENT", "REPLACED"]

log = logging.getLogger("kspark")

# The uncaught exception handler's say on a failure that is not transient: True when it
# answered REPLACE_THREAD (``KafkaStreams.set_uncaught_exception_handler``).
FailureHandler = Callable[[BaseException], bool]

MAX_BACK_OFF_MS = 10_000
TRANSIENT = "a transient failure"
REPLACED = "the uncaught exception handler replaced it"


class RunHandle(Protocol):
    """A running query, as the application uses it in every mode.

    ``await_termination`` raises the run's failure as a
    :class:`~kspark.errors.RunFailedError` (its only error); ``exception`` is that error
    once the run failed, else None.
    """

    def is_active(self) -> bool:
        """Whether the run has not ended (stopped, finished or failed)."""
        ...

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: until it ends): whether the run ended."""
        ...

    def stop(self) -> None:
        """Stop the run (its tasks commit, or are cancelled if they do not in time)."""
        ...

    def exception(self) -> BaseException | None:
        """The run's failure (a RunFailedError), once it failed."""
        ...

    def ready(self) -> bool:
        """Whether the run's tasks are open and restored (the client is RUNNING)."""
        ...


@dataclass(frozen=True)
class Restart:
    """A unit starts again: its ``count``-th restart within ``task.timeout.ms``, ``why``
    (:data:`TRANSIENT` or :data:`REPLACED`), the failure's ``cause`` (one line), and the
    pause before it starts (``delay_s``)."""

    count: int
    why: str
    cause: str
    delay_s: float

    def reason(self) -> str:
        """Why the unit starts again, as the log says it.

        >>> Restart(2, TRANSIENT, "x", 0.2).reason()
        'a transient failure, restart 2 within task.timeout.ms'
        """
        return f"{self.why}, restart {self.count} within task.timeout.ms"


class Restarts:
    """The restarts of one supervised unit (the micro-batch query, or one stream thread):
    their times, bounded within ``task.timeout.ms``, and the decision on each failure."""

    def __init__(self, task_timeout_ms: int, retry_backoff_ms: int = 0,
                 on_failure: FailureHandler | None = None):
        self.task_timeout_ms, self.retry_backoff_ms = task_timeout_ms, retry_backoff_ms
        self.on_failure = on_failure
        self.times: list[float] = []  # monotonic times of the restarts within the timeout

    def __len__(self) -> int:
        return len(self.times)

    def decide(self, text: str, error: BaseException, now: float | None = None
               ) -> Restart | None:
        """Whether the unit that failed with ``error`` (``text``: its failure's text, as
        the rules read it) starts again (see the module's table); a restart is counted.

        >>> r = Restarts(300_000, 100, on_failure=lambda e: True)
        >>> r.decide("kspark.errors.ProcessorError: boom", RuntimeError(), now=1.0).why
        'the uncaught exception handler replaced it'
        """
        now = time.monotonic() if now is None else now
        window = self.task_timeout_ms / 1000
        self.times = [t for t in self.times if now - t < window]
        if restart_after(text, self.times, now, self.task_timeout_ms):
            why = TRANSIENT
        elif (self.on_failure is not None and self.on_failure(error)
              and self._replace_allowed(now)):
            why = REPLACED
        else:
            return None
        self.times.append(now)
        return Restart(len(self.times), why, cause_of(text),
                       back_off_s(len(self.times), self.retry_backoff_ms))

    def _replace_allowed(self, now: float) -> bool:
        if replace_allowed(self.times, now, self.task_timeout_ms):
            return True
        log.error("the uncaught exception handler asked to replace the run again, but it "
                  "failed %d times within task.timeout.ms; the application fails",
                  len(self.times))
        return False

    def back_off_s(self) -> float:
        """The pause before the unit starts again after its latest restart."""
        return back_off_s(len(self.times), self.retry_backoff_ms)


def back_off_s(restarts: int, retry_backoff_ms: int) -> float:
    """The pause before a unit's ``restarts``-th restart within ``task.timeout.ms``:
    ``retry.backoff.ms``, doubled with each restart, at most :data:`MAX_BACK_OFF_MS` (so the
    restarts, bounded in number, span a cluster or registry outage rather than use
    themselves up).

    >>> [back_off_s(n, 100) for n in (1, 2, 3, 8, 9)]
    [0.1, 0.2, 0.4, 10.0, 10.0]
    >>> back_off_s(3, 0)
    0.0
    """
    return min(retry_backoff_ms * 2 ** max(0, restarts - 1), MAX_BACK_OFF_MS) / 1000


def cause_of(text: str) -> str:
    """The line of a failure's ``text`` naming its transient kind (from the error's name),
    else its first line; at most 300 characters.

    >>> cause_of("Job aborted\\n kspark.errors.TransientKafkaError: task 0_1: no answer")
    'TransientKafkaError: task 0_1: no answer'
    >>> cause_of("kspark.errors.ProcessorError: task 0_0, processor 'X': boom\\n  at ...")
    "kspark.errors.ProcessorError: task 0_0, processor 'X': boom"
    """
    for line in text.splitlines():
        for name in (*transient_names(), FENCED):
            if f"{name}:" in line:
                return line[line.index(name) + len("kspark.errors."):].strip()[:300]
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    return lines[0][:300] if lines else "?"


def announce(app_id: str, unit: str, cause: str, why: str, again: str) -> None:
    """The one log line of a unit starting again: ``unit`` ended with ``cause``, ``why`` it
    starts again, and ``again`` (how: "starting the query again", "starting a new epoch
    of it")."""
    log.warning("application %r: %s ended (%s): %s; %s from the last commit", app_id, unit,
                cause, why, again)
