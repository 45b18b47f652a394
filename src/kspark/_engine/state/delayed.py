"""The delayed-records store (KIP-311's delayed processing): records a processor scheduled
with ``context.schedule_record(record, delay_ms)``, kept until they are due.

It lies on a plain byte store like any other (persistent or in memory, changelog-backed), so
pending records survive a restart and are restored with the task. An entry's key is its due
time and a sequence number (8 + 8 bytes, big-endian), so a range scan yields the entries in
due order, and records due at the same moment in the order they were scheduled; its value
holds the record (key and value serialized with the store's serdes), the processor to
re-process it and where its input record came from. The next sequence number lives under a
key that sorts after every entry.

Example:
    >>> from kspark import Serdes
    >>> from kspark.processor import Record
    >>> from kspark.state import Stores
    >>> store = Stores.delayed_records_store_builder(Stores.in_memory_key_value_store("d"),
    ...     Serdes.String(), Serdes.Long()).with_logging_disabled().build()
    >>> store.schedule(Record("k", 1, 5), due_ms=200, node="p")
    >>> store.schedule(Record("k", 2, 6), due_ms=100, node="p")
    >>> [d.record.value for d in store.take_due(150)], store.pending()
    ([2], 1)
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any, NamedTuple

from kspark._engine.api import Record
from kspark._engine.state.kv import StoreBase

__all__ = ["DelayedRecordsStore", "Due"]

_SEQ_KEY = b"\xff" * 16  # sorts after every (due, sequence) key
_KEY = struct.Struct(">qq")


class Due(NamedTuple):
    """A scheduled record: the record, its processor, where its input came from (topic,
    partition, offset; None if scheduled outside a record), and its serialized key and
    value (for a dead letter)."""

    record: Record
    node: str
    origin: tuple[str, int, int] | None
    key_bytes: bytes | None
    value_bytes: bytes | None


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class DelayedRecordsStore(StoreBase):
    """Scheduled records in due order over a byte store ``inner``."""

    def __init__(self, name: str, inner: Any, key_serde: Any, value_serde: Any):
        self._name = name
        self.inner = inner
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.is_open = True
        self.caching_enabled = False

    def _next_seq(self) -> int:
        raw = self.inner.get(_SEQ_KEY)
        seq = 0 if raw is None else int(raw)
        self.inner.put(_SEQ_KEY, str(seq + 1).encode())
        return seq

    def schedule(self, record: Record, due_ms: int, node: str,
                 origin: tuple[str, int, int] | None = None) -> None:
        """Keep ``record`` until ``due_ms``, for processor ``node`` to process it again."""
        k = None if record.key is None else self.key_serde.serialize(self._name, record.key)
        v = None if record.value is None else self.value_serde.serialize(self._name, record.value)
        entry = {"k": _b64(k), "v": _b64(v), "t": record.timestamp, "n": node,
                 "h": [[hk, _b64(hv)] for hk, hv in record.headers],
                 "o": None if origin is None else list(origin)}
        self.inner.put(_KEY.pack(max(due_ms, 0), self._next_seq()), json.dumps(entry).encode())

    def _decode(self, raw: bytes) -> Due:
        e = json.loads(raw)
        k, v = _unb64(e["k"]), _unb64(e["v"])
        record = Record(None if k is None else self.key_serde.deserialize(self._name, k),
                        None if v is None else self.value_serde.deserialize(self._name, v),
                        int(e["t"]), tuple((hk, _unb64(hv)) for hk, hv in e["h"]))
        return Due(record, e["n"], None if e["o"] is None else tuple(e["o"]), k, v)

    def take_due(self, now_ms: int) -> list[Due]:
        """Remove and return the records due at ``now_ms`` (due time <= now), in due order."""
        hi = _KEY.pack(max(now_ms, 0), 2**63 - 1)
        found = [(k, v) for k, v in self.inner.range(None, hi) if k != _SEQ_KEY]
        for k, _ in found:
            self.inner.delete(k)
        return [self._decode(v) for _, v in found]

    def scheduled(self) -> list[tuple[int, Record]]:
        """Every pending record with its due time, in due order (for tests and tools)."""
        return [(_KEY.unpack(k)[0], self._decode(v).record)
                for k, v in self.inner.range(None, None) if k != _SEQ_KEY]

    def pending(self) -> int:
        """How many records wait."""
        return sum(1 for k, _ in self.inner.range(None, None) if k != _SEQ_KEY)
