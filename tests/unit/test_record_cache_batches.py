"""State in batches (issue 55 item 2): a record cache's flush writes every dirty entry down in
one write (a RocksDB write batch) and reads the old values it forwards in one multi-get,
telling ``on_flush`` exactly what one write per key told it; every layer and byte store
answers a multi-get as a ``get`` per key would; the cache sorts its keys only when a range
needs them, with the same results."""

from __future__ import annotations

import random

import pytest

from kspark._engine.state.bytes_stores import InMemoryBytesStore, RocksDBBytesStore
from kspark._engine.state.dirty_log import CommitLoggingLayer
from kspark._engine.state.layers import (ENTRY_OVERHEAD, CachingLayer, ChangeLoggingLayer, Layer,
                                         RecordCache, WriteBuffer, get_many)
from kspark._engine.state.sorted_keys import SortedKeys


class _Spy(InMemoryBytesStore):
    """An in-memory store that notes each write call it gets."""

    def __init__(self) -> None:
        super().__init__("s")
        self.calls: list[tuple[str, object]] = []

    def put(self, key: bytes, value: bytes | None) -> None:
        self.calls.append(("put", key))
        super().put(key, value)

    def put_all(self, items: list[tuple[bytes, bytes | None]]) -> None:
        self.calls.append(("put_all", list(items)))
        for k, v in items:
            super().put(k, v)


def _told(c: CachingLayer) -> list:
    """Record what ``c`` tells on_flush and on_write_down, in one list."""
    told: list = []
    c.on_flush = lambda k, new, old: told.append(("flush", k, new, old))
    c.on_write_down = lambda k: told.append(("down", k))
    return told


def test_a_flush_writes_every_dirty_entry_down_in_one_put_all():
    spy = _Spy()
    c = CachingLayer(spy)
    for k in (b"c", b"a", b"b"):
        c.put(k, b"v" + k)
    c.put(b"a", b"w")  # re-written: moves to the end
    c.flush()
    assert spy.calls == [("put_all", [(b"c", b"vc"), (b"b", b"vb"), (b"a", b"w")])]
    assert c.inner.get(b"a") == b"w"


def test_a_flush_through_a_changelog_logs_each_entry_in_write_order():
    logged: list = []
    c = CachingLayer(ChangeLoggingLayer(_Spy(), lambda k, v: logged.append((k, v))))
    c.put(b"b", b"1")
    c.put(b"a", b"2")
    c.delete(b"b")
    c.flush()
    assert logged == [(b"a", b"2"), (b"b", None)]
    assert [name for name, _ in c.inner.inner.calls] == ["put_all"]


def test_on_flush_hears_each_key_in_write_order_with_its_old_value_and_write_down_after():
    c = CachingLayer(InMemoryBytesStore("s"))
    c.inner.put(b"old", b"0")
    c.inner.put(b"gone", b"9")
    told = _told(c)
    c.put(b"new", b"1")
    c.put(b"old", b"2")
    c.delete(b"gone")
    c.delete(b"never")  # a delete of a key the store lacks: neither written nor told
    c.put(b"new", b"3")
    c.flush()
    assert told == [("flush", b"old", b"2", b"0"), ("down", b"old"),
                    ("flush", b"gone", None, b"9"), ("down", b"gone"),
                    ("flush", b"new", b"3", None), ("down", b"new")]
    assert not c.cached(b"gone") and not c.cached(b"never") and c.cached(b"new")


def test_without_old_values_only_deletes_read_the_store_below():
    class Switch:
        on = False

    c = CachingLayer(InMemoryBytesStore("s"))
    c.inner.put(b"a", b"0")
    c.inner.put(b"b", b"0")
    told = _told(c)
    c.old_values = Switch()
    c.put(b"a", b"1")
    c.delete(b"b")
    c.flush()
    assert told == [("flush", b"a", b"1", None), ("down", b"a"),
                    ("flush", b"b", None, b"0"), ("down", b"b")]


def test_an_evicted_dirty_entry_leads_the_batch_it_flushes():
    one = len(b"a") + len(b"1") + ENTRY_OVERHEAD
    spy = _Spy()
    c = CachingLayer(spy, cache=RecordCache(2 * one))
    told = _told(c)
    c.put(b"a", b"1")
    c.put(b"b", b"2")
    c.put(b"c", b"3")  # over budget: a, the eldest, goes first
    assert [t[1] for t in told if t[0] == "flush"] == [b"a", b"b", b"c"]
    assert spy.calls == [("put_all", [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])]


def _twins(budget: int, fill: bool, seed: int) -> tuple[CachingLayer, CachingLayer, list]:
    """Two caches built by the same random writes over stores holding the same entries."""
    rnd = random.Random(seed)
    caches, keys = [], [bytes([97 + i]) for i in range(12)]
    for _ in range(2):
        c = CachingLayer(InMemoryBytesStore("s"), cache=RecordCache(budget), fill_on_read=fill)
        c.on_flush = lambda k, new, old, c=c: c.__dict__.setdefault("told", []).append(
            (k, new, old))
        caches.append(c)
    for k in keys[::2]:
        for c in caches:
            c.inner.put(k, b"s" + k)
    for _ in range(10):
        k, v = rnd.choice(keys), rnd.choice([None, b"x", b"yy"])
        for c in caches:
            c.put(k, v)
    return caches[0], caches[1], keys


@pytest.mark.parametrize("fill", [True, False])
@pytest.mark.parametrize("budget", [1 << 20, 4 * (ENTRY_OVERHEAD + 3), 0])
def test_get_many_answers_and_leaves_the_cache_as_a_get_of_each_key(fill, budget):
    for seed in range(20):
        many, each, keys = _twins(budget, fill, seed)
        asked = random.Random(seed).choices(keys, k=8)  # duplicates too
        assert many.get_many(asked) == [each.get(k) for k in asked]
        assert list(many._entries.items()) == list(each._entries.items())  # LRU order
        assert many._dirty == each._dirty and many.size == each.size
        assert getattr(many, "told", None) == getattr(each, "told", None)
        assert list(many.inner.range(None, None)) == list(each.inner.range(None, None))


def test_get_many_makes_hits_most_recently_used_in_the_order_given():
    c = CachingLayer(InMemoryBytesStore("s"), fill_on_read=True)
    for k in (b"a", b"b", b"c"):
        c.put(k, k)
    c.inner.put(b"d", b"d")
    assert c.get_many([b"c", b"d", b"a"]) == [b"c", b"d", b"a"]
    assert list(c._entries) == [b"b", b"c", b"d", b"a"]


def test_get_many_reads_again_what_a_flush_it_caused_wrote_down():
    c = CachingLayer(InMemoryBytesStore("s"), cache=RecordCache(2 + ENTRY_OVERHEAD),
                     fill_on_read=True)
    c.inner.put(b"a", b"1")
    c.inner.put(b"b", b"old")
    c.put(b"d", b"x")  # dirty; filling a evicts it, and its flush writes b down
    c.on_flush = lambda k, new, old: c.put(b"b", b"new") if k == b"d" else None
    assert c.get_many([b"a", b"b"]) == [b"1", b"new"]


def test_every_layer_and_byte_store_answers_get_many_as_get(tmp_path):
    rocks = RocksDBBytesStore("r", tmp_path / "r")
    for store in (InMemoryBytesStore("m"), rocks):
        store.put(b"a", b"1")
        store.put(b"e", b"")
        buffered = WriteBuffer(ChangeLoggingLayer(store, lambda k, v: None))
        buffered.put(b"b", b"2")
        buffered.delete(b"a")
        for top in (store, buffered, CommitLoggingLayer(store, lambda k, v: None),
                    CachingLayer(buffered)):
            keys = [b"a", b"b", b"c", b"e", b"b"]
            assert top.get_many(keys) == get_many(top, keys) == [top.get(k) for k in keys]
            assert top.get_many([]) == []
    rocks.close()


def test_a_layer_that_changes_get_changes_get_many_too():
    import kspark._engine.state.dirty_log  # noqa: F401 - its layer counts too

    def subclasses(cls: type) -> list[type]:
        return [s for c in cls.__subclasses__() for s in (c, *subclasses(c))]

    for cls in subclasses(Layer):
        if cls.__module__.startswith("kspark.") and "get" in vars(cls):
            assert "get_many" in vars(cls), cls.__name__


def test_rocksdb_put_all_writes_in_order_and_deletes(tmp_path):
    s = RocksDBBytesStore("r", tmp_path / "r")
    s.put(b"x", b"0")
    s.put_all([(b"a", b"1"), (b"x", None), (b"a", b"2"), (b"b", b"3")])
    assert list(s.range(None, None)) == [(b"a", b"2"), (b"b", b"3")]
    s.close()


def _expected(c: CachingLayer, lo, hi, reverse) -> list:
    merged = {k: (v, False) for k, v in c.inner.range(None, None)}
    merged.update({k: (v, True) for k, v in c._entries.items()})
    keys = [k for k in sorted(merged, reverse=reverse)
            if (lo is None or k >= lo) and (hi is None or k <= hi) and merged[k][0] is not None]
    return [(k, *merged[k]) for k in keys]


@pytest.mark.parametrize("seed", range(6))
def test_ranges_see_every_insert_and_drop_with_keys_sorted_lazily(seed):
    rnd = random.Random(seed)
    budget = rnd.choice([1 << 20, 30 * (ENTRY_OVERHEAD + 4)])
    c = CachingLayer(InMemoryBytesStore("s"), cache=RecordCache(budget), fill_on_read=True)
    keys = [rnd.randbytes(2) for _ in range(60)]
    for step in range(400):
        k, roll = rnd.choice(keys), rnd.random()
        if roll < 0.5:
            c.put(k, rnd.choice([None, b"v", rnd.randbytes(3)]))
        elif roll < 0.6:
            c.get(k)
        elif roll < 0.65:
            c.flush()
        elif roll < 0.8 or step % 50 == 0:
            lo, hi = sorted(rnd.sample(keys, 2))
            lo, hi = rnd.choice([(lo, hi), (None, hi), (lo, None), (None, None)])
            reverse = rnd.random() < 0.5
            assert list(c.range_tagged(lo, hi, reverse)) == _expected(c, lo, hi, reverse)
        if rnd.random() < 0.02:
            c.discard()


def test_sorted_keys_match_a_sort_of_the_dict_after_any_changes():
    rnd = random.Random(7)
    d: dict = {}
    s = SortedKeys(d)
    for _ in range(3000):
        k = rnd.randbytes(1)
        if k in d:
            del d[k]
            s.remove(k)
        else:
            d[k] = None
            s.add(k)
        if rnd.random() < 0.05:
            assert s.sorted() == sorted(d)
    assert s.sorted() == sorted(d)


def test_a_metered_cache_counts_each_key_of_a_multi_get_as_a_lookup():
    from kspark import Serdes
    from kspark._engine.metrics.stats import TaskStats
    from kspark._engine.state.build import build_store
    from kspark._engine.state.metered import meter_cache
    from kspark.state import Stores

    s = Serdes.String()
    store = build_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"), s,
                                                       s).with_caching_enabled())
    stats = TaskStats("0_0", level=1)
    assert meter_cache(store, stats)
    store.put("a", "1")
    layer = store.layer(CachingLayer)
    assert layer.get_many([s.serialize("s", "a"), s.serialize("s", "b")]) == [b"1", None]
    count, total = stats.peek()["cache-hit-ratio|0_0|s"][:2]
    assert count == 2 and total == 1.0 + 0.5  # a hit, then one hit in two lookups
