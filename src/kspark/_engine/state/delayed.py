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
import binascii
import json
import struct
from typing import Any, NamedTuple

from kspark._engine.api import Record
from kspark._engine.documents import Invalid, need_dict, need_int, need_list, need_str
from kspark._engine.state.kv import StoreBase
from kspark.errors import CorruptStateError

__all__ = ["DelayedRecordsStore", "Due", "parse_entry", "parse_sequence", "SEQ_KEY"]

SEQ_KEY = b"\xff" * 16  # sorts after every (due, sequence) key
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


def _unb64(text: Any, what: str) -> bytes | None:
    if text is None:
        return None
    try:
        return base64.b64decode(need_str(text, what), validate=True)
    except (binascii.Error, ValueError) as e:  # ValueError: not ASCII
        raise Invalid(f"{what} is not base64 ({e})") from None


def parse_entry(raw: bytes) -> dict[str, Any]:
    """One entry's JSON with every field's type checked; raises Invalid.

    >>> parse_entry(b'{"k": null, "v": "AQ==", "t": 5, "n": "p", "h": [], "o": null}')["v"]
    b'\\x01'
    """
    try:
        e = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise Invalid(f"not JSON ({err})") from None
    need_dict(e, "the entry")
    missing = sorted({"k", "v", "t", "n", "h", "o"} - set(e))
    if missing:
        raise Invalid(f"the entry lacks {', '.join(map(repr, missing))}")
    headers = []
    for i, h in enumerate(need_list(e["h"], "'h' (headers)")):
        hk, hv = need_list(h, f"header {i}", 2)
        headers.append((need_str(hk, f"the key of header {i}"), _unb64(hv, f"header {i}")))
    origin = None
    if e["o"] is not None:
        t, p, o = need_list(e["o"], "'o' (origin)", 3)
        origin = (need_str(t, "the origin's topic"), need_int(p, "the origin's partition"),
                  need_int(o, "the origin's offset"))
    return {"k": _unb64(e["k"], "'k' (key)"), "v": _unb64(e["v"], "'v' (value)"),
            "t": need_int(e["t"], "'t' (timestamp)"), "n": need_str(e["n"], "'n' (processor)"),
            "h": tuple(headers), "o": origin}


def parse_sequence(raw: bytes) -> int:
    """The next sequence number (decimal text); raises Invalid."""
    if not raw.isdigit() or len(raw) > 20:
        raise Invalid(f"the sequence number {raw[:30]!r} is not a decimal number")
    return int(raw)


class DelayedRecordsStore(StoreBase):
    """Scheduled records in due order over a byte store ``inner``."""

    def __init__(self, name: str, inner: Any, key_serde: Any, value_serde: Any):
        self._name = name
        self.inner = inner
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.is_open = True
        self.caching_enabled = False

    def _corrupt(self, e: Invalid) -> CorruptStateError:
        return CorruptStateError(
            f"delayed-records store {self._name!r} holds an entry kspark cannot read: {e}. Its "
            "local files or its changelog were damaged or written by something else; reset "
            "the application so that it rebuilds its state from its input")

    def _next_seq(self) -> int:
        raw = self.inner.get(SEQ_KEY)
        try:
            seq = 0 if raw is None else parse_sequence(raw)
        except Invalid as e:
            raise self._corrupt(e) from None
        self.inner.put(SEQ_KEY, str(seq + 1).encode())
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
        try:
            e = parse_entry(raw)
        except Invalid as err:
            raise self._corrupt(err) from None
        k, v = e["k"], e["v"]
        record = Record(None if k is None else self.key_serde.deserialize(self._name, k),
                        None if v is None else self.value_serde.deserialize(self._name, v),
                        e["t"], e["h"])
        return Due(record, e["n"], e["o"], k, v)

    def take_due(self, now_ms: int) -> list[Due]:
        """Remove and return the records due at ``now_ms`` (due time <= now), in due order."""
        hi = _KEY.pack(max(now_ms, 0), 2**63 - 1)
        found = [(k, v) for k, v in self.inner.range(None, hi) if k != SEQ_KEY]
        for k, _ in found:
            self.inner.delete(k)
        return [self._decode(v) for _, v in found]

    def scheduled(self) -> list[tuple[int, Record]]:
        """Every pending record with its due time, in due order (for tests and tools)."""
        return [(_KEY.unpack(k)[0], self._decode(v).record)
                for k, v in self.inner.range(None, None) if k != SEQ_KEY]

    def pending(self) -> int:
        """How many records wait."""
        return sum(1 for k, _ in self.inner.range(None, None) if k != SEQ_KEY)
