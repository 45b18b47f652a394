"""Changelog records in Kafka Streams' byte layouts, so a changelog one writes the other
restores (issue 54: a Java application taken over in place, and back).

A DSL store keeps a value with its timestamp (``ValueAndTimestamp``: 8 bytes, then the
value's). Java logs such a store's change as the value alone, with the timestamp as the
record's timestamp (``ChangeLoggingTimestampedKeyValueBytesStore``); a window store's key
with a 4-byte sequence number after the window start (``WindowKeySchema``, 0 unless the
store keeps duplicates, whose keys carry theirs already); a session store's key as kspark
keeps it (key, end, start) and its value alone, with the record's time. A plain store (a
stream-stream join's windows, the Processor API's stores) is logged as it is kept.

- :func:`codec_for`: a store builder's :class:`ChangelogCodec`;
- :meth:`ChangelogCodec.encode` / :meth:`~ChangelogCodec.decode`: a store entry to a
  changelog record and back;
- :func:`written_by_old_kspark`: a record kspark wrote before it took Java's layout
  (restoring it now would read its timestamp as part of the value).

Example:
    >>> c = ChangelogCodec(strip_timestamp=True, timestamp_from_value=True)
    >>> c.encode(b"k", bytes(7) + b"\\x05" + b"v", 99)
    (b'k', b'v', 5)
    >>> c.decode(b"k", b"v", 5)
    (b'k', b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x05v')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Sequence
from typing import Any
from kspark._engine.state.versioned import history_records
from kspark._engine.state.build import StoreKind, store_kind
from kspark._engine.state.timestamped import ValueAndTimestampSerde
from kspark._engine.joins.stream_stream import PendingValuesSerde

__all__ = ["ChangelogCodec", "RAW", "codec_for", "FORMAT_HEADER", "written_by_old_kspark",
           "save_codec", "load_codec"]

# on every changelog record kspark writes: the record is in Java's layout
FORMAT_HEADER = ("kspark.changelog", b"java")
_TS = 8
_SEQ = b"\x00" * 4


@dataclass(frozen=True)
class ChangelogCodec:
    """How a store's entries become changelog records: ``strip_timestamp`` (the value's
    8-byte timestamp is left out: the record carries it, ``timestamp_from_value``, or the
    record's time), ``key_suffix`` (bytes after the key: a window's sequence number)."""

    strip_timestamp: bool = False
    timestamp_from_value: bool = False
    key_suffix: bytes = b""
    # a versioned store's: each record one version (restored by replaying puts), with the
    # store's history retention
    versioned_history_ms: int | None = None
    # kspark's layout of the store's records changed (a record of before is refused)
    refuse_old: bool = False
    # headers every record with a value carries (a suppress buffer's: Java's version),
    # which a restore requires; and whether records have no timestamp of their own (None:
    # the producer's time, as Java sends a suppress buffer's)
    value_headers: tuple[tuple[str, bytes], ...] = ()
    no_timestamp: bool = False

    def records(self, key: bytes, value: bytes | None
                ) -> Sequence[tuple[bytes, bytes | None, int | None]]:
        """The changelog records that restore one local entry (``kspark changelog
        rebuild``): one, timestamped 0 (now) unless the entry holds its own, or each
        version of a versioned store's history.

        >>> ChangelogCodec(True, True).records(b"k", bytes(7) + b"\\x05v")
        [(b'k', b'v', 5)]
        """
        if self.versioned_history_ms is not None:
            return history_records(key, value)
        return [self.encode(key, value, 0)]

    def encode(self, key: bytes, value: bytes | None, now: int
               ) -> tuple[bytes, bytes | None, int | None]:
        """A store entry (``value`` None: deleted) as (key, value, timestamp) of its
        changelog record; ``now``: the time of the record being processed."""
        ts: Any = None if self.no_timestamp else now
        if self.strip_timestamp and value is not None:
            if self.timestamp_from_value:
                ts = int.from_bytes(value[:_TS], "big", signed=True)
            value = value[_TS:]
        return key + self.key_suffix, value, ts

    def decode(self, key: Any, value: bytes | None, ts: int) -> tuple[Any, bytes | None]:
        """A changelog record as the store entry it stands for.

        >>> ChangelogCodec(key_suffix=b"\\x00" * 4).decode(b"k" + bytes(12), None, 3)
        (b'k\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00', None)
        """
        if self.key_suffix and key is not None:
            key = key[:-len(self.key_suffix)]
        if self.strip_timestamp and value is not None:
            value = ts.to_bytes(_TS, "big", signed=True) + value
        return key, value


RAW = ChangelogCodec()


def codec_for(builder: Any) -> ChangelogCodec:
    """The changelog codec of the store ``builder`` builds: Java's layout for the DSL's
    timestamped key-value, window and session stores; the entries as kept otherwise.

    >>> from kspark import Serdes
    >>> from kspark.state import Stores
    >>> S = Serdes.String()
    >>> codec_for(Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"), S, S))
    ... # doctest: +ELLIPSIS
    ChangelogCodec(strip_timestamp=False, timestamp_from_value=False, key_suffix=b'', ...)
    """
    from kspark._engine.state.buffer_value import CHANGELOG_VERSION_HEADER

    kind = store_kind(builder)
    if kind is StoreKind.VERSIONED:
        return ChangelogCodec(versioned_history_ms=builder.supplier.history_retention_ms,
                              refuse_old=True)
    if getattr(getattr(builder, "value_serde", None), "log_on_flush", False):  # suppress
        return ChangelogCodec(refuse_old=True, value_headers=(CHANGELOG_VERSION_HEADER,),
                              no_timestamp=True)
    if isinstance(getattr(builder, "value_serde", None), PendingValuesSerde):
        return ChangelogCodec(refuse_old=True)  # an outer join's shared store: Java's lists
    if not isinstance(getattr(builder, "value_serde", None), ValueAndTimestampSerde):
        return RAW
    if kind is StoreKind.KEY_VALUE:
        return ChangelogCodec(strip_timestamp=True, timestamp_from_value=True)
    if kind is StoreKind.WINDOW:
        dups = getattr(builder.supplier, "retain_duplicates", False)
        return ChangelogCodec(True, True, b"" if dups else _SEQ)
    if kind is StoreKind.SESSION:
        return ChangelogCodec(strip_timestamp=True)
    return RAW


def written_by_old_kspark(codec: ChangelogCodec, value: bytes | None, headers: Any) -> bool:
    """Whether a changelog record of a store logged with ``codec`` was written by kspark's
    micro-batch mode before it took Java's layout: kspark's batch header without
    :data:`FORMAT_HEADER` (its value still holds its timestamp). Records of a real-time run
    of then carry no header, as Java's: an application upgraded from such a run is caught
    by its stores' earlier names (``naming.legacy_changelogs``) unless it named them.

    >>> c = ChangelogCodec(True, True)
    >>> written_by_old_kspark(c, b"v", [("kspark.batch", b"q:1")])
    True
    >>> written_by_old_kspark(c, b"v", [("kspark.batch", b"q:1"), FORMAT_HEADER])
    False
    >>> written_by_old_kspark(c, b"v", None)
    False
    """
    if not (codec.strip_timestamp or codec.refuse_old) or value is None:
        return False
    names = {h[0] for h in headers or ()}
    return "kspark.batch" in names and FORMAT_HEADER[0] not in names


def _codec_path(task_dir: Path, store: str) -> Path:
    return task_dir / f".{store}.changelog-format"


def save_codec(task_dir: Path, store: str, codec: ChangelogCodec) -> None:
    """Note beside a persistent store's directory how its changelog is laid out, for
    ``kspark changelog rebuild`` (which has only the local state); once per store."""
    path = _codec_path(task_dir, store)
    if not path.exists():
        task_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"strip_timestamp": codec.strip_timestamp,
                                    "timestamp_from_value": codec.timestamp_from_value,
                                    "key_suffix": codec.key_suffix.hex(),
                                    "versioned_history_ms": codec.versioned_history_ms,
                                    "refuse_old": codec.refuse_old}))


def load_codec(task_dir: Path, store: str) -> ChangelogCodec | None:
    """The codec :func:`save_codec` noted (None: none was, the store predates it).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> save_codec(d, "s", ChangelogCodec(True, True, bytes(4))); load_codec(d, "s").key_suffix
    b'\\x00\\x00\\x00\\x00'
    >>> load_codec(d, "other") is None
    True
    """
    path = _codec_path(task_dir, store)
    if not path.exists():
        return None
    doc = json.loads(path.read_text())
    history = doc.get("versioned_history_ms")
    return ChangelogCodec(bool(doc["strip_timestamp"]), bool(doc["timestamp_from_value"]),
                          bytes.fromhex(str(doc["key_suffix"])),
                          None if history is None else int(history),
                          bool(doc.get("refuse_old", False)))
