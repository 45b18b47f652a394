"""suppress(): hold a table's changes per key and emit them later (final window results,
or rate limiting), with a buffer kept in a logged store so it survives restarts (its
entries in kspark's own encoding: ``state.internal_serdes.SuppressBufferSerde``)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark.errors import StreamsError

__all__ = ["BufferConfig", "Suppressed", "SuppressProcessor"]


@dataclass(frozen=True)
class BufferConfig:
    """How much suppress may hold, and what happens when it is full."""

    max_records: int | None = None
    shut_down_when_full_: bool = False

    @staticmethod
    def unbounded() -> "BufferConfig":
        return BufferConfig()

    @staticmethod
    def with_max_records(n: int) -> "BufferConfig":
        return BufferConfig(max_records=n)

    def emit_early_when_full(self) -> "BufferConfig":
        return BufferConfig(self.max_records, False)

    def shut_down_when_full(self) -> "BufferConfig":
        return BufferConfig(self.max_records, True)


@dataclass(frozen=True)
class Suppressed:
    """``until_window_closes``: one final result per window; ``until_time_limit``: at most one
    update per key per ``time_to_wait_ms`` of stream time.

    Example:
        >>> Suppressed.until_window_closes(BufferConfig.unbounded()).final_results
        True
    """

    final_results: bool
    time_to_wait_ms: int = 0
    buffer: BufferConfig = BufferConfig()

    @staticmethod
    def until_window_closes(buffer: BufferConfig | None = None) -> "Suppressed":
        return Suppressed(True, 0, buffer or BufferConfig.unbounded())

    @staticmethod
    def until_time_limit(time_to_wait_ms: int, buffer: BufferConfig | None = None) -> "Suppressed":
        return Suppressed(False, time_to_wait_ms, buffer or BufferConfig.unbounded())


class SuppressProcessor(Processor):
    """Buffers the latest change per key; emits when its time comes, in order of (buffer
    time, serialized key), as Kafka Streams' in-memory time-ordered buffer. A key buffered
    again keeps its place. Final results never emit a delete (Java drops tombstones there)."""

    def __init__(self, store_name: str, suppressed: Suppressed, grace_ms: int | None):
        self.store_name, self.suppressed, self.grace_ms = store_name, suppressed, grace_ms

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)
        self.observed = -1
        self.heap: list[tuple[int, bytes, Any]] = []
        for kv in self.store.all():  # rebuild the index (the store may have been restored)
            self._index(kv.value[0], kv.key)
            self.observed = max(self.observed, kv.value[1])

    def _due_time(self, record: Record) -> int:
        if self.suppressed.final_results:
            window = getattr(record.key, "window", None)
            if window is None:
                raise StreamsError("suppress(until_window_closes) needs a windowed table")
            return window.end + (self.grace_ms or 0)
        return record.timestamp + self.suppressed.time_to_wait_ms

    def process(self, record: Record) -> None:
        self.observed = max(self.observed, record.timestamp)
        held = self.store.get(record.key)
        due = held[0] if held is not None else self._due_time(record)
        old = held[2].old if held is not None else record.value.old
        from kspark._engine.tables.change import Change

        self.store.put(record.key, (due, record.timestamp, Change(record.value.new, old),
                                    record.headers))
        if held is None:
            self._index(due, record.key)
        self._emit_due()
        self._enforce_bound()

    def _index(self, due: int, key: Any) -> None:
        heapq.heappush(self.heap, (due, self.store.encode_key(key), key))

    def _emit(self, key: Any) -> None:
        held = self.store.get(key)
        if held is None:
            return
        self.store.delete(key)
        _, ts, change, headers = held
        if change.new is None and self.suppressed.final_results:
            return
        self.context.forward(Record(key, change, ts, headers))

    def _emit_due(self) -> None:
        while self.heap and self.heap[0][0] <= self.observed:
            _, _, key = heapq.heappop(self.heap)
            self._emit(key)

    def _enforce_bound(self) -> None:
        limit = self.suppressed.buffer.max_records
        while limit is not None and len(self.heap) > limit:
            if self.suppressed.buffer.shut_down_when_full_:
                raise StreamsError(
                    f"suppress buffer {self.store_name!r} is full ({limit} records) and is "
                    "configured to shut down when full; raise BufferConfig.with_max_records")
            _, _, key = heapq.heappop(self.heap)
            self._emit(key)
