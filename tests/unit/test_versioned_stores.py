"""Timestamped and versioned stores through the TopologyTestDriver: the timestamped store
builder; versioned tables joined by streams as of the records' timestamps, with a grace
period; the versioned store's history retention, reads and tombstones, as Java's; a
versioned table cannot be suppressed. Their agreement with Java is checked by
tests/conformance as well."""

import pytest

from kspark import Joined, Materialized, Serdes, StreamsBuilder
from kspark.errors import KSparkError, TopologyError
from kspark.state import Stores, ValueAndTimestamp
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()


def _out(d, topic, vs=L):
    return [(r.key, r.value, r.timestamp)
            for r in d.create_output_topic(topic, S, vs).read_records_to_list()]


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
