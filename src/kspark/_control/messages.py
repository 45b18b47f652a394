"""The messages of an application's control topic (``<application.id>-kspark-control``), typed.

Each message is a frozen dataclass whose :meth:`encode` gives the record's key and its JSON
value, and whose ``decode`` reads a value back checking every field it reads for its type
(JSON only: nothing is evaluated). :func:`decode` picks the message by the record's key;
:func:`read_message` does so for a consumed record and skips (with a warning naming the
topic, partition and offset) one that is not the message its key names, so a malformed
record never fails the reader. Keys that are not listed here (the query routes of
``_iq/routes.py``) are left to their own readers.

- :class:`TaskReport` (key ``task``): what a committed micro-batch task batch counted;
- :class:`ThreadReport` (key ``metrics``): a real-time stream thread's live metrics, keyed
  by the run of its epoch;
- :class:`Stop` (key ``stop``): the driver asks every thread of a run to commit and end;
- :class:`Assignment` (key ``assign``): the driver's new assignment of a run's tasks.

Example:
    >>> key, value = TaskReport("0_1", 7, {"records_in": 3}).encode()
    >>> key, decode(key, value)
    (b'task', TaskReport(task='0_1', batch=7, counts={'records_in': 3}))
    >>> decode(b"task", b'{"task": "0_1", "batch": 7, "counts": {"records_in": "3"}}')
    Traceback (most recent call last):
    ...
    kspark._control.json_checks.MalformedMessageError: 'counts': 'records_in': not an integer: '3'
    >>> decode(b"route", b"{}") is None  # another reader's record
    True
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

from kspark._control.json_checks import (MalformedMessageError, async_counters,
                                         check_fields, counts, index_lists, int_map, integer,
                                         number, optional_int, partition_map, partitions,
                                         string, strings)

__all__ = ["TaskReport", "ThreadReport", "Stop", "Assignment", "Message", "MalformedMessageError",
           "decode", "read_message"]

log = logging.getLogger("kspark")


@dataclass(frozen=True)
class TaskReport:
    """What task ``task`` counted in committed micro-batch ``batch`` (None outside a
    streaming query): ``counts``, a ``TaskMetrics.to_dict()`` (``_host/metrics.py``)."""

    KEY: ClassVar[bytes] = b"task"
    task: str
    batch: int | None
    counts: dict[str, Any]

    def encode(self) -> tuple[bytes, bytes]:
        return self.KEY, _json({"task": self.task, "batch": self.batch,
                                "counts": self.counts})

    @classmethod
    def decode(cls, value: bytes | None) -> TaskReport:
        return cls(**check_fields(_object(value), {
            "task": string, "batch": optional_int, "counts": counts}))

    @property
    def summary(self) -> str:
        return f"the counts of task {self.task}"


@dataclass(frozen=True)
class ThreadReport:
    """Stream thread ``thread``'s live metrics in the epoch of run ``run`` (attempt
    ``attempt``): records read and written and commits so far, the process rate and commit
    latencies of the last window, ``lag`` per input partition (``topic:partition``),
    ``committed`` (its commits' counts: what the driver keeps of an epoch lost before it
    returns), ``async_`` (the async steps' counters), ``standby`` (per task id the lag of
    its copy), ``active`` (its task ids) and ``changelogs`` (``thread_metrics.
    changelog_positions``).

    >>> r = ThreadReport(run="rt-0", thread=1, records_in=5, lag={"in:0": 2})
    >>> ThreadReport.decode(r.encode()[1]) == r
    True
    """

    KEY: ClassVar[bytes] = b"metrics"
    run: str = ""
    thread: int = 0
    records_in: int = 0
    records_out: int = 0
    commits: int = 0
    process_rate: float = 0.0
    commit_latency_avg_ms: float = 0.0
    commit_latency_max_ms: float = 0.0
    lag: dict[str, int] = field(default_factory=dict)
    committed: dict[str, Any] = field(default_factory=dict)
    async_: dict[str, dict[str, float]] = field(default_factory=dict)
    attempt: str = ""
    standby: dict[str, int] = field(default_factory=dict)
    active: tuple[str, ...] = ()
    changelogs: dict[str, Any] = field(default_factory=dict)

    def encode(self) -> tuple[bytes, bytes]:
        out = {name: getattr(self, attr) for name, attr in _THREAD_FIELDS}
        out["active"] = list(self.active)
        return self.KEY, _json(out)

    @classmethod
    def decode(cls, value: bytes | None) -> ThreadReport:
        checks = {name: _THREAD_CHECKS[attr] for name, attr in _THREAD_FIELDS}
        got = check_fields(_object(value), checks, required=("run", "thread"))
        return cls(**{attr: got[name] for name, attr in _THREAD_FIELDS if name in got})

    @property
    def summary(self) -> str:
        return f"the metrics of stream thread {self.thread} of run {self.run}"


def _changelogs(value: Any) -> dict[str, Any]:
    """``{"active": [topic:partition, ...], "standby": {topic:partition: offset}}``."""
    return check_fields(value, {"active": lambda v: list(partitions(v)),
                                "standby": partition_map}, required=())


_THREAD_CHECKS: dict[str, Callable[[Any], Any]] = {
    "run": string, "thread": integer, "records_in": integer, "records_out": integer,
    "commits": integer, "process_rate": number, "commit_latency_avg_ms": number,
    "commit_latency_max_ms": number, "lag": partition_map, "committed": counts,
    "async_": async_counters, "attempt": string,
    "standby": int_map, "active": strings, "changelogs": _changelogs}
# (JSON name, attribute): the JSON names are the attributes', but "async"
_THREAD_FIELDS = tuple(("async" if a == "async_" else a, a) for a in _THREAD_CHECKS)


@dataclass(frozen=True)
class Stop:
    """The driver asks every thread of run ``run`` (an epoch's, or the whole query's) to
    commit and end."""

    KEY: ClassVar[bytes] = b"stop"
    run: str

    def encode(self) -> tuple[bytes, bytes]:
        return self.KEY, _json({"run": self.run})

    @classmethod
    def decode(cls, value: bytes | None) -> Stop:
        return cls(**check_fields(_object(value), {"run": string}))

    @property
    def summary(self) -> str:
        return f"the stop of run {self.run}"


@dataclass(frozen=True)
class Assignment:
    """Version ``version`` of the assignment of run ``query``'s tasks: per thread the tasks
    it runs (``active``) and those it keeps copies of (``standby``), as indices into the
    run's tasks.

    >>> Assignment.decode(Assignment("q", 2, ((0, 2), (1,)), ((1,), ())).encode()[1]).active
    ((0, 2), (1,))
    """

    KEY: ClassVar[bytes] = b"assign"
    query: str
    version: int
    active: tuple[tuple[int, ...], ...]
    standby: tuple[tuple[int, ...], ...]

    def encode(self) -> tuple[bytes, bytes]:
        return self.KEY, _json({"query": self.query, "version": self.version,
                                "active": [list(a) for a in self.active],
                                "standby": [list(s) for s in self.standby]})

    @classmethod
    def decode(cls, value: bytes | None) -> Assignment:
        return cls(**check_fields(_object(value), {
            "query": string, "version": integer, "active": index_lists,
            "standby": index_lists}))

    @property
    def summary(self) -> str:
        return f"assignment {self.version} of run {self.query}"


Message = Union[TaskReport, ThreadReport, Stop, Assignment]
MESSAGES: dict[bytes, Any] = {m.KEY: m for m in (TaskReport, ThreadReport, Stop, Assignment)}


def decode(key: bytes | None, value: bytes | None) -> Message | None:
    """The message of a record with ``key`` and ``value``; None if ``key`` names none of
    these (another reader's record); raises :class:`MalformedMessageError` if the value is not the
    message its key names."""
    kind = MESSAGES.get(key) if key is not None else None
    return None if kind is None else kind.decode(value)


def read_message(record: Any) -> Message | None:
    """The message of a consumed ``record`` (a confluent_kafka Message), or None: a record
    that is an error, another reader's, or not the message its key names (skipped, with
    a warning naming the topic, partition and offset)."""
    if record.error() is not None:
        return None
    try:
        return decode(record.key(), record.value())
    except MalformedMessageError as e:
        log.warning("control topic %r partition %d offset %d: a %r record that is not one was "
                    "skipped (%s)", record.topic(), record.partition(), record.offset(),
                    (record.key() or b"").decode(errors="replace"), e)
        return None


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _refuse_constant(name: str) -> Any:
    raise MalformedMessageError(f"not JSON: {name}")


def _object(value: bytes | None) -> dict[str, Any]:
    """A JSON object (NaN and the infinities refused, as JSON has none)."""
    if not isinstance(value, (bytes, bytearray)):
        raise MalformedMessageError("no value")
    try:
        out = json.loads(value, parse_constant=_refuse_constant)
    except MalformedMessageError:
        raise
    except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, nested too deep
        raise MalformedMessageError(f"not JSON: {type(e).__name__}") from None
    if not isinstance(out, dict):
        raise MalformedMessageError(f"not a JSON object: {type(out).__name__}")
    return out
