"""Delayed processing (KIP-311's scheduling half) through the TopologyTestDriver:
``KStream.delay`` (due times, unchanged records and headers, the changelog-backed store, a
restart, a negative delay) and ``context.schedule_record`` in a Processor (retry later, and
the error that names the store to add)."""

import pytest

from kspark import Serdes, StreamsBuilder
from kspark.errors import TopologyError
from kspark.processor import Processor, Topology
from kspark.state import Stores
from kspark.testing import TestRecord, TopologyTestDriver

S, I = Serdes.String(), Serdes.Integer()


def _delay_driver(delay_ms, config=None):
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I).delay(delay_ms, "wait").to(
        "out", key_serde=S, value_serde=I)
    d = TopologyTestDriver(b.build(), config)
    return d, d.create_input_topic("in", S, I), d.create_output_topic("out", S, I)


def test_delay_forwards_each_record_unchanged_once_it_is_due():
    d, i, o = _delay_driver(1_000)
    with d:
        i.pipe_input("a", 1, 50)
        d.advance_wall_clock_time(400)
        i.pipe_record_list([TestRecord(
            "b", 2, 60, {"h": b"x"})])
        assert o.is_empty()
        assert [(due, r.key) for due, r in d.scheduled_records("wait-store")] == [
            (1_000, "a"), (1_400, "b")]
        d.advance_wall_clock_time(599)
        assert o.is_empty()
        d.advance_wall_clock_time(1)
        assert [(r.key, r.value, r.timestamp) for r in o.read_records_to_list()] == [("a", 1, 50)]
        d.advance_wall_clock_time(400)
        r = o.read_record()
        assert (r.key, r.value, r.timestamp, dict(r.headers)) == ("b", 2, 60, {"h": b"x"})
        assert d.scheduled_records("wait-store") == []


def test_delayed_records_wait_in_a_changelog_backed_store():
    d, i, o = _delay_driver(10)
    with d:
        i.pipe_input("a", 1, 5)
        changelog = [r for r in d.producer_records() if r.topic.endswith("-wait-store-changelog")]
        assert changelog, "scheduling a record writes it to the store's changelog"
        d.advance_wall_clock_time(10)
        assert o.read_values_to_list() == [1]
        deleted = [r for r in d.producer_records() if r.topic.endswith("-wait-store-changelog")
                   and r.value is None]
        assert deleted, "a fired record is deleted from the store (a tombstone in the changelog)"


class RetryLater(Processor):
    """The seed's "re-process this event in 5 minutes": a failed attempt is scheduled again."""

    def __init__(self, outcomes):
        self.outcomes = outcomes

    def init(self, context):
        self.context = context

    def process(self, record):
        attempt = int(dict(record.headers).get("attempt", b"0")) + 1
        if self.outcomes.pop(0):
            self.context.forward(record.with_value(f"{record.value}@{attempt}"))
        else:
            self.context.schedule_record(record.with_headers({"attempt": str(attempt)}), 300_000)


def test_a_processor_schedules_a_record_to_process_it_again_later():
    outcomes = [False, False, True]
    t = Topology()
    t.add_source("src", "in", key_serde=S, value_serde=S)
    t.add_processor("retry", lambda: RetryLater(outcomes), "src")
    t.add_state_store(Stores.delayed_records_store_builder(
        Stores.persistent_key_value_store("later"), S, S), "retry")
    t.add_sink("sink", "out", "retry", key_serde=S, value_serde=S)
    with TopologyTestDriver(t) as d:
        i, o = d.create_input_topic("in", S, S), d.create_output_topic("out", S, S)
        i.pipe_input("k", "job")
        d.advance_wall_clock_time(300_000)
        assert o.is_empty() and len(d.scheduled_records("later")) == 1
        d.advance_wall_clock_time(300_000)
        assert o.read_values_to_list() == ["job@3"]


def test_schedule_record_without_a_delayed_records_store_says_what_to_add():
    class Later(Processor):
        def init(self, context):
            self.context = context

        def process(self, record):
            self.context.schedule_record(record, 10)

    t = Topology()
    t.add_source("src", "in", key_serde=S, value_serde=S)
    t.add_processor("later", Later, "src")
    t.add_sink("sink", "out", "later", key_serde=S, value_serde=S)
    with TopologyTestDriver(t) as d:
        with pytest.raises(TopologyError, match="Stores.delayed_records_store_builder"):
            d.create_input_topic("in", S, S).pipe_input("k", "v")


def test_delay_refuses_a_negative_delay():
    with pytest.raises(TopologyError, match="delay_ms >= 0"):
        StreamsBuilder().stream("in", key_serde=S, value_serde=I).delay(-1)


def test_pending_delayed_records_survive_a_restart(tmp_path):
    config = {"state.dir": str(tmp_path), "application.id": "delays"}
    d, i, o = _delay_driver(1_000, config)
    with d:
        i.pipe_input("a", 1, 50)
    d, i, o = _delay_driver(1_000, config)  # the same state directory: the store's files
    with d:
        d.advance_wall_clock_time(1_000)
        assert o.read_values_to_list() == [1]
