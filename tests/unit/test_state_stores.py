"""Key-value stores: every method, both kinds, logging, caching, in a topology via the driver."""

import pytest
from hypothesis import given, settings, strategies as st

from kspark import Serdes, StreamsBuilder
from kspark.errors import TopologyError
from kspark.processor import Processor, PunctuationType, Topology
from kspark.state import KeyValue, Stores
from kspark.testing import TopologyTestDriver

S, I, L = Serdes.String(), Serdes.Integer(), Serdes.Long()
KINDS = [Stores.in_memory_key_value_store, Stores.persistent_key_value_store]


@pytest.fixture(params=KINDS, ids=["in-memory", "rocksdb"])
def store(request):
    s = Stores.key_value_store_builder(request.param("s"), S, I).build()
    yield s
    s.close()


def test_get_put_delete_put_if_absent_put_all(store):
    assert store.get("a") is None
    store.put("a", 1)
    assert store.put_if_absent("a", 2) == 1 and store.get("a") == 1
    assert store.put_if_absent("b", 3) is None and store.get("b") == 3
    store.put_all([("c", 4), ("d", 5)])
    assert store.delete("c") == 4 and store.get("c") is None
    store.put("d", None)  # a None value deletes
    assert store.get("d") is None
    assert store.approximate_num_entries() >= 2


def test_ranges_follow_serialized_key_order(store):
    for k in ["b", "a", "ab", "c", "ba"]:
        store.put(k, len(k))
    assert [kv.key for kv in store.all()] == ["a", "ab", "b", "ba", "c"]
    assert [kv.key for kv in store.reverse_all()] == ["c", "ba", "b", "ab", "a"]
    assert list(store.range("ab", "ba")) == [KeyValue("ab", 2), KeyValue("b", 1), KeyValue("ba", 2)]
    assert [kv.key for kv in store.reverse_range("ab", "ba")] == ["ba", "b", "ab"]
    assert list(store.range("z", "a")) == []
    assert [kv.key for kv in store.prefix_scan("b", S)] == ["b", "ba"]


def test_iterators_are_closeable_and_peekable(store):
    store.put("a", 1)
    store.put("b", 2)
    with store.all() as it:
        assert it.has_next() and it.peek_next_key() == "a"
        assert next(it) == ("a", 1)
    assert it.closed and list(it) == []


def test_integer_keys_range_in_byte_order():
    s = Stores.key_value_store_builder(Stores.in_memory_key_value_store("i"), I, S).build()
    for k in [3, -1, 1, 2]:
        s.put(k, str(k))
    # big-endian two's complement: negatives sort after positives, as in Kafka Streams
    assert [kv.key for kv in s.all()] == [1, 2, 3, -1]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.one_of(st.none(), st.integers(0, 9)))))
def test_store_behaves_like_a_dict(ops):
    s = Stores.key_value_store_builder(Stores.in_memory_key_value_store("m"), S, I) \
        .with_caching_enabled().build()
    model = {}
    for k, v in ops:
        s.put(k, v)
        if v is None:
            model.pop(k, None)
        else:
            model[k] = v
    assert [tuple(kv) for kv in s.all()] == sorted(model.items())


class Counter(Processor):
    def init(self, context):
        self.context = context
        self.store = context.get_state_store("counts")
        context.schedule(100, PunctuationType.STREAM_TIME, self.emit)

    def process(self, record):
        self.store.put(record.key, (self.store.get(record.key) or 0) + 1)

    def emit(self, ts):
        with self.store.all() as it:
            for kv in it:
                self.context.forward(self.context_record(kv, ts))

    def context_record(self, kv, ts):
        from kspark.processor import Record
        return Record(kv.key, kv.value, ts)


def _counting(kind, caching=False):
    b = StreamsBuilder()
    builder = Stores.key_value_store_builder(kind("counts"), S, L)
    b.add_state_store(builder.with_caching_enabled() if caching else builder)
    b.stream("in", key_serde=S, value_serde=S).process(Counter, "counts").to(
        "out", key_serde=S, value_serde=L)
    return b.build()


@pytest.mark.parametrize("kind", KINDS, ids=["in-memory", "rocksdb"])
def test_processor_with_store_and_punctuation_scanning_it(kind):
    topology = _counting(kind)
    assert "(stores: [counts])" in str(topology.describe())
    with TopologyTestDriver(topology, {"application.id": "app"}) as d:
        i = d.create_input_topic("in", S, S)
        for k, ts in [("a", 0), ("b", 10), ("a", 20), ("a", 150)]:
            i.pipe_input(k, "x", ts)
        out = d.create_output_topic("out", S, L).read_records_to_list()
        # punctuation at stream time 0 (a=1) and at 150 (a=3, b=1)
        assert [(r.key, r.value, r.timestamp) for r in out] == [
            ("a", 1, 0), ("a", 3, 150), ("b", 1, 150)]
        assert d.get_key_value_store("counts").get("a") == 3
        changelog = [r for r in d.producer_records() if r.topic == "app-counts-changelog"]
        assert len(changelog) == 4 and changelog[-1].key == b"a"
        assert changelog[-1].value == (3).to_bytes(8, "big")


def test_caching_dedupes_changelog_writes_per_commit():
    with TopologyTestDriver(_counting(Stores.in_memory_key_value_store, caching=True),
                            {"application.id": "app"}) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("a", "x", 0)
        changelog = [r for r in d.producer_records() if r.topic == "app-counts-changelog"]
        assert [(r.key, r.value) for r in changelog] == [(b"a", (1).to_bytes(8, "big"))]


def test_unconnected_store_access_is_refused():
    class Sneaky(Processor):
        def init(self, context):
            context.get_state_store("counts")

    t = (Topology().add_source("src", "in", key_serde=S, value_serde=S)
         .add_processor("p", Sneaky, "src")
         .add_processor("q", Processor, "src")
         .add_state_store(Stores.key_value_store_builder(
             Stores.in_memory_key_value_store("counts"), S, L), "q"))
    with pytest.raises(TopologyError,
                       match="'p' in task 0_0 has no access to state store 'counts'"):
        TopologyTestDriver(t)


def test_driver_store_lookup_names_what_exists():
    with TopologyTestDriver(_counting(Stores.in_memory_key_value_store)) as d:
        with pytest.raises(TopologyError, match=r"\['counts'\]"):
            d.get_state_store("nope")


def test_a_rocksdb_store_whose_lock_is_held_names_store_directory_and_remedy(tmp_path):
    from kspark._engine.state.bytes_stores import RocksDBBytesStore
    from kspark.errors import StateStoreError

    first = RocksDBBytesStore("counts", tmp_path / "0_1" / "counts")
    try:
        with pytest.raises(StateStoreError, match=r"'counts' at .*0_1.*lock.*own state.dir"):
            RocksDBBytesStore("counts", tmp_path / "0_1" / "counts")
    finally:
        first.close()
