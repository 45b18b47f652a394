"""Session stores and session-windowed aggregations through the TopologyTestDriver."""

import pytest

from kspark import (EmitStrategy, Materialized, Serdes, SessionWindowedSerde, SessionWindows,
                    StreamsBuilder)
from kspark import Window, Windowed
from kspark.state import Stores
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()


def _out(d, topic, vs=L):
    """(key, value, timestamp) of every record in ``topic``, keys as strings."""
    return [(r.key, r.value, r.timestamp)
            for r in d.create_output_topic(topic, S, vs).read_records_to_list()]


@pytest.fixture(params=[Stores.in_memory_session_store, Stores.persistent_session_store],
                ids=["in-memory", "rocksdb"])
def sstore(request):
    s = Stores.session_store_builder(request.param("s", 1000), S, L).build()
    yield s
    s.close()


def test_session_store_find_fetch_remove(sstore):
    sstore.put(Windowed("a", Window(0, 10)), 2)
    sstore.put(Windowed("a", Window(50, 60)), 3)
    sstore.put(Windowed("b", Window(5, 5)), 1)
    assert [kv.value for kv in sstore.find_sessions("a", 8, 55)] == [2, 3]
    assert [kv.value for kv in sstore.find_sessions("a", 11, 40)] == []
    assert sstore.fetch_session("a", 50, 60) == 3
    sstore.remove(Windowed("a", Window(0, 10)))
    assert [(kv.key.window.start, kv.value) for kv in sstore.fetch("a")] == [(50, 3)]


def test_session_windowed_serde_layout():
    serde = SessionWindowedSerde(S)
    raw = serde.serialize("t", Windowed("k", Window(5, 9)))
    assert raw == b"k" + (9).to_bytes(8, "big") + (5).to_bytes(8, "big")
    assert serde.deserialize("t", raw) == Windowed("k", Window(5, 9))


def test_session_count_merges_sessions_and_drops_late_records():
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 5))
      .count(Materialized.as_("sessions")).to_stream()
      .map(lambda wk, v: (f"{wk.key}@{wk.window.start}-{wk.window.end}", v))
      .to("out", key_serde=S, value_serde=L))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0}) as d:
        i = d.create_input_topic("in", S, S)
        for ts in (0, 5, 22, 14, 100, 20):
            i.pipe_input("a", "x", ts)
        out = d.create_output_topic("out", S, L).read_key_values_to_list()
        assert out == [
            ("a@0-0", 1), ("a@0-0", None), ("a@0-5", 2),   # 5 extends the first session
            ("a@22-22", 1),                                  # more than the gap away: new
            # 14 is within the gap of [0,5], but that session expired (its end is older
            # than stream time 22 minus retention gap+grace 15), so 14 merges with [22,22] only
            ("a@22-22", None), ("a@14-22", 2),
            ("a@100-100", 1),
        ]  # 20 arrives when stream time is 100: its session closed long ago, dropped
        assert d._task.dropped == 1
        store = d.get_session_store("sessions")
        assert [(kv.key.window.start, kv.key.window.end, kv.value) for kv in store.fetch("a")] == [
            (100, 100, 1)]  # [0,5] and [14,22] have expired by stream time 100


GAP_10_GRACE_100 = SessionWindows.of_inactivity_gap_and_grace(10, 100)


def _sessions(events, aggregate=None, windows=GAP_10_GRACE_100):
    b = StreamsBuilder()
    grouped = (b.stream("in", key_serde=S, value_serde=S).group_by_key()
               .windowed_by(windows))
    table = grouped.count() if aggregate is None else grouped.aggregate(
        lambda: "I", lambda k, v, agg: agg + v, lambda k, a, c: a + c,
        Materialized.with_(S, S))
    (table.to_stream().map(lambda wk, v: (f"{wk.key}@{wk.window.start}-{wk.window.end}", v))
     .to("out", key_serde=S, value_serde=L if aggregate is None else S))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0}) as d:
        i = d.create_input_topic("in", S, S)
        for key, value, ts in events:
            i.pipe_input(key, value, ts)
        out = d.create_output_topic("out", S, L if aggregate is None else S)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


def test_session_results_carry_the_session_end_and_null_values_count():
    """Issue 10, rules 2 and 7 (KStreamSessionWindowAggregate)."""
    assert _sessions([("a", "x", 20), ("a", None, 12)]) == [
        ("a@20-20", 1, 20), ("a@20-20", None, 20), ("a@12-20", 2, 20)]


def test_a_session_merge_starts_from_the_initializer_and_merges_every_session():
    """Issue 10, rule 6: agg = merger(merger(init, s1), s2), then the aggregator."""
    out = _sessions([("a", "x", 0), ("a", "y", 20), ("a", "z", 10)], aggregate=True)
    assert out[-1] == ("a@0-20", "IIxIyz", 20)


def test_an_expired_session_is_neither_found_nor_merged():
    """Issue 10, rule 8: retention gap + grace = 10; at stream time 10 the session [0, 0]
    has expired (its end must be > 10 - 10), so a record at 10 starts a new session."""
    windows = SessionWindows.of_inactivity_gap_and_grace(10, 0)
    assert _sessions([("a", "x", 0), ("b", "x", 10), ("a", "x", 10)], windows=windows) == [
        ("a@0-0", 1, 0), ("b@10-10", 1, 10), ("a@10-10", 1, 10)]


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
