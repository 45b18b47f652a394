"""Windows and windowed keys: time windows (tumbling, hopping), as in Kafka Streams."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kspark._engine.durations import to_ms
from kspark.errors import SerializationError
from kspark.serde._base import cannot_deserialize

__all__ = ["Window", "Windowed", "TimeWindows", "TimeWindowedSerde", "SessionWindows",
           "SessionWindowedSerde", "SlidingWindows"]


@dataclass(frozen=True, order=True)
class Window:
    """A window ``[start, end)`` in ms (a sliding window's end is inclusive: ``[start, end]``).
    Its ``str`` is Java's ``Window.toString()``.

    >>> str(Window(0, 10))
    'Window{startMs=0, endMs=10}'
    """

    start: int
    end: int

    def __str__(self) -> str:
        return f"Window{{startMs={self.start}, endMs={self.end}}}"


@dataclass(frozen=True)
class Windowed:
    """A key and the window it was aggregated in. Its ``str`` is Java's ``Windowed.toString()``
    (``[key@start/end]``), so output keyed by a windowed key's text is Java's.

    >>> str(Windowed("a", Window(0, 10))), str(Windowed(None, Window(5, 7)))
    ('[a@0/10]', '[null@5/7]')
    """

    key: Any
    window: Window

    def __str__(self) -> str:
        return f"[{_java_text(self.key)}@{self.window.start}/{self.window.end}]"


def _java_text(value: Any) -> str:
    """``String.valueOf(value)`` for the values a key holds: null, true/false, numbers, text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class TimeWindows:
    """Fixed-size windows; tumbling unless ``advance_by`` makes them hop.

    Example:
        >>> w = TimeWindows.of_size_and_grace(10, 5).advance_by(5)
        >>> [(x.start, x.end) for x in w.windows_for(12)]
        [(5, 15), (10, 20)]
    """

    size_ms: int
    advance_ms: int
    grace_ms: int

    @staticmethod
    def of_size_with_no_grace(size_ms: Any) -> "TimeWindows":
        """Tumbling windows of ``size_ms`` (int ms or a ``timedelta``), no grace."""
        size = to_ms(size_ms, "window size")
        return TimeWindows._checked(size, size, 0)

    @staticmethod
    def of_size_and_grace(size_ms: Any, grace_ms: Any) -> "TimeWindows":
        """Tumbling windows of ``size_ms`` that accept records ``grace_ms`` late (each int
        ms or a ``timedelta``)."""
        size = to_ms(size_ms, "window size")
        return TimeWindows._checked(size, size, to_ms(grace_ms, "grace"))

    def advance_by(self, advance_ms: Any) -> "TimeWindows":
        """Hopping windows: a new window every ``advance_ms`` (at most the size)."""
        return TimeWindows._checked(self.size_ms, to_ms(advance_ms, "advance"), self.grace_ms)

    @staticmethod
    def _checked(size: int, advance: int, grace: int) -> "TimeWindows":
        if size <= 0 or not 0 < advance <= size or grace < 0:
            raise ValueError(f"invalid time windows: size {size} ms, advance {advance} ms, "
                             f"grace {grace} ms (need size > 0, 0 < advance <= size, grace >= 0)")
        return TimeWindows(size, advance, grace)

    def windows_for(self, timestamp: int) -> list[Window]:
        """Every window containing ``timestamp``, earliest first."""
        start = max(0, timestamp - self.size_ms + self.advance_ms)
        start -= start % self.advance_ms
        out = []
        while start <= timestamp:
            out.append(Window(start, start + self.size_ms))
            start += self.advance_ms
        return out


@dataclass(frozen=True)
class SlidingWindows:
    """Windows of ``time_difference_ms`` that slide with the records: two records of a key
    share a window when their timestamps differ by at most the time difference.

    Each record has a window ending at its timestamp, ``[t - d, t]``, and one starting just
    after it, ``[t + 1, t + 1 + d]`` (created once a later record falls in it); both ends
    are inclusive. Records later than the window end plus grace are dropped.

    Example:
        >>> w = SlidingWindows.of_time_difference_and_grace(10, 5)
        >>> (w.time_difference_ms, w.grace_ms)
        (10, 5)
    """

    time_difference_ms: int
    grace_ms: int

    @staticmethod
    def of_time_difference_with_no_grace(time_difference_ms: Any) -> "SlidingWindows":
        return SlidingWindows.of_time_difference_and_grace(time_difference_ms, 0)

    @staticmethod
    def of_time_difference_and_grace(time_difference_ms: Any, grace_ms: Any) -> "SlidingWindows":
        time_difference_ms = to_ms(time_difference_ms, "time difference")
        grace_ms = to_ms(grace_ms, "grace")
        if time_difference_ms <= 0 or grace_ms < 0:
            raise ValueError(f"invalid sliding windows: time difference {time_difference_ms} ms, "
                             f"grace {grace_ms} ms (need time difference > 0, grace >= 0)")
        return SlidingWindows(time_difference_ms, grace_ms)


def _check_windowed(serde: Any, topic: str, data: Any) -> None:
    if not isinstance(data, Windowed):
        raise SerializationError(
            f"{serde!r} cannot serialize {type(data).__name__} {data!r:.60} for topic {topic!r}: "
            "it takes Windowed keys (those of a windowed aggregation); use the key's own serde "
            "for plain keys")


def _check_length(serde: Any, topic: str, data: bytes, n: int) -> None:
    if len(data) < n:
        raise SerializationError(f"{serde!r} cannot deserialize {len(data)} bytes of {topic!r}: "
                                 f"a windowed key ends with {n} bytes of window; is it written "
                                 f"with another serde?")


def _inner(serde: Any, topic: str, data: bytes) -> Any:
    """The key inside a windowed key, any failure a SerializationError."""
    try:
        return serde.inner.deserialize(topic, data)
    except SerializationError:
        raise
    except Exception as e:
        raise cannot_deserialize(serde, topic, data, e) from e


class TimeWindowedSerde:
    """Windowed keys as the inner key's bytes plus the 8-byte window start (Java's layout)."""

    def __init__(self, inner: Any, window_size_ms: int):
        self.inner = inner
        self.window_size_ms = window_size_ms

    def serialize(self, topic: str, data: Windowed | None) -> bytes | None:
        if data is None:
            return None
        _check_windowed(self, topic, data)
        return (self.inner.serialize(topic, data.key)
                + data.window.start.to_bytes(8, "big", signed=True))

    def deserialize(self, topic: str, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        _check_length(self, topic, data, 8)
        start = int.from_bytes(data[-8:], "big", signed=True)
        return Windowed(_inner(self, topic, data[:-8]), Window(start, start + self.window_size_ms))

    def __repr__(self) -> str:
        return f"TimeWindowedSerde({self.inner!r}, {self.window_size_ms})"


@dataclass(frozen=True)
class SessionWindows:
    """Sessions: records of a key closer than ``gap_ms`` in time fall into one window.

    Example:
        >>> SessionWindows.of_inactivity_gap_and_grace(30, 10).gap_ms
        30
    """

    gap_ms: int
    grace_ms: int

    @staticmethod
    def of_inactivity_gap_with_no_grace(gap_ms: Any) -> "SessionWindows":
        return SessionWindows.of_inactivity_gap_and_grace(gap_ms, 0)

    @staticmethod
    def of_inactivity_gap_and_grace(gap_ms: Any, grace_ms: Any) -> "SessionWindows":
        gap_ms, grace_ms = to_ms(gap_ms, "inactivity gap"), to_ms(grace_ms, "grace")
        if gap_ms <= 0 or grace_ms < 0:
            raise ValueError(f"invalid session windows: gap {gap_ms} ms, grace {grace_ms} ms "
                             "(need gap > 0, grace >= 0)")
        return SessionWindows(gap_ms, grace_ms)


class SessionWindowedSerde:
    """Session-windowed keys as key bytes + 8-byte end + 8-byte start (Java's layout)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def serialize(self, topic: str, data: Windowed | None) -> bytes | None:
        if data is None:
            return None
        _check_windowed(self, topic, data)
        return (self.inner.serialize(topic, data.key)
                + data.window.end.to_bytes(8, "big", signed=True)
                + data.window.start.to_bytes(8, "big", signed=True))

    def deserialize(self, topic: str, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        _check_length(self, topic, data, 16)
        return Windowed(_inner(self, topic, data[:-16]),
                        Window(int.from_bytes(data[-8:], "big", signed=True),
                               int.from_bytes(data[-16:-8], "big", signed=True)))

    def __repr__(self) -> str:
        return f"SessionWindowedSerde({self.inner!r})"
