"""Foreign-key KTable joins through the TopologyTestDriver."""

import pytest
from hypothesis import given, settings, strategies as st

from kspark import Materialized, Serdes, StreamsBuilder
from kspark.errors import TopologyError
from kspark.testing import TopologyTestDriver

S = Serdes.String()
NO_CACHE = {"statestore.cache.max.bytes": 0}


def _fk(v):
    return v.split("|")[0] or None  # "p1|3": order of 3 of product p1; "|3": no product


def _driver(left_join=False, config=NO_CACHE):
    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    products = b.table("products", key_serde=S, value_serde=S)
    join = orders.left_join if left_join else orders.join
    join(products, _fk, lambda o, p: f"{o}+{p}",
         materialized=Materialized.as_("enriched").with_value_serde(S)).to_stream().to(
        "out", key_serde=S, value_serde=S)
    d = TopologyTestDriver(b.build(), config)
    return d, d.create_input_topic("orders", S, S), d.create_input_topic("products", S, S)


STEPS = [("o", "o1", "p1|3"), ("p", "p1", "apple"), ("p", "p1", "pear"), ("o", "o1", "p2|1"),
         ("p", "p2", "kiwi"), ("p", "p1", "plum"), ("o", "o2", "p2|5"), ("o", "o1", None),
         ("p", "p2", None), ("o", "o3", "|7")]


@pytest.mark.parametrize("left_join, expected", [
    (False, [("o1", "p1|3+apple"), ("o1", "p1|3+pear"), ("o1", None), ("o1", "p2|1+kiwi"),
             ("o2", "p2|5+kiwi"), ("o1", None), ("o2", None)]),
    (True, [("o1", "p1|3+None"), ("o1", "p1|3+apple"), ("o1", "p1|3+pear"),
            ("o1", "p2|1+None"), ("o1", "p2|1+kiwi"), ("o2", "p2|5+kiwi"), ("o1", None),
            ("o2", "p2|5+None"), ("o3", "|7+None")]),
], ids=["inner", "left"])
def test_rows_follow_their_foreign_key(left_join, expected):
    d, orders, products = _driver(left_join)
    for n, (side, k, v) in enumerate(STEPS):
        (orders if side == "o" else products).pipe_input(k, v, 100 + n)
    assert d.create_output_topic("out", S, S).read_key_values_to_list() == expected
    store = d.get_key_value_store("enriched")
    assert {kv.key: kv.value for kv in store.all()} == (
        {"o2": "p2|5+None", "o3": "|7+None"} if left_join else {})
    d.close()


def test_the_result_timestamp_is_the_later_of_both_rows():
    d, orders, products = _driver()
    products.pipe_input("p1", "apple", 500)
    orders.pipe_input("o1", "p1|1", 200)
    products.pipe_input("p1", "pear", 300)  # older than the order: the order's time wins
    out = d.create_output_topic("out", S, S).read_records_to_list()
    assert [(r.value, r.timestamp) for r in out] == [("p1|1+apple", 500), ("p1|1+pear", 300)]
    d.close()


def test_the_other_table_may_be_read_through_its_parents_store():
    """As in Java (its value getter): a mapped table without a store of its own."""
    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    products = b.table("products", key_serde=S, value_serde=S).map_values(str.upper)
    orders.join(products, _fk, lambda o, p: f"{o}+{p}").to_stream().to(
        "out", key_serde=S, value_serde=S)
    with pytest.raises(TopologyError, match="default.value.serde"):  # the mapped values'
        TopologyTestDriver(b.build(), NO_CACHE).create_input_topic(  # serde is not known
            "products", S, S).pipe_input("p1", "kiwi", 1)
    with TopologyTestDriver(b.build(), {**NO_CACHE, "default.value.serde": "String"}) as d:
        d.create_input_topic("products", S, S).pipe_input("p1", "kiwi", 1)
        d.create_input_topic("orders", S, S).pipe_input("o1", "p1|2", 2)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [
            ("o1", "p1|2+KIWI")]


_updates = st.lists(st.tuples(st.sampled_from("op"), st.sampled_from(["a", "b", "c", "d"]),
                              st.one_of(st.none(), st.sampled_from(["a", "b", "x", ""]))),
                    max_size=40)


@settings(max_examples=80, deadline=None)
@given(_updates, st.booleans())
def test_the_result_table_is_the_join_of_the_final_tables(updates, left_join):
    d, orders, products = _driver(left_join, config={"statestore.cache.max.bytes": 1 << 20})
    left, right = {}, {}
    for n, (side, k, fk) in enumerate(updates):
        if side == "o":
            v = None if fk is None else f"{fk}|{n}"
            orders.pipe_input(k, v, n)
            left.pop(k, None) if v is None else left.__setitem__(k, v)
        else:
            v = None if fk is None else f"name{n}"
            products.pipe_input(k, v, n)
            right.pop(k, None) if v is None else right.__setitem__(k, v)
    expected = {}
    for k, v in left.items():
        p = right.get(_fk(v)) if _fk(v) else None
        if p is not None or left_join:
            expected[k] = f"{v}+{p}"
    table = {}
    for k, v in d.create_output_topic("out", S, S).read_key_values_to_list():
        table[k] = v
    assert {k: v for k, v in table.items() if v is not None} == expected
    assert {kv.key: kv.value for kv in d.get_key_value_store("enriched").all()} == expected
    d.close()


def test_the_extractor_may_take_the_key_too():
    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    products = b.table("products", key_serde=S, value_serde=S)
    orders.join(products, lambda k, v: f"p{k[-1]}", lambda o, p: f"{o}+{p}").to_stream().to(
        "out", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build(), NO_CACHE) as d:
        d.create_input_topic("products", S, S).pipe_input("p7", "kiwi", 1)
        d.create_input_topic("orders", S, S).pipe_input("o7", "two", 2)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [("o7", "two+kiwi")]


def test_an_update_from_the_right_side_carries_the_right_records_timestamp():
    """Issue 10, rule 14: max(left, right) when the left row subscribes; a right update
    propagates with its own timestamp."""
    d, orders, products = _driver()
    products.pipe_input("p1", "apple", 500)
    orders.pipe_input("o1", "p1|1", 600)
    products.pipe_input("p1", "pear", 300)
    out = d.create_output_topic("out", S, S).read_records_to_list()
    assert [(r.value, r.timestamp) for r in out] == [("p1|1+apple", 600), ("p1|1+pear", 300)]
    d.close()


def test_an_inner_join_row_moved_to_an_unmatched_key_or_deleted_emits_a_tombstone():
    """Issue 10, rule 15: even without a previous result (PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE
    and DELETE_KEY_AND_PROPAGATE); a new row without a match emits nothing."""
    d, orders, products = _driver()
    orders.pipe_input("o1", "p1|3", 1)   # new, no p1: nothing
    orders.pipe_input("o1", "p9|3", 2)   # moved, no p9: tombstone
    orders.pipe_input("o3", "p8|1", 3)   # new, no p8: nothing
    orders.pipe_input("o3", None, 4)     # deleted: tombstone
    assert d.create_output_topic("out", S, S).read_key_values_to_list() == [
        ("o1", None), ("o3", None)]
    d.close()


def test_java_murmur3_hash128_of_a_left_value():
    """The hash a subscription carries: Kafka Streams' Murmur3.hash128 (values from 4.1.1)."""
    from kspark._engine.joins.fk_wire import hash128

    assert hash128(b"") == (-7122613646888064702, -8341524471658347240)
    assert hash128(b"a") == (3702349557448790408, -1601067453332442517)
    assert hash128(b"hello world, 16+") == (-4607779577452387890, -3360591325997447238)
    assert hash128(b"0123456789abcdef0123456789abcdefXYZ") == (
        5479101264588210872, -7966314883000346699)


def test_the_wire_formats_are_javas_bytes():
    """As Kafka Streams 4.1.1's SubscriptionWrapperSerde and SubscriptionResponseWrapperSerde
    write them (hash {1, -2}, key/value "k"/"v" as strings, partition 5)."""
    from kspark._engine.joins import fk_wire as w

    assert w.encode_subscription(w.Subscription((1, -2), 3, b"k", 5)).hex() == (
        "01030000000000000001fffffffffffffffe6b00000005")
    assert w.encode_subscription(w.Subscription(None, 1, b"k", 0)).hex() == "81016b00000000"
    assert w.encode_response(w.Response((1, -2), b"v")).hex() == (
        "000000000000000001fffffffffffffffe76")
    assert w.encode_response(w.Response(None, None)).hex() == "80"


def test_the_wire_formats_read_back_as_written():
    from kspark._engine.joins import fk_wire as w

    for s in (w.Subscription((1, -2), w.DELETE_KEY_AND_PROPAGATE, b"key", 3),
              w.Subscription(None, w.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, b"", 0),
              w.Subscription((5, 6), w.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, b"k", None, 0)):
        assert w.decode_subscription(w.encode_subscription(s)) == s
    # no hash: the version byte's top bit; no value: nothing after the hash
    assert w.encode_response(w.Response(None, None)) == b"\x80"
    assert w.decode_response(w.encode_response(w.Response((7, 8), b"v"))) == w.Response(
        (7, 8), b"v")


def test_table_joined_names_the_nodes_stores_and_topics():
    from kspark import TableJoined

    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    products = b.table("products", key_serde=S, value_serde=S)
    orders.left_join(products, _fk, lambda o, p: o, TableJoined.as_("enrich"))
    text = str(b.build().describe())
    for name in ("enrich-subscription-registration-topic", "enrich-subscription-response-topic",
                 "enrich-subscription-store", "enrich-subscription-receive",
                 "enrich-subscription-join-foreign", "enrich-foreign-join-subscription",
                 "enrich-subscription-response-resolver", "enrich-result"):
        assert name in text, name
    assert "KTABLE-FK-JOIN" not in text


def test_table_joined_partitioners_are_refused():
    from kspark import TableJoined

    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    products = b.table("products", key_serde=S, value_serde=S)
    with pytest.raises(TopologyError, match="partitioners"):
        orders.join(products, _fk, lambda o, p: o, TableJoined.with_(lambda *a: 0, None))


def test_the_two_sides_feed_each_other_and_micro_batch_mode_reads_one_topic_back_from_kafka():
    """Java's layout: the subscription topic goes to the other table's sub-topology and the
    response topic comes back to this table's (whose rows the resolver reads). Real-time
    mode meets through both topics; micro-batch mode carries the topic closing the cycle
    through Kafka (``QueryPlan.looped``), the other through an exchange."""
    from kspark._plan.plan import plan
    from kspark.config import StreamsConfig

    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    orders.join(b.table("products", key_serde=S, value_serde=S), _fk, lambda o, p: o)
    g, counts = b.build()._graph, {"orders": 3, "products": 2}
    base = {"application.id": "a", "bootstrap.servers": "kafka:9092"}
    p = plan(g, counts, StreamsConfig(base))
    assert {m.sub_topology: m.tasks for m in p.members()} == {0: 3, 1: 2}
    assert sorted(p.fed_partitions.values()) == [2, 3]  # like products, like orders
    assert p.looped == {}
    mb = plan(g, counts, StreamsConfig({**base, "execution.mode": "micro_batch"}))
    (registration,) = mb.looped  # the topic into the cycle from its first sub-topology
    assert registration.endswith("-SUBSCRIPTION-REGISTRATION-0000000006-topic")
    assert mb.looped[registration] == 2 and list(mb.fed_partitions.values()) == [3]


def test_kspark_describe_shows_each_side_reading_the_others_topic():
    from kspark._plan.describe import describe_application
    from kspark.config import StreamsConfig

    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    orders.join(b.table("products", key_serde=S, value_serde=S), _fk, lambda o, p: o)
    t = b.build()
    text = describe_application(str(t.describe()), t._graph, StreamsConfig(
        {"application.id": "app", "bootstrap.servers": "kafka:9092"}),
        {"orders": 2, "products": 3}, broker=False)
    assert "Reads: [orders, app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic]" in text
    assert "Reads: [products, app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic]" \
        in text


def test_a_subscription_of_a_newer_version_is_refused_naming_it():
    from kspark.errors import SerializationError

    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    orders.join(b.table("products", key_serde=S, value_serde=S), _fk, lambda o, p: o)
    raw = Serdes.ByteArray()
    with TopologyTestDriver(b.build(), NO_CACHE) as d:
        topic = d.create_input_topic(
            "topology-test-driver-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic", S,
            raw)
        with pytest.raises(SerializationError, match="version 2 .*reads version 1"):
            topic.pipe_input("p1", b"\x02\x03" + bytes(16) + b"o1" + bytes(4), 1)
