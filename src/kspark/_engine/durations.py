"""Durations and timestamps as a Kafka Streams user passes them: Java takes a ``Duration`` or
a ``long`` of milliseconds, an ``Instant`` or epoch milliseconds; kspark takes
``datetime.timedelta`` or ``int`` milliseconds, ``datetime.datetime`` or ``int`` epoch
milliseconds. Anything else is a ``TypeError`` naming the parameter.

Example:
    >>> from datetime import datetime, timedelta, timezone
    >>> to_ms(timedelta(minutes=5), "size"), to_ms(300_000, "size")
    (300000, 300000)
    >>> to_epoch_ms(datetime(2026, 1, 1, tzinfo=timezone.utc), "timestamp")
    1767225600000
    >>> to_ms("5m", "size")
    Traceback (most recent call last):
    ...
    TypeError: size must be a datetime.timedelta or an int of milliseconds, got str '5m'
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

__all__ = ["to_ms", "to_epoch_ms"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def to_ms(value: Any, what: str) -> int:
    """``value`` (a timedelta or int milliseconds) in whole milliseconds."""
    if isinstance(value, _dt.timedelta):
        return (value.days * 86_400 + value.seconds) * 1000 + value.microseconds // 1000
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"{what} must be a datetime.timedelta or an int of milliseconds, got "
                    f"{type(value).__name__} {value!r}")


def to_epoch_ms(value: Any, what: str) -> int:
    """``value`` (a datetime, naive ones read as UTC, or int epoch milliseconds) in epoch
    milliseconds."""
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.timezone.utc)
        return to_ms(aware - _EPOCH, what)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"{what} must be a datetime.datetime or an int of epoch milliseconds, got "
                    f"{type(value).__name__} {value!r}")
