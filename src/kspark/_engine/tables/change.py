"""What flows between KTable nodes: a key's change (new value, old value), as table
re-grouping sends it over a repartition topic, and the check that skips a versioned table's
out-of-order updates."""

from __future__ import annotations

from typing import Any, NamedTuple

from kspark._engine.api import ProcessorContext, Record
from kspark._engine.context import record_dropped

__all__ = ["Change", "ChangeSerde", "out_of_order"]


class Change(NamedTuple):
    """What flows between KTable nodes: a key's new value and its old one. ``is_latest`` is
    False for an out-of-order update of a versioned table (KIP-914): joins and re-grouping
    skip it, filters and mappers pass it on."""

    new: Any
    old: Any
    is_latest: bool = True


def out_of_order(context: ProcessorContext, record: Record, what: str,
                 counted: bool = True) -> bool:
    """True for an out-of-order versioned-table update, which joins and re-grouping skip as
    Kafka Streams does; joins count it as dropped (``counted``), re-grouping does not
    (Java's KTableRepartitionMap skips it silently)."""
    if record.value.is_latest:
        return False
    if counted:
        record_dropped(context, f"{what} skips an out-of-order update of key {record.key!r} "
                                f"at {record.timestamp} from a versioned table")
    return True


class ChangeSerde:
    """A Change as table re-grouping sends it: a flag byte (1: new only, 0: old only, 2: both,
    then the new value's length in 4 bytes), then the values' bytes. kspark-internal: used on
    repartition topics."""

    def __init__(self, inner: Any):
        self.inner = inner

    def serialize(self, topic: str, data: Change | None) -> bytes | None:
        if data is None:
            return None
        if data.new is not None and data.old is not None:
            new = self.inner.serialize(topic, data.new) or b""
            return (b"\x02" + len(new).to_bytes(4, "big") + new
                    + (self.inner.serialize(topic, data.old) or b""))
        if data.new is not None:
            return b"\x01" + (self.inner.serialize(topic, data.new) or b"")
        return b"\x00" + (self.inner.serialize(topic, data.old) or b"")

    def deserialize(self, topic: str, data: bytes | None) -> Change | None:
        if data is None:
            return None
        if data[:1] == b"\x02":
            n = int.from_bytes(data[1:5], "big")
            return Change(self.inner.deserialize(topic, data[5:5 + n]),
                          self.inner.deserialize(topic, data[5 + n:]))
        value = self.inner.deserialize(topic, data[1:])
        return Change(value, None) if data[:1] == b"\x01" else Change(None, value)
