"""What a task records for Kafka Streams' metrics, as additive counts.

A :class:`TaskStats` holds, per key, a :data:`Stat` ``[count, total, max, min]``: a call
counted (``count``) with a measurement (``total`` adds it up; ``max`` and ``min`` keep the
extremes). A key is ``"<stat>|<task id>|<node or store>"`` (a plain string: it travels in
JSON reports and Spark accumulators). Hosts take the counts at each commit
(:meth:`TaskStats.take`) and the driver sums them (:func:`merge_stats`), so counts from many
executors and many batches add up to what one Kafka Streams task would have counted.

What is recorded depends on ``metrics.recording.level`` (as Java's sensors): at INFO only the
INFO metrics (dropped records, end-to-end latency of source and terminal nodes); DEBUG adds
per-node process counts and the task's process, commit and punctuate figures and record
lateness; TRACE adds the stores' end-to-end latency.

Example:
    >>> s = TaskStats("0_1", level=1)
    >>> s.record("process", 2_000); s.record("process", 4_000); s.record("dropped-records")
    >>> s.node("KSTREAM-MAPVALUES-0000000001")
    >>> taken = s.take()
    >>> taken["process|0_1|"], taken["dropped-records|0_1|"]
    ([2, 6000, 4000, 2000], [1, 0, 0, 0])
    >>> taken["node-process|0_1|KSTREAM-MAPVALUES-0000000001"][0], s.take()
    (1, {})
    >>> total = {}
    >>> merge_stats(total, taken); merge_stats(total, {"process|0_1|": [1, 9000, 9000, 9000]})
    >>> total["process|0_1|"]
    [3, 15000, 9000, 2000]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["TaskStats", "Stat", "merge_stats", "split_key", "record_size", "topic_overhead",
           "headers_size"]

Stat = list  # [count, total, max, min]; a key whose stat starts with "=" is a gauge


def record_size(key: bytes | None, value: bytes | None, topic: str, headers: Any) -> int:
    """A record's size as Kafka Streams' topic metrics count it: key, value, header keys and
    values, the topic's name, and 8 + 8 + 4 bytes of timestamp, offset and partition.

    >>> record_size(b"k1", b"12345678", "in", ())
    32
    """
    return topic_overhead(topic) + len(key or b"") + len(value or b"") + headers_size(headers)


def topic_overhead(topic: str) -> int:
    """What :func:`record_size` counts for every record of ``topic`` besides its key, value
    and headers (callers on the per-record path compute it once per topic).

    >>> topic_overhead("in")
    22
    """
    return 20 + len(topic.encode())


def headers_size(headers: Any) -> int:
    """What :func:`record_size` counts for ``headers`` (``(key, bytes)`` pairs).

    >>> headers_size((("h", b"12"),)), headers_size(())
    (3, 0)
    """
    size = 0
    for k, v in headers or ():
        size += len(k.encode() if isinstance(k, str) else k) + len(v or b"")
    return size


def split_key(key: str) -> tuple[str, str, str]:
    """``(stat, task id, node or store)`` of a key.

    >>> split_key("node-process|0_1|KSTREAM-SOURCE-0000000000")
    ('node-process', '0_1', 'KSTREAM-SOURCE-0000000000')
    """
    stat, task, where = key.split("|", 2)
    return stat, task, where


def merge_stats(into: dict[str, Stat], other: Mapping[str, Stat]) -> None:
    """Add ``other``'s counts to ``into`` (in place)."""
    for key, s in other.items():
        mine = into.get(key)
        if mine is None or key[0] == "=":  # a gauge or a shape entry: the latest wins
            into[key] = list(s)
        elif s[0]:
            if mine[0]:
                mine[2], mine[3] = max(mine[2], s[2]), min(mine[3], s[3])
            else:
                mine[2], mine[3] = s[2], s[3]
            mine[0] += s[0]
            mine[1] += s[1]


class TaskStats:
    """One task's counts since they were last taken; ``level``: the recording level
    (``names.INFO``/``DEBUG``/``TRACE``), which hosts and nodes read to skip what is not
    recorded."""

    __slots__ = ("task_id", "level", "debug", "now", "_stats", "_samples")

    def __init__(self, task_id: str, level: int = 0):
        self.task_id, self.level, self.debug = task_id, level, level >= 1
        # The wall-clock time (ms) the record being processed measures its end-to-end
        # latencies against, read once for the record (as Java's cached system time); None
        # outside a record (a punctuation's output): read the task's clock.
        self.now: int | None = None
        self._stats: dict[str, Stat] = {}
        self._samples: dict[str, list[int | float]] = {}  # per key: values not folded yet

    def key(self, stat: str, where: str = "") -> str:
        """The key :meth:`record` counts ``stat`` of ``where`` under: built once by callers
        on the per-record path, for :meth:`sampler`.

        >>> TaskStats("0_1").key("e2e", "KSTREAM-SOURCE-0000000000")
        'e2e|0_1|KSTREAM-SOURCE-0000000000'
        """
        return f"{stat}|{self.task_id}|{where}"

    def record(self, stat: str, value: int | float = 0, where: str = "") -> None:
        """Count one ``stat`` (of the task, or of node/store ``where``) measuring ``value``."""
        key = f"{stat}|{self.task_id}|{where}"
        s = self._stats.get(key)
        if s is None:
            self._stats[key] = [1, value, value, value]
            return
        s[0] += 1
        s[1] += value
        if value > s[2]:
            s[2] = value
        if value < s[3]:
            s[3] = value

    def sampler(self, key: str) -> Callable[[int | float], None]:
        """A function that records one value under ``key`` (built by :meth:`key`) at the
        per-record path's lowest cost: it appends the value to a list, and :meth:`fold`
        counts the list at once, exactly as :meth:`record` for each value would have.
        :meth:`take` and :meth:`peek` fold first; a task folds every 1,000 records.

        >>> s = TaskStats("0_1"); k = s.key("e2e", "n"); add = s.sampler(k)
        >>> add(3); add(5); s.record("e2e", 4, "n")
        >>> s.take()[k]
        [3, 12, 5, 3]
        >>> add(7); s.take()[k]
        [1, 7, 7, 7]
        """
        values = self._samples.get(key)
        if values is None:
            values = self._samples[key] = []
        return values.append

    def fold(self) -> None:
        """Count the values the samplers hold (see :meth:`sampler`)."""
        for key, values in self._samples.items():
            if values:
                self._merge(key, len(values), sum(values), max(values), min(values))
                values.clear()

    def record_many(self, stat: str, n: int, total: int | float, high: int | float,
                    low: int | float, where: str = "") -> None:
        """Count ``n`` calls of ``stat`` at once, measuring ``total`` in all, ``high`` and
        ``low`` at most and least (a batch of records recorded as one, exactly as ``n``
        calls of :meth:`record` would have counted them).

        >>> s = TaskStats("0_1"); s.record("e2e", 5, "n"); s.record_many("e2e", 2, 7, 4, 3, "n")
        >>> s.take()["e2e|0_1|n"]
        [3, 12, 5, 3]
        """
        if n > 0:
            self._merge(f"{stat}|{self.task_id}|{where}", n, total, high, low)

    def _merge(self, key: str, n: int, total: int | float, high: int | float,
               low: int | float) -> None:
        s = self._stats.get(key)
        if s is None:
            self._stats[key] = [n, total, high, low]
            return
        s[0] += n
        s[1] += total
        if high > s[2]:
            s[2] = high
        if low < s[3]:
            s[3] = low

    def count(self, stat: str, n: int) -> None:
        """Count ``n`` occurrences of ``stat`` of the task at once (no measurement)."""
        s = self._stats.setdefault(f"{stat}|{self.task_id}|", [0, 0, 0, 0])
        s[0] += n

    def node(self, node: str) -> None:
        """A node processed a record (DEBUG)."""
        self.record("node-process", 0, node)

    def gauge(self, stat: str, value: int | float, where: str = "") -> None:
        """Set gauge ``stat`` (its name starts with ``=``) to ``value``; the latest wins."""
        self._stats[f"{stat}|{self.task_id}|{where}"] = [1, value, value, value]

    def shape(self, kind: str, where: str = "") -> None:
        """Declare that the task has metrics of ``kind`` (``task``, ``cache``, ``source``,
        ``e2e``, ``suppress``, ``window-agg``, ``consumed``, ``produced``) at ``where`` (a
        node, or ``node|topic``), so they exist before anything is recorded, as in Java."""
        self._stats[f"=shape-{kind}|{self.task_id}|{where}"] = [1, 0, 0, 0]

    def take(self) -> dict[str, Stat]:
        """The counts since the last call (a host adds them to what its commit reports)."""
        self.fold()
        out, self._stats = self._stats, {}
        return out

    def peek(self) -> dict[str, Stat]:
        """The counts since the last :meth:`take`, left in place (the test driver's view)."""
        self.fold()
        return {k: list(v) for k, v in self._stats.items()}
