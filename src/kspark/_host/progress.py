"""The one shape of ``KafkaStreams.progress()``, in both execution modes.

Example:
    >>> from kspark._host.metrics import TaskMetrics
    >>> p = progress_of(2, 100, 5, TaskMetrics(records_in=100, records_out=40, commits=4))
    >>> list(p) == list(PROGRESS_KEYS), p["records_out"], p["lag"]
    (True, 40, 5)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kspark._host.metrics import TaskMetrics

__all__ = ["PROGRESS_KEYS", "progress_of", "counts_of"]

# batches: micro-batches (micro_batch) or finished epochs (real_time); position: the sum of
# the next offsets of the input partitions; lag: input records not processed yet;
# sink_batches, sink_rows: the Spark sinks' micro-batches and rows (the application adds them).
PROGRESS_KEYS = ("batches", "position", "lag", "records_in", "records_out",
                 "changelog_records", "commits", "restored_records", "task_restores",
                 "task_moves", "tasks_kept", "sink_batches", "sink_rows")


def counts_of(m: TaskMetrics) -> dict[str, int]:
    """``m``'s counts under their progress names."""
    return {"records_in": m.records_in, "records_out": m.records_out,
            "changelog_records": m.changelog_records, "commits": m.commits,
            "restored_records": m.restored_records, "task_restores": m.restores,
            "task_moves": m.moves, "tasks_kept": m.kept}


def progress_of(batches: int, position: int, lag: int,
                counts: TaskMetrics | Mapping[str, Any]) -> dict[str, int]:
    """The progress document: every key of :data:`PROGRESS_KEYS`, in that order."""
    c = counts_of(counts) if isinstance(counts, TaskMetrics) else counts
    values = {"batches": batches, "position": position, "lag": lag, **c}
    return {k: int(values.get(k, 0)) for k in PROGRESS_KEYS}
