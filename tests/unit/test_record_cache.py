"""The record cache (issue 26 rule 2): Kafka Streams' ThreadCache and NamedCache semantics —
flushed entries stay readable, deletes leave on flush, a byte budget shared by a task's
caching stores evicts least recently used entries, and evicting a dirty entry flushes its
cache (forwarding downstream) with the evicted entry first."""

from __future__ import annotations

from kspark import Materialized, Serdes, StreamsBuilder
from kspark._engine.state.bytes_stores import InMemoryBytesStore
from kspark._engine.state.layers import ENTRY_OVERHEAD, CachingLayer, RecordCache, WriteBuffer
from kspark.testing import TopologyTestDriver


def _layer(budget: int, flushed: list | None = None, **kw) -> CachingLayer:
    on_flush = None if flushed is None else (lambda k, new, old: flushed.append((k, new, old)))
    return CachingLayer(InMemoryBytesStore("s"), on_flush, RecordCache(budget), **kw)


def _entry(key: bytes, value: bytes) -> int:
    return len(key) + len(value) + ENTRY_OVERHEAD


def test_flushed_entries_stay_cached_and_deletes_leave():
    c = _layer(1 << 20)
    c.put(b"a", b"1")
    c.put(b"b", b"2")
    c.delete(b"b")
    c.flush()
    assert c.cached(b"a") and not c.cached(b"b")
    assert c.inner.get(b"a") == b"1" and c.inner.get(b"b") is None
    c.inner.delete(b"a")  # the store below lost it (e.g. expired): the cache still answers
    assert c.get(b"a") == b"1" and list(c.range(None, None)) == [(b"a", b"1")]
    assert list(c.range_tagged(None, None)) == [(b"a", b"1", True)]


def test_range_merges_cache_over_store_in_key_order_both_ways():
    c = _layer(1 << 20)
    for k in (b"a", b"c", b"e"):
        c.inner.put(k, b"s")
    c.put(b"b", b"x")
    c.put(b"c", b"y")
    c.delete(b"e")
    assert list(c.range_tagged(None, None)) == [
        (b"a", b"s", False), (b"b", b"x", True), (b"c", b"y", True)]
    assert [k for k, _ in c.range(b"b", None, reverse=True)] == [b"c", b"b"]


def test_budget_evicts_least_recently_used_and_dirty_eviction_flushes_the_cache():
    flushed: list = []
    c = _layer(2 * _entry(b"a", b"1"), flushed)
    c.put(b"a", b"1")
    c.put(b"b", b"2")
    assert flushed == [] and c.size == c.budget.size == 2 * _entry(b"a", b"1")
    c.get(b"a")  # a is now more recent than b
    c.put(b"c", b"3")  # over budget: b, the eldest, goes, and takes every dirty entry down
    assert [k for k, _, _ in flushed] == [b"b", b"a", b"c"]
    assert not c.cached(b"b") and c.cached(b"a") and c.cached(b"c")
    assert c.inner.get(b"b") == b"2" and c.get(b"b") == b"2"  # read from the store below


def test_caches_of_a_task_share_one_budget():
    budget = RecordCache(3 * _entry(b"k", b"v"))
    one = CachingLayer(InMemoryBytesStore("one"), cache=budget)
    two = CachingLayer(InMemoryBytesStore("two"), cache=budget)
    one.put(b"k", b"v")
    one.put(b"l", b"v")
    two.put(b"k", b"v")
    two.put(b"l", b"v")  # over budget: the put's own cache evicts (as Java's maybeEvict)
    assert budget.size == 3 * _entry(b"k", b"v")
    assert one.size == 2 * _entry(b"k", b"v") and two.size == _entry(b"k", b"v")
    assert two.inner.get(b"k") == b"v"


def test_key_value_cache_fills_on_read():
    c = _layer(1 << 20, fill_on_read=True)
    c.inner.put(b"a", b"1")
    assert c.get(b"a") == b"1" and c.cached(b"a")
    w = _layer(1 << 20)  # window and session caches do not
    w.inner.put(b"a", b"1")
    assert w.get(b"a") == b"1" and not w.cached(b"a")


def test_write_buffer_holds_writes_until_flush_and_discards():
    b = WriteBuffer(InMemoryBytesStore("s"))
    b.put(b"a", b"1")
    b.discard()
    assert b.get(b"a") is None
    b.put(b"a", b"1")
    b.flush()
    assert b.inner.get(b"a") == b"1" and list(b.range(None, None)) == [(b"a", b"1")]


def _counts(cache_bytes: int) -> list:
    """Counts of a stream whose every record becomes three (one input record, one commit)."""
    b = StreamsBuilder()
    (b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String())
     .flat_map_values(lambda v: [v, v, v]).group_by_key().count(Materialized.as_("counts"))
     .to_stream().to("out", key_serde=Serdes.String(), value_serde=Serdes.Long()))
    config = {"application.id": "cache", "statestore.cache.max.bytes": cache_bytes}
    with TopologyTestDriver(b.build(), config) as d:
        inp = d.create_input_topic("in", Serdes.String(), Serdes.String())
        out = d.create_output_topic("out", Serdes.String(), Serdes.Long())
        for key in "ab":
            inp.pipe_input(key, "x", 1)
        return [(r.key, r.value) for r in out.read_records_to_list()]


def test_statestore_cache_max_bytes_bounds_what_a_commit_holds_back():
    # a cache with room keeps each key's latest count until the commit after the record;
    # one too small for an entry takes every update down (and forwards it) on eviction
    assert _counts(10 << 20) == [("a", 3), ("b", 3)]
    assert _counts(1) == _counts(0) == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2),
                                         ("b", 3)]
