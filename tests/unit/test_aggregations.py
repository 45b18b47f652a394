"""Grouped aggregations and KTables through the TopologyTestDriver."""

from collections import Counter

from hypothesis import given, settings, strategies as st

from kspark import Materialized, Serdes, StreamsBuilder, TimeWindows
from kspark.testing import TopologyTestDriver

S, I, L = Serdes.String(), Serdes.Integer(), Serdes.Long()
NO_CACHE = {"statestore.cache.max.bytes": 0, "application.id": "app"}


def _out(d, topic, vs=L):
    """(key, value, timestamp) of every record in ``topic``, keys as strings."""
    return [(r.key, r.value, r.timestamp)
            for r in d.create_output_topic(topic, S, vs).read_records_to_list()]


def _run(build, records, config=NO_CACHE, out_serdes=(S, L)):
    b = StreamsBuilder()
    build(b.stream("in", key_serde=S, value_serde=S))
    with TopologyTestDriver(b.build(), config) as d:
        i = d.create_input_topic("in", S, S)
        for n, (k, v) in enumerate(records):
            i.pipe_input(k, v, n)
        return d.create_output_topic("out", *out_serdes).read_key_values_to_list(), d


def test_count_emits_every_update_and_skips_null_keys_and_values():
    out, _ = _run(lambda s: s.group_by_key().count().to_stream().to("out", value_serde=L),
                  [("a", "x"), ("b", "y"), (None, "z"), ("a", None), ("a", "w")])
    assert out == [("a", 1), ("b", 1), ("a", 2)]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=30))
def test_count_equals_a_counter_of_the_input(keys):
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=S).group_by_key().count(
        Materialized.as_("counts")).to_stream().to("out", value_serde=L)
    with TopologyTestDriver(b.build()) as d:
        i = d.create_input_topic("in", S, S)
        for k in keys:
            i.pipe_input(k, "x")
        assert d.create_output_topic("out", S, L).read_key_values_to_map() == dict(Counter(keys))
        store = d.get_key_value_store("counts")
        assert {kv.key: kv.value for kv in store.all()} == dict(Counter(keys))


def test_reduce_and_aggregate():
    out, _ = _run(lambda s: s.group_by_key().reduce(lambda agg, v: agg + v).to_stream()
                  .to("out", value_serde=S), [("a", "x"), ("a", "y"), ("b", "z")],
                  out_serdes=(S, S))
    assert out == [("a", "x"), ("a", "xy"), ("b", "z")]
    out, _ = _run(lambda s: s.group_by_key().aggregate(
        lambda: 100, lambda k, v, agg: agg + len(v), Materialized.with_(S, I))
        .to_stream().to("out", value_serde=I), [("a", "xx"), ("a", "yyy")], out_serdes=(S, I))
    assert out == [("a", 102), ("a", 105)]


def test_group_by_repartitions_by_the_new_key():
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S)
      .group_by(lambda k, v: v[0], key_serde=S, value_serde=S).count()
      .to_stream().to("out", value_serde=L))
    t = b.build()
    assert str(t.describe()).count("Sub-topology") == 2
    with TopologyTestDriver(t, NO_CACHE) as d:
        i = d.create_input_topic("in", S, S)
        for k, v in [("1", "apple"), ("2", "avocado"), ("3", "banana")]:
            i.pipe_input(k, v)
        assert d.create_output_topic("out", S, L).read_key_values_to_list() == [
            ("a", 1), ("a", 2), ("b", 1)]


def test_select_key_then_group_by_key_repartitions_too():
    b = StreamsBuilder()
    s = b.stream("in", key_serde=S, value_serde=S).select_key(lambda k, v: v)
    s.group_by_key().count().to_stream().to("out", value_serde=L)
    assert str(b.build().describe()).count("Sub-topology") == 2


def test_table_from_topic_with_tombstones_filter_map_values_old_new():
    seen = []
    b = StreamsBuilder()
    t = b.table("in", key_serde=S, value_serde=I, materialized=Materialized.as_("prices"))
    t2 = t.filter(lambda k, v: v > 10).map_values(lambda v: v * 2)
    t2.to_stream().peek(lambda k, v: seen.append((k, v))).to("out", value_serde=I)
    with TopologyTestDriver(b.build(), NO_CACHE) as d:
        i = d.create_input_topic("in", S, I)
        i.pipe_input("a", 5)      # filtered out: old and new both fail -> nothing
        i.pipe_input("a", 20)     # new 40
        i.pipe_input("b", 30)
        i.pipe_input("a", 3)      # a now filtered: delete downstream (None)
        i.pipe_input("b", None)   # tombstone deletes b
        assert seen == [("a", 40), ("b", 60), ("a", None), ("b", None)]
        assert list(d.get_key_value_store("prices").all()) == [("a", 3)]
        assert d.create_output_topic("out", S, I).read_key_values_to_map() == {"a": None, "b": None}


def test_caching_emits_latest_per_key_at_commit():
    """Several records between commits, as in a Spark micro-batch."""
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=S).group_by_key().count().to_stream().to(
        "out", value_serde=L)
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 1 << 20}) as d:
        from kspark._engine.nodes import RawRecord
        task = d._task
        for n, k in enumerate(["a", "a", "b", "a"]):
            task.process(RawRecord("in", 0, n, n, k.encode(), b"x"))
        assert d.create_output_topic("out", S, L).is_empty()
        task.flush()  # the commit
        # in the order of each key's last write, as Kafka Streams' NamedCache flushes
        assert d.create_output_topic("out", S, L).read_key_values_to_list() == [("b", 1), ("a", 3)]


def test_table_group_by_count_and_aggregate_with_subtractor():
    b = StreamsBuilder()
    users = b.table("users", key_serde=S, value_serde=S)
    grouped = users.group_by(lambda user, city: (city, user), key_serde=S, value_serde=S)
    grouped.count().to_stream().to("counts", value_serde=L)
    (users.group_by(lambda user, city: (city, len(user)), key_serde=S, value_serde=I)
     .aggregate(lambda: 0, lambda k, v, agg: agg + v, lambda k, v, agg: agg - v,
                Materialized.with_(S, I)).to_stream().to("lengths", value_serde=I))
    t = b.build()
    assert str(t.describe()).count("Sub-topology") == 3
    with TopologyTestDriver(t, NO_CACHE) as d:
        i = d.create_input_topic("users", S, S)
        i.pipe_input("ann", "oslo")
        i.pipe_input("bob", "oslo")
        i.pipe_input("ann", "rome")   # ann moves: oslo -1, rome +1
        i.pipe_input("bob", None)     # bob leaves: oslo -1
        counts = d.create_output_topic("counts", S, L).read_key_values_to_list()
        assert counts == [("oslo", 1), ("oslo", 2), ("oslo", 1), ("rome", 1), ("oslo", 0)]
        lengths = d.create_output_topic("lengths", S, I).read_key_values_to_map()
        assert lengths == {"oslo": 0, "rome": 3}


def test_cached_table_changes_emitted_at_commit_reach_a_repartitioned_aggregation():
    b = StreamsBuilder()
    (b.table("users", key_serde=S, value_serde=S)
      .group_by(lambda user, city: (city, user), key_serde=S, value_serde=S).count()
      .to_stream().to("counts", value_serde=L))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 1 << 20}) as d:
        d.create_input_topic("users", S, S).pipe_input("ann", "oslo")
        assert d.create_output_topic("counts", S, L).read_key_values_to_map() == {"oslo": 1}


def test_to_table_upserts_deletes_and_repartitions_after_a_key_change():
    b = StreamsBuilder()
    table = (b.stream("in", key_serde=S, value_serde=S).select_key(lambda k, v: k and k.upper())
             .to_table(Materialized.as_("latest").with_key_serde(S).with_value_serde(S)))
    table.to_stream().to("out", key_serde=S, value_serde=S)
    topology = b.build()
    assert "KSTREAM-TOTABLE" in str(topology.describe())
    with TopologyTestDriver(topology, {"statestore.cache.max.bytes": 0}) as d:
        i = d.create_input_topic("in", S, S)
        for k, v in (("a", "1"), ("b", "2"), ("a", "3"), ("b", None), (None, "x")):
            i.pipe_input(k, v, 1)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [
            ("A", "1"), ("B", "2"), ("A", "3"), ("B", None)]
        assert {kv.key: kv.value for kv in d.get_key_value_store("latest").all()} == {"A": "3"}


def test_an_aggregate_carries_the_newest_timestamp_it_has_seen():
    """Issue 10, rule 1 (KStreamAggregate/KStreamReduce): max(record ts, previous ts)."""
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=S).group_by_key().count().to_stream().to(
        "out", value_serde=L)
    with TopologyTestDriver(b.build(), NO_CACHE) as d:
        i = d.create_input_topic("in", S, S)
        for key, ts in (("a", 50), ("a", 20), ("b", 10), ("a", 70), ("a", 60)):
            i.pipe_input(key, "x", ts)
        out = [(r.key, r.value, r.timestamp) for r in
               d.create_output_topic("out", S, L).read_records_to_list()]
    assert out == [("a", 1, 50), ("a", 2, 50), ("b", 1, 10), ("a", 3, 70), ("a", 4, 70)]


def test_a_repartition_drops_null_keys_before_the_topic():
    """Issue 10, rule 23: every repartition filters null keys (KStreamImpl's filter before
    the repartition sink, named as Java names it), so a later step never sees them."""
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).select_key(lambda k, v: v or None)
      .repartition(key_serde=S, value_serde=S).to("out"))
    topology = b.build()
    text = str(topology.describe())
    assert "Processor: KSTREAM-FILTER-0000000004 (stores: [])\n      --> KSTREAM-SINK-0000000003" \
        in text and "(topic: KSTREAM-REPARTITION-0000000002-repartition)" in text
    with TopologyTestDriver(topology, NO_CACHE) as d:
        i = d.create_input_topic("in", S, S)
        for v in ("x", "", "y"):
            i.pipe_input("k", v)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [("x", "x"),
                                                                                ("y", "y")]


def test_a_zero_cache_turns_off_caching_enabled_by_the_store_too():
    """Issue 10, rule 27: statestore.cache.max.bytes=0 forwards each update at once, even for
    a store built with_caching_enabled() (seen here as two updates from one input record)."""
    def emitted(config):
        b = StreamsBuilder()
        (b.stream("in", key_serde=S, value_serde=S).flat_map_values(lambda v: [v, v])
          .group_by_key(key_serde=S, value_serde=S)
          .count(Materialized.as_("c").with_caching_enabled()).to_stream().to("out", value_serde=L))
        with TopologyTestDriver(b.build(), config) as d:
            d.create_input_topic("in", S, S).pipe_input("a", "x")
            return d.create_output_topic("out", S, L).read_key_values_to_list()

    assert emitted({"statestore.cache.max.bytes": 0}) == [("a", 1), ("a", 2)]
    assert emitted({"statestore.cache.max.bytes": 1024}) == [("a", 2)]


def test_the_driver_commits_after_each_record_read_back_from_a_repartition_topic():
    """Issue 10, rule 13: as Java's TopologyTestDriver, a commit follows every processed
    record, including each one read back from a repartition topic, so a cached count
    emits once per repartitioned record."""
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).flat_map(lambda k, v: [(v, k), (v, k)])
      .group_by_key(key_serde=S, value_serde=S).count().to_stream().to("out", value_serde=L))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 1024 * 1024}) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "x")
        assert d.create_output_topic("out", S, L).read_key_values_to_list() == [("x", 1), ("x", 2)]


def test_cogroup_folds_each_stream_with_its_own_aggregator_into_one_store():
    b = StreamsBuilder()
    clicks = b.stream("clicks", key_serde=S, value_serde=L).group_by_key()
    views = b.stream("views", key_serde=S, value_serde=L).group_by_key()
    (clicks.cogroup(lambda k, v, agg: agg + v)
     .cogroup(views, lambda k, v, agg: agg + 100 * v)
     .aggregate(lambda: 0, Materialized.as_("both").with_value_serde(L))
     .to_stream().to("o", key_serde=S, value_serde=L))
    with TopologyTestDriver(b.build()) as d:
        c, v = d.create_input_topic("clicks", S, L), d.create_input_topic("views", S, L)
        c.pipe_input("a", 1, 10)
        v.pipe_input("a", 2, 5)
        v.pipe_input("a", None, 20)  # null values are skipped
        c.pipe_input("a", 3, 7)
        assert _out(d, "o") == [("a", 1, 10), ("a", 201, 10), ("a", 204, 10)]
        assert d.get_key_value_store("both").get("a") == 204



def test_windowed_cogroup():
    b = StreamsBuilder()
    x = b.stream("x", key_serde=S, value_serde=L).group_by_key()
    y = b.stream("y", key_serde=S, value_serde=L).group_by_key()
    (x.cogroup(lambda k, v, agg: agg + v).cogroup(y, lambda k, v, agg: agg - v)
     .windowed_by(TimeWindows.of_size_with_no_grace(10))
     .aggregate(lambda: 0, Materialized.with_(S, L))
     .to_stream(lambda wk, v: f"{wk.key}@{wk.window.start}").to("o", key_serde=S, value_serde=L))
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("x", S, L).pipe_input("a", 5, 1)
        d.create_input_topic("y", S, L).pipe_input("a", 2, 3)
        d.create_input_topic("y", S, L).pipe_input("a", 1, 12)
        assert _out(d, "o") == [("a@0", 5, 1), ("a@0", 3, 3), ("a@10", -1, 12)]
