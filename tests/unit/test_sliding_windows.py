"""Sliding windows through the TopologyTestDriver: Kafka Streams' window layout, grace,
out-of-order records, and a model check (each window counts the records inside it)."""

import pytest
from hypothesis import given, settings, strategies as st

from kspark import Materialized, Serdes, SlidingWindows, StreamsBuilder
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()
NO_CACHE = {"statestore.cache.max.bytes": 0}


def _sliding(windows, records, config=NO_CACHE, reduce=False):
    b = StreamsBuilder()
    grouped = b.stream("in", key_serde=S, value_serde=S).group_by_key().windowed_by(windows)
    table = (grouped.reduce(lambda a, v: a + v, Materialized.as_("sw")) if reduce
             else grouped.count(Materialized.as_("sw")))
    (table.to_stream().map(lambda wk, v: (f"{wk.key}@{wk.window.start}-{wk.window.end}", v))
     .to("out", key_serde=S, value_serde=S if reduce else L))
    d = TopologyTestDriver(b.build(), config)
    i = d.create_input_topic("in", S, S)
    for k, ts, *v in records:
        i.pipe_input(k, v[0] if v else "x", ts)
    return d, d.create_output_topic("out", S, S if reduce else L).read_key_values_to_list()


def test_validation():
    with pytest.raises(ValueError, match="time difference"):
        SlidingWindows.of_time_difference_and_grace(0, 5)
    assert SlidingWindows.of_time_difference_with_no_grace(7).grace_ms == 0


def test_in_order_records_create_left_and_right_windows():
    d, out = _sliding(SlidingWindows.of_time_difference_and_grace(10, 100),
                      [("a", 10), ("a", 15), ("a", 30)])
    # 15 falls in 10's right window [11, 21]; its own left window [5, 15] holds both; 30
    # is alone ([20, 30]) and too far from 15 for a right window of 15
    assert out == [("a@0-10", 1), ("a@11-21", 1), ("a@5-15", 2), ("a@20-30", 1)]
    assert [(kv.key.window.start, kv.value) for kv in d.get_window_store("sw").all()] == [
        (0, 1), (5, 2), (11, 1), (20, 1)]


def test_out_of_order_record_updates_windows_and_gets_a_right_window():
    _, out = _sliding(SlidingWindows.of_time_difference_and_grace(10, 100),
                      [("a", 20), ("a", 14)])
    # 14 lands in [10, 20] (now 2), gets its left window [4, 14] and its right window
    # [15, 25], which holds what [10, 20] held after 14's time: the record at 20
    assert out == [("a@10-20", 1), ("a@10-20", 2), ("a@4-14", 1), ("a@15-25", 1)]


def test_late_records_are_dropped_and_counted():
    d, out = _sliding(SlidingWindows.of_time_difference_and_grace(10, 0),
                      [("a", 100), ("a", 80), ("a", 95)])
    # 80: its windows end by 91 <= stream time 100: dropped. 95: updates [90, 100] and
    # gets a right window; its left window [85, 95] is already closed (counted as dropped)
    assert out == [("a@90-100", 1), ("a@90-100", 2), ("a@96-106", 1)]
    assert d._task.dropped == 2


def test_early_records_share_the_window_from_zero():
    _, out = _sliding(SlidingWindows.of_time_difference_and_grace(10, 100),
                      [("a", 3), ("a", 5), ("a", 12)])
    # 3 and 5 both go to [0, 10]; 5 opens 3's right window [4, 14]; 12 updates [4, 14],
    # opens 5's right window [6, 16] and gets [2, 12] seeded from [0, 10]
    assert out == [("a@0-10", 1), ("a@4-14", 1), ("a@0-10", 2), ("a@4-14", 2),
                   ("a@6-16", 1), ("a@2-12", 3)]


def test_reduce_keeps_arrival_order_within_a_window():
    _, out = _sliding(SlidingWindows.of_time_difference_and_grace(10, 100),
                      [("a", 20, "p"), ("a", 25, "q")], reduce=True)
    assert out == [("a@10-20", "p"), ("a@21-31", "q"), ("a@15-25", "pq")]


def test_caching_emits_each_window_once_per_commit():
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(SlidingWindows.of_time_difference_and_grace(10, 100)).count()
      .to_stream().map(lambda wk, v: (f"{wk.window.start}", v)).to("out", key_serde=S,
                                                                    value_serde=L))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 1 << 20}) as d:
        from kspark._engine.nodes import RawRecord
        for n, ts in enumerate([10, 15, 18]):
            d._task.process(RawRecord("in", 0, n, ts, b"a", b"x"))
        d._task.flush()
        assert sorted(d.create_output_topic("out", S, L).read_key_values_to_list()) == [
            ("0", 1), ("11", 2), ("16", 1), ("5", 2), ("8", 3)]


def _model(timestamps, d):
    """Every window Kafka Streams keeps for one key, with the records it holds."""
    windows = set()
    for t in timestamps:
        windows.add((max(0, t - d), max(0, t - d) + d))
        if any(t < u <= t + 1 + d for u in timestamps):
            windows.add((t + 1, t + 1 + d))
    return {w: sum(w[0] <= u <= w[1] for u in timestamps) for w in windows}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 80), min_size=1, max_size=25), st.integers(1, 15))
def test_every_window_counts_the_records_inside_it(timestamps, d):
    drv, out = _sliding(SlidingWindows.of_time_difference_and_grace(d, 1000),
                        [("a", t) for t in timestamps])
    final = {}
    for k, v in out:
        start, end = k.split("@")[1].split("-")
        final[(int(start), int(end))] = v
    assert final == _model(timestamps, d)
    drv.close()


def test_suppress_until_window_closes_gives_one_final_count_per_window():
    from kspark import Suppressed

    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(SlidingWindows.of_time_difference_and_grace(10, 5)).count()
      .suppress(Suppressed.until_window_closes()).to_stream()
      .map(lambda wk, v: (f"{wk.window.start}-{wk.window.end}", v))
      .to("out", key_serde=S, value_serde=L))
    with TopologyTestDriver(b.build(), NO_CACHE) as d:
        i = d.create_input_topic("in", S, S)
        for t in (10, 15, 18, 40, 100):
            i.pipe_input("a", "x", t)
        # at stream time 100 every window ending by 95 has closed; [90, 100] is still open
        assert d.create_output_topic("out", S, L).read_key_values_to_list() == [
            ("0-10", 1), ("5-15", 2), ("8-18", 3), ("11-21", 2), ("16-26", 1), ("30-40", 1)]
