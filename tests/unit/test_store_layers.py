"""A typed store names the layers under it (layers(), layer(kind), bottom()) so that no
caller walks ``.inner`` by hand; build_store stacks them in Kafka Streams' order."""

from kspark import Serdes
from kspark._engine.state.build import bottom, build_store, discard_buffered
from kspark._engine.state.bytes_stores import InMemoryBytesStore
from kspark._engine.state.layers import CachingLayer, ChangeLoggingLayer, WriteBuffer
from kspark.state import Stores

S = Serdes.String()


def _store(caching=True):
    logged = []
    builder = Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"), S, S)
    if caching:
        builder = builder.with_caching_enabled()
    store = build_store(builder, log=lambda k, v: logged.append((k, v)), batch_buffer=True)
    return store, logged


def test_the_layers_stack_cache_over_buffer_over_changelog_over_the_byte_store():
    store, _ = _store()
    assert [type(x) for x in store.layers()] == [CachingLayer, WriteBuffer, ChangeLoggingLayer,
                                                 InMemoryBytesStore]
    assert store.layer(WriteBuffer) is store.layers()[1]
    assert store.bottom() is bottom(store) is store.layers()[-1]
    assert store.layer(CachingLayer) is store.inner


def test_a_missing_layer_is_none():
    store, _ = _store(caching=False)
    assert store.layer(CachingLayer) is None
    assert type(store.inner) is WriteBuffer


def test_discard_buffered_drops_what_the_cache_and_the_buffer_hold():
    store, logged = _store()
    store.layer(WriteBuffer).put(S.serialize("s", "a"), S.serialize("s", "1"))  # held below
    store.put("b", "2")  # held in the cache
    assert store.get("a") == "1" and store.get("b") == "2"
    discard_buffered(store)
    assert store.get("a") is None and store.get("b") is None
    assert list(store.bottom().range(None, None)) == [] and logged == []


def test_writes_that_reach_the_bottom_are_logged_once():
    store, logged = _store()
    store.put("a", "1")
    store.flush()
    assert [v for _, v in store.bottom().range(None, None)] == [S.serialize("s", "1")]
    assert logged == [(S.serialize("s", "a"), S.serialize("s", "1"))]


def test_a_cached_window_store_counts_stream_time_as_written_down():
    builder = Stores.window_store_builder(Stores.in_memory_window_store("w", 100, 10), S, S)
    store = build_store(builder.with_caching_enabled())
    store.put("k", "v", 50)
    assert store.observed == -1  # still in the cache
    store.flush()
    assert store.observed == 50
