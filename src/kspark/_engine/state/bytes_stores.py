"""Byte-level key-value stores ordered by key bytes: in-memory, and RocksDB through rocksdict."""

from __future__ import annotations

import bisect
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kspark.errors import StateStoreError

__all__ = ["InMemoryBytesStore", "RocksDBBytesStore"]

Entry = tuple[bytes, bytes]


class InMemoryBytesStore:
    """A dict plus a sorted key list, so ranges come out in key-byte order."""

    persistent = False

    def __init__(self, name: str):
        self.name = name
        self._data: dict[bytes, bytes] = {}
        self._keys: list[bytes] = []

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """Each key's value (None: absent), in order.

        >>> s = InMemoryBytesStore("s"); s.put(b"a", b"1"); s.get_many([b"a", b"b"])
        [b'1', None]
        """
        data = self._data
        return [data.get(k) for k in keys]

    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self.delete(key)
            return
        if key not in self._data:
            bisect.insort(self._keys, key)
        self._data[key] = value

    def delete(self, key: bytes) -> bytes | None:
        old = self._data.pop(key, None)
        if old is not None:
            del self._keys[bisect.bisect_left(self._keys, key)]
        return old

    def range(self, lo: bytes | None, hi: bytes | None, reverse: bool = False) -> Iterator[Entry]:
        """Entries with ``lo <= key <= hi`` (None: unbounded), in key order or reversed."""
        i = 0 if lo is None else bisect.bisect_left(self._keys, lo)
        j = len(self._keys) if hi is None else bisect.bisect_right(self._keys, hi)
        keys = self._keys[i:j]
        for k in reversed(keys) if reverse else keys:
            yield k, self._data[k]

    def approximate_num_entries(self) -> int:
        return len(self._data)

    def flush(self) -> None:
        """Nothing to write: the data only lives in memory."""

    def detach(self) -> InMemoryBytesStore:
        """A store holding this one's entries, leaving this one empty (a closing task's
        in-memory state, kept for interactive queries until the task opens again).

        >>> s = InMemoryBytesStore("s"); s.put(b"k", b"v")
        >>> kept = s.detach(); s.close(); kept.get(b"k"), s.get(b"k")
        (b'v', None)
        """
        kept = InMemoryBytesStore(self.name)
        kept._data, kept._keys, self._data, self._keys = self._data, self._keys, {}, []
        return kept

    def close(self) -> None:
        self._data.clear()
        self._keys.clear()

    def destroy(self) -> None:
        self.close()

    def wipe(self) -> None:
        self.close()


class RocksDBBytesStore:
    """A RocksDB database under ``directory`` (rocksdict), iterated in key-byte order.
    ``lock_wait_s``: how long to wait for a lock another process holds (a task's store: the
    Python worker of a run that just stopped may still be closing it).

    ``durable_commits``: whether :meth:`flush` (a commit) writes RocksDB's memtable to disk.
    A host's task needs it (its checkpoint, written next, names the state on disk); the
    TopologyTestDriver, which commits after every record and never reads the files while
    it runs, builds its stores without it: a write is then in RocksDB (its memtable and
    write-ahead log, seen by every read) at once, and :meth:`close` writes it to disk.

    Example:
        >>> import tempfile
        >>> s = RocksDBBytesStore("s", tempfile.mkdtemp(), durable_commits=False)
        >>> s.put(b"k", b"v"); s.flush(); s.get(b"k")
        b'v'
        >>> s.close()
    """

    persistent = True
    durable_commits = True  # (a read-only store: nothing to write)

    def __init__(self, name: str, directory: Path, lock_wait_s: float = 0.0,
                 durable_commits: bool = True):
        self.name = name
        self.directory = Path(directory)
        self.durable_commits = durable_commits
        self._db = _open_rocksdb(name, self.directory, lock_wait_s)

    def get(self, key: bytes) -> bytes | None:
        return self._db.get(key)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """Each key's value (None: absent), in order, in one RocksDB multi-get.

        >>> import tempfile
        >>> s = RocksDBBytesStore("s", tempfile.mkdtemp()); s.put(b"a", b"1")
        >>> s.get_many([b"b", b"a"]), s.get_many([])
        ([None, b'1'], [])
        >>> s.close()
        """
        return self._db.get(keys) if keys else []

    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self.delete(key)
        else:
            self._db[key] = value

    def delete(self, key: bytes) -> bytes | None:
        old = self._db.get(key)
        if old is not None:
            del self._db[key]
        return old

    def put_all(self, items: list[tuple[bytes, bytes | None]]) -> None:
        """Write ``items`` in order (a None value deletes) as one RocksDB write batch."""
        from rocksdict import WriteBatch

        batch = WriteBatch(raw_mode=True)
        for k, v in items:
            if v is None:
                batch.delete(k)
            else:
                batch.put(k, v)
        self._db.write(batch)

    def range(self, lo: bytes | None, hi: bytes | None, reverse: bool = False) -> Iterator[Entry]:
        it = self._db.iter()
        if reverse:
            it.seek_to_last() if hi is None else it.seek_for_prev(hi)
            while it.valid():
                k = it.key()
                if lo is not None and k < lo:
                    break
                yield k, it.value()
                it.prev()
        else:
            it.seek_to_first() if lo is None else it.seek(lo)
            while it.valid():
                k = it.key()
                if hi is not None and k > hi:
                    break
                yield k, it.value()
                it.next()

    def approximate_num_entries(self) -> int:
        try:
            return int(self._db.property_int_value("rocksdb.estimate-num-keys") or 0)
        except Exception:  # noqa: BLE001 - rocksdict raises a bare Exception for RocksDB errors
            return sum(1 for _ in self._db.keys())

    def flush(self) -> None:
        """A commit: the memtable written to disk, if commits are durable (see the class)."""
        if self.durable_commits:
            self._db.flush()

    def close(self) -> None:
        if not self.durable_commits:
            self._db.flush()  # the writes no commit wrote down: on disk before the files close
        self._db.close()

    def destroy(self) -> None:
        """Close and delete the database files."""
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def wipe(self) -> None:
        """Delete everything and start empty at the same place (local state must be rebuilt)."""
        self.destroy()
        self._db = _open_rocksdb(self.name, self.directory)


def _open_rocksdb(name: str, directory: Path, lock_wait_s: float = 0.0) -> Any:
    """Open (creating if missing) the RocksDB database of store ``name``, waiting up to
    ``lock_wait_s`` for a lock held elsewhere (tried again every 0.25 s); failures become a
    StateStoreError naming the store and directory."""
    import time

    deadline = time.monotonic() + lock_wait_s
    while True:
        try:
            return _open_once(name, directory)
        except StateStoreError as e:
            if "lock" not in str(e.__cause__).lower() or time.monotonic() >= deadline:
                raise
            time.sleep(0.25)


def _open_once(name: str, directory: Path) -> Any:
    from rocksdict import Options, Rdict

    try:
        directory.mkdir(parents=True, exist_ok=True)
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.set_write_buffer_size(16 * 1024 * 1024)  # Kafka Streams' RocksDBStore defaults:
        opts.set_max_write_buffer_number(3)  # 16 MB memtables, at most 3 (RocksDB's: 64 MB)
        return Rdict(str(directory), options=opts)
    except Exception as e:
        hint = (" Another process holds its lock: a second instance of the application with the "
                "same state.dir, or a worker of an earlier run still alive; stop it, or give "
                "each instance its own state.dir." if "lock" in str(e).lower() else "")
        raise StateStoreError(f"cannot open RocksDB store {name!r} at {directory}: "
                              f"{type(e).__name__}: {e}.{hint}") from e


class ReadOnlyRocksDBBytesStore(RocksDBBytesStore):
    """A task's RocksDB database opened read-only (an interactive query of a task whose
    worker closed it): it takes no lock, so the task may open it for writing meanwhile; it
    sees the database as it was when opened. Writing raises.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> d = Path(tempfile.mkdtemp())
        >>> w = RocksDBBytesStore("s", d); w.put(b"k", b"v")
        >>> r = ReadOnlyRocksDBBytesStore("s", d); r.get(b"k")
        b'v'
        >>> r.close(); w.close()
    """

    def __init__(self, name: str, directory: Path):
        from rocksdict import AccessType, Options, Rdict

        self.name, self.directory = name, Path(directory)
        if not self.directory.is_dir():
            raise StateStoreError(f"store {name!r} has no database at {directory}")
        try:
            self._db = Rdict(str(directory), options=Options(raw_mode=True),
                             access_type=AccessType.read_only(False))
        except Exception as e:  # noqa: BLE001 - rocksdict raises a bare Exception
            raise StateStoreError(f"cannot open RocksDB store {name!r} at {directory} to read "
                                  f"it: {type(e).__name__}: {e}") from e

    def put(self, key: bytes, value: bytes | None) -> None:
        raise StateStoreError(f"store {self.name!r} is open read-only (an interactive query)")

    def flush(self) -> None:
        pass
