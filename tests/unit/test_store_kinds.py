"""Store suppliers and builders name the kind of store they make; build_store only stacks
logging and caching over it. A supplier that declares no kind is refused by name, never
guessed from its attributes."""

from dataclasses import dataclass

import pytest

from kspark import Serdes
from kspark._engine.state.build import StoreKind, build_store, store_kind
from kspark._engine.state.layers import CachingLayer
from kspark.errors import TopologyError
from kspark.processor import Processor, Topology
from kspark.state import (
    DelayedRecordsStore,
    KeyValueStore,
    KeyValueStoreBuilder,
    SessionStore,
    Stores,
    VersionedKeyValueStore,
    WindowStore,
)

S = Serdes.String()

BUILDERS = [
    (Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), S, S),
     StoreKind.KEY_VALUE, KeyValueStore),
    (Stores.window_store_builder(Stores.in_memory_window_store("w", 100, 10), S, S),
     StoreKind.WINDOW, WindowStore),
    (Stores.session_store_builder(Stores.in_memory_session_store("s", 100), S, S),
     StoreKind.SESSION, SessionStore),
    (Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("v", 100), S, S),
     StoreKind.VERSIONED, VersionedKeyValueStore),
    (Stores.delayed_records_store_builder(Stores.in_memory_key_value_store("d"), S, S),
     StoreKind.DELAYED, DelayedRecordsStore),
]


@pytest.mark.parametrize("builder,kind,cls", BUILDERS, ids=lambda x: getattr(x, "name", ""))
def test_each_builder_names_its_kind_and_builds_that_store(builder, kind, cls):
    assert store_kind(builder) is kind
    store = build_store(builder.with_logging_disabled())
    try:
        assert type(store) is cls and store.name() == builder.name
    finally:
        store.close()


def test_only_a_key_value_cache_fills_on_read():
    kv, window = BUILDERS[0][0], BUILDERS[1][0]
    for builder, fills in ((kv, True), (window, False)):
        store = build_store(builder.with_logging_disabled().with_caching_enabled())
        assert isinstance(store.inner, CachingLayer) and store.inner.fill_on_read is fills
        store.close()


@dataclass(frozen=True)
class HomeMadeSupplier:
    """Looks like a session supplier (it has a retention): kspark used to guess so."""

    name: str
    persistent: bool
    retention_ms: int


def test_a_supplier_without_a_kind_is_refused_by_name_not_guessed():
    builder = KeyValueStoreBuilder(HomeMadeSupplier("mine", False, 100), S, S)
    with pytest.raises(TopologyError, match=r"HomeMadeSupplier\(name='mine'.*declares no "
                                            r"store kind.*kspark\.state\.Stores"):
        build_store(builder)
    t = Topology().add_source("src", "in").add_processor("p", Processor, "src")
    with pytest.raises(TopologyError, match="HomeMadeSupplier"):
        t.add_state_store(builder, "p")
    assert "mine" not in t._graph.stores


def test_a_builder_without_a_kind_is_refused_by_name():
    class Builder:
        name = "odd"

    with pytest.raises(TopologyError,
                       match=r"store builder .*\(a Builder\) declares no store kind"):
        store_kind(Builder())
