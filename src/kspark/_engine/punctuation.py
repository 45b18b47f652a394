"""Punctuation: callbacks a processor schedules on stream time or on the wall clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

__all__ = ["PunctuationType", "Cancellable", "PunctuationSchedule", "PunctuationQueue"]


class PunctuationType(Enum):
    """What drives a punctuation: the task's stream time, or the system clock."""

    STREAM_TIME = "stream_time"
    WALL_CLOCK_TIME = "wall_clock_time"


class Cancellable:
    """Returned by ``ProcessorContext.schedule``; ``cancel()`` stops the punctuation."""

    def __init__(self, schedule: "PunctuationSchedule"):
        self._schedule = schedule

    def cancel(self) -> None:
        self._schedule.cancelled = True


@dataclass
class PunctuationSchedule:
    node: object
    interval_ms: int
    callback: Callable[[int], None]
    next_ms: int
    cancelled: bool = False
    key: str = ""  # "<node>#<n>": the node's n-th schedule, to resume it after a restart

    def advance(self, now: int) -> None:
        """Next due time after ``now``; punctuations missed in between are skipped, as in
        Kafka Streams."""
        nxt = self.next_ms + self.interval_ms
        if now >= nxt:
            nxt += self.interval_ms * ((now - nxt) // self.interval_ms + 1)
        self.next_ms = nxt


class PunctuationQueue:
    """The schedules of one punctuation type in one task."""

    def __init__(self) -> None:
        self.schedules: list[PunctuationSchedule] = []

    def add(self, schedule: PunctuationSchedule) -> Cancellable:
        self.schedules.append(schedule)
        return Cancellable(schedule)

    def due(self, now: int) -> list[PunctuationSchedule]:
        """The schedules due at ``now`` (each advanced past ``now``), in schedule order."""
        self.schedules = [s for s in self.schedules if not s.cancelled]
        fired = []
        for s in self.schedules:
            if s.next_ms <= now:
                s.advance(now)
                fired.append(s)
        return fired
