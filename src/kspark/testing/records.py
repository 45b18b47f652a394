"""TestRecord, and the times and pairs the test topics take, as Java's test utilities take them.

A timestamp is an ``int`` (milliseconds since the epoch) or a ``datetime.datetime`` (a naive
one is read as UTC), as Java's ``long`` or ``Instant``; a duration is an ``int`` (ms) or a
``datetime.timedelta``, as Java's ``Duration``.

Example:
    >>> from datetime import datetime, timedelta
    >>> TestRecord("v")
    TestRecord(key=None, value='v', timestamp=None, headers=())
    >>> TestRecord("k", "v", datetime(1970, 1, 1, 0, 0, 1)).timestamp
    1000
    >>> to_millis(timedelta(seconds=2), "advance")
    2000
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from kspark._engine.api import Headers, normalize_headers
from kspark._engine.durations import to_epoch_ms, to_ms
from kspark.errors import KSparkError

__all__ = ["TestRecord", "NoSuchElementError", "to_timestamp", "to_millis", "key_value_of",
           "key_value"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS = timedelta(milliseconds=1)
UNSET: Any = object()  # a keyword not given (None is a value: a null key or value)

try:  # Java's KeyValue (kspark.processor's); plain tuples where it is missing
    from kspark.processor import KeyValue as _KeyValue
except ImportError:
    _KeyValue = None


class NoSuchElementError(KSparkError, IndexError):
    """Java's NoSuchElementException: a read from an output topic with no record left."""


def to_timestamp(ts: Any, what: str = "timestamp") -> int | None:
    """Milliseconds since the epoch of an ``int``, a ``datetime`` (naive: UTC) or None."""
    return None if ts is None else to_epoch_ms(ts, what)


def to_millis(duration: Any, what: str = "duration") -> int:
    """Milliseconds of an ``int`` or a ``timedelta``; a negative one raises, as Java's."""
    ms = to_ms(duration, what)
    if ms < 0:
        raise ValueError(f"{what} must not be negative: {duration!r}")
    return ms


def _is_time(x: Any) -> bool:
    return isinstance(x, datetime) or (isinstance(x, int) and not isinstance(x, bool))


def _is_headers(x: Any) -> bool:
    return isinstance(x, (Mapping, list, tuple))


def key_value_of(item: Any) -> tuple[Any, Any]:
    """``(key, value)`` of a KeyValue, any object with ``.key`` and ``.value``, or a pair."""
    if hasattr(item, "key") and hasattr(item, "value"):
        return item.key, item.value
    if not isinstance(item, (str, bytes)):
        try:
            k, v = item
            return k, v
        except (TypeError, ValueError):
            pass
    raise TypeError(f"expected a KeyValue or a (key, value) pair, got {item!r}")


def key_value(key: Any, value: Any) -> Any:
    """A KeyValue (a NamedTuple: equal to the tuple ``(key, value)``), else the tuple."""
    return (key, value) if _KeyValue is None else _KeyValue(key, value)


def _positional(args: tuple) -> dict[str, Any]:
    """Java's TestRecord constructors by position: (value), (key, value), (key, value,
    timestamp | headers), (key, value, timestamp, headers) or Java's (key, value, headers,
    timestamp)."""
    if len(args) == 1:
        return {"value": args[0]}
    if len(args) > 4:
        raise TypeError(f"TestRecord takes at most 4 positional arguments ({len(args)} given)")
    out = dict(zip(("key", "value"), args, strict=False))
    rest = args[2:]
    if len(rest) == 1:
        out["headers" if _is_headers(rest[0]) else "timestamp"] = rest[0]
    elif len(rest) == 2:
        java_order = _is_headers(rest[0]) or (rest[0] is None and _is_time(rest[1]))
        ts, headers = (rest[1], rest[0]) if java_order else rest
        out.update(timestamp=ts, headers=headers)
    return out


@dataclass(frozen=True, init=False)
class TestRecord:
    """A record piped in or read out of the driver: Java's ``TestRecord``.

    ``TestRecord(value)``, ``TestRecord(key, value)``, ``TestRecord(key, value, timestamp)``
    (an int in ms or a datetime), ``TestRecord(key, value, timestamp, headers)`` (Java's
    order ``(key, value, headers, timestamp)`` works too), or by keyword. ``timestamp`` is in
    ms, None when not set (the input topic then gives its current time); ``record_time`` is
    it as a UTC datetime. Java's getters: ``get_key()``, ``get_value()``, ``get_headers()``,
    ``get_record_time()`` (``key``, ``value`` and ``timestamp`` are attributes here).

    Example:
        >>> r = TestRecord("k", 7, 1_500, {"h": "x"})
        >>> r.key, r.value, r.timestamp, r.headers, r.record_time.isoformat()
        ('k', 7, 1500, (('h', b'x'),), '1970-01-01T00:00:01.500000+00:00')
    """

    __test__ = False  # not a pytest test class

    key: Any
    value: Any
    timestamp: int | None
    headers: Headers

    def __init__(self, *args: Any, key: Any = UNSET, value: Any = UNSET,
                 timestamp: Any = None, headers: Any = None):
        given = _positional(args) if args else {}
        for name, kw in (("key", key), ("value", value), ("timestamp", timestamp),
                         ("headers", headers)):
            if kw is UNSET or (kw is None and name in ("timestamp", "headers")):
                continue
            if name in given:
                raise TypeError(f"TestRecord got {name} both by position and by keyword")
            given[name] = kw
        object.__setattr__(self, "key", given.get("key"))
        object.__setattr__(self, "value", given.get("value"))
        object.__setattr__(self, "timestamp", to_timestamp(given.get("timestamp")))
        object.__setattr__(self, "headers", normalize_headers(given.get("headers")))

    @property
    def record_time(self) -> datetime | None:
        """The timestamp as a UTC datetime (Java's ``getRecordTime()``), None if not set."""
        return None if self.timestamp is None else _EPOCH + self.timestamp * _MS

    def get_key(self) -> Any:
        return self.key

    def get_value(self) -> Any:
        return self.value

    def get_headers(self) -> Headers:
        return self.headers

    def get_record_time(self) -> datetime | None:
        return self.record_time
