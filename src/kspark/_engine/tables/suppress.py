"""suppress(): hold a table's changes per key and emit them later (final window results,
or rate limiting), with a buffer kept in a logged store so it survives restarts (its
entries and changelog in Kafka Streams' layout: ``state.buffer_value``)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.context import count_metric
from kspark._engine.durations import to_ms
from kspark._engine.either import either
from kspark._engine.state.buffer_value import Buffered
from kspark._engine.tables.change import Change
from kspark.errors import StreamsError

__all__ = ["BufferConfig", "Suppressed", "SuppressProcessor"]


@dataclass(frozen=True)
class BufferConfig:
    """How much suppress may hold (records, bytes, or both), and what happens when it is
    full: emit the oldest early (the default) or shut down.

    Example:
        >>> b = BufferConfig.max_records(100).with_max_bytes(1_000_000).shut_down_when_full()
        >>> (b.record_limit, b.byte_limit, b.shut_down)
        (100, 1000000, True)
    """

    record_limit: int | None = None
    byte_limit: int | None = None
    shut_down: bool = False

    @staticmethod
    def unbounded() -> "BufferConfig":
        return BufferConfig()

    @staticmethod
    def max_records(n: int) -> "BufferConfig":
        """Kafka Streams' ``BufferConfig.maxRecords``."""
        return BufferConfig(record_limit=_limit(n, "max_records"))

    @staticmethod
    def max_bytes(n: int) -> "BufferConfig":
        """Kafka Streams' ``BufferConfig.maxBytes``: the buffer's entries (each its key and
        buffered change, serialized as the buffer's store holds them) may take ``n`` bytes."""
        return BufferConfig(byte_limit=_limit(n, "max_bytes"))

    @either
    def with_max_records(self, n: int) -> "BufferConfig":
        """Java's ``withMaxRecords``; on the class, as ``max_records`` (kspark's older use)."""
        return replace(self, record_limit=_limit(n, "max_records"))

    @either
    def with_max_bytes(self, n: int) -> "BufferConfig":
        return replace(self, byte_limit=_limit(n, "max_bytes"))

    def with_no_bound(self) -> "BufferConfig":
        return replace(self, record_limit=None, byte_limit=None)

    def emit_early_when_full(self) -> "BufferConfig":
        return replace(self, shut_down=False)

    def shut_down_when_full(self) -> "BufferConfig":
        return replace(self, shut_down=True)


def _limit(n: Any, what: str) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise TypeError(f"BufferConfig.{what} takes an int >= 0, got {n!r}")
    return n


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
    name: str | None = None  # the processor's; its buffer store is ``<name>-store``

    def with_name(self, name: str) -> "Suppressed":
        """Name the suppression: its processor ``name``, its buffer store ``<name>-store``
        (and so its changelog), as Java's ``Suppressed.withName``.

        >>> Suppressed.until_time_limit(1000).with_name("alerts-suppress").name
        'alerts-suppress'
        """
        return Suppressed(self.final_results, self.time_to_wait_ms, self.buffer, name)

    @staticmethod
    def until_window_closes(buffer: BufferConfig | None = None) -> "Suppressed":
        return Suppressed(True, 0, buffer or BufferConfig.unbounded())

    @staticmethod
    def until_time_limit(time_to_wait_ms: Any,
                         buffer: BufferConfig | None = None) -> "Suppressed":
        """At most one update per key per ``time_to_wait_ms`` (int ms or a ``timedelta``)."""
        return Suppressed(False, to_ms(time_to_wait_ms, "time to wait"),
                          buffer or BufferConfig.unbounded())


class SuppressProcessor(Processor):
    """Buffers the latest change per key; emits when its time comes, in order of (buffer
    time, serialized key), as Kafka Streams' in-memory time-ordered buffer. A key buffered
    again keeps its place. Final results never emit a delete (Java drops tombstones there).

    Entries are Java's (``state.buffer_value.Buffered``: its buffer time is the window's
    end, or the record's time; due ``delay`` later), so the buffer's changelog is Java's."""

    # read by metrics/shape.py: suppression emits are metered, the buffer store is not
    metric_kinds = ("suppress",)

    def __init__(self, store_name: str, suppressed: Suppressed, grace_ms: int | None):
        self.store_name, self.suppressed, self.grace_ms = store_name, suppressed, grace_ms
        self.delay = (grace_ms or 0) if suppressed.final_results else suppressed.time_to_wait_ms

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)
        self.observed = -1
        self.heap: list[tuple[int, bytes, Any]] = []
        # max_bytes: each entry's size, as Java estimates it (BufferValue's and the key's)
        self.sizes: dict[bytes, int] | None = (
            {} if self.suppressed.buffer.byte_limit is not None else None)
        self.bytes = 0
        for kv in self.store.all():  # rebuild the index (the store may have been restored)
            self._index(kv.value.time, kv.key)
            self._sized(kv.key, kv.value)
            self.observed = max(self.observed, kv.value.timestamp)

    def _buffer_time(self, record: Record) -> int:
        if self.suppressed.final_results:
            window = getattr(record.key, "window", None)
            if window is None:
                raise StreamsError("suppress(until_window_closes) needs a windowed table")
            return window.end
        return record.timestamp

    def process(self, record: Record) -> None:
        self.observed = max(self.observed, record.timestamp)
        held = self.store.get(record.key)
        meta = self.context.record_metadata()  # None in a commit's cache flush or a punctuation
        where = ("", -1, -1) if meta is None else (meta.topic, meta.partition, meta.offset)
        # as Java's BufferValue: the prior value is the old value of the first buffered change
        entry = Buffered(held.time if held is not None else self._buffer_time(record),
                         record.value.new, record.value.old,
                         held.prior if held is not None else record.value.old,
                         record.timestamp, tuple(record.headers or ()), *where)
        self.store.put(record.key, entry)
        self._sized(record.key, entry)
        if held is None:
            self._index(entry.time, record.key)
        self._emit_due()
        self._enforce_bound()

    def _sized(self, key: Any, entry: Buffered | None) -> None:
        """Note ``key``'s entry size (None: removed), when the buffer is bounded in bytes."""
        if self.sizes is None:
            return
        raw = self.store.encode_key(key)
        self.bytes -= self.sizes.pop(raw, 0)
        if entry is not None:
            self.sizes[raw] = size = self.store.value_serde.size(self.store_name, raw, entry)
            self.bytes += size

    def _index(self, time: int, key: Any) -> None:
        heapq.heappush(self.heap, (time + self.delay, self.store.encode_key(key), key))

    def _emit(self, key: Any) -> None:
        held = self.store.get(key)
        if held is None:
            return
        self.store.delete(key)
        self._sized(key, None)
        if held.new is None and self.suppressed.final_results:
            return
        count_metric(self.context, "suppression-emit")
        # as Java's eviction: the new value with the old value of the last buffered change
        self.context.forward(Record(key, Change(held.new, held.old), held.timestamp,
                                    held.headers))

    def _emit_due(self) -> None:
        while self.heap and self.heap[0][0] <= self.observed:
            _, _, key = heapq.heappop(self.heap)
            self._emit(key)

    def _enforce_bound(self) -> None:
        buffer = self.suppressed.buffer
        while self._over(buffer):
            if buffer.shut_down:
                raise StreamsError(
                    f"suppress buffer {self.store_name!r} is full ({len(self.heap)} records, "
                    f"{self.bytes} bytes; limits: {buffer.record_limit} records, "
                    f"{buffer.byte_limit} bytes) and is configured to shut down when full; "
                    "raise BufferConfig.max_records / max_bytes")
            _, _, key = heapq.heappop(self.heap)
            self._emit(key)

    def _over(self, buffer: BufferConfig) -> bool:
        return ((buffer.record_limit is not None and len(self.heap) > buffer.record_limit)
                or (buffer.byte_limit is not None and self.bytes > buffer.byte_limit))
