"""The live view of ``kspark run``: a line every few seconds and a summary at the end.

A :class:`Reading` is what one look at a running client saw: its state, its ``progress()``
and the two figures taken from its ``metrics()`` (lag per input topic, dropped records).
:func:`line` makes a line from two readings (the rates are the differences of the counts
over the monotonic time between them); :func:`summary` sums a run up. :class:`LiveView`
says when a line is due, and :func:`read` takes a reading and never raises: what could not
be read is left out of the line. Both execution modes give the same ``progress()`` shape,
so the view is the same in both.

Example:
    >>> class Name:
    ...     def __init__(self, group, name, **tags):
    ...         self.group, self.name, self.tags = group, name, tags
    >>> class Value:
    ...     def __init__(self, v):
    ...         self.v = v
    ...     def metric_value(self):
    ...         return self.v
    >>> lag = "consumer-fetch-manager-metrics", "records-lag"
    >>> metrics = {Name(*lag, topic="orders", partition="0"): Value(3),
    ...            Name(*lag, topic="orders", partition="1"): Value(4),
    ...            Name("stream-task-metrics", "dropped-records-total", **{"task-id": "0_0"}):
    ...                Value(2)}
    >>> before = Reading(10.0, "RUNNING", {"records_in": 1000, "records_out": 900})
    >>> after = Reading(15.0, "RUNNING", {"records_in": 6000, "records_out": 5900,
    ...                                   "commits": 12}, *metric_figures(metrics))
    >>> print(line(before, after))
    kspark run: RUNNING, in 6000 (1000/s), out 5900 (1000/s), lag orders=7, commits 12, restores 0, moves 0, dropped 2
    >>> print(summary("hourly", "finished its batch run", after, 20.0))
    kspark run: application 'hourly' finished its batch run: 6000 records in, 5900 records out, 20.0 s, 300 records/s; commits 12, restores 0, moves 0, dropped 2
"""  # noqa: E501

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_EVERY_S", "PREFIX", "Reading", "LiveView", "line", "summary",
           "metric_figures", "read"]

log = logging.getLogger("kspark")

DEFAULT_EVERY_S = 5.0
PREFIX = "kspark run: "
LAG = ("consumer-fetch-manager-metrics", "records-lag")
DROPPED = ("stream-task-metrics", "dropped-records-total")


@dataclass(frozen=True)
class Reading:
    """One look at a client at monotonic time ``at``: its state's name (None: not known),
    its ``progress()`` (a missing count is 0), its lag per input topic (None: the metrics
    have none; the line then shows ``progress()``'s total) and its dropped records (None:
    not known now, left out of the line)."""

    at: float
    state: str | None
    progress: Mapping[str, int] = field(default_factory=dict)
    lag: Mapping[str, int] | None = None
    dropped: int | None = None

    def count(self, key: str) -> int:
        """The progress count ``key``, 0 when missing.

        >>> Reading(0.0, None, {"commits": 3}).count("commits"), Reading(0.0, None).count("lag")
        (3, 0)
        """
        return int(self.progress.get(key, 0) or 0)


def _value(metric: Any) -> float:
    """A metric's value as a number: None, NaN or anything that is not a number is 0."""
    value = metric.metric_value()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return 0.0
    return float(value)


def metric_figures(metrics: Mapping[Any, Any]) -> tuple[dict[str, int] | None, int | None]:
    """``(lag per topic, dropped records)`` of a ``metrics()`` mapping (``MetricName`` ->
    metric): the ``records-lag`` of every partition summed per ``topic`` tag (None when
    there is none) and the sum of every task's ``dropped-records-total`` (0 when there is
    none). Keys without ``name`` and ``group`` are ignored; a mapping with no such key says
    nothing: ``(None, None)``.

    >>> metric_figures({"stream_threads": {}, "lag": {}})
    (None, None)
    """
    lag: dict[str, float] = {}
    dropped, named = 0.0, False
    for key, metric in metrics.items():
        group, name = getattr(key, "group", None), getattr(key, "name", None)
        if not isinstance(group, str) or not isinstance(name, str):
            continue
        named = True
        if (group, name) == LAG:
            topic = str((getattr(key, "tags", None) or {}).get("topic", "?"))
            lag[topic] = lag.get(topic, 0.0) + _value(metric)
        elif (group, name) == DROPPED:
            dropped += _value(metric)
    if not named:
        return None, None
    return ({t: round(n) for t, n in sorted(lag.items())} or None), round(dropped)


def read(streams: Any, now: float) -> Reading | None:
    """A reading of ``streams`` at ``now``; None when ``progress()`` could not be read. A
    ``state()`` or ``metrics()`` that raises leaves its part unknown: never an error."""
    try:
        progress = dict(streams.progress())
    except Exception:  # noqa: BLE001 - the view never ends the run
        log.debug("kspark run: progress() not known now", exc_info=True)
        return None
    try:
        state = streams.state()
        state_name: str | None = str(getattr(state, "name", state))
    except Exception:  # noqa: BLE001
        state_name = None
    try:
        lag, dropped = metric_figures(streams.metrics())
    except Exception:  # noqa: BLE001
        log.debug("kspark run: metrics() not known now", exc_info=True)
        lag, dropped = None, None
    return Reading(now, state_name, progress, lag, dropped)


def _rate(per_s: float) -> str:
    """A rate as shown: whole numbers, one decimal under 10.

    >>> _rate(4998.4), _rate(2.5), _rate(0.0)
    ('4998', '2.5', '0')
    """
    return f"{per_s:.1f}" if 0 < per_s < 10 else f"{per_s:.0f}"


def _per_s(before: Reading, after: Reading, key: str) -> float:
    """The rate of count ``key`` between two readings (0 when no time passed or it fell)."""
    elapsed = after.at - before.at
    if elapsed <= 0:
        return 0.0
    return max(0, after.count(key) - before.count(key)) / elapsed


def _lag(r: Reading) -> str:
    """``lag t1=n t2=m`` per input topic, else the total lag of ``progress()``."""
    if r.lag:
        return "lag " + " ".join(f"{t}={n}" for t, n in r.lag.items())
    return f"lag {r.count('lag')}"


def _tasks(r: Reading) -> str:
    """Commits, restores (with the records they restored) and task moves."""
    restored = r.count("restored_records")
    return (f"commits {r.count('commits')}, restores {r.count('task_restores')}"
            + (f" ({restored} records)" if restored else "") + f", moves {r.count('task_moves')}")


def line(before: Reading, after: Reading) -> str:
    """The live line for ``after``, its rates measured since ``before``: state, records in
    and out (total and per second), lag, commits, restores, moves, dropped records.

    >>> r0, r1 = Reading(0.0, None, {"lag": 5}), Reading(2.0, None, {"records_in": 5, "lag": 0})
    >>> line(r0, r1)
    'kspark run: in 5 (2.5/s), out 0 (0/s), lag 0, commits 0, restores 0, moves 0'
    """
    parts = [after.state] if after.state else []
    parts += [f"in {after.count('records_in')} ({_rate(_per_s(before, after, 'records_in'))}/s)",
              f"out {after.count('records_out')} "
              f"({_rate(_per_s(before, after, 'records_out'))}/s)",
              _lag(after), _tasks(after)]
    if after.dropped is not None:
        parts.append(f"dropped {after.dropped}")
    return PREFIX + ", ".join(parts)


def summary(app: str, ended: str, last: Reading, elapsed_s: float) -> str:
    """The run's last line: how it ``ended`` (``finished its batch run``, ``stopped``,
    ``interrupted``, ``failed``), records in and out, ``elapsed_s``, the average input
    rate, commits, restores, moves and dropped records (when known).

    >>> summary("a", "interrupted", Reading(9.0, "NOT_RUNNING", {"records_in": 50}), 0.0)
    "kspark run: application 'a' interrupted: 50 records in, 0 records out, 0.0 s, 0 records/s; commits 0, restores 0, moves 0"
    """  # noqa: E501
    rate = last.count("records_in") / elapsed_s if elapsed_s > 0 else 0.0
    tail = "" if last.dropped is None else f", dropped {last.dropped}"
    return (f"{PREFIX}application {app!r} {ended}: {last.count('records_in')} records in, "
            f"{last.count('records_out')} records out, {elapsed_s:.1f} s, {_rate(rate)} "
            f"records/s; {_tasks(last)}{tail}")


class LiveView:
    """When a line is due: every ``every_s`` seconds of monotonic time (0: never), each
    line's rates measured since the reading of the line before (the first: ``first``).

    >>> view = LiveView(5.0, Reading(0.0, "RUNNING", {"records_in": 0}))
    >>> view.tick(4.0, lambda: Reading(4.0, "RUNNING", {"records_in": 40})) is None
    True
    >>> view.tick(5.0, lambda: Reading(5.0, "RUNNING", {"records_in": 50}))
    'kspark run: RUNNING, in 50 (10/s), out 0 (0/s), lag 0, commits 0, restores 0, moves 0'
    """

    def __init__(self, every_s: float, first: Reading):
        self.every_s = every_s
        self.last = first

    def tick(self, now: float, take: Callable[[], Reading | None]) -> str | None:
        """The line due at ``now`` (``take`` reads the client), or None: not due yet, lines
        off, or no reading now (then it is due again at the next tick)."""
        if self.every_s <= 0 or now - self.last.at < self.every_s:
            return None
        reading = take()
        if reading is None:
            return None
        text = line(self.last, reading)
        self.last = reading
        return text
