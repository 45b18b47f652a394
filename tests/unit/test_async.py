"""Async steps (KIP-311) through the TopologyTestDriver: out-of-order completion, in-order
results, bounded in-flight work, retries, dead letters; and the thread runtime's timeouts."""

import asyncio
import concurrent.futures
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark import Materialized, Serdes, StreamsBuilder
from kspark.errors import KSparkError
from kspark.processor import RetryPolicy
from kspark.testing import TopologyTestDriver

S, I = Serdes.String(), Serdes.Integer()


def _driver(step, **kwargs):
    b = StreamsBuilder()
    getattr(b.stream("in", key_serde=S, value_serde=I), step[0])(step[1], **kwargs).to(
        "out", key_serde=S, value_serde=S if step[0] != "filter_async" else I)
    d = TopologyTestDriver(b.build(), {"errors.dead.letter.queue.topic.name": "dlq"})
    return d, d.create_input_topic("in", S, I), d.create_output_topic(
        "out", S, S if step[0] != "filter_async" else I)


async def _async_show(v):
    await asyncio.sleep(0)
    return f"v{v}"


@pytest.mark.parametrize("fn", [lambda v: f"v{v}", _async_show], ids=["blocking", "async def"])
def test_map_values_async_gives_what_map_values_gives(fn):
    d, i, o = _driver(("map_values_async", fn))
    with d:
        for n in range(5):
            i.pipe_input(f"k{n % 2}", n, 100 + n)
        assert [(r.key, r.value, r.timestamp) for r in o.read_records_to_list()] == [
            (f"k{n % 2}", f"v{n}", 100 + n) for n in range(5)]


def test_filter_async_and_flat_map_values_async():
    d, i, o = _driver(("filter_async", lambda v: v % 2 == 0))
    with d:
        i.pipe_value_list([1, 2, 3, 4])
        assert o.read_values_to_list() == [2, 4]
    d, i, o = _driver(("flat_map_values_async", lambda v: [f"{v}a", f"{v}b"] if v else []))
    with d:
        i.pipe_value_list([0, 1])
        assert o.read_values_to_list() == ["1a", "1b"]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), seed=st.integers(0, 10_000), by_key=st.booleans())
def test_results_keep_input_order_whatever_the_completion_order(n, seed, by_key):
    """Calls complete in a random order, one at a time: the output is always the input
    order's completed prefix (per task), or per key its completed prefix (per key)."""
    d, i, o = _driver(("map_values_async", lambda v: f"v{v}"), max_in_flight=64,
                      ordering="key" if by_key else "partition")
    with d:
        d.auto_complete_async = False
        keys = [f"k{random.Random(seed + j).randrange(3)}" for j in range(n)]
        for j in range(n):
            i.pipe_input(keys[j], j)
        assert d.pending_async() == n and o.is_empty()
        done: set[int] = set()
        out: list[tuple[str, str]] = []
        rng = random.Random(seed)
        while d.pending_async():
            pick = rng.randrange(d.pending_async())
            pending = sorted(set(range(n)) - done)
            done.add(pending[pick])
            d.complete_async([pick])
            out += o.read_key_values_to_list()
            if by_key:
                for k in set(keys):
                    mine = [j for j in range(n) if keys[j] == k]
                    prefix = []
                    for j in mine:
                        if j not in done:
                            break
                        prefix.append((k, f"v{j}"))
                    assert [r for r in out if r[0] == k] == prefix
            else:
                prefix = []
                for j in range(n):
                    if j not in done:
                        break
                    prefix.append((keys[j], f"v{j}"))
                assert out == prefix, "a result went out before an earlier record finished"
        assert sorted(out, key=lambda r: int(r[1][1:])) == [(keys[j], f"v{j}") for j in range(n)]


def test_issuing_waits_when_every_station_is_taken():
    d, i, o = _driver(("map_values_async", lambda v: f"v{v}"), max_in_flight=3)
    with d:
        d.auto_complete_async = False
        for j in range(3):
            i.pipe_input("k", j)
        assert d.pending_async() == 3 and o.is_empty()
        i.pipe_input("k", 3)  # waits for the oldest call: it completes first
        assert d.pending_async() == 3
        assert o.read_values_to_list() == ["v0"]


def test_store_updates_downstream_apply_in_input_order():
    """Write hazards: two in-flight records of one key update an aggregate in input order,
    though the later one's call finishes first."""
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=I)
      .map_values_async(lambda v: str(v), max_in_flight=8)
      .group_by_key(key_serde=S, value_serde=S)
      .aggregate(lambda: "", lambda k, v, agg: agg + v, Materialized.with_(S, S))
      .to_stream().to("out", key_serde=S, value_serde=S))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0}) as d:
        d.auto_complete_async = False
        i, o = d.create_input_topic("in", S, I), d.create_output_topic("out", S, S)
        for v in (1, 2, 3):
            i.pipe_input("k", v)
        d.complete_async([2, 1, 0])  # the last call first
        assert o.read_values_to_list() == ["1", "12", "123"]


class Flaky:
    def __init__(self, failures, error=ConnectionError):
        self.failures, self.error, self.calls = failures, error, 0

    def __call__(self, v):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error(f"attempt {self.calls} failed")
        return f"v{v}"


def test_retries_with_exponential_backoff():
    flaky = Flaky(2)
    policy = RetryPolicy(max_attempts=3, initial_backoff_ms=100, max_backoff_ms=150, jitter=0)
    d, i, o = _driver(("map_values_async", flaky), retry=policy)
    with d:
        i.pipe_input("k", 1)
        assert o.read_values_to_list() == ["v1"]
        step = d._task.nodes[1].processor
        assert step.metrics["retried"] == 2 and step.metrics["completed"] == 1
        assert flaky.calls == 3
    assert [policy.backoff_ms(n) for n in (1, 2, 3)] == [100, 150, 150]
    jittered = RetryPolicy(initial_backoff_ms=1000, jitter=0.2)
    waits = [jittered.backoff_ms(1, random.Random(s)) for s in range(50)]
    assert min(waits) >= 800 and max(waits) <= 1200 and len(set(waits)) > 10


def test_after_the_last_attempt_the_record_is_dead_lettered():
    policy = RetryPolicy(max_attempts=3, initial_backoff_ms=1, jitter=0)
    d, i, o = _driver(("map_values_async", Flaky(99)), retry=policy, on_failure="dead_letter")
    with d:
        i.pipe_input("k", 7)
        assert o.is_empty()
        (dead,) = [r for r in d.producer_records() if r.topic == "dlq"]
        headers = dict(dead.headers)
        assert headers["__streams.errors.attempts"] == b"3"
        assert headers["__streams.errors.exception"] == b"builtins.ConnectionError"
        assert headers["__streams.errors.offset"] == b"0"
        assert I.deserialize("in", dead.value) == 7


def test_or_fails_the_task_naming_it():
    d, i, o = _driver(("map_values_async", Flaky(99, ValueError)),
                      retry=RetryPolicy(max_attempts=5, retry_on=(ConnectionError,)))
    with d:
        with pytest.raises(KSparkError, match=r"task 0_0, async processor 'KSTREAM-MAPVALUES-"
                           r"ASYNC-0000000001': the call failed after 1 attempt\(s\) \(input "
                           r"record topic 'in', partition 0, offset 0\): ValueError"):
            i.pipe_input("k", 1)


def test_thread_runtime_runs_calls_concurrently_with_timeouts():
    from kspark._engine.async_.runtime import ThreadRuntime

    rt = ThreadRuntime(threads=8)
    no_retry = RetryPolicy(max_attempts=1)
    began = time.monotonic()
    futs = [rt.submit(lambda v: time.sleep(0.3) or v, n, no_retry, None, random.Random(0))
            for n in range(8)]
    assert [f.result(30).value for f in futs] == list(range(8))
    assert time.monotonic() - began < 8 * 0.3, "the calls ran one after another"

    async def slow(v):
        await asyncio.sleep(30)

    out = rt.submit(slow, 1, RetryPolicy(max_attempts=2, initial_backoff_ms=1, jitter=0), 0.05,
                    random.Random(0)).result(30)
    assert (out.ok, out.attempts, type(out.error)) == (False, 2, TimeoutError)
    assert isinstance(futs[0], concurrent.futures.Future)
