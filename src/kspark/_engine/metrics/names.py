"""Metric names and values as Kafka's ``MetricName`` and ``Metric``, and the recording levels.

Example:
    >>> n = MetricName("process-total", "stream-task-metrics", "The total number of calls",
    ...                {"thread-id": "main", "task-id": "0_0"})
    >>> n.tags["task-id"], n == MetricName("process-total", "stream-task-metrics", "",
    ...                                   {"task-id": "0_0", "thread-id": "main"})
    (\'0_0\', True)
    >>> Metric(n, 7).metric_value()
    7
    >>> recording_level("DEBUG") >= DEBUG, recording_level("INFO") >= DEBUG
    (True, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kspark.errors import ConfigError
from kspark.errors import StreamsError

__all__ = ["MetricName", "Metric", "Metrics", "INFO", "DEBUG", "TRACE", "LEVELS",
           "recording_level"]

INFO, DEBUG, TRACE = 0, 1, 2
LEVELS = {"INFO": INFO, "DEBUG": DEBUG, "TRACE": TRACE}


def recording_level(name: Any) -> int:
    """``metrics.recording.level`` (INFO, DEBUG or TRACE, any case) as a number."""
    try:
        return LEVELS[str(name).upper()]
    except KeyError:
        raise ConfigError(f"metrics.recording.level must be INFO, DEBUG or TRACE, got "
                          f"{name!r}") from None


@dataclass(frozen=True)
class MetricName:
    """A metric's identity, as Kafka's ``org.apache.kafka.common.MetricName``: ``name``,
    ``group`` and ``tags`` identify it (``description`` does not take part in equality)."""

    name: str
    group: str
    description: str = field(default="", compare=False)
    _tags: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def __init__(self, name: str, group: str, description: str = "",
                 tags: Mapping[str, str] | None = None):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "group", group)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "_tags", tuple(sorted((tags or {}).items())))

    @property
    def tags(self) -> dict[str, str]:
        """The tags, a fresh dict (``thread-id``, ``task-id``, ``processor-node-id``, ...)."""
        return dict(self._tags)

    def __repr__(self) -> str:
        return f"MetricName(name={self.name!r}, group={self.group!r}, tags={self.tags!r})"


class Metric:
    """A metric's current value, as Kafka's ``Metric``: ``metric_name()`` and
    ``metric_value()`` (a number; None where Java reports NaN, say an average of nothing;
    text for the client's ``state``, ``version`` and the like, as Java's)."""

    __slots__ = ("_name", "_value")

    def __init__(self, name: MetricName, value: float | int | str | None):
        self._name, self._value = name, value

    def metric_name(self) -> MetricName:
        return self._name

    def metric_value(self) -> float | int | str | None:
        return self._value

    def __repr__(self) -> str:
        return f"Metric({self._name.group}/{self._name.name}={self._value!r})"


class Metrics(dict):
    """``KafkaStreams.metrics()``: ``{MetricName: Metric}`` as Java's, with two lookups.
    Tags are given in snake_case (``task_id`` for ``task-id``).

    Example:
        >>> a = MetricName("dropped-records-total", "stream-task-metrics", "", {"task-id": "0_0"})
        >>> b = MetricName("dropped-records-total", "stream-task-metrics", "", {"task-id": "0_1"})
        >>> m = Metrics({a: Metric(a, 3), b: Metric(b, 1)})
        >>> m.total("dropped-records-total"), m.value("dropped-records-total", task_id="0_1")
        (4, 1)
    """

    def find(self, name: str, group: str | None = None, **tags: str) -> list[Metric]:
        """The metrics called ``name`` (in ``group``, with ``tags``), in name order."""
        want = {k.replace("_", "-"): str(v) for k, v in tags.items()}
        return [m for n, m in sorted(self.items(), key=lambda kv: repr(kv[0]))
                if n.name == name and (group is None or n.group == group)
                and all(n.tags.get(k) == v for k, v in want.items())]

    def value(self, name: str, group: str | None = None, **tags: str) -> Any:
        """The value of the one metric matching; a StreamsError if none or several do."""
        found = self.find(name, group, **tags)
        if len(found) != 1:
            raise StreamsError(f"{len(found)} metrics match {name!r} (group {group!r}, tags "
                               f"{tags}); give the group or tags that select one")
        return found[0].metric_value()

    def total(self, name: str, group: str | None = None, **tags: str) -> float | int:
        """The sum of the values of the metrics matching (NaN and None count 0), say a
        count over every task."""
        out: float | int = 0
        for m in self.find(name, group, **tags):
            v = m.metric_value()
            if isinstance(v, (int, float)) and v == v:
                out += v
        return out
