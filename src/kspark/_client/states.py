"""A KafkaStreams client's state, as Kafka Streams' ``KafkaStreams.State``, and the state
listener; what the uncaught-exception handler (KIP-671) answers.

========================  ======================================================
state                     on Spark
========================  ======================================================
CREATED                   built, not started
REBALANCING               starting: checks, topics, the query; tasks opening and
                          restoring; a new real-time epoch or a restarted query
RUNNING                   processing: a micro-batch committed, or every stream
                          thread of the epoch reported
PENDING_SHUTDOWN          ``close()`` (or a batch run's end) is stopping the query
NOT_RUNNING               stopped
PENDING_ERROR             the query failed and the handler did not replace it
ERROR                     stopped after a failure
========================  ======================================================

Example:
    >>> seen = []
    >>> life = Lifecycle(lambda new, old: seen.append((old.name, new.name)))
    >>> life.to(State.REBALANCING); life.to(State.RUNNING); life.to(State.PENDING_ERROR)
    True
    True
    True
    >>> life.to(State.RUNNING)  # not a transition Java allows: refused, nothing changes
    False
    >>> life.to(State.ERROR), life.state.name, seen[-1]
    (True, 'ERROR', ('PENDING_ERROR', 'ERROR'))
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["State", "Lifecycle", "StreamThreadExceptionResponse", "StateListener"]

log = logging.getLogger("kspark")


class State(str, enum.Enum):
    """Kafka Streams' client states; ``valid_transition_to`` as Java's. A state equals its
    name (``state() == "RUNNING"``).

    >>> State.RUNNING == "RUNNING", State.RUNNING.name
    (True, 'RUNNING')
    """

    CREATED = "CREATED"
    REBALANCING = "REBALANCING"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    NOT_RUNNING = "NOT_RUNNING"
    PENDING_ERROR = "PENDING_ERROR"
    ERROR = "ERROR"

    def __str__(self) -> str:
        return self.value

    def valid_transition_to(self, new: State) -> bool:
        """Whether Java's state machine allows ``self`` -> ``new``.

        >>> State.CREATED.valid_transition_to(State.RUNNING)
        False
        """
        return new.name in _NEXT[self.name]

    def is_running_or_rebalancing(self) -> bool:
        return self in (State.RUNNING, State.REBALANCING)

    def has_started_or_finished_shutting_down(self) -> bool:
        return self in (State.PENDING_SHUTDOWN, State.NOT_RUNNING, State.PENDING_ERROR,
                        State.ERROR)


# Java's KafkaStreams.State(validTransitions...)
_NEXT = {"CREATED": ("REBALANCING", "PENDING_SHUTDOWN"),
         "REBALANCING": ("RUNNING", "PENDING_SHUTDOWN", "PENDING_ERROR"),
         "RUNNING": ("REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "PENDING_ERROR"),
         "PENDING_SHUTDOWN": ("NOT_RUNNING",), "NOT_RUNNING": (),
         "PENDING_ERROR": ("ERROR",), "ERROR": ()}


class StreamThreadExceptionResponse(enum.Enum):
    """What a ``StreamsUncaughtExceptionHandler`` answers (KIP-671): REPLACE_THREAD runs
    the failed query or real-time epoch again from the last commit (at most
    ``RESTARTS_PER_TIMEOUT`` times within ``task.timeout.ms``); SHUTDOWN_CLIENT stops the
    application (ERROR), as does SHUTDOWN_APPLICATION (a kspark application is one client:
    its driver)."""

    REPLACE_THREAD = 0
    SHUTDOWN_CLIENT = 1
    SHUTDOWN_APPLICATION = 2


StateListener = Callable[[State, State], Any]


class Lifecycle:
    """The client's state and its listener (called ``listener(new, old)`` after each
    change, outside the lock; a listener that raises is logged, never fatal)."""

    def __init__(self, listener: StateListener | None = None):
        self.state = State.CREATED
        self.listener = listener
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    def to(self, new: State) -> bool:
        """Move to ``new`` if Java allows it from the current state; whether it moved (a
        move to the current state is no change and calls no listener)."""
        with self._lock:
            old = self.state
            if old is new or not old.valid_transition_to(new):
                return False
            self.state = new
            self._changed.notify_all()
        if self.listener is not None:
            try:
                self.listener(new, old)
            except Exception:  # noqa: BLE001 - a user's listener never stops the client
                log.exception("the state listener raised on %s -> %s", old.name, new.name)
        return True

    def wait_for(self, states: tuple[State, ...], timeout_s: float | None) -> bool:
        """Wait until the state is one of ``states``; whether it is."""
        with self._lock:
            return self._changed.wait_for(lambda: self.state in states, timeout_s)
