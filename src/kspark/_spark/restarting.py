"""The micro-batch mode's run handle: a query that starts again after a transient failure.

When a broker restarts or a coordinator moves, a task retries in place for up to
``task.timeout.ms``; what only a new attempt can resolve ends the task with a
TransientKafkaError, which fails the Structured Streaming query. :class:`RestartingQuery`
then starts the query again from its checkpoint (the failed batch is replayed; each task's
marker makes the replay exact), as :class:`~kspark._host.supervision.Restarts` decides — the
same decision, bound and back-off the real-time mode applies to each stream thread.

:func:`run_failed` is how both modes' handles word a Spark failure as the one error the
application catches, :class:`~kspark.errors.RunFailedError`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kspark._host.supervision import FailureHandler, Restarts, RunHandle, announce
from kspark.errors import RunFailedError
from kspark._spark.connect import is_connect_error

__all__ = ["RestartingQuery", "run_failed"]

log = logging.getLogger("kspark")


def run_failed(error: BaseException, text: str | None = None) -> RunFailedError:
    """``error`` (a failed query's, a failed Spark job's, a stream thread's) as the run's
    failure; ``lost`` when it is a Spark Connect client's own (the server stopped
    answering), not a query's failure the server reported.

    >>> run_failed(RuntimeError("boom")).lost
    False
    """
    from pyspark.errors import StreamingQueryException


    if isinstance(error, RunFailedError):
        return error
    lost = is_connect_error(error) and not isinstance(error, StreamingQueryException)
    return RunFailedError(error, text, lost=lost)


class RestartingQuery(RunHandle):
    """The :class:`~kspark._host.supervision.RunHandle` over the Structured Streaming query
    ``start()`` makes, started again after a transient Kafka failure (or a REPLACE_THREAD
    answer of ``on_failure``) once its back-off is over."""

    def __init__(self, start: Callable[[], Any], app_id: str, task_timeout_ms: int,
                 retry_backoff_ms: int = 0, on_failure: FailureHandler | None = None):
        self._start, self.app_id = start, app_id
        self.restarts = Restarts(task_timeout_ms, retry_backoff_ms, on_failure)
        self.current = start()
        self._last_progress: Any = None
        self._error: RunFailedError | None = None
        self._stopping = threading.Event()
        self._restarting = False  # between a failed query and its successor
        self._lock = threading.Lock()  # a stop and a restart: one after the other
        self._done = threading.Event()
        threading.Thread(target=self._watch, name="kspark-query-watch", daemon=True).start()

    def _watch(self) -> None:
        try:
            while self._failed_again():
                pass
        except BaseException as e:  # noqa: BLE001 - the restart failed: that is the error
            self._error = run_failed(e)
        finally:
            self._done.set()

    def _failed_again(self) -> bool:
        """Wait for the running query to end: whether it failed and a successor runs now."""
        from pyspark.errors import StreamingQueryException

        try:
            self.current.awaitTermination()
            return False  # ended by itself (a batch run) or stopped
        except StreamingQueryException as e:
            failure = run_failed(e, str(getattr(e, "desc", None) or e))
        restart = None if self._stopping.is_set() else self.restarts.decide(str(failure),
                                                                            failure)
        if restart is None:
            self._error = failure
            return False
        announce(self.app_id, "the micro-batch query", restart.cause, restart.reason(),
                 "starting the query again")
        self._last_progress = self.last_progress()
        self._restarting = True
        if self._stopping.wait(restart.delay_s):
            return False  # stopped while it paused: nothing runs
        with self._lock:
            if self._stopping.is_set():
                return False
            self.current = self._start()
        self._restarting = False
        return True

    def is_active(self) -> bool:
        return not self._done.is_set()

    def ready(self) -> bool:
        """Whether the running query committed a micro-batch (its tasks are open and
        restored); False again after a failure until the new query commits one."""
        if self._done.is_set() or self._restarting:
            return False
        try:
            return self.current.lastProgress is not None
        except Exception:  # noqa: BLE001 - a Connect server that stopped: not ready
            return False

    def _lost(self) -> bool:
        """Whether the query ended because its Spark Connect server stopped answering
        (asking it anything more would only wait for the client's retries again)."""
        return self._done.is_set() and self._error is not None and self._error.lost

    def last_progress(self) -> Any:
        """The running query's last progress, else the last one known (a Spark Connect
        server that stopped answers nothing: the failure is the query's to report)."""
        if self._lost():
            return self._last_progress
        try:
            last = self.current.lastProgress
        except Exception as e:  # noqa: BLE001 - a Connect client's error, raised by the query
            log.debug("application %r: the query's progress is not known (%s)", self.app_id, e)
            return self._last_progress
        if last is not None:
            self._last_progress = last
        return last or self._last_progress

    def exception(self) -> RunFailedError | None:
        return self._error

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait for the run to end; raises its failure (a RunFailedError)."""
        done = self._done.wait(timeout)
        if done and self._error is not None:
            raise self._error
        return done

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
            current = self.current
        if not self._lost():
            current.stop()
        self._done.wait(60)
