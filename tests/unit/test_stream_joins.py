"""KStream-KStream windowed joins (inner, left, outer) through the driver."""

import pytest

from kspark import JoinWindows, Serdes, StreamJoined, StreamsBuilder
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()


def _out(d, topic, vs=L):
    """(key, value, timestamp) of every record in ``topic``, keys as strings."""
    return [(r.key, r.value, r.timestamp)
            for r in d.create_output_topic(topic, S, vs).read_records_to_list()]


WITHIN_10 = JoinWindows.of_time_difference_and_grace(10, 0)


def _join(kind, events, windows=WITHIN_10):
    b = StreamsBuilder()
    left = b.stream("l", key_serde=S, value_serde=S)
    right = b.stream("r", key_serde=S, value_serde=S)
    joined = getattr(left, kind)(right, lambda a, c: f"{a}+{c}", windows)
    joined.to("out", value_serde=S)
    topology = b.build()
    assert str(topology.describe()).count("Sub-topology") == 1
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


# Issue 10, rules 16-19 and 21 (Kafka Streams 4.1's KStreamKStreamJoin)

def test_an_unjoined_record_whose_window_has_ended_is_emitted_at_once():
    # k2 at 50 arrives at stream time 100: its window [40, 60] is over, so it never waits
    assert _join("left_join", [("l", "k", "a", 100), ("l", "k2", "b", 50)]) == [
        ("k2", "b+None", 50)]


def test_no_record_is_dropped_for_lateness_only_the_stores_retention_expires():
    # y at 8 is far behind stream time 100, yet joins x (5), still in the right store
    assert _join("join", [("l", "k", "a", 100), ("r", "k", "x", 5), ("l", "k", "y", 8)]) == [
        ("k", "y+x", 8)]


def test_closed_unjoined_records_come_first_ordered_by_time_side_and_key():
    events = [("l", "b", "v1", 0), ("l", "a", "v2", 0), ("r", "c", "v3", 0),
              ("r", "k", "y", 5), ("l", "k", "x", 12)]
    assert _join("outer_join", events) == [
        ("c", "None+v3", 0), ("a", "v2+None", 0), ("b", "v1+None", 0), ("k", "x+y", 12)]


@pytest.mark.parametrize("kind,expected", [
    ("join", []), ("left_join", [(None, "a+None", 1)]),
    ("outer_join", [(None, "a+None", 1), (None, "None+b", 2)])])
def test_null_keys_join_with_none_on_outer_sides(kind, expected):
    assert _join(kind, [("l", None, "a", 1), ("r", None, "b", 2)]) == expected


def test_a_zero_size_window_without_grace_never_joins():
    windows = JoinWindows.of_time_difference_without_grace(0)
    assert _join("join", [("l", "k", "a", 5), ("r", "k", "b", 5)], windows) == []


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
        first_key = next(k for k, _ in this.inner.range(None, None))
        assert this.inner.get(first_key) == L.serialize("", 7)
        assert [kv.value for kv in d.get_state_store("j-outer-other-join-store").all()] == ["x"]
        assert "j-outer-shared-join-store" in d._task.stores
        assert _out(d, "o", S) == [("a", "7:x", 2)]
