"""What the Spark host keeps about one task, beside the engine's ``StreamTask``.

The engine's task knows its processors, stores and stream time. The host also needs to
know where the task's changelogs ended when it last committed (to tell whether a task
cached in a worker may run the next batch), the marker it committed last, the progress it
resumed, its changelog topics' ids (to tell a recreated changelog) and how many records it
restored. These live in one declared record, never as attributes set on the task.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TaskHostState", "state_location", "moved"]


@dataclass
class TaskHostState:
    """The host-owned state of one task, carried with it while a worker keeps it.

    ``changelog_offsets``: (changelog topic, partition) -> end offset after the task's last
    commit (or its restore). ``changelog_ids``: changelog topic -> topic id when restored.
    ``marker``: the :class:`~kspark._kafka.transactions.Marker` it committed last.
    ``resumed_progress``: the progress the task resumed (or saved last). ``restored_records``:
    records restored and not yet counted in the query's metrics. ``instance_id``: an id of
    this task object, kept in at-least-once markers: a worker reuses a cached task only if
    that task made the last commit. ``lock``: held by a commit while it writes the stores
    down and by an interactive query while it reads them; ``position``: what the last
    commit covered (changelog ends, last input offsets).

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
    # interactive queries: a read of the stores and a commit writing them down never overlap
    lock: Any = field(default_factory=threading.RLock, repr=False, compare=False)
    # what the last commit covered: changelog ends and the last input offsets
    position: dict[tuple[str, int], int] = field(default_factory=dict)
    # the input offsets the last commit committed (the checkpoint of stores whose changelog
    # is their source topic)
    committed_inputs: dict[tuple[str, int], int] = field(default_factory=dict)

    def take_restored(self) -> int:
        """The records restored since the last call (counted once in the query's metrics).

        Example:
            >>> s = TaskHostState(restored_records=3)
            >>> s.take_restored(), s.take_restored()
            (3, 0)
        """
        n, self.restored_records = self.restored_records, 0
        return n


def state_location(state_dir: str) -> str:
    """Where a task's local state is when it runs here: this host and ``state.dir`` as it
    resolves here (a relative one lands in each executor's own working directory).

    Example:
        >>> import socket
        >>> state_location("/tmp/kspark") == f"{socket.gethostname()}:/tmp/kspark"
        True
    """
    return f"{socket.gethostname()}:{os.path.realpath(state_dir)}"


def moved(marker: Any, here: str) -> bool:
    """Whether a task whose last commit is ``marker`` moved to run ``here``: its last commit
    was made with another host or state directory (its local copy there, if any, is older).

    Example:
        >>> from kspark._kafka.transactions import Marker
        >>> moved(Marker("q", 1, None, None, where="h:/a"), "h:/b"), moved(None, "h:/b")
        (True, False)
    """
    return marker is not None and bool(marker.where) and marker.where != here
