"""Checks of the JSON values the control topic's messages read back (``messages.py``): each
returns the value (as the message holds it) or raises :class:`MalformedMessageError` saying
what is wrong, so that a record written by something else never reaches the driver's sums.

Example:
    >>> check_fields({"task": "0_1", "batch": None}, {"task": string, "batch": optional_int})
    {'task': '0_1', 'batch': None}
    >>> partition_map({"in:0": 3}), counts({"records_in": 2, "where": {"0_1": "h:/s"}})
    ({'in:0': 3}, {'records_in': 2, 'where': {'0_1': 'h:/s'}})
    >>> integer(True)
    Traceback (most recent call last):
    ...
    kspark._control.json_checks.MalformedMessageError: not an integer: True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kspark._engine.async_.metrics import new_metrics

__all__ = ["MalformedMessageError", "check_fields", "string", "integer", "optional_int",
           "number", "int_map", "partition_map", "partitions", "strings", "index_lists", "stats",
           "async_counters", "counts"]


class MalformedMessageError(ValueError):
    """A control-topic record that is not the message its key names."""


def check_fields(value: Any, checks: dict[str, Callable[[Any], Any]],
                 required: Iterable[str] | None = None) -> dict[str, Any]:
    """The fields of the JSON object ``value`` that ``checks`` names, each checked by its
    check; those in ``required`` (default: all of them) must be there. Other fields are
    left out."""
    obj = _object(value)
    for name in checks if required is None else required:
        if name not in obj:
            raise MalformedMessageError(f"no {name!r}")
    out = {}
    for name, check in checks.items():
        if name in obj:
            try:
                out[name] = check(obj[name])
            except MalformedMessageError as e:
                raise MalformedMessageError(f"{name!r}: {e}") from None
    return out


def string(value: Any) -> str:
    if not isinstance(value, str):
        raise MalformedMessageError(f"not a string: {value!r:.40}")
    return value


def integer(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedMessageError(f"not an integer: {value!r:.40}")
    return value


def optional_int(value: Any) -> int | None:
    return None if value is None else integer(value)


def number(value: Any) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise MalformedMessageError(f"not a number: {value!r:.40}")
    return float(value)


def _numeric(value: Any) -> int | float:
    """A number, kept an integer or a float as it is."""
    number(value)
    return value


def int_map(value: Any) -> dict[str, int]:
    """A JSON object of integers."""
    return {k: _at(k, integer, v) for k, v in _object(value).items()}


def partition_map(value: Any) -> dict[str, int]:
    """A JSON object of integers by ``topic:partition``."""
    return {_partition(k): _at(k, integer, v) for k, v in _object(value).items()}


def partitions(value: Any) -> tuple[str, ...]:
    """A JSON array of ``topic:partition`` strings."""
    return tuple(_partition(string(v)) for v in _array(value))


def strings(value: Any) -> tuple[str, ...]:
    return tuple(string(v) for v in _array(value))


def index_lists(value: Any) -> tuple[tuple[int, ...], ...]:
    """Per thread, indices into a run's tasks (none negative)."""
    return tuple(tuple(_index(i) for i in _array(row)) for row in _array(value))


def stats(value: Any) -> dict[str, list]:
    """Kafka Streams' metrics' counts (``_engine/metrics/stats.py``): per
    ``<stat>|<task id>|<where>`` key, ``[count, total, max, min]``."""
    out = {}
    for key, stat in _object(value).items():
        if key.count("|") < 2:
            raise MalformedMessageError(f"not a stat's key: {key!r:.60}")
        row = _array(stat)
        if len(row) != 4:
            raise MalformedMessageError(f"{key!r}: not [count, total, max, min]")
        out[key] = [_at(key, _numeric, n) for n in row]
    return out


def async_counters(value: Any) -> dict[str, dict[str, float]]:
    """The async steps' counters (``_engine/async_/metrics.py``): per step, numbers by the
    counters' names (one not given: 0)."""
    return {name: _async_step(name, m) for name, m in _object(value).items()}


def _async_step(name: str, value: Any) -> dict[str, float]:
    out = new_metrics()
    for k, n in _object(value).items():
        if k not in out:
            raise MalformedMessageError(f"{name!r}: not an async counter: {k!r:.40}")
        out[k] = _at(f"{name}.{k}", _numeric, n)
    return out


# the fields of a task's counts (``TaskMetrics.to_dict``) that are not integers
_COUNT_FIELDS: dict[str, Callable[[Any], Any]] = {
    "where": lambda v: {k: _at(k, string, s) for k, s in _object(v).items()},
    "async_": async_counters, "streams": stats}


def counts(value: Any) -> dict[str, Any]:
    """A task's or a thread's counts (``TaskMetrics.to_dict``, ``ThreadReporter.counts``):
    integers, but ``where``, ``async_`` and ``streams``."""
    return {k: _at(k, _COUNT_FIELDS.get(k, integer), v) for k, v in _object(value).items()}


def _at(name: str, check: Callable[[Any], Any], value: Any) -> Any:
    try:
        return check(value)
    except MalformedMessageError as e:
        raise MalformedMessageError(f"{name!r}: {e}") from None


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedMessageError(f"not a JSON object: {value!r:.40}")
    return value


def _array(value: Any) -> list:
    if not isinstance(value, list):
        raise MalformedMessageError(f"not a JSON array: {value!r:.40}")
    return value


def _index(value: Any) -> int:
    if integer(value) < 0:
        raise MalformedMessageError(f"a negative index: {value}")
    return value


def _partition(text: str) -> str:
    topic, _, partition = text.rpartition(":")
    if not topic or not (partition.isascii() and partition.isdigit()):
        raise MalformedMessageError(f"not topic:partition: {text!r:.60}")
    return text
