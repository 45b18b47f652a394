"""A task's store changes sent to the store's changelog topic (the ``log`` a logging layer
calls): one change, or a flush's changes at once (:meth:`ChangelogWriter.many`).

Each record carries kspark's changelog format header and, on Spark, the run and batch that
wrote it (``kspark.batch``), so a retried batch can restore the state it started from.

Example:
    >>> from kspark._engine.collector import MemoryCollector
    >>> from kspark._engine.state.changelog_format import RAW
    >>> class Task:
    ...     batch, current_timestamp, partition = None, 7, 0
    ...     collector = MemoryCollector()
    >>> w = ChangelogWriter(Task, "app-s-changelog", RAW)
    >>> w(b"k", b"v"); w.many([(b"a", b"1"), (b"b", None)])
    >>> [(r.key, r.value, r.timestamp) for r in Task.collector.records]
    [(b'k', b'v', 7), (b'a', b'1', 7), (b'b', None, 7)]
"""

from __future__ import annotations

from typing import Any

from kspark._engine.collector import send_many
from kspark._engine.state.changelog_format import FORMAT_HEADER, ChangelogCodec

__all__ = ["ChangelogWriter", "BATCH_HEADER"]

BATCH_HEADER = "kspark.batch"  # on changelog records: "<run>:<batch>" that wrote them


class ChangelogWriter:
    """Sends ``task``'s changes of one store to ``topic`` in ``codec``'s layout, timestamped
    with the record being processed (or ``at``)."""

    __slots__ = ("task", "topic", "codec", "_batch", "_heads")

    def __init__(self, task: Any, topic: str, codec: ChangelogCodec):
        self.task, self.topic, self.codec = task, topic, codec
        self._batch: Any = None
        self._heads: tuple = (FORMAT_HEADER,)

    def _headers(self) -> tuple:
        batch = self.task.batch
        if batch != self._batch:  # once a batch
            self._batch = batch
            self._heads = (FORMAT_HEADER,) if batch is None else (
                (BATCH_HEADER, f"{batch[0]}:{batch[1]}".encode()), FORMAT_HEADER)
        return self._heads

    def __call__(self, key: bytes, value: bytes | None, at: int | None = None) -> None:
        task = self.task
        heads = self._headers()
        now = max(task.current_timestamp, 0) if at is None else at
        k, v, ts = self.codec.encode(key, value, now)
        if v is not None:
            heads += self.codec.value_headers
        task.collector.send(self.topic, k, v, ts, heads, task.partition)

    def many(self, items: list[tuple[bytes, bytes | None]]) -> None:
        """The changes of a flush, in order: as one call each, with less done per change."""
        task = self.task
        heads = self._headers()
        with_value = heads + self.codec.value_headers
        now, encode, partition = max(task.current_timestamp, 0), self.codec.encode, task.partition
        records = []
        for key, value in items:
            k, v, ts = encode(key, value, now)
            records.append((k, v, ts, heads if v is None else with_value, partition))
        send_many(task.collector, self.topic, records)
