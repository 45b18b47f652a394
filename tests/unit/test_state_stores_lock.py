"""A persistent store whose RocksDB lock is held elsewhere: a task's store waits a little
for it (the Python worker of a run that just stopped may still be closing it), anything
else fails at once, naming the store and the lock."""

import threading
import time

import pytest

from kspark._engine.state.bytes_stores import RocksDBBytesStore
from kspark.errors import StateStoreError


def test_a_lock_released_within_the_wait_is_taken(tmp_path):
    held = RocksDBBytesStore("s", tmp_path / "s")
    threading.Timer(0.5, held.close).start()
    store = RocksDBBytesStore("s", tmp_path / "s", lock_wait_s=20)
    store.close()


def test_a_lock_held_longer_than_the_wait_fails_naming_the_store(tmp_path):
    held = RocksDBBytesStore("s", tmp_path / "s")
    try:
        started = time.monotonic()
        with pytest.raises(StateStoreError, match="cannot open RocksDB store 's' at .*lock"):
            RocksDBBytesStore("s", tmp_path / "s", lock_wait_s=0.5)
        assert time.monotonic() - started >= 0.5
        with pytest.raises(StateStoreError, match="Another process holds its lock"):
            RocksDBBytesStore("s", tmp_path / "s")  # no wait: at once
    finally:
        held.close()
