"""The TopologyTestDriver as Java's (issue 40): TestInputTopic's pipeInput overloads and
lists, TestRecord's constructors, times as ints or datetimes, TestOutputTopic's reads and the
error of an empty topic, and the store getters by Java's store types."""

from datetime import datetime, timedelta, timezone

import pytest

from kspark import Materialized, Serdes, StreamsBuilder, TimeWindows
from kspark.errors import KSparkError, TopologyError
from kspark.processor import KeyValue, Processor, PunctuationType, Record, Topology
from kspark.state import Stores, ValueAndTimestamp
from kspark.testing import NoSuchElementError, TestRecord, TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()


@pytest.fixture
def passthrough():
    """A driver copying "in" to "out" (String keys and values), its two topics."""
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=S).to("out")
    with TopologyTestDriver(b.build()) as d:
        yield d, d.create_input_topic("in", S, S), d.create_output_topic("out", S, S)


def _records(out):
    return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


def test_pipe_input_with_one_argument_sets_the_value_as_java(passthrough):
    _, i, o = passthrough
    i.pipe_input("x")
    r = o.read_record()
    assert (r.key, r.value) == (None, "x")


def test_pipe_input_with_two_arguments_sets_key_and_value(passthrough):
    _, i, o = passthrough
    i.pipe_input("k", "v")
    assert o.read_key_value() == ("k", "v")


def test_pipe_input_with_three_arguments_sets_the_timestamp(passthrough):
    _, i, o = passthrough
    i.pipe_input("k", "v", 42)
    assert _records(o) == [("k", "v", 42)]


def test_pipe_input_takes_a_datetime_timestamp(passthrough):
    _, i, o = passthrough
    i.pipe_input("k", "v", datetime(1970, 1, 1, 0, 0, 2, tzinfo=timezone.utc))
    i.pipe_input("k", "v", timestamp=datetime(2026, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
    assert [r.timestamp for r in o.read_records_to_list()] == [2_000, 1_767_225_600_000]


def test_a_naive_datetime_is_read_as_utc(passthrough):
    _, i, o = passthrough
    i.pipe_input("v", timestamp=datetime(1970, 1, 1, 0, 1))
    assert o.read_record().record_time == datetime(1970, 1, 1, 0, 1, tzinfo=timezone.utc)


def test_pipe_input_keywords_and_the_old_timestamp_ms(passthrough):
    _, i, o = passthrough
    i.pipe_input(key="k", value="v", timestamp=3, headers={"h": "1"})
    i.pipe_input("only", timestamp_ms=4)
    i.pipe_input("v2", key="k2")
    assert o.read_records_to_list() == [TestRecord("k", "v", 3, {"h": b"1"}),
                                        TestRecord(None, "only", 4), TestRecord("k2", "v2", 0)]


def test_pipe_input_refuses_an_argument_given_twice(passthrough):
    _, i, _ = passthrough
    with pytest.raises(TypeError, match="value both"):
        i.pipe_input("v", value="w")
    with pytest.raises(TypeError, match="not both"):
        i.pipe_input("k", "v", timestamp=1, timestamp_ms=1)
    with pytest.raises(TypeError, match="timestamp must be a datetime.datetime or an int"):
        i.pipe_input("k", "v", 1.5)


def test_pipe_input_takes_a_test_record(passthrough):
    _, i, o = passthrough
    i.pipe_input(TestRecord("k", "v", 9, [("h", b"x")]))
    assert o.read_record() == TestRecord("k", "v", 9, (("h", b"x"),))


def test_test_record_constructors_as_java():
    assert (TestRecord("v").key, TestRecord("v").value) == (None, "v")
    assert TestRecord("k", "v") == TestRecord(key="k", value="v")
    assert TestRecord("k", "v", 5).timestamp == 5
    assert TestRecord("k", "v", {"h": "x"}).headers == (("h", b"x"),)  # Java's (k, v, headers)
    assert TestRecord("k", "v", {"h": "x"}, 7) == TestRecord("k", "v", 7, {"h": "x"})
    r = TestRecord("k", "v", datetime(1970, 1, 1, 0, 0, 1))
    assert (r.get_key(), r.get_value(), r.timestamp, r.get_record_time()) == (
        "k", "v", 1_000, datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc))
    assert TestRecord("v").get_record_time() is None and TestRecord("v").get_headers() == ()


def test_records_without_a_timestamp_take_the_topics_time_and_auto_advance():
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=S).to("out")
    with TopologyTestDriver(b.build()) as d:
        i = d.create_input_topic("in", S, S, datetime(1970, 1, 1, 0, 0, 1), timedelta(seconds=1))
        o = d.create_output_topic("out", S, S)
        i.pipe_input("a")
        i.pipe_input("b")
        i.advance_time(timedelta(milliseconds=500))
        i.pipe_input("c")
        i.advance_time(10)
        i.pipe_input("d", timestamp=1)  # a record with its own time leaves the topic's time
        i.pipe_input("e")
        assert [r.timestamp for r in o.read_records_to_list()] == [1_000, 2_000, 3_500, 1, 4_510]


def test_create_input_topic_keeps_the_old_keyword_names():
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=S).to("out")
    with TopologyTestDriver(b.build()) as d:
        i = d.create_input_topic("in", S, S, start_timestamp_ms=100, auto_advance_ms=5)
        i.pipe_value_list(["a", "b"])
        assert _records(d.create_output_topic("out", S, S)) == [(None, "a", 100),
                                                                (None, "b", 105)]


def test_a_negative_advance_is_refused(passthrough):
    d, i, _ = passthrough
    with pytest.raises(ValueError, match="advance must not be negative"):
        i.advance_time(-1)
    with pytest.raises(ValueError, match="auto_advance must not be negative"):
        d.create_input_topic("in", S, S, 0, timedelta(seconds=-1))


def test_pipe_key_value_list_takes_key_values_and_pairs(passthrough):
    _, i, o = passthrough
    i.pipe_key_value_list([KeyValue("a", "1"), ("b", "2"), KeyValue.pair("c", "3")])
    assert o.read_key_values_to_list() == [("a", "1"), ("b", "2"), ("c", "3")]
    with pytest.raises(TypeError, match="KeyValue or a .key, value. pair"):
        i.pipe_key_value_list(["abc"])


def test_pipe_key_value_list_with_start_timestamp_and_advance_as_java(passthrough):
    _, i, o = passthrough
    i.pipe_key_value_list([("a", "1"), ("b", "2")], datetime(1970, 1, 1, 0, 0, 10),
                          timedelta(seconds=5))
    i.pipe_key_value_list([("c", "3")])  # the topic's own time was left where it was
    assert _records(o) == [("a", "1", 10_000), ("b", "2", 15_000), ("c", "3", 0)]


def test_pipe_value_list_with_start_timestamp_and_advance_as_java(passthrough):
    _, i, o = passthrough
    i.pipe_value_list(["x", "y"], 100, 10)
    assert _records(o) == [(None, "x", 100), (None, "y", 110)]
    with pytest.raises(TypeError, match="advance needs start_timestamp"):
        i.pipe_value_list(["z"], advance=10)


def test_pipe_record_list_stamps_records_without_a_timestamp(passthrough):
    _, i, o = passthrough
    i.pipe_record_list([TestRecord("a", "1", 50), TestRecord("b")])
    assert _records(o) == [("a", "1", 50), (None, "b", 0)]


def test_read_key_value_returns_a_key_value_equal_to_a_tuple(passthrough):
    _, i, o = passthrough
    i.pipe_input("k", "v")
    kv = o.read_key_value()
    assert isinstance(kv, KeyValue) and (kv.key, kv.value) == ("k", "v") and kv == ("k", "v")


def test_output_topic_reads_as_java(passthrough):
    _, i, o = passthrough
    i.pipe_key_value_list([("a", "1"), ("b", "2"), ("a", "3"), ("c", "4")])
    assert (o.get_queue_size(), o.is_empty()) == (4, False)
    assert o.read_value() == "1"
    assert o.read_values_to_list() == ["2", "3", "4"]
    assert o.is_empty()
    i.pipe_key_value_list([("a", "1"), ("a", "2"), ("b", "3"), ("b", None)])
    assert o.read_key_values_to_map() == {"a": "2", "b": None}  # as Java's: null kept


def test_reading_an_empty_output_topic_names_it(passthrough):
    d, i, o = passthrough
    with pytest.raises(NoSuchElementError, match="output topic 'out' .* wrote none to it"):
        o.read_record()
    i.pipe_input("x")
    o.read_value()
    with pytest.raises(NoSuchElementError, match="wrote 1 and all were read"):
        o.read_key_value()
    with pytest.raises(KSparkError):  # under kspark's one error root, and an IndexError
        d.create_output_topic("typo", S, S).read_value()
    with pytest.raises(IndexError):
        o.read_value()


def test_advance_wall_clock_time_takes_a_timedelta():
    class Ticks(Processor):
        def init(self, context):
            context.schedule(1_000, PunctuationType.WALL_CLOCK_TIME,
                             lambda t: context.forward(Record("tick", t, t)))

    t = (Topology().add_source("src", "in", key_serde=S, value_serde=S)
         .add_processor("p", Ticks, "src")
         .add_sink("out", "out", "p", key_serde=S, value_serde=L))
    with TopologyTestDriver(t, initial_wall_clock_time=datetime(1970, 1, 1, 0, 0, 1)) as d:
        d.advance_wall_clock_time(timedelta(seconds=1))
        d.advance_wall_clock_time(1_000)
        assert d.create_output_topic("out", S, L).read_values_to_list() == [2_000, 3_000]


def _stores_topology():
    b = StreamsBuilder()
    s = b.stream("in", key_serde=S, value_serde=S)
    s.group_by_key().count(Materialized.as_("counts").with_caching_disabled())
    s.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count(
        Materialized.as_("windowed").with_caching_disabled())
    b.table("rates", key_serde=S, value_serde=L, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("rates", 1_000)))
    return b.build()


def test_store_getters_by_java_store_types():
    with TopologyTestDriver(_stores_topology()) as d:
        d.create_input_topic("in", S, S).pipe_key_value_list([("a", "x"), ("a", "y")],
                                                              start_timestamp=3, advance=1)
        assert d.get_key_value_store("counts").get("a") == 2
        assert d.get_timestamped_key_value_store("counts").get("a") == ValueAndTimestamp(2, 4)
        assert list(d.get_window_store("windowed").fetch("a", 0, 10)) == [(0, 2)]
        assert list(d.get_timestamped_window_store("windowed").fetch("a", 0, 10)) == [
            (0, ValueAndTimestamp(2, 4))]
        assert set(d.get_all_state_stores()) >= {"counts", "windowed", "rates"}


def test_versioned_store_getter_reads_as_of():
    with TopologyTestDriver(_stores_topology()) as d:
        rates = d.create_input_topic("rates", S, L)
        rates.pipe_input("eur", 2, 10)
        rates.pipe_input("eur", 3, 20)
        store = d.get_versioned_key_value_store("rates")
        assert store.get("eur").value == 3
        assert store.get("eur", 15).value == 2 and store.get("eur", 5) is None


def test_a_store_getter_of_the_wrong_type_names_the_right_one():
    with TopologyTestDriver(_stores_topology()) as d:
        with pytest.raises(TopologyError, match="'rates' is a versioned key-value store, not a "
                           "key-value store: read it with driver.get_versioned_key_value_store"):
            d.get_key_value_store("rates")
        with pytest.raises(TopologyError, match="get_timestamped_window_store"):
            d.get_session_store("windowed")
        with pytest.raises(TopologyError, match="not a timestamped key-value store"):
            d.get_timestamped_key_value_store("rates")
