"""Stream-table joins: each stream record joins a KTable's (or a GlobalKTable's) current
value, looked up in the table's store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.context import record_dropped
from kspark._engine.progress import KeepsProgress

__all__ = ["StreamTableJoinProcessor", "TimeFirstKeySerde", "GlobalTableJoinProcessor"]


class GlobalTableJoinProcessor(Processor):
    """A stream record joins a GlobalKTable's current value for ``key_selector(key, value)``
    (the table's timestamp is not used). As Java's KStreamKTableJoinProcessor for global
    tables: a null value, or a null selected key, drops the record (a warning, counted), but
    a left join keeps a record whose own key is null (the selector is still asked, and a
    null answer joins None); inner joins drop records without a table value, left joins join
    them with None. The output has the stream record's key, timestamp and headers."""

    def __init__(self, store: str, key_selector: Callable[[Any, Any], Any],
                 joiner: Callable[[Any, Any], Any], left: bool):
        self.store_name, self.key_selector = store, key_selector
        self.joiner, self.left = joiner, left

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record) -> None:
        keep_null_key = self.left and record.key is None and record.value is not None
        if not keep_null_key:
            if record.value is None or self.key_selector(record.key, record.value) is None:
                record_dropped(self.context, "null join key or value")
                return
        mapped = self.key_selector(record.key, record.value)
        found = None if mapped is None else self.store.get(mapped)
        other = None if found is None else found.value
        if self.left or other is not None:
            self.context.forward(record.with_value(self.joiner(record.value, other)))


class StreamTableJoinProcessor(Processor, KeepsProgress):
    """Each stream record joins the table's current value for its key.

    Inner: records whose key has no table value, or with a null key, are dropped.
    Left: they are joined with None (a null key too, KIP-962). As KStreamKTableJoinProcessor,
    a null stream value is always dropped: the joiner never sees one.

    With a grace period (a versioned table), records wait in ``buffer`` until the buffer's
    stream time passes their timestamp plus the grace, then join as of their timestamp, in
    order of (timestamp, key bytes, arrival); a record already that late joins at once. A
    left join's record with a null key then fails the task, as in Java (whose buffer
    refuses it).
    """

    progress_fields = ("buffer_time",)  # kept in the task's progress across restarts

    def __init__(self, table: Any, joiner: Callable[[Any, Any], Any], left: bool,
                 grace_ms: int | None = None, buffer: str | None = None):
        self.table, self.joiner, self.left = table, joiner, left  # table: a ValueGetter
        self.grace_ms, self.buffer_name = grace_ms, buffer
        self.buffer_time = -1  # the newest timestamp the buffer took

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.lookup = self.table.bind(context)
        self.buffer = (None if self.buffer_name is None
                       else context.get_state_store(self.buffer_name))
        self.seq = 0
        if self.buffer is not None:
            self.seq = max((kv.key[2] for kv in self.buffer.all()), default=0)

    def process(self, record: Record) -> None:
        if record.value is None or (record.key is None and not self.left):
            record_dropped(self.context, "a stream-table join skips a record with a null "
                                         f"{'value' if record.value is None else 'key'}")
            return
        # a buffer, its name and a grace period come together (the DSL sets all or none)
        if self.buffer is None or self.buffer_name is None or self.grace_ms is None:
            self._join(record)
            return
        if record.key is None:  # Java fails in its buffer (an NPE), an error of this record
            # the processing exception handler decides about: fails the task by default
            raise ValueError(
                f"task {self.context.task_id()}: the grace period of stream-table join "
                f"{self.buffer_name[:-len('-Buffer')]!r} cannot hold a record with a null key "
                f"({_where(self.context)}); as in Kafka Streams a grace period needs keys: "
                f"filter null keys out before the join, or join without a grace period")
        if record.timestamp < self.buffer_time - self.grace_ms:
            self._join(record)
            return
        self.seq = (self.seq + 1) & 0x7FFFFFFF
        self.buffer.put((record.timestamp, record.key, self.seq), (record.value, record.headers))
        self.buffer_time = max(self.buffer_time, record.timestamp)
        due = []
        for kv in self.buffer.all():
            if kv.key[0] > self.buffer_time - self.grace_ms:
                break
            due.append(kv)
        for kv in due:
            self.buffer.delete(kv.key)
            ts, key, _ = kv.key
            value, headers = kv.value
            self._join(Record(key, value, ts, headers))

    def _join(self, record: Record) -> None:
        if record.key is None:  # no grace period: KIP-962
            if self.left:
                self.context.forward(record.with_value(self.joiner(record.value, None)))
            return
        other, _ = self.lookup(record.key, record.timestamp)  # a versioned table: as of then
        if other is None and not self.left:
            return
        self.context.forward(record.with_value(self.joiner(record.value, other)))


def _where(context: ProcessorContext) -> str:
    m = context.record_metadata()
    return "no input record" if m is None else \
        f"topic {m.topic!r}, partition {m.partition}, offset {m.offset}"


class TimeFirstKeySerde:
    """Keys of a stream-table join's grace buffer: (timestamp, key, sequence) as the
    timestamp's 8 big-endian bytes, the key's bytes, 4 bytes of sequence, so the buffer
    iterates in Kafka Streams' time-first order."""

    def __init__(self, key_serde: Any):
        self.key_serde = key_serde  # None: the default key serde

    def with_defaults(self, resolve: Callable[[Any], Any]) -> "TimeFirstKeySerde":
        return TimeFirstKeySerde(resolve(self.key_serde))

    def serialize(self, topic: str, data: tuple[int, Any, int]) -> bytes:
        ts, key, seq = data
        return (ts.to_bytes(8, "big", signed=True) + self.key_serde.serialize(topic, key)
                + seq.to_bytes(4, "big"))

    def deserialize(self, topic: str, data: bytes) -> tuple[int, Any, int]:
        return (int.from_bytes(data[:8], "big", signed=True),
                self.key_serde.deserialize(topic, data[8:-4]), int.from_bytes(data[-4:], "big"))
