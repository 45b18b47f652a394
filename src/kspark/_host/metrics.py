"""What a hosted task did between two commits, as one typed value that adds up.

Both execution modes carry the same value to the driver through the control topic
(``_control/reports.py``): each committed micro-batch task batch sends its
:class:`TaskMetrics` in a ``TaskReport``, the real-time threads sum theirs into the
``ThreadReport`` they send (``_control/messages.py``).
``records_out`` counts records written to user and repartition topics,
``changelog_records`` those written to changelogs.

Example:
    >>> total = TaskMetrics()
    >>> total.add(TaskMetrics(records_in=3, records_out=2, commits=1, moves=1))
    >>> total.add(TaskMetrics(records_in=1, restored_records=5, restores=1, commits=1))
    >>> total.records_in, total.records_out, total.commits, total.restores, total.moves
    (4, 2, 2, 1, 1)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any
from kspark._control.messages import TaskReport
from kspark._engine.async_.metrics import merge_metrics
from kspark._engine.metrics.stats import merge_stats
from kspark._engine.metrics.names import Metrics
from kspark._engine.metrics.view import async_processor_metrics, lag_metrics, thread_metrics

__all__ = ["TaskMetrics", "ReportedTotals", "COUNTS", "application_metrics", "thread_id"]


@dataclass
class TaskMetrics:
    """Counts of one task (or a sum of tasks); ``where``: task id -> where it committed
    last (``host:state.dir``, for the micro-batch placement); ``async_``: the async nodes'
    counters (``_engine/async_/metrics.py``); ``streams``: the task's counts for Kafka
    Streams' metrics (``_engine/metrics/stats.py``)."""

    records_in: int = 0
    records_out: int = 0
    changelog_records: int = 0
    commits: int = 0
    restored_records: int = 0
    restores: int = 0
    moves: int = 0
    kept: int = 0  # openings that reused the task this worker kept
    where: dict[str, str] = field(default_factory=dict)
    async_: dict[str, Any] = field(default_factory=dict)
    streams: dict[str, list] = field(default_factory=dict)  # Kafka Streams' metrics' counts

    def add(self, other: TaskMetrics) -> None:
        """Add ``other``'s counts to these (``where``: the later wins)."""
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.where.update(other.where)
        if other.async_:
            merge_metrics(self.async_, other.async_)
        if other.streams:
            merge_stats(self.streams, other.streams)


    def to_dict(self) -> dict[str, Any]:
        """A JSON-able copy (:meth:`of` reads it back).

        >>> TaskMetrics.of(TaskMetrics(records_in=2, where={"0_1": "h:/s"}).to_dict()).where
        {'0_1': 'h:/s'}
        """
        return asdict(self)

    @classmethod
    def of(cls, counts: dict[str, Any]) -> TaskMetrics:
        """The value of a :meth:`to_dict` (keys it does not know are left out)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in counts.items() if k in known})


class ReportedTotals:
    """The driver's sum of the :class:`~kspark._control.messages.TaskReport` messages its
    ``reader`` (a ``_control/reports.ControlReader``) reads from the control topic: what
    this run's committed task batches counted (other messages are left out). Safe to call
    from several threads."""

    def __init__(self, reader: Any):
        import threading

        self._reader, self._total, self._lock = reader, TaskMetrics(), threading.Lock()

    def value(self) -> TaskMetrics:
        """The totals, with the reports that arrived since the last call added."""
        with self._lock:
            if self._reader is not None:
                for message in self._reader.read():
                    if isinstance(message, TaskReport):
                        self._total.add(TaskMetrics.of(message.counts))
            return self._total

    def close(self) -> None:
        """The run ended: read what is left, then close the reader (the totals stay)."""
        self.value()
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None


COUNTS = tuple(f.name for f in fields(TaskMetrics) if f.type == "int")


def thread_id(app_id: str, thread: int | str) -> str:
    """The ``thread-id`` tag: a real-time stream thread's (``<app>-StreamThread-<n>``, from
    1, as Java names them), or ``<app>-micro-batch`` for the driver's view of a
    micro-batch's tasks.

    >>> thread_id("app", 0), thread_id("app", "micro-batch")
    ('app-StreamThread-1', 'app-micro-batch')
    """
    return f"{app_id}-StreamThread-{thread + 1}" if isinstance(thread, int) else \
        f"{app_id}-{thread}"


def application_metrics(view: Any, stats: dict[str, list], thread_of: Any,
                        lag: dict[tuple[str, int], int], app_id: str,
                        async_summary: dict[str, dict[str, float]],
                        threads: dict[str, dict[str, float]]) -> Any:
    """``KafkaStreams.metrics()`` in every execution mode: the tasks' summed counts
    (``stats``, through the driver's ``view`` for rates) as Kafka Streams' task, node and
    topic metrics, each thread's figures, the consumer lag, the async processors."""
    with view.lock:
        view.replace(stats)
        out = Metrics(view.metrics(thread_of))
    for name, values in threads.items():
        out.update(thread_metrics(name, values))
    out.update(lag_metrics(lag, f"{app_id}-consumer"))
    out.update(async_processor_metrics(async_summary))
    return out
