"""What the Spark host keeps about one task, beside the engine's ``StreamTask``.

The engine's task knows its processors, stores and stream time. The host also needs to
know where the task's changelogs ended when it last committed (to tell whether a task
cached in a worker may run the next batch), the marker it committed last, the progress it
resumed, its changelog topics' ids (to tell a recreated changelog) and how many records it
restored. These live in one declared record, never as attributes set on the task.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TaskHostState"]


@dataclass
class TaskHostState:
    """The host-owned state of one task, carried with it while a worker keeps it.

    ``changelog_offsets``: (changelog topic, partition) -> end offset after the task's last
    commit (or its restore). ``changelog_ids``: changelog topic -> topic id when restored.
    ``marker``: the :class:`~kspark._kafka.transactions.Marker` it committed last.
    ``resumed_progress``: the progress the task resumed (or saved last). ``restored_records``:
    records restored and not yet counted in the query's metrics. ``instance_id``: an id of
    this task object, kept in at-least-once markers: a worker reuses a cached task only if
    that task made the last commit.

    Example:
        >>> s = TaskHostState()
        >>> s.changelog_offsets, s.marker, s.restored_records, len(s.instance_id)
        ({}, None, 0, 32)
    """

    changelog_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    changelog_ids: dict[str, str] = field(default_factory=dict)
    marker: Any = None
    resumed_progress: dict[str, Any] | None = None
    restored_records: int = 0
    instance_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def take_restored(self) -> int:
        """The records restored since the last call (counted once in the query's metrics).

        Example:
            >>> s = TaskHostState(restored_records=3)
            >>> s.take_restored(), s.take_restored()
            (3, 0)
        """
        n, self.restored_records = self.restored_records, 0
        return n
