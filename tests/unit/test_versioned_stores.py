"""DSL API that issue 10 added: transform_values, process_values, to_stream(mapper), cogroup,
Materialized.with_retention, EmitStrategy, StreamJoined serdes and names, timestamped and
versioned stores. Their agreement with Java is checked by tests/conformance as well."""

import pytest

from kspark import (EmitStrategy, Joined, JoinWindows, Materialized, Serdes, SessionWindows,
                    StreamJoined, StreamsBuilder, TimeWindows)
from kspark.errors import KSparkError, TopologyError
from kspark.processor import Processor
from kspark.state import Stores, ValueAndTimestamp
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()


def _out(d, topic, vs=L):
    return [(r.key, r.value, r.timestamp)
            for r in d.create_output_topic(topic, S, vs).read_records_to_list()]


class Numbered:
    """A value transformer with state: numbers the calls it gets (deletes included)."""

    def init(self, context):
        self.calls = 0

    def transform(self, key, value):
        self.calls += 1
        return None if value is None else f"{value}#{self.calls}"

    def close(self):
        pass


def test_transform_values_sees_deletes_and_keeps_timestamps():
    b = StreamsBuilder()
    b.table("t", key_serde=S, value_serde=S).transform_values(Numbered).to_stream().to(
        "o", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        t = d.create_input_topic("t", S, S)
        t.pipe_input("a", "x", 1)
        t.pipe_input("a", None, 2)
        t.pipe_input("a", "y", 3)
        assert _out(d, "o", S) == [("a", "x#1", 1), ("a", None, 2), ("a", "y#3", 3)]


def test_materialized_transform_values_keeps_its_result_and_joins_read_it():
    b = StreamsBuilder()
    t = b.table("t", key_serde=S, value_serde=S).transform_values(
        Numbered, Materialized.as_("numbered").with_value_serde(S))
    b.stream("s", key_serde=S, value_serde=S).join(t, lambda v, n: f"{v}+{n}").to(
        "o", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("t", S, S).pipe_input("a", "x", 1)
        d.create_input_topic("s", S, S).pipe_input("a", "v", 2)
        assert d.get_key_value_store("numbered").get("a") == "x#1"
        assert _out(d, "o", S) == [("a", "v+x#1", 2)]


def test_a_value_transformer_cannot_forward():
    class Forwarder(Numbered):
        def init(self, context):
            self.context = context

        def transform(self, key, value):
            self.context.forward(None)

    b = StreamsBuilder()
    b.table("t", key_serde=S, value_serde=S).transform_values(Forwarder).to_stream().to(
        "o", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(KSparkError, match="cannot forward"):
            d.create_input_topic("t", S, S).pipe_input("a", "x", 1)


class Tenfold(Processor):
    def init(self, context):
        self.context = context

    def process(self, record):
        self.context.forward(record.with_value(record.value * 10).with_timestamp(
            record.timestamp + 1))


class Rekey(Tenfold):
    def process(self, record):
        self.context.forward(record.with_key("other"))


def test_process_values_changes_values_and_needs_no_repartition():
    b = StreamsBuilder()
    b.stream("s", key_serde=S, value_serde=L).process_values(Tenfold).group_by_key().count(
    ).to_stream().to("o", key_serde=S, value_serde=L)
    assert "repartition" not in b.build().describe()
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("s", S, L).pipe_input("a", 3, 5)
        assert _out(d, "o") == [("a", 1, 6)]


def test_process_values_refuses_a_new_key():
    b = StreamsBuilder()
    b.stream("s", key_serde=S, value_serde=L).process_values(Rekey).to("o", value_serde=L)
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(KSparkError, match="cannot change keys"):
            d.create_input_topic("s", S, L).pipe_input("a", 3, 5)


def test_to_stream_with_a_mapper_rekeys():
    b = StreamsBuilder()
    b.table("t", key_serde=S, value_serde=S).to_stream(lambda k, v: f"{k}/{v}").to(
        "o", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("t", S, S).pipe_input("a", "x", 4)
        assert _out(d, "o", S) == [("a/x", "x", 4)]


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
     .windowed_by(TimeWindows.of_size_with_no_grace(10)).aggregate(lambda: 0, Materialized.with_(S, L))
     .to_stream(lambda wk, v: f"{wk.key}@{wk.window.start}").to("o", key_serde=S, value_serde=L))
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("x", S, L).pipe_input("a", 5, 1)
        d.create_input_topic("y", S, L).pipe_input("a", 2, 3)
        d.create_input_topic("y", S, L).pipe_input("a", 1, 12)
        assert _out(d, "o") == [("a@0", 5, 1), ("a@0", 3, 3), ("a@10", -1, 12)]


def test_with_retention_is_checked_and_used():
    b = StreamsBuilder()
    grouped = b.stream("s", key_serde=S, value_serde=L).group_by_key()
    with pytest.raises(TopologyError, match="no smaller than its window size plus grace"):
        grouped.windowed_by(TimeWindows.of_size_and_grace(10, 5)).count(
            Materialized.as_("short").with_retention(14))
    with pytest.raises(TopologyError, match="inactivity gap plus grace"):
        grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 5)).count(
            Materialized.as_("short-s").with_retention(14))
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(10)).count(
        Materialized.as_("long").with_retention(1000))
    with TopologyTestDriver(b.build()) as d:
        s = d.create_input_topic("s", S, L)
        s.pipe_input("a", 1, 5)
        s.pipe_input("a", 1, 500)  # window 0 would have expired with retention 10
        assert [kv.key.window.start for kv in d.get_window_store("long").all()] == [0, 500]


def test_emit_on_window_close_forwards_each_window_once_when_it_closes():
    b = StreamsBuilder()
    (b.stream("s", key_serde=S, value_serde=L).group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(10, 2))
     .emit_strategy(EmitStrategy.on_window_close()).count()
     .to_stream(lambda wk, v: f"{wk.key}@{wk.window.start}").to("o", key_serde=S, value_serde=L))
    with TopologyTestDriver(b.build()) as d:
        s = d.create_input_topic("s", S, L)
        for key, ts in [("b", 1), ("a", 3), ("a", 5), ("a", 11), ("a", 12)]:
            s.pipe_input(key, 1, ts)
        # [0, 10) closes at stream time 12; ties go in key order, at their newest timestamp
        assert _out(d, "o") == [("a@0", 2, 5), ("b@0", 1, 1)]


def test_session_emit_on_window_close_sends_no_merge_deletes():
    b = StreamsBuilder()
    (b.stream("s", key_serde=S, value_serde=L).group_by_key()
     .windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 0))
     .emit_strategy(EmitStrategy.on_window_close()).count()
     .to_stream(lambda wk, v: f"{wk.key}@{wk.window.start}-{wk.window.end}")
     .to("o", key_serde=S, value_serde=L))
    with TopologyTestDriver(b.build()) as d:
        s = d.create_input_topic("s", S, L)
        for ts in (1, 4, 8, 30):
            s.pipe_input("a", 1, ts)
        assert _out(d, "o") == [("a@1-8", 3, 8)]


def test_stream_joined_names_the_stores_and_writes_them_with_the_users_serdes():
    b = StreamsBuilder()
    left = b.stream("l", key_serde=S, value_serde=L)
    right = b.stream("r", key_serde=S, value_serde=S)
    left.outer_join(right, lambda a, c: f"{a}:{c}", JoinWindows.of_time_difference_without_grace(5),
                    StreamJoined.with_(S, L, S).with_store_name("j")).to(
        "o", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("l", S, L).pipe_input("a", 7, 1)
        d.create_input_topic("r", S, S).pipe_input("a", "x", 2)
        this = d.get_state_store("j-outer-this-join-store")
        assert [kv.value for kv in this.all()] == [7]
        assert this.inner.get(next(k for k, _ in this.inner.range(None, None))) == L.serialize("", 7)
        assert [kv.value for kv in d.get_state_store("j-outer-other-join-store").all()] == ["x"]
        assert "j-outer-shared-join-store" in d._task.stores
        assert _out(d, "o", S) == [("a", "7:x", 2)]


def test_timestamped_store_builder_keeps_value_and_timestamp():
    store = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store("ts"), S, L).with_logging_disabled().build()
    store.put("a", ValueAndTimestamp(3, 42))
    assert store.get("a") == ValueAndTimestamp(3, 42)


def test_versioned_table_joins_streams_as_of_their_timestamps():
    b = StreamsBuilder()
    rates = b.table("rates", key_serde=S, value_serde=L, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("rates", 100)))
    b.stream("orders", key_serde=S, value_serde=L).left_join(
        rates, lambda v, r: v * (r or 0)).to("o", key_serde=S, value_serde=L)
    rates.to_stream().to("changes", key_serde=S, value_serde=L)
    with TopologyTestDriver(b.build()) as d:
        r, o = d.create_input_topic("rates", S, L), d.create_input_topic("orders", S, L)
        r.pipe_input("eur", 2, 10)
        r.pipe_input("eur", 3, 20)
        r.pipe_input("eur", 5, 15)   # out of order: kept in history, still forwarded
        o.pipe_input("eur", 1, 12)
        o.pipe_input("eur", 1, 16)
        o.pipe_input("eur", 1, 25)
        o.pipe_input("eur", 1, 5)    # before any rate
        assert _out(d, "o") == [("eur", 2, 12), ("eur", 5, 16), ("eur", 3, 25), ("eur", 0, 5)]
        assert _out(d, "changes") == [("eur", 2, 10), ("eur", 3, 20), ("eur", 5, 15)]


def test_grace_period_holds_stream_records_and_joins_them_as_of_their_timestamps():
    b = StreamsBuilder()
    rates = b.table("rates", key_serde=S, value_serde=L, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("rates", 100)))
    b.stream("orders", key_serde=S, value_serde=L).left_join(
        rates, lambda v, r: v * (r or 0), joined=Joined().with_grace_period(10)).to(
        "o", key_serde=S, value_serde=L)
    topology = b.build()
    assert "KSTREAM-LEFTJOIN-0000000003-Buffer" in str(topology.describe())
    with TopologyTestDriver(topology) as d:
        r, o = d.create_input_topic("rates", S, L), d.create_input_topic("orders", S, L)
        out = d.create_output_topic("o", S, L)
        joined = lambda: [(x.key, x.value, x.timestamp) for x in out.read_records_to_list()]  # noqa: E731
        o.pipe_input("eur", 1, 12)   # waits: the rate of 10 arrives after it
        r.pipe_input("eur", 2, 10)
        o.pipe_input("usd", 1, 11)
        assert joined() == []
        o.pipe_input("eur", 1, 22)   # stream time 22: both earlier orders are due, by time
        assert joined() == [("usd", 0, 11), ("eur", 2, 12)]
        o.pipe_input("eur", 3, 5)    # later than the grace: joins at once
        assert joined() == [("eur", 0, 5)]
        with pytest.raises(KSparkError, match="cannot hold a record with a null key"):
            o.pipe_input(None, 7, 23)  # as in Java, whose buffer refuses a null key


def test_grace_period_needs_a_versioned_table():
    b = StreamsBuilder()
    rates = b.table("rates", key_serde=S, value_serde=L)
    with pytest.raises(TopologyError, match="must be versioned to use a grace period"):
        b.stream("orders", key_serde=S, value_serde=L).join(
            rates, lambda v, r: v, joined=Joined().with_grace_period(10))
    with pytest.raises(ValueError, match="must not be negative"):
        Joined().with_grace_period(-1)
    short = b.table("short", key_serde=S, value_serde=L, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("short", 5)))
    with pytest.raises(TopologyError, match="history retention must be at least the grace"):
        b.stream("more", key_serde=S, value_serde=L).join(
            short, lambda v, r: v, joined=Joined().with_grace_period(10))


def test_versioned_store_history_retention():
    s = Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("v", 10), S, L).with_logging_disabled().build()
    assert s.put("a", 1, 100) == -1
    assert s.put("a", 2, 95) == 100          # not the latest: valid until 100
    assert s.put("a", 3, 80) == -(1 << 63)  # older than 100 - 10: not stored
    assert s.get("a", 97).value == 2
    assert s.get("a", 85) is None            # past the retention, the latest (100) is too new
    assert s.delete("a", 120).value == 1
    assert s.get("a") is None


def test_versioned_store_reads_have_no_valid_to():
    # as Java's MeteredVersionedKeyValueStore: get(key, as_of) and delete build the record
    # from value and timestamp only
    s = Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("v", 100), S, L).with_logging_disabled().build()
    s.put("a", 1, 10), s.put("a", 2, 20)
    assert s.get("a", 15) == (1, 10, None) and s.get("a", 15).valid_to is None
    assert s.get("a", 25) == (2, 20, None)
    assert s.delete("a", 30) == (2, 20, None)
    assert s.delete("a", 5) is None
    assert s.put("a", 3, 200) == -1
    assert s.delete("a", 50) is None  # older than the history retention: nothing stored
    assert s.get("a") == (3, 200, None)


def test_versioned_store_tombstone_as_old_as_the_latest_value():
    # as RocksDBVersionedStore: it deletes the latest value and keeps no tombstone, so an
    # older record put later becomes the latest; with a version before it, that one still
    # ends at the tombstone
    s = Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("v", 100), S, L).with_logging_disabled().build()
    assert s.put("a", 1, 10) == -1
    assert s.put("a", None, 10) == -1
    assert s.get("a") is None and s.get("a", 10) is None
    assert s.put("a", 2, 5) == -1            # the latest: no tombstone at 10 to end it
    assert s.get("a") == (2, 5, None) and s.get("a", 12) == (2, 5, None)
    s.put("b", 1, 10), s.put("b", 3, 20)
    assert s.put("b", None, 20) == -1
    assert s.put("b", 2, 15) == 20           # not the latest: the tombstone at 20 ends it
    assert s.get("b") is None and s.get("b", 17) == (2, 15, None) and s.get("b", 25) is None


def test_versioned_tables_cannot_be_suppressed():
    from kspark import Suppressed

    b = StreamsBuilder()
    t = b.table("t", key_serde=S, value_serde=L, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("v", 10)))
    with pytest.raises(TopologyError, match="non-versioned"):
        t.filter(lambda k, v: True).suppress(Suppressed.until_time_limit(10))
