"""The per-record path's shortcuts each give exactly what the long way gives: a stream
thread hands a poll's records over a partition's run at once, a task's partition group
takes a run at once, and metrics measured per record are appended and counted a batch at a
time (``TaskStats.sampler``)."""

import random
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, Message

from kspark import Serdes, StreamsBuilder
from kspark._engine.metrics.stats import TaskStats
from kspark._engine.nodes import RawRecord
from kspark._engine.partition_group import PartitionGroup
from kspark._spark.realtime.polled import PolledRecords
from kspark._spark.realtime.thread_loop import ThreadLoop
from kspark.testing import TopologyTestDriver

A, B = ("a", 0), ("b", 1)


def _message(tp, offset, ts=None):
    return Message(topic=tp[0], partition=tp[1], offset=offset, key=b"k", value=b"v%d" % offset,
                   timestamp=(1, offset if ts is None else ts))


def _loop(stop=None, at_end=None):
    """The parts of a ThreadLoop its hand-over reads: two tasks, one partition each."""
    specs = {A: "task-a", B: "task-b"}
    loop = SimpleNamespace(groups={s: PolledRecords((tp,)) for tp, s in specs.items()},
                           owner=specs, at_end=dict(at_end or {}), stop=dict(stop or {}),
                           fault=SimpleNamespace(check=lambda: None, seen=lambda *a: None))
    loop.reached_stop = lambda tp: loop.at_end.__setitem__(tp, loop.stop[tp])
    loop.hand_over = lambda m: ThreadLoop.hand_over(loop, m)
    loop.hand_over_checked = lambda m: ThreadLoop.hand_over_checked(loop, m)
    return loop


def _held(loop):
    return {s: {tp: [(r.topic, r.partition, r.offset) for r in rs]
                for tp, rs in g.pending.items()} for s, g in loop.groups.items()}


def test_a_poll_of_records_is_handed_over_by_runs_exactly_as_message_by_message():
    # runs of two partitions, interleaved as librdkafka may hand them out
    messages = [_message(A, 0), _message(A, 1), _message(B, 0), _message(A, 2), _message(B, 1)]
    fast, checked = _loop(at_end={A: 0, ("c", 0): 3}), _loop(at_end={A: 0, ("c", 0): 3})
    ThreadLoop.hand_over(fast, messages)
    ThreadLoop.hand_over_checked(checked, messages)
    assert _held(fast) == _held(checked)
    assert _held(fast)["task-a"] == {A: [("a", 0, 0), ("a", 0, 1), ("a", 0, 2)]}
    assert fast.at_end == checked.at_end == {("c", 0): 3}  # A has records again


@pytest.mark.parametrize("stop, eof", [({A: 1}, False), ({}, True)])
def test_a_poll_with_an_end_of_partition_or_stop_offsets_goes_message_by_message(stop, eof):
    messages = [_message(A, 0), _message(A, 1)]
    if eof:
        messages.append(Message(topic="a", partition=0, offset=2,
                                error=KafkaError(KafkaError._PARTITION_EOF)))
    loop = _loop(stop=stop)
    loop.consumer = SimpleNamespace(poll=lambda s: messages[0],
                                    consume=lambda n, s: messages[1:])
    ThreadLoop.poll(loop, 0)
    if eof:  # the end noted after its records, as read
        assert _held(loop)["task-a"] == {A: [("a", 0, 0), ("a", 0, 1)]} and loop.at_end == {A: 2}
    else:  # nothing at or after the stop offset is handed over
        assert _held(loop)["task-a"] == {A: [("a", 0, 0)]} and loop.at_end == {A: 1}


def _raw(tp, offset, ts):
    return RawRecord(tp[0], tp[1], offset, ts, None, b"x")


def test_a_partition_group_takes_runs_and_drains_in_the_order_it_gives_record_by_record():
    rng = random.Random(7)
    records, offsets = [], {A: 0, B: 0}
    for _ in range(40):  # runs of random length, interleaved, random timestamps
        tp = rng.choice((A, B))
        for _ in range(rng.randint(1, 4)):
            records.append(_raw(tp, offsets[tp], rng.randint(0, 50)))
            offsets[tp] += 1
    by_runs, one_by_one = PartitionGroup(), PartitionGroup()
    by_runs.add(records)
    for r in records:
        one_by_one.add([r])
    assert list(by_runs.drain()) == list(one_by_one.drain())
    assert list(by_runs.drain()) == []


def test_a_single_partition_drains_as_a_list_in_offset_order_and_the_group_is_left_empty():
    g = PartitionGroup()
    g.add([_raw(A, 0, 9), _raw(A, 1, 3)])
    drained = g.drain()
    assert [r.offset for r in drained] == [0, 1] and len(g) == 0


def test_sampled_values_count_exactly_as_recorded_ones():
    rng = random.Random(3)
    values = [rng.randint(-5, 10_000) for _ in range(2_500)]
    sampled, recorded = TaskStats("0_0"), TaskStats("0_0")
    key = sampled.key("e2e", "n")
    add = sampled.sampler(key)
    for v in values:
        add(v)
        recorded.record("e2e", v, "n")
    assert sampled.take() == recorded.take() == {key: [2_500, sum(values), max(values),
                                                       min(values)]}


def test_a_sampler_outlives_take_and_peek_folds_without_taking():
    stats = TaskStats("0_0")
    key = stats.key("bytes-consumed", "src|t")
    add = stats.sampler(key)
    add(4)
    assert stats.peek() == {key: [1, 4, 4, 4]}
    add(6)
    assert stats.take() == {key: [2, 10, 6, 4]}
    add(1)
    assert stats.take() == {key: [1, 1, 1, 1]} and stats.take() == {}


def test_a_long_batch_folds_its_samples_as_it_goes_and_its_metrics_are_exact():
    raw = Serdes.ByteArray()
    b = StreamsBuilder()
    b.stream("in", key_serde=raw, value_serde=raw).filter(lambda k, v: True).to(
        "out", key_serde=raw, value_serde=raw)
    with TopologyTestDriver(b.build()) as driver:
        task = driver._task
        task.add_records([RawRecord("in", 0, i, 1_000 + i, b"k", b"vv") for i in range(2_500)])
        held = []
        sink = next(n for n in task.nodes if n.name == "KSTREAM-SINK-0000000002")
        sink.e2e = lambda v, keep=sink.e2e: (held.append(len(task.stats._samples[
            sink.e2e_key])), keep(v))
        task.process_buffered()
        assert max(held) < 1_000  # folded every 1,000 records: the lists stay short
        m = driver.metrics()
    assert m.total("records-consumed-total") == m.total("records-produced-total") == 2_500
