"""Versioned key-value stores (KIP-889): every key keeps its values over time, so a reader can
ask for the value a key had at a given timestamp, within the store's history retention.

Each key's history is one entry of the byte store: per version, its 8-byte ``valid_from``
timestamp, a tombstone flag, a 4-byte length and the value's bytes, oldest first. The
changelog is Java's (ChangeLoggingVersionedKeyValueBytesStore): each put or delete is one
record, key -> the value's bytes (None for a delete), the record's timestamp its
``valid_from``; a restore replays them as puts (:func:`restore_versions`).

Example:
    >>> from kspark import Serdes
    >>> from kspark.state import Stores
    >>> s = Stores.versioned_key_value_store_builder(
    ...     Stores.persistent_versioned_key_value_store("v", 100), Serdes.String(),
    ...     Serdes.Long()).with_logging_disabled().build()
    >>> s.put("a", 1, 10), s.put("a", 2, 20), s.put("a", 0, 5)
    (-1, -1, 10)
    >>> s.get("a")
    VersionedRecord(value=2, timestamp=20, valid_to=None)
    >>> s.get("a", 15), s.get("a", 4)
    (VersionedRecord(value=1, timestamp=10, valid_to=None), None)
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from kspark._engine.state.kv import StoreBase
from kspark._engine.durations import to_epoch_ms

__all__ = ["VersionedRecord", "VersionedKeyValueStore", "PUT_RETURN_CODE_NOT_PUT",
           "PUT_RETURN_CODE_VALID_TO_UNDEFINED", "restore_versions", "history_records"]

PUT_RETURN_CODE_NOT_PUT = -(1 << 63)  # older than the history retention: not stored
PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1  # the put is the key's latest version

_Version = tuple[int, bytes | None]  # (valid_from, value bytes or None for a tombstone)


class VersionedRecord(NamedTuple):
    """A value and the timestamp it became valid. ``valid_to`` (until when) is always None
    from the store's API, as from Java's MeteredVersionedKeyValueStore."""

    value: Any
    timestamp: int
    valid_to: int | None = None


def _encode(history: list[_Version]) -> bytes:
    out = bytearray()
    for ts, raw in history:
        out += ts.to_bytes(8, "big", signed=True)
        out += b"\x00" + (0).to_bytes(4, "big") if raw is None else (
            b"\x01" + len(raw).to_bytes(4, "big") + raw)
    return bytes(out)


def _decode(data: bytes | None) -> list[_Version]:
    out, i = [], 0
    while data and i < len(data):
        ts = int.from_bytes(data[i:i + 8], "big", signed=True)
        n = int.from_bytes(data[i + 9:i + 13], "big")
        out.append((ts, data[i + 13:i + 13 + n] if data[i + 8] == 1 else None))
        i += 13 + n
    return out


class VersionedKeyValueStore(StoreBase):
    """``put(key, value, timestamp)``, ``get(key)`` (the latest) and ``get(key, as_of)``.

    As Kafka Streams' RocksDBVersionedStore: the store tracks its observed stream time (the
    largest timestamp put); a put older than that minus ``history_retention_ms`` is not
    stored (PUT_RETURN_CODE_NOT_PUT), and a read that old is answered only by the latest
    version (if it is older than the read); the latest version of a key is always kept.
    """

    def __init__(self, name: str, inner: Any, key_serde: Any, value_serde: Any,
                 history_retention_ms: int):
        self._name, self.inner = name, inner
        self.key_serde, self.value_serde = key_serde, value_serde
        self.history_retention_ms = history_retention_ms
        self.is_open = True
        self.caching_enabled = False  # versioned stores do not cache, as in Kafka Streams
        self._observed: int | None = None  # found from the stored histories when first needed
        # the changelog: log(key bytes, value bytes or None, valid_from), one record per put
        # or delete, as Java logs them (build_store sets it when logging is enabled)
        self.changelog: Callable[[bytes, bytes | None, int], None] | None = None

    def _k(self, key: Any) -> bytes:
        if key is None:
            raise ValueError(f"store {self._name!r} does not accept a None key")
        return self.key_serde.serialize(self._name, key)

    def encode_key(self, key: Any) -> bytes:
        return self._k(key)

    def decode_key(self, raw: bytes) -> Any:
        return self.key_serde.deserialize(self._name, raw)

    def observed_stream_time(self) -> int:
        if self._observed is None:
            self._observed = max((h[-1][0] for _, v in self.inner.range(None, None)
                                  if (h := _decode(v))), default=-1)
        return self._observed

    def _record(self, history: list[_Version], i: int) -> VersionedRecord | None:
        ts, raw = history[i]
        if raw is None:
            return None
        return VersionedRecord(self.value_serde.deserialize(self._name, raw), ts)

    def get(self, key: Any, as_of: int | None = None) -> VersionedRecord | None:
        """The latest version, or with ``as_of`` the version valid at that time (None: none,
        a tombstone, or older than the history retention). As Java's
        MeteredVersionedKeyValueStore, the record has no ``valid_to``."""
        if as_of is not None and type(as_of) is not int:
            as_of = to_epoch_ms(as_of, "get() as_of")
        history = _decode(self.inner.get(self._k(key)))
        if not history:
            return None
        if as_of is None:
            return self._record(history, len(history) - 1)
        if as_of < self.observed_stream_time() - self.history_retention_ms:
            # past the history retention only the latest version answers, if it is that old
            last = len(history) - 1
            return self._record(history, last) if history[last][0] <= as_of else None
        i = bisect.bisect_right([ts for ts, _ in history], as_of) - 1
        return None if i < 0 else self._record(history, i)

    def versions(self, key: Any) -> list[VersionedRecord]:
        """Every stored version of ``key``, oldest first, each with its ``valid_to`` (None
        for the latest); tombstones are left out (they end the version before them). What
        interactive queries read (``MultiVersionedKeyQuery``); retention is theirs to apply."""
        history = _decode(self.inner.get(self._k(key)))
        return [VersionedRecord(self.value_serde.deserialize(self._name, raw), ts,
                                history[i + 1][0] if i + 1 < len(history) else None)
                for i, (ts, raw) in enumerate(history) if raw is not None]

    def put(self, key: Any, value: Any, timestamp: int) -> int:
        """Add a version (a None value is a tombstone); returns when it stops being valid
        (PUT_RETURN_CODE_VALID_TO_UNDEFINED: it is the latest) or PUT_RETURN_CODE_NOT_PUT."""
        k = self._k(key)
        raw = None if value is None else self.value_serde.serialize(self._name, value)
        if self.changelog is not None:  # as Java: logged also when too old to be stored
            self.changelog(k, raw, timestamp)
        return self.put_bytes(k, raw, timestamp)

    def put_bytes(self, k: bytes, raw: bytes | None, timestamp: int) -> int:
        """:meth:`put` of a serialized key and value (None: a tombstone), not logged: what
        a restore replays."""
        observed = self.observed_stream_time()
        if timestamp < observed - self.history_retention_ms:
            return PUT_RETURN_CODE_NOT_PUT
        self._observed = max(observed, timestamp)
        history = _decode(self.inner.get(k))
        if raw is None and history and history[-1][0] == timestamp and history[-1][1] is not None:
            # As RocksDBVersionedStore (maybePutToLatestValueStore): a tombstone as old as the
            # latest value deletes it and keeps no tombstone; the version before (if a value)
            # still ends at ``timestamp``, else the key has nothing newer than its tombstone
            if len(history) > 1 and history[-2][1] is not None:
                history[-1] = (timestamp, None)
            else:
                history.pop()
            self._write(k, self._expire(history))
            return PUT_RETURN_CODE_VALID_TO_UNDEFINED
        stamps = [ts for ts, _ in history]
        i = bisect.bisect_left(stamps, timestamp)
        if i < len(history) and history[i][0] == timestamp:
            history[i] = (timestamp, raw)
        else:
            history.insert(i, (timestamp, raw))
        valid_to = history[i + 1][0] if i + 1 < len(history) else PUT_RETURN_CODE_VALID_TO_UNDEFINED
        self._write(k, self._expire(history))
        return valid_to

    def delete(self, key: Any, timestamp: int) -> VersionedRecord | None:
        """A tombstone at ``timestamp``; returns the version that was valid then (None, and
        nothing stored, when ``timestamp`` is older than the history retention)."""
        if timestamp < self.observed_stream_time() - self.history_retention_ms:
            if self.changelog is not None:  # Java logs the delete all the same
                self.changelog(self._k(key), None, timestamp)
            return None
        before = self.get(key, timestamp)
        self.put(key, None, timestamp)
        return before

    def _expire(self, history: list[_Version]) -> list[_Version]:
        """Drop versions no read can reach any more: those that stopped being valid before
        the retention horizon (the latest always stays, unless it is a tombstone past it)."""
        horizon = self._observed - self.history_retention_ms  # type: ignore[operator]
        keep = [v for i, v in enumerate(history)
                if i + 1 == len(history) or history[i + 1][0] > horizon]
        if len(keep) == 1 and keep[0][1] is None and keep[0][0] < horizon:
            return []
        return keep

    def _write(self, k: bytes, history: list[_Version]) -> None:
        if history:
            self.inner.put(k, _encode(history))
        else:
            self.inner.delete(k)

    def all_latest(self) -> list[tuple[Any, VersionedRecord]]:
        """Every key's latest version (keys whose latest is a tombstone left out)."""
        out = []
        for k, v in self.inner.range(None, None):
            history = _decode(v)
            rec = self._record(history, len(history) - 1) if history else None
            if rec is not None:
                out.append((self.decode_key(k), rec))
        return out


def restore_versions(raw: Any, name: str, history_retention_ms: int,
                     records: Iterable[tuple[bytes, bytes | None, int]]) -> None:
    """Replay changelog records ``(key, value or None, timestamp)`` of a versioned store as
    puts into its byte store ``raw``, as Java's RocksDBVersionedStore restores them.

    >>> from kspark._engine.state.bytes_stores import InMemoryBytesStore
    >>> raw = InMemoryBytesStore("v")
    >>> restore_versions(raw, "v", 100, [(b"a", b"1", 10), (b"a", b"2", 20), (b"a", None, 30)])
    >>> history_records(b"a", raw.get(b"a"))
    [(b'a', b'1', 10), (b'a', b'2', 20), (b'a', None, 30)]
    """
    store = VersionedKeyValueStore(name, raw, None, None, history_retention_ms)
    for k, v, ts in records:
        store.put_bytes(k, v, ts)


def history_records(key: bytes, value: bytes | None) -> list[tuple[bytes, bytes | None, int]]:
    """The changelog records ``(key, value or None, valid_from)`` that restore one stored
    history (``kspark changelog rebuild``), oldest first."""
    return [(key, raw, ts) for ts, raw in _decode(value)]
