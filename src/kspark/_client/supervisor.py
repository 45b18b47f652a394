"""The client's watch over its running application: the state machine moves as the run
does (``states.py``), without anyone calling ``await_termination()``.

:class:`Supervisor` asks the :class:`~kspark._host.runner.Runner` every ``every_s``: a run
that ended with an error moves the client to PENDING_ERROR and ERROR (within a poll of the
failure: the failed query or epoch ends its wait at once); a run that ended by itself (a
batch run reached its stop offsets: its tasks ran, so through RUNNING if it ended before
the supervisor saw it ready) to PENDING_SHUTDOWN and NOT_RUNNING; otherwise to
RUNNING while the runner is ready (its tasks open and restored) and REBALANCING while it is
not (starting, restoring, between real-time epochs, a query started again).

Example (a runner stand-in that fails at once):
    >>> from kspark._client.states import Lifecycle, State
    >>> class Failing:
    ...     def await_termination(self, timeout_s): raise RuntimeError("boom")
    ...     def ready(self): return False
    >>> life = Lifecycle(); _ = life.to(State.REBALANCING)
    >>> s = Supervisor(Failing(), life, every_s=0.01); s.start()
    >>> life.wait_for((State.ERROR,), 5.0), repr(s.error)
    (True, "RuntimeError('boom')")
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kspark._client.states import Lifecycle, State

__all__ = ["Supervisor"]

log = logging.getLogger("kspark")


class Supervisor:
    """Moves ``life`` with ``runner`` from a daemon thread until the run ends or
    :meth:`stop` is called; ``error``: the run's failure, once it failed."""

    def __init__(self, runner: Any, life: Lifecycle, every_s: float = 0.2):
        self.runner, self.life, self.every_s = runner, life, every_s
        self.error: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="kspark-supervisor",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (``close()``: the client moves itself), waiting for the thread."""
        self._stopping.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(30)

    def _watch(self) -> None:
        while not self._stopping.is_set():
            # readiness first, then the wait: a run that fails is not ready, and one that
            # failed just before this look is caught by the wait, never shown as REBALANCING
            ready = self._ready()
            try:
                ended = self.runner.await_termination(self.every_s)
            except Exception as e:  # noqa: BLE001 - the run's failure: the client's error
                if self._stopping.is_set():
                    return
                self.error = e
                self.life.to(State.PENDING_ERROR)
                self.life.to(State.ERROR)
                return
            if self._stopping.is_set():
                return
            if ended:  # its tasks ran (a batch run can end between two looks): RUNNING first
                self.life.to(State.RUNNING)
                self.life.to(State.PENDING_SHUTDOWN)
                self.life.to(State.NOT_RUNNING)
                return
            self.life.to(State.RUNNING if ready else State.REBALANCING)

    def _ready(self) -> bool:
        try:
            return bool(self.runner.ready())
        except Exception as e:  # noqa: BLE001 - a probe that fails is "not ready"
            log.debug("readiness check failed: %s", e)
            return False
