"""A micro-batch query that starts again after a transient Kafka failure.

When a broker restarts or a coordinator moves, a task retries in place for up to
``task.timeout.ms``; what only a new attempt can resolve ends the task with a
TransientKafkaError, which fails the Structured Streaming query. :class:`RestartingQuery`
then starts the query again from its checkpoint (the failed batch is replayed; each task's
marker makes the replay exact), as :func:`~kspark._host.rules.restart_after` decides — the
same rule the real-time loop applies to its epochs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kspark._host.rules import restart_after

__all__ = ["RestartingQuery"]

log = logging.getLogger("kspark")


class RestartingQuery:
    """What ``SparkApplication`` uses of a streaming query (``isActive``,
    ``awaitTermination``, ``stop``, ``exception``, ``lastProgress``) over the query
    ``start()`` makes, started again after a transient Kafka failure."""

    def __init__(self, start: Callable[[], Any], app_id: str, task_timeout_ms: int):
        self._start, self.app_id, self.task_timeout_ms = start, app_id, task_timeout_ms
        self.current = start()
        self.restarts: list[float] = []
        self._last_progress: Any = None
        self._error: BaseException | None = None
        self._stopping = False
        # asked when a failure is not transient: True runs the query again (the uncaught
        # exception handler's REPLACE_THREAD, see KafkaStreams.set_uncaught_exception_handler)
        self.on_failure: Callable[[BaseException, list[float]], bool] | None = None
        self._done = threading.Event()
        threading.Thread(target=self._watch, name="kspark-query-watch", daemon=True).start()

    def _watch(self) -> None:
        from pyspark.errors import StreamingQueryException

        try:
            while True:
                try:
                    self.current.awaitTermination()
                    return  # ended by itself (a batch run) or stopped
                except StreamingQueryException as e:
                    text = str(getattr(e, "desc", None) or e)
                    now = time.monotonic()
                    if self._stopping or not (
                            restart_after(text, self.restarts, now, self.task_timeout_ms)
                            or (self.on_failure is not None
                                and self.on_failure(e, self.restarts))):
                        self._error = e
                        return
                    self.restarts.append(now)
                    log.warning("application %r: the run ended on a transient failure "
                                "(%s); starting the query again from its last "
                                "commit (restart %d)", self.app_id, _cause(text),
                                len(self.restarts))
                    self._last_progress = self.lastProgress
                    self.current = self._start()
        except BaseException as e:  # noqa: BLE001 - the restart failed: that is the error
            self._error = e
        finally:
            self._done.set()

    @property
    def isActive(self) -> bool:  # noqa: N802 - a streaming query's name
        return not self._done.is_set()

    def ready(self) -> bool:
        """Whether the running query committed a micro-batch (its tasks are open and
        restored); False again after a restart until the new query commits one."""
        if self._done.is_set():
            return False
        try:
            return self.current.lastProgress is not None
        except Exception:  # noqa: BLE001 - a Connect server that stopped: not ready
            return False

    def _lost(self) -> bool:
        """Whether the query ended because its Spark Connect server stopped answering
        (asking it anything more would only wait for the client's retries again)."""
        from kspark._spark.connect import is_connect_error

        return self._done.is_set() and self._error is not None and is_connect_error(self._error)

    @property
    def lastProgress(self) -> Any:  # noqa: N802
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

    def exception(self) -> BaseException | None:
        return self._error

    def awaitTermination(self, timeout: float | None = None) -> bool:  # noqa: N802
        done = self._done.wait(timeout)
        if done and self._error is not None:
            raise self._error
        return done

    def stop(self) -> None:
        self._stopping = True
        if not self._lost():
            self.current.stop()
        self._done.wait(60)


def _cause(text: str) -> str:
    """The TransientKafkaError's (or its kind's) message in a failed query's text."""
    from kspark._host.rules import transient_names

    for line in text.splitlines():
        for name in transient_names():
            if f"{name}:" in line:
                return line.split(f"{name}:", 1)[1].strip()[:300]
    return text.strip().splitlines()[0][:300] if text.strip() else "?"
