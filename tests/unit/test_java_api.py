"""Java's calls either work or fail loudly (issue 40): each DSL method takes the argument
forms of Java's overloads, in Java's order or by keyword, and refuses anything else with a
TypeError listing them; the option objects Java users reach for exist; durations take
timedelta; a missing serde names the user's call."""

from datetime import timedelta

import pytest

from kspark import (
    AutoOffsetReset,
    Branched,
    BufferConfig,
    Consumed,
    Grouped,
    JoinWindows,
    Joined,
    Materialized,
    Named,
    Printed,
    Produced,
    Repartitioned,
    Serdes,
    SessionWindows,
    SlidingWindows,
    Stores,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TableJoined,
    TimeWindows,
)
from kspark.errors import TopologyError
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()
CONFIG = {"application.id": "java-api"}


def _drive(builder, inputs, outputs, config=None):
    """Pipe ``{topic: [(key, value, ts)]}`` and read ``outputs`` as key-value lists."""
    with TopologyTestDriver(builder.build(), {**CONFIG, **(config or {})}) as d:
        for topic, records in inputs.items():
            t = d.create_input_topic(topic, S, S)
            for k, v, ts in records:
                t.pipe_input(k, v, ts)
        return {name: d.create_output_topic(name, kd, vd).read_key_values_to_list()
                for name, (kd, vd) in outputs.items()}


def test_a_table_join_with_materialized_third_is_a_plain_join_as_in_java():
    """Java's ``join(other, joiner, Materialized)``: before, the third argument became a
    foreign-key joiner and the output was empty."""
    b = StreamsBuilder()
    left = b.table("left", Consumed.with_(S, S))
    right = b.table("right", Consumed.with_(S, S))
    joined = left.join(right, lambda a, c: f"{a}+{c}",
                       Materialized.as_("joined-store").with_value_serde(S))
    joined.to_stream().to("out", Produced.with_(S, S))
    assert joined.queryable_store_name() == "joined-store"
    out = _drive(b, {"left": [("k", "a", 1)], "right": [("k", "c", 2)]}, {"out": (S, S)})
    assert out["out"] == [("k", "a+c")]


def test_a_foreign_key_join_needs_two_functions_and_names_them_in_its_form():
    b = StreamsBuilder()
    orders = b.table("orders", Consumed.with_(S, S))
    products = b.table("products", Consumed.with_(S, S))
    orders.join(products, lambda order: order.split("|")[0],
                lambda order, product: f"{order} {product}",
                Materialized.with_(S, S)).to_stream().to("out", Produced.with_(S, S))
    out = _drive(b, {"products": [("p1", "apple", 1)], "orders": [("o1", "p1|3", 2)]},
                 {"out": (S, S)})
    assert out["out"] == [("o1", "p1|3 apple")]


def test_a_table_join_with_an_unknown_third_argument_lists_the_accepted_forms():
    b = StreamsBuilder()
    t = b.table("a", Consumed.with_(S, S))
    with pytest.raises(TypeError) as e:
        t.join(b.table("b", Consumed.with_(S, S)), lambda x, y: x, Joined.with_(S, S))
    text = str(e.value)
    assert "KTable.join() does not accept" in text and "Joined" in text
    assert "join(other_table, joiner(value, other_value)[, named][, materialized])" in text
    assert "foreign_key_extractor" in text


def test_a_stream_table_join_takes_joined_third_as_in_java():
    """Java's ``join(table, joiner, Joined)``: before, the Joined went to the windows slot
    and was ignored; a re-keyed stream then failed naming an internal sink."""
    b = StreamsBuilder()
    table = b.table("users", Consumed.with_(S, S))
    clicks = b.stream("clicks", Consumed.with_(S, S)).select_key(lambda k, v: v)
    clicks.join(table, lambda click, region: f"{click}@{region}",
                Joined.with_(S, S, S)).to("out", Produced.with_(S, S))
    out = _drive(b, {"users": [("alice", "eu", 1)], "clicks": [("x", "alice", 2)]},
                 {"out": (S, S)})
    assert out["out"] == [("alice", "alice@eu")]


def test_a_stream_table_join_with_join_windows_is_refused_listing_the_forms():
    b = StreamsBuilder()
    table = b.table("t", Consumed.with_(S, S))
    with pytest.raises(TypeError) as e:
        b.stream("s", Consumed.with_(S, S)).join(
            table, lambda a, c: a, JoinWindows.of_time_difference_with_no_grace(10))
    assert "join(table, joiner(value, table_value)[, joined])" in str(e.value)
    assert "join(other_stream, joiner(value, other_value), join_windows" in str(e.value)


def test_a_stream_stream_join_without_windows_is_refused():
    b = StreamsBuilder()
    a, c = b.stream("a", Consumed.with_(S, S)), b.stream("c", Consumed.with_(S, S))
    with pytest.raises(TypeError, match="join_windows"):
        a.join(c, lambda x, y: x)
    a.join(c, lambda x, y: x, JoinWindows.of_time_difference_with_no_grace(
        timedelta(seconds=5)), StreamJoined.with_(S, S, S)).to("out")


def test_a_callable_of_the_wrong_arity_is_refused_when_the_topology_is_built():
    s = StreamsBuilder().stream("in", Consumed.with_(S, S))
    with pytest.raises(TypeError) as e:
        s.filter(lambda v: v)
    assert "a function of 1 argument" in str(e.value)
    assert "filter(predicate(key, value)[, named])" in str(e.value)
    with pytest.raises(TypeError):
        s.filter("not a function")
    with pytest.raises(TypeError):
        s.group_by_key().aggregate(lambda: 0, lambda k, v: 0)


def test_map_values_takes_the_key_when_its_mapper_takes_two_arguments():
    b = StreamsBuilder()
    s = b.stream("in", Consumed.with_(S, S))
    s.map_values(str.upper).to("upper", Produced.with_(S, S))
    s.map_values(lambda k, v: f"{k}:{v}").to("keyed", Produced.with_(S, S))
    s.map_values(lambda v, suffix="!": v + suffix).to("one", Produced.with_(S, S))
    out = _drive(b, {"in": [("k", "v", 1)]}, {"upper": (S, S), "keyed": (S, S), "one": (S, S)})
    assert out == {"upper": [("k", "V")], "keyed": [("k", "k:v")], "one": [("k", "v!")]}


def test_named_names_the_processor_positionally_or_by_keyword():
    b = StreamsBuilder()
    s = b.stream("in", Consumed.with_(S, S).with_name("source"))
    s.filter(lambda k, v: True, Named.as_("keep-all")).map_values(
        str.upper, name="upper").to("out", Produced.as_("sink"))
    text = str(b.build().describe())
    for name in ("source", "keep-all", "upper", "sink"):
        assert f"{name} " in text or f"{name}\n" in text or f"{name} (" in text


def test_grouped_names_the_repartition_topic_and_gives_its_serdes():
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(S, S))
     .group_by(lambda k, v: v, Grouped.with_("by-value", S, S)).count(Named.as_("counter"))
     .to_stream().to("out", Produced.with_(S, L)))
    text = str(b.build().describe())
    assert "by-value-repartition" in text and "counter" in text
    out = _drive(b, {"in": [("a", "x", 1), ("b", "x", 2)]}, {"out": (S, L)})
    assert out["out"] == [("x", 1), ("x", 2)]


def test_a_group_by_without_a_key_serde_names_the_users_call_and_line():
    b = StreamsBuilder()
    (b.stream("in", value_serde=S, key_serde=S).map(lambda k, v: (len(v), v))
     .group_by_key().count().to_stream().to("out", Produced.with_(L, L)))
    with pytest.raises(TopologyError) as e:
        TopologyTestDriver(b.build(), CONFIG)
    text = str(e.value)
    assert "group_by_key() at " in text and "test_java_api.py:" in text
    assert "Grouped.with_" in text and "default.key.serde" in text


def test_branched_with_function_and_consumer_as_in_java():
    b = StreamsBuilder()
    seen = []
    branches = (b.stream("in", Consumed.with_(S, S)).split(Named.as_("s-"))
                .branch(lambda k, v: v.startswith("a"),
                        Branched.with_function(lambda st: st.map_values(str.upper), "a"))
                .branch(lambda k, v: v.startswith("b"),
                        Branched.with_consumer(lambda st: st.foreach(
                            lambda k, v: seen.append(v))))
                .default_branch(Branched.as_("rest")))
    assert sorted(branches) == ["s-a", "s-rest"]
    branches["s-a"].to("a-out", Produced.with_(S, S))
    branches["s-rest"].to("rest-out")
    out = _drive(b, {"in": [("k", "apple", 1), ("k", "banana", 2), ("k", "cherry", 3)]},
                 {"a-out": (S, S), "rest-out": (S, S)})
    assert out == {"a-out": [("k", "APPLE")], "rest-out": [("k", "cherry")]}
    assert seen == ["banana"]


def test_printed_writes_label_and_mapped_records_to_a_file(tmp_path):
    path = tmp_path / "printed.txt"
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).print(
        Printed.to_file(str(path)).with_label("seen").with_key_value_mapper(
            lambda k, v: f"{k}={v}"))
    _drive(b, {"in": [("k", "v", 1)]}, {})
    assert path.read_text() == "[seen]: k=v\n"


def test_repartitioned_names_the_topic_and_sets_its_partition_count():
    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(S, S)).repartition(
        Repartitioned.as_("by-x").with_number_of_partitions(3).with_key_serde(S)).to("out"))
    graph = b.build()._graph  # noqa: SLF001 - the count reaches the plan through the graph
    assert graph.partition_counts == {"by-x-repartition": 3}
    out = _drive(b, {"in": [("k", "v", 1)]}, {"out": (S, S)})
    assert out["out"] == [("k", "v")]


def test_table_joined_with_partitioners_is_refused_never_ignored():
    b = StreamsBuilder()
    left = b.table("l", Consumed.with_(S, S))
    right = b.table("r", Consumed.with_(S, S))
    with pytest.raises(TopologyError, match="TableJoined"):
        left.join(right, lambda v: v, lambda a, c: a,
                  TableJoined.with_(lambda *a: 0, lambda *a: 0))


def test_consumed_sets_serdes_extractor_and_offset_reset_policy():
    b = StreamsBuilder()
    b.stream(["a", "b"], Consumed.with_(S, S).with_offset_reset_policy(
        AutoOffsetReset.by_duration(timedelta(hours=1)))).to("out")
    source = b.build()._graph.sources()[0]  # noqa: SLF001
    assert source.offset_reset == "by_duration:PT3600S"
    with pytest.raises(TopologyError, match="offset reset policy"):
        b.stream("c", Consumed.with_(S, S).with_offset_reset_policy("middle"))


def test_buffer_config_max_records_and_max_bytes_bound_suppress():
    assert BufferConfig.max_records(10).record_limit == 10
    assert BufferConfig.max_bytes(100).byte_limit == 100
    assert BufferConfig.with_max_records(5).with_max_bytes(7) == BufferConfig(5, 7)

    def final_counts(buffer):
        b = StreamsBuilder()
        (b.stream("in", Consumed.with_(S, S)).group_by_key()
         .windowed_by(TimeWindows.of_size_and_grace(timedelta(milliseconds=10), 0)).count()
         .suppress(Suppressed.until_window_closes(buffer))
         .to_stream().map(lambda w, n: (w.key, n)).to("out", Produced.with_(S, L)))
        return _drive(b, {"in": [("a", "1", 1), ("b", "1", 2), ("c", "1", 3)]},
                      {"out": (S, L)})["out"]

    assert final_counts(BufferConfig.unbounded()) == []  # no window closed yet
    assert final_counts(BufferConfig.max_records(2)) == [("a", 1)]  # emitted early
    # each entry takes more than a byte: every one goes on at once, nothing is held
    assert final_counts(BufferConfig.max_bytes(1)) == [("a", 1), ("b", 1), ("c", 1)]
    with pytest.raises(Exception, match="full"):
        final_counts(BufferConfig.max_bytes(1).shut_down_when_full())


def test_durations_take_timedelta_or_int_ms_and_refuse_anything_else():
    assert TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=5)) == \
        TimeWindows.of_size_and_grace(60_000, 5_000)
    assert SlidingWindows.of_time_difference_with_no_grace(timedelta(seconds=1)) == \
        SlidingWindows.of_time_difference_with_no_grace(1000)
    assert SessionWindows.of_inactivity_gap_with_no_grace(timedelta(seconds=2)).gap_ms == 2000
    assert JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), 0).before_ms == 1000
    assert Suppressed.until_time_limit(timedelta(seconds=3)).time_to_wait_ms == 3000
    assert Joined.with_(S, S).with_grace_period(timedelta(seconds=1)).grace_ms == 1000
    assert Materialized.as_("m").with_retention(timedelta(hours=1)).retention_ms == 3_600_000
    assert Stores.persistent_window_store("w", timedelta(hours=1), timedelta(minutes=1),
                                          False).window_size_ms == 60_000
    with pytest.raises(TypeError, match="window size must be a datetime.timedelta"):
        TimeWindows.of_size_with_no_grace("5m")
    with pytest.raises(TypeError, match="grace"):
        TimeWindows.of_size_and_grace(10, 1.5)


def test_the_option_objects_java_users_reach_for_are_importable_from_kspark():
    import kspark

    for name in ("Consumed", "Produced", "Grouped", "Named", "Branched", "Printed",
                 "Repartitioned", "TableJoined", "AutoOffsetReset", "Stores", "KeyValue"):
        assert name in kspark.__all__ and getattr(kspark, name) is not None


@pytest.mark.parametrize("result", ["abc", {"a": 1}, b"xy", None])
def test_flat_map_values_refuses_a_str_dict_bytes_or_none_result(result):
    """Iterating them would forward characters, keys or bytes: Java's Iterable has no
    such case."""
    from kspark.errors import ProcessorError

    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).flat_map_values(lambda v: result).to(
        "out", Produced.with_(S, S))
    with pytest.raises(ProcessorError, match="flat_map_values\\(\\) must return an iterable"):
        _drive(b, {"in": [("k", "v", 1)]}, {"out": (S, S)})


def test_a_serde_class_in_the_config_is_made_into_a_serde_as_javas_serde_class():
    b = StreamsBuilder()
    b.stream("in").to("out")
    with TopologyTestDriver(b.build(), {**CONFIG, "default.key.serde": Serdes.String,
                                        "default.value.serde": Serdes.String}) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v")
        assert d.create_output_topic("out", S, S).read_key_value() == ("k", "v")


def test_a_multicast_partitioner_is_refused_naming_the_sink():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).to("out", Produced.with_(S, S).with_stream_partitioner(
        lambda topic, k, v, n: {0, 1}))
    with pytest.raises(Exception, match="multicast"):
        _drive(b, {"in": [("k", "v", 1)]}, {"out": (S, S)})


def test_a_processor_supplier_object_with_get_and_stores_connects_its_stores():
    """Java's ProcessorSupplier with ConnectedStoreProvider.stores()."""
    from kspark.processor import Processor

    class Count(Processor):
        def init(self, context):
            self.context, self.store = context, context.get_state_store("Counts")

        def process(self, record):
            n = (self.store.get(record.key) or 0) + 1
            self.store.put(record.key, n)
            self.context.forward(record.with_value(n))

    class Supplier:
        def get(self):
            return Count()

        def stores(self):
            return {Stores.key_value_store_builder(Stores.in_memory_key_value_store("Counts"),
                                                   S, L)}

    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).process(Supplier()).to("out", Produced.with_(S, L))
    out = _drive(b, {"in": [("a", "x", 1), ("a", "y", 2)]}, {"out": (S, L)})
    assert out["out"] == [("a", 1), ("a", 2)]


def test_consumed_takes_javas_one_argument_overloads_and_versioned_stores_take_timedelta():
    extractor = lambda record, partition_time: 7  # noqa: E731
    assert Consumed.with_(extractor).timestamp_extractor is extractor
    assert Consumed.with_(AutoOffsetReset.latest()).offset_reset == "latest"
    assert Stores.persistent_versioned_key_value_store(
        "v", timedelta(minutes=5)).history_retention_ms == 300_000


def test_store_reads_take_datetime_as_javas_instant():
    from datetime import datetime, timezone

    b = StreamsBuilder()
    (b.stream("in", Consumed.with_(S, S)).group_by_key()
     .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(seconds=10)))
     .count(Materialized.as_("counts")))
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v", 15_000)
        store = d.get_window_store("counts")
        at = datetime.fromtimestamp(10, tz=timezone.utc)
        assert store.fetch("k", at) == store.fetch("k", 10_000)
        assert [tuple(kv) for kv in store.fetch("k", at, at + timedelta(seconds=5))] == \
            [tuple(kv) for kv in store.fetch("k", 10_000, 15_000)]


def test_every_argument_named_in_an_accepted_form_is_taken_by_that_keyword():
    """The forms an error lists name the keywords a call takes: ``join(other_stream=...,
    join_windows=..., stream_joined=...)`` and the like bind as the positional call does."""
    b = StreamsBuilder()
    a = b.stream(topic="a", consumed=Consumed.with_(S, S))
    c = b.stream(topics=["c"], consumed=Consumed.with_(S, S))
    table = b.table("t", Consumed.with_(S, S))
    a.join(other_stream=c, joiner=lambda x, y: f"{x}{y}",
           join_windows=JoinWindows.of_time_difference_without_grace(10),
           stream_joined=StreamJoined.with_(S, S, S)).to("ss", Produced.with_(S, S))
    a.left_join(table=table, joiner=lambda x, y: f"{x}{y}").to(
        topic_extractor=lambda k, v, ctx: "st", produced=Produced.with_(S, S))
    other = b.table("t2", Consumed.with_(S, S))
    table.join(other_table=other, joiner=lambda x, y: x + y).to_stream(
        key_mapper=lambda k, v: k).to("tt", Produced.with_(S, S))
    a.group_by(key_selector=lambda k, v: v, grouped=Grouped.with_(S, S)).windowed_by(
        time_windows=TimeWindows.of_size_with_no_grace(10)).count()
    out = _drive(b, {"t": [("k", "t", 1)], "t2": [("k", "2", 1)], "c": [("k", "c", 2)],
                     "a": [("k", "a", 3)]}, {"ss": (S, S), "st": (S, S), "tt": (S, S)})
    assert out == {"ss": [("k", "ac")], "st": [("k", "at")], "tt": [("k", "t2")]}


def test_the_join_refused_by_keyword_lists_the_forms_not_an_internal_signature():
    b = StreamsBuilder()
    a = b.stream("a", Consumed.with_(S, S))
    with pytest.raises(TypeError, match=r"KStream.join\(\) does not accept .*\n  join\("):
        a.join(other_stream=a, joiner=lambda x, y: x)  # the join windows left out


@pytest.mark.parametrize("make", [
    lambda: Consumed.with_(42, S), lambda: Produced.with_(S, 42),
    lambda: Grouped.with_(42, S), lambda: Joined.with_(S, S, 3),
    lambda: StreamJoined.with_(S, object(), S), lambda: Materialized.with_(1, 2),
    lambda: Repartitioned.with_(S, [S]), lambda: Materialized.as_("m").with_value_serde(7),
], ids=["Consumed", "Produced", "Grouped", "Joined", "StreamJoined", "Materialized",
        "Repartitioned", "with_value_serde"])
def test_an_option_object_given_something_other_than_a_serde_is_refused_at_the_call(make):
    """Before, ``Consumed.with_(42, ...)`` was accepted and failed at the first record with
    ``'int' object has no attribute 'serialize'``."""
    with pytest.raises(TypeError, match=r"_serde takes a Serde \(Serdes.String\(\), \.\.\.\)"):
        make()


def test_a_keyword_serde_that_is_not_a_serde_is_refused_at_the_call():
    b = StreamsBuilder()
    with pytest.raises(TypeError, match=r"stream\(\) does not accept .*key_serde=int 42"):
        b.stream("in", key_serde=42)
    s = b.stream("in", key_serde="String", value_serde=Serdes.String)  # a name and a class
    with pytest.raises(TypeError, match=r"KStream.to\(\) does not accept"):
        s.to("out", value_serde="not a serde".encode())
