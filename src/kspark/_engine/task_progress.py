"""What a :class:`~kspark._engine.task.StreamTask` hands its next incarnation: stream time,
partition times, due punctuations, store and processor progress (:meth:`progress`), and how
it takes them over (:meth:`resume`).

Example:
    >>> from kspark._engine.collector import MemoryCollector
    >>> from kspark._engine.task import StreamTask
    >>> config = {"application.id": "app", "state.dir": "/tmp"}
    >>> task = StreamTask("0_0", {}, [], config, MemoryCollector())
    >>> task.resume({"stream_time": 42, "partition_time": [["in", 0, 42]]})
    >>> task.progress()["stream_time"], task.partition_time
    (42, {('in', 0): 42})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kspark._engine.documents import Invalid, check_progress
from kspark._engine.nodes import ProcessorNode
from kspark._engine.progress import KeepsProgress, progress_fields_of
from kspark._engine.punctuation import PunctuationQueue
from kspark.errors import CorruptStateError

__all__ = ["TaskProgress"]


class TaskProgress:
    """Saving and resuming a :class:`~kspark._engine.task.StreamTask`'s progress (a mixin:
    the task sets the attributes below)."""

    task_id: str
    nodes: list[ProcessorNode]
    stores: dict[str, Any]
    stream_time: int
    partition_time: dict[tuple[str, int], int]
    _stream_punctuations: PunctuationQueue
    _resume_schedules: dict[str, tuple[int, int]]
    _resume_processors: dict[str, dict[str, Any]]

    def progress(self) -> dict[str, Any]:
        """What a restarted task needs to go on where this one is: stream time, partition
        times, when each stream-time punctuation is next due, the stream time each window and
        session store has observed (its retention), and the stream-time fields of DSL
        processors that keep progress (:class:`KeepsProgress`; JSON-ready).

        Kafka Streams keeps partition time in the committed offsets' metadata; a host saves
        this at each commit and hands it to :meth:`resume` of the task's next incarnation.
        """
        processors = {}
        for node in self.nodes:
            keeper = node.processor
            if isinstance(keeper, KeepsProgress) and keeper.progress_fields:
                processors[node.name] = keeper.save_progress()
        stores = {name: s.observed for name, s in self.stores.items() if hasattr(s, "observed")}
        return {"stream_time": self.stream_time, "stores": stores,
                "partition_time": [[t, p, ts]
                                   for (t, p), ts in sorted(self.partition_time.items())],
                "punctuations": {s.key: [s.interval_ms, s.next_ms]
                                 for s in self._stream_punctuations.schedules if not s.cancelled},
                "processors": processors}

    def resume(self, progress: Mapping[str, Any], source: str = "the saved progress") -> None:
        """Take over a predecessor's :meth:`progress`; call before processors are initialized.

        A stream-time punctuation that a processor schedules again (same node, same order,
        same interval) keeps its due time instead of firing at the next record. The progress
        is read back from Kafka or disk (``source`` says where): a malformed one, or one
        naming a processor field the processor does not declare, is a CorruptStateError.
        """
        fields = {n.name: progress_fields_of(n.processor) for n in self.nodes}
        try:
            progress = check_progress(progress, fields)
        except Invalid as e:
            raise CorruptStateError(
                f"task {self.task_id}: {source} is malformed: {e}. It was damaged, or written "
                f"by another topology or by something other than kspark: reset the "
                f"application (kspark reset) so that it starts afresh") from None
        self.stream_time = progress.get("stream_time", -1)
        self.partition_time = {(t, p): ts for t, p, ts in progress.get("partition_time", [])}
        self._resume_schedules = {k: (i, n)
                                  for k, (i, n) in progress.get("punctuations", {}).items()}
        self._resume_processors = {name: saved for name, saved
                                   in progress.get("processors", {}).items() if fields.get(name)}
        for name, observed in progress.get("stores", {}).items():
            if name in self.stores:  # a window or session store's stream time, for retention
                self.stores[name].resume_observed(int(observed))
