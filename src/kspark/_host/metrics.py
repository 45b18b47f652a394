"""What a hosted task did between two commits, as one typed value that adds up.

Both execution modes carry the same value to the driver: the micro-batch driver adds each
task's :class:`TaskMetrics` to one accumulator, the real-time threads sum theirs into the
reports they send. ``records_out`` counts records written to user and repartition topics,
``changelog_records`` those written to changelogs.

Example:
    >>> total = TaskMetrics()
    >>> total.add(TaskMetrics(records_in=3, records_out=2, commits=1, moves=1))
    >>> total.add(TaskMetrics(records_in=1, restored_records=5, restores=1, commits=1))
    >>> total.records_in, total.records_out, total.commits, total.restores, total.moves
    (4, 2, 2, 1, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["TaskMetrics", "COUNTS"]


@dataclass
class TaskMetrics:
    """Counts of one task (or a sum of tasks); ``where``: task id -> where it committed
    last (``host:state.dir``, for the micro-batch placement); ``async_``: the async nodes'
    counters (``_engine/async_/metrics.py``)."""

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

    def add(self, other: TaskMetrics) -> None:
        """Add ``other``'s counts to these (``where``: the later wins)."""
        from kspark._engine.async_.metrics import merge_metrics

        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.where.update(other.where)
        if other.async_:
            merge_metrics(self.async_, other.async_)


COUNTS = tuple(f.name for f in fields(TaskMetrics) if f.type == "int")
