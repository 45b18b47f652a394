"""KIP-311 through the TopologyTestDriver, continued: the Processor API form
(AsyncProcessor), retries on the driver's fake clock, and delayed processing
(``context.schedule_record``, ``KStream.delay``)."""

import asyncio

import pytest

from kspark import Serdes, StreamsBuilder
from kspark.errors import TopologyError
from kspark.processor import AsyncProcessor, Processor, RetryPolicy, Topology
from kspark.state import Stores
from kspark.testing import TestRecord, TopologyTestDriver

S, I = Serdes.String(), Serdes.Integer()


class RunningTotal(AsyncProcessor):
    """Looks a price up concurrently, then adds it to the key's total in input order."""

    async def call(self, record):
        await asyncio.sleep(0)
        return record.value * 10

    def init(self, context):
        super().init(context)
        self.totals = context.get_state_store("totals")

    def complete(self, record, result):
        total = (self.totals.get(record.key) or 0) + result
        self.totals.put(record.key, total)
        self.context.forward(record.with_value(f"{result}:{total}"))


def _total_driver(**options):
    t = Topology()
    t.add_source("src", "in", key_serde=S, value_serde=I)
    t.add_processor("total", lambda: RunningTotal(**options), "src")
    t.add_state_store(Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("totals"), S, I), "total")
    t.add_sink("sink", "out", "total", key_serde=S, value_serde=S)
    d = TopologyTestDriver(t)
    return d, d.create_input_topic("in", S, I), d.create_output_topic("out", S, S)


def test_an_async_processor_completes_in_input_order_and_updates_its_store_in_order():
    d, i, o = _total_driver(max_in_flight=8)
    with d:
        d.auto_complete_async = False
        for v in (1, 2, 3):
            i.pipe_input("k", v)
        assert d.pending_async() == 3 and o.is_empty()
        d.complete_async([2, 0])  # the third call and the first: only the first may go on
        assert o.read_values_to_list() == ["10:10"]
        d.complete_async()
        assert o.read_values_to_list() == ["20:30", "30:60"]
        assert d.get_key_value_store("totals").get("k") == 60


def test_an_async_processor_must_implement_call():
    class Missing(AsyncProcessor):
        pass

    t = Topology()
    t.add_source("src", "in", key_serde=S, value_serde=I)
    t.add_processor("p", Missing, "src")
    t.add_sink("sink", "out", "p", key_serde=S, value_serde=I)
    with TopologyTestDriver(t) as d:
        with pytest.raises(Exception, match="must implement call"):
            d.create_input_topic("in", S, I).pipe_input("k", 1)


def test_async_options_are_checked_when_the_processor_is_made():
    with pytest.raises(TopologyError, match="ordering must be"):
        RunningTotal(ordering="random")
    with pytest.raises(TopologyError, match="max_in_flight must be >= 1"):
        RunningTotal(max_in_flight=0)


def test_retries_wait_for_their_backoff_on_the_drivers_fake_clock():
    attempts = []

    def flaky(v):
        attempts.append(v)
        if len(attempts) < 3:
            raise ConnectionError("service unavailable")
        return f"ok{v}"

    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I).map_values_async(
        flaky, retry=RetryPolicy(max_attempts=5, initial_backoff_ms=100, max_backoff_ms=150,
                                 jitter=0)).to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        i, o = d.create_input_topic("in", S, I), d.create_output_topic("out", S, S)
        d.auto_complete_async = False
        i.pipe_input("k", 7)
        d.complete_async()                     # attempt 1 fails: the retry is due at 100
        assert len(attempts) == 1 and d.pending_async() == 1
        d.advance_wall_clock_time(99)
        assert len(attempts) == 1              # not yet due
        d.advance_wall_clock_time(1)           # attempt 2 fails: due 150 later (the cap)
        assert len(attempts) == 2 and o.is_empty()
        d.advance_wall_clock_time(149)
        assert len(attempts) == 2
        d.advance_wall_clock_time(1)           # attempt 3 succeeds
        assert len(attempts) == 3 and d.pending_async() == 0
        assert o.read_values_to_list() == ["ok7"]


def test_a_later_record_waits_behind_an_earlier_one_that_is_retrying():
    failures = {1: 1}

    def call(v):
        if failures.get(v):
            failures[v] -= 1
            raise TimeoutError("slow")
        return str(v)

    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I).map_values_async(
        call, retry=RetryPolicy(max_attempts=2, initial_backoff_ms=1_000, jitter=0)).to(
        "out", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        i, o = d.create_input_topic("in", S, I), d.create_output_topic("out", S, S)
        d.auto_complete_async = False
        i.pipe_input("a", 1)
        i.pipe_input("b", 2)
        d.complete_async()                    # 2 is done, 1 waits 1 s for its retry
        assert o.is_empty() and d.pending_async() == 1
        d.advance_wall_clock_time(1_000)
        assert o.read_values_to_list() == ["1", "2"]


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


def test_the_driver_reports_async_metrics():
    calls = []

    def call(v):
        calls.append(v)
        if v == 2 and calls.count(2) == 1:
            raise ConnectionError("once")
        if v == 3:
            raise ValueError("never")
        return str(v)

    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I).map_values_async(
        call, "enrich", retry=RetryPolicy(max_attempts=2, initial_backoff_ms=40, jitter=0,
                                          retry_on=(ConnectionError,)),
        on_failure="dead_letter").to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build(), {"errors.dead.letter.queue.topic.name": "dlq"}) as d:
        d.create_input_topic("in", S, I).pipe_value_list([1, 2, 3])
        m = d.metrics()["async"]["enrich"]
    assert m == {"in_flight": 0, "in_flight_peak": 1, "completed": 2, "retried": 1,
                 "dead_lettered": 1, "latency_avg_ms": round(40 / 3, 3)}
