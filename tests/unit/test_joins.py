"""Stream-table and table-table joins through the TopologyTestDriver."""

import pytest

from kspark import Serdes, StreamsBuilder
from kspark.errors import TopologyError
from kspark.testing import TopologyTestDriver

S = Serdes.String()
NO_CACHE = {"statestore.cache.max.bytes": 0}


def _stream_table(left):
    b = StreamsBuilder()
    t = b.table("users", key_serde=S, value_serde=S)
    s = b.stream("clicks", key_serde=S, value_serde=S)
    joined = s.left_join(t, lambda c, u: f"{c}/{u}") if left else s.join(t, lambda c, u: f"{c}/{u}")
    joined.to("out", value_serde=S)
    d = TopologyTestDriver(b.build(), NO_CACHE)
    return d, d.create_input_topic("users", S, S), d.create_input_topic("clicks", S, S), \
        d.create_output_topic("out", S, S)


@pytest.mark.parametrize("left", [False, True], ids=["inner", "left"])
def test_stream_table_join(left):
    d, users, clicks, out = _stream_table(left)
    clicks.pipe_input("u1", "c0", 0)     # no user yet
    users.pipe_input("u1", "ann", 1)
    clicks.pipe_input("u1", "c1", 2)
    users.pipe_input("u1", "anna", 3)     # table updates do not emit
    clicks.pipe_input("u1", "c2", 4)
    users.pipe_input("u1", None, 5)       # tombstone
    clicks.pipe_input("u1", "c3", 6)
    expected = [("u1", "c1/ann"), ("u1", "c2/anna")]
    if left:
        expected = [("u1", "c0/None")] + expected + [("u1", "c3/None")]
    assert out.read_key_values_to_list() == expected


def test_stream_table_join_is_one_task_and_copartitioned():
    b = StreamsBuilder()
    t = b.table("users", key_serde=S, value_serde=S)
    b.stream("clicks", key_serde=S, value_serde=S).join(t, lambda c, u: c).to("out")
    topology = b.build()
    assert str(topology.describe()).count("Sub-topology") == 1
    assert topology._graph.copartition_groups == [frozenset({"users", "clicks"})]


def test_stream_after_key_change_is_repartitioned_before_the_join():
    b = StreamsBuilder()
    t = b.table("users", key_serde=S, value_serde=S)
    (b.stream("clicks", key_serde=S, value_serde=S).select_key(lambda k, v: v)
      .join(t, lambda c, u: u).to("out", value_serde=S))
    assert str(b.build().describe()).count("Sub-topology") == 2


def test_join_reads_an_unmaterialized_table_through_its_parent_store():
    # as Java's value getters: a filtered, mapped table joins without a store of its own
    b = StreamsBuilder()
    t = (b.table("users", key_serde=S, value_serde=S).filter(lambda k, v: v != "x")
         .map_values(str.upper))
    b.stream("clicks", key_serde=S, value_serde=S).join(t, lambda c, u: f"{c}:{u}").to(
        "out", value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        users, clicks = d.create_input_topic("users", S, S), d.create_input_topic("clicks", S, S)
        out = d.create_output_topic("out", S, S)
        users.pipe_input("u", "ann")
        clicks.pipe_input("u", "c1")
        users.pipe_input("u", "x")  # filtered out: reads as deleted
        clicks.pipe_input("u", "c2")
        assert out.read_key_values_to_list() == [("u", "c1:ANN")]


def test_join_with_a_suppressed_table_is_refused():
    from kspark import Suppressed, TimeWindows

    b = StreamsBuilder()
    t = (b.stream("users", key_serde=S, value_serde=S).group_by_key()
         .windowed_by(TimeWindows.of_size_with_no_grace(10)).count()
         .suppress(Suppressed.until_window_closes()))
    with pytest.raises(TopologyError, match="materialize it first"):
        t.join(t, lambda a, c: a)


@pytest.mark.parametrize("kind,expected", [
    ("join", [("k", "a1+b1"), ("k", "a2+b1"), ("k", None)]),
    ("left_join", [("k", "a1+None"), ("k", "a1+b1"), ("k", "a2+b1"), ("k", "a2+None")]),
    ("outer_join", [("k", "a1+None"), ("k", "a1+b1"), ("k", "a2+b1"), ("k", "a2+None"),
                    ("j", "None+b9")]),
])
def test_table_table_joins(kind, expected):
    b = StreamsBuilder()
    left = b.table("left", key_serde=S, value_serde=S)
    right = b.table("right", key_serde=S, value_serde=S)
    getattr(left, kind)(right, lambda a, c: f"{a}+{c}").to_stream().to("out", value_serde=S)
    with TopologyTestDriver(b.build(), NO_CACHE) as d:
        lt, rt = d.create_input_topic("left", S, S), d.create_input_topic("right", S, S)
        lt.pipe_input("k", "a1", 1)
        rt.pipe_input("k", "b1", 2)
        lt.pipe_input("k", "a2", 3)
        rt.pipe_input("k", None, 4)
        rt.pipe_input("j", "b9", 5)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == expected


@pytest.mark.parametrize("left", [False, True], ids=["inner", "left"])
def test_stream_table_join_null_keys_and_values(left):
    """Issue 10, rules 19 and 20 (KStreamKTableJoinProcessor): a null stream value never
    reaches the joiner; a null key joins with None in a left join (KIP-962), never inner."""
    d, users, clicks, out = _stream_table(left)
    users.pipe_input("u1", "ann", 1)
    clicks.pipe_input("u1", None, 2)
    clicks.pipe_input(None, "c1", 3)
    clicks.pipe_input("u1", "c2", 4)
    expected = [("u1", "c2/ann")]
    if left:
        expected.insert(0, (None, "c1/None"))
    assert out.read_key_values_to_list() == expected


@pytest.mark.parametrize("cache,store,expected", [
    (0, "t-store", [("ghost", None)]), (1024, "t-store", []), (1024, None, [("ghost", None)])],
    ids=["uncached", "cached", "unmaterialized"])
def test_a_tombstone_for_a_key_never_in_the_table_is_forwarded_unless_cached(cache, store,
                                                                              expected):
    """Issue 10, rule 3 (KTableSource): (k, None) goes downstream when the table does not
    cache; a cache has nothing to flush for it. A table without a store name that nothing
    joins is not materialized at all, so no cache holds anything back (as in Java)."""
    from kspark import Materialized

    b = StreamsBuilder()
    m = Materialized.as_(store) if store else None
    b.table("t", key_serde=S, value_serde=S, materialized=m).to_stream().to("out", value_serde=S)
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": cache}) as d:
        d.create_input_topic("t", S, S).pipe_input("ghost", None, 1)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == expected


@pytest.mark.parametrize("kind", ["join", "left_join"])
def test_such_a_tombstone_passes_a_table_table_join_whose_other_side_has_the_key(kind):
    b = StreamsBuilder()
    left = b.table("l", key_serde=S, value_serde=S)
    right = b.table("r", key_serde=S, value_serde=S)
    getattr(left, kind)(right, lambda a, c: f"{a}+{c}").to_stream().to("out", value_serde=S)
    with TopologyTestDriver(b.build(), NO_CACHE) as d:
        d.create_input_topic("r", S, S).pipe_input("k", "x", 1)
        d.create_input_topic("l", S, S).pipe_input("k", None, 2)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [("k", None)]


def test_a_cached_tables_delete_carries_the_deletes_timestamp():
    """Issue 10, rule 5: the tombstone a cached table emits at commit has the timestamp of
    the delete record, not of the row it removed."""
    b = StreamsBuilder()
    b.table("t", key_serde=S, value_serde=S).to_stream().to("out", value_serde=S)
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 1024}) as d:
        t = d.create_input_topic("t", S, S)
        t.pipe_input("k", "v", 10)
        t.pipe_input("k", None, 25)
        got = [(r.key, r.value, r.timestamp) for r in
               d.create_output_topic("out", S, S).read_records_to_list()]
    assert got == [("k", "v", 10), ("k", None, 25)]
