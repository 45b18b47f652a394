"""Global stores and GlobalKTable through the TopologyTestDriver (KIP-406's subject).

As Java's driver: piping into a global topic updates the store at once; every processor
reads a global store without being connected, and none may write it.
"""

import pytest

from kspark import GlobalKTable, Materialized, Serdes, StreamsBuilder, Topology
from kspark.errors import KSparkError, TopologyError
from kspark.processor import Processor
from kspark.state import Stores
from kspark.testing import TopologyTestDriver

S, J = Serdes.String(), Serdes.Json()


def _orders_with_countries(left: bool):
    b = StreamsBuilder()
    countries = b.global_table("countries", key_serde=S, value_serde=S,
                               materialized=Materialized.as_("countries-store"))
    orders = b.stream("orders", key_serde=S, value_serde=J)
    join = orders.left_join if left else orders.join
    join(countries, lambda k, v: v.get("country"), lambda v, c: f"{v['id']}@{c}").to(
        "out", value_serde=S)
    d = TopologyTestDriver(b.build())
    return (d, d.create_input_topic("countries", S, S), d.create_input_topic("orders", S, J),
            d.create_output_topic("out", S, S))


@pytest.mark.parametrize("left", [False, True], ids=["inner", "left"])
def test_stream_global_table_join_with_key_mapping_updates_and_tombstones(left):
    d, countries, orders, out = _orders_with_countries(left)
    with d:
        orders.pipe_input("o1", {"id": 1, "country": "fr"}, 10)        # no row yet
        countries.pipe_input("fr", "France", 5)
        orders.pipe_input("o2", {"id": 2, "country": "fr"}, 11, [("h", b"1")])
        countries.pipe_input("fr", "République", 12)                   # update: at once
        orders.pipe_input("o3", {"id": 3, "country": "fr"}, 13)
        countries.pipe_input("fr", None, 14)                           # tombstone deletes
        orders.pipe_input("o4", {"id": 4, "country": "fr"}, 15)
        orders.pipe_input("o5", {"id": 5}, 16)  # selector gives None: dropped
        orders.pipe_input("o6", None, 17)                              # null value: dropped
        countries.pipe_input("de", "Deutschland", 18)
        orders.pipe_input(None, {"id": 7, "country": "de"}, 19)        # null stream key
        got = [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]
        assert d.get_state_store("countries-store").get("fr") is None
    if left:
        assert got == [("o1", "1@None", 10), ("o2", "2@France", 11), ("o3", "3@République", 13),
                       ("o4", "4@None", 15), (None, "7@Deutschland", 19)]
    else:
        assert got == [("o2", "2@France", 11), ("o3", "3@République", 13),
                       (None, "7@Deutschland", 19)]


def test_join_output_keeps_the_stream_records_headers():
    d, countries, orders, out = _orders_with_countries(False)
    with d:
        countries.pipe_input("fr", "France", 1)
        orders.pipe_input("o1", {"id": 1, "country": "fr"}, 2, [("trace", b"x")])
        assert out.read_record().headers == (("trace", b"x"),)


def test_global_table_store_holds_values_with_timestamps_and_skips_null_keys():
    b = StreamsBuilder()
    t = b.global_table("g", key_serde=S, value_serde=S)
    assert isinstance(t, GlobalKTable) and t.queryable_store_name() is None
    b.stream("s", key_serde=S, value_serde=S).to("o")
    with TopologyTestDriver(b.build()) as d:
        g = d.create_input_topic("g", S, S)
        g.pipe_input("a", "1", 7)
        g.pipe_input(None, "ignored", 8)
        store = d.get_timestamped_key_value_store(t.store_name)
        assert store.get("a") == ("1", 7)
        assert [kv.key for kv in store.all()] == ["a"]


class _Counter(Processor):
    """A global store's processor: counts the records per key."""

    def init(self, context):
        self.store = context.get_state_store("counts")

    def process(self, record):
        self.store.put(record.key, (self.store.get(record.key) or 0) + 1)


class _Reader(Processor):
    """A task's processor that reads (and, if asked, writes) the global store."""

    def __init__(self, write=False):
        self.write = write

    def init(self, context):
        self.context = context
        self.store = context.get_state_store("counts")

    def process(self, record):
        if self.write:
            self.store.put(record.key, 0)
        self.context.forward(record.with_value(self.store.get(record.key)))


def _counts_builder():
    return Stores.key_value_store_builder(Stores.in_memory_key_value_store("counts"), S,
                                          Serdes.Long())


def test_add_global_store_with_a_custom_processor_read_by_any_processor():
    b = StreamsBuilder()
    b.add_global_store(_counts_builder(), "events", _Counter, key_serde=S, value_serde=S)
    b.stream("queries", key_serde=S, value_serde=S).process(_Reader).to(
        "answers", key_serde=S, value_serde=Serdes.Long())
    with TopologyTestDriver(b.build()) as d:
        events = d.create_input_topic("events", S, S)
        queries = d.create_input_topic("queries", S, S)
        answers = d.create_output_topic("answers", S, Serdes.Long())
        for _ in range(3):
            events.pipe_input("k", "e")
        queries.pipe_input("k", "?")
        queries.pipe_input("nope", "?")
        assert answers.read_key_values_to_list() == [("k", 3), ("nope", None)]
        assert d.get_state_store("counts").get("k") == 3


def test_a_task_cannot_write_a_global_store():
    b = StreamsBuilder()
    b.add_global_store(_counts_builder(), "events", _Counter, key_serde=S, value_serde=S)
    b.stream("queries", key_serde=S, value_serde=S).process(lambda: _Reader(write=True)).to(
        "a", key_serde=S, value_serde=Serdes.Long())
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(KSparkError, match="global store 'counts' is read only: put"):
            d.create_input_topic("queries", S, S).pipe_input("k", "?")


def test_topology_add_global_store_needs_logging_disabled():
    t = Topology()
    with pytest.raises(TopologyError, match="must not have logging enabled"):
        t.add_global_store(_counts_builder(), "src", "events", "proc", _Counter,
                           key_serde=S, value_serde=S)
    t.add_global_store(_counts_builder().with_logging_disabled(), "src", "events", "proc",
                       _Counter, key_serde=S, value_serde=S)
    assert "Sub-topology: 0 for global store (will not generate tasks)" in str(t.describe())
    with pytest.raises(TopologyError, match="must have different names"):
        Topology().add_global_store(_counts_builder().with_logging_disabled(), "x", "e", "x",
                                    _Counter)


def test_a_global_processor_that_forwards_is_an_error():
    class Forwarder(Processor):
        def init(self, context):
            self.context = context

        def process(self, record):
            self.context.forward(record)

    b = StreamsBuilder()
    b.add_global_store(_counts_builder(), "events", Forwarder, key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(TopologyError, match="of global store 'counts' forwarded a record"):
            d.create_input_topic("events", S, S).pipe_input("k", "v")


def test_connecting_a_global_store_and_other_misuse_are_refused():
    b = StreamsBuilder()
    b.add_global_store(_counts_builder(), "events", _Counter, key_serde=S, value_serde=S)
    with pytest.raises(TopologyError, match="is a global store"):
        b.stream("q", key_serde=S, value_serde=S).process(_Reader, "counts")
    with pytest.raises(TopologyError, match="already read by another source"):
        b.stream("events", key_serde=S, value_serde=S)
    with pytest.raises(TopologyError, match="cannot be versioned"):
        b.global_table("v", key_serde=S, value_serde=S, materialized=Materialized.as_(
            Stores.persistent_versioned_key_value_store("v-store", 1000)))
    with pytest.raises(TopologyError, match="offset_reset"):
        b.global_table("w", key_serde=S, value_serde=S, offset_reset="middle")


def test_names_follow_kafka_streams():
    b = StreamsBuilder()
    t = b.global_table("stream-topic", key_serde=S, value_serde=S)
    t2 = b.global_table("stream-topic-two", key_serde=S, value_serde=S)
    assert (t.store_name, t2.store_name) == ("stream-topic-STATE-STORE-0000000000",
                                             "stream-topic-two-STATE-STORE-0000000003")

