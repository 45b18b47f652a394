"""What a :class:`~kspark._engine.task.StreamTask` does with a record it cannot read or
write: dead-letter it (KIP-1034, ``errors.dead.letter.queue.topic.name``), then skip it
(``log_and_continue``) or fail the task (``log_and_fail``, the default).

Example:
    >>> from kspark._engine.collector import MemoryCollector
    >>> from kspark._engine.task import StreamTask
    >>> from kspark.errors import SerializationError
    >>> task = StreamTask("0_0", {}, [], {"application.id": "app", "state.dir": "/tmp",
    ...                   "production.exception.handler": "log_and_continue"},
    ...                   MemoryCollector())
    >>> task.write_failed("KSTREAM-SINK-0000000001", SerializationError("bad value"))
    >>> task.dropped
    1
"""

from __future__ import annotations

import logging

from kspark._engine.collector import RecordCollector
from kspark._engine.nodes import ProcessorNode, RawRecord
from kspark.errors import KSparkError, SerializationError

__all__ = ["RecordErrors"]

log = logging.getLogger("kspark")


class RecordErrors:
    """The error handling of :class:`~kspark._engine.task.StreamTask` (a mixin: the task
    sets the attributes below)."""

    task_id: str
    collector: RecordCollector
    stream_time: int
    dropped: int
    dead_letter_topic: str | None
    _current: RawRecord | None
    _on_bad_record: str
    _on_write_error: str

    def record_dropped(self, node: ProcessorNode, reason: str) -> None:
        self.dropped += 1
        log.warning("task %s, processor %s drops a record: %s", self.task_id, node.name, reason)

    def _bad_record(self, raw: RawRecord, error: SerializationError) -> None:
        """A record that cannot be deserialized: dead-letter it if configured, then continue
        or fail."""
        self.dead_letter(raw, error)
        self._current = None
        if self._on_bad_record != "log_and_continue":
            raise error
        self.dropped += 1
        log.warning("task %s skips an undeserializable record (%s)", self.task_id, error)

    def write_failed(self, sink: str, error: KSparkError) -> None:
        """Sink ``sink`` could not serialize or hand over a record (production.exception.handler):
        dead-letter the input record being processed if configured, then continue or fail."""
        self.dead_letter(self._current, error)
        if self._on_write_error != "log_and_continue":
            raise error
        self.dropped += 1
        log.warning("task %s, sink %r: skips a record it cannot write (%s)", self.task_id, sink,
                    error)

    def dead_letter(self, raw: RawRecord | None, error: BaseException,
                     extra_headers: tuple = ()) -> None:
        """KIP-1034: the input record, unchanged, with headers naming the error and its origin
        (no input record, as in a punctuation: only the headers)."""
        if not self.dead_letter_topic:
            return
        headers = (tuple(raw.headers) if raw else ()) + (
            ("__streams.errors.exception", type(error).__name__.encode()),
            ("__streams.errors.message", str(error).encode()),
        ) + ((("__streams.errors.topic", raw.topic.encode()),
              ("__streams.errors.partition", str(raw.partition).encode()),
              ("__streams.errors.offset", str(raw.offset).encode())) if raw else ()) + extra_headers
        self.collector.send(self.dead_letter_topic, raw.key if raw else None,
                            raw.value if raw else None,
                            raw.timestamp if raw else max(self.stream_time, 0), headers, None)
