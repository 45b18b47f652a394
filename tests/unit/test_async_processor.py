"""KIP-311's Processor API form through the TopologyTestDriver: AsyncProcessor (in-order
``complete``, store updates in order, its options), retries waiting for their backoff on the
driver's fake clock, and the driver's async metrics (the DSL's async steps:
tests/unit/test_async.py)."""

import asyncio

import pytest

from kspark import Serdes, StreamsBuilder
from kspark.errors import TopologyError
from kspark.processor import AsyncProcessor, RetryPolicy, Topology
from kspark.state import Stores
from kspark.testing import TopologyTestDriver

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
        metrics = d.metrics()
    m = {n.name: v.metric_value() for n, v in metrics.items()
         if n.group == "kspark-async-processor-metrics" and n.tags["processor-node-id"] == "enrich"}
    assert m == {"in-flight": 0, "in-flight-peak": 1, "completed-total": 2, "retried-total": 1,
                 "dead-lettered-total": 1, "latency-avg": round(40 / 3, 3)}
