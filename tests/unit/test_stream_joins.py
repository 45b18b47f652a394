"""KStream-KStream windowed joins (inner, left, outer) through the driver."""

import pytest

from kspark import JoinWindows, Serdes, StreamsBuilder
from kspark.testing import TopologyTestDriver

S = Serdes.String()


def _join(kind, events):
    b = StreamsBuilder()
    left = b.stream("l", key_serde=S, value_serde=S)
    right = b.stream("r", key_serde=S, value_serde=S)
    joined = getattr(left, kind)(right, lambda a, c: f"{a}+{c}",
                                 JoinWindows.of_time_difference_and_grace(10, 0))
    joined.to("out", value_serde=S)
    topology = b.build()
    assert topology.describe().count("Sub-topology") == 1
    with TopologyTestDriver(topology) as d:
        topics = {"l": d.create_input_topic("l", S, S), "r": d.create_input_topic("r", S, S)}
        for side, k, v, ts in events:
            topics[side].pipe_input(k, v, ts)
        return [(r.key, r.value, r.timestamp)
                for r in d.create_output_topic("out", S, S).read_records_to_list()]


EVENTS = [("l", "k", "a", 0), ("r", "k", "b", 5), ("r", "k", "c", 30), ("l", "k", "d", 32),
          ("l", "x", "lonely", 40), ("r", "y", "alone", 41), ("l", "z", "tick", 100)]


def test_inner_join_within_the_window_both_ways():
    assert _join("join", EVENTS) == [("k", "a+b", 5), ("k", "d+c", 32)]


def test_left_join_emits_unpartnered_left_records_once_their_window_closes():
    # "lonely" (40) is emitted when stream time reaches 100 (> 40 + 10 + grace 0);
    # "tick" (100) still waits: its window is open
    assert _join("left_join", EVENTS) == [
        ("k", "a+b", 5), ("k", "d+c", 32), ("x", "lonely+None", 40)]


def test_outer_join_emits_both_sides_unpartnered():
    out = _join("outer_join", EVENTS)
    assert out[:2] == [("k", "a+b", 5), ("k", "d+c", 32)]
    assert sorted(out[2:]) == [("x", "lonely+None", 40), ("y", "None+alone", 41)]


def test_records_past_window_and_grace_are_dropped():
    out = _join("join", [("l", "k", "a", 100), ("r", "k", "late", 70)])
    assert out == []
