"""Window stores and windowed aggregations through the TopologyTestDriver."""

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from kspark import (EmitStrategy, Materialized, Serdes, SessionWindows, StreamsBuilder,
                    TimeWindowedSerde, TimeWindows)
from kspark import Window, Windowed
from kspark.errors import TopologyError
from kspark.state import Stores
from kspark.testing import TopologyTestDriver

S, I, L = Serdes.String(), Serdes.Integer(), Serdes.Long()
NO_CACHE = {"statestore.cache.max.bytes": 0}


def _out(d, topic, vs=L):
    """(key, value, timestamp) of every record in ``topic``, keys as strings."""
    return [(r.key, r.value, r.timestamp)
            for r in d.create_output_topic(topic, S, vs).read_records_to_list()]


@pytest.fixture(params=[Stores.in_memory_window_store, Stores.persistent_window_store],
                ids=["in-memory", "rocksdb"])
def wstore(request):
    s = Stores.window_store_builder(request.param("w", 100, 10), S, I).build()
    yield s
    s.close()


def test_window_store_put_fetch_backward_all_and_retention(wstore):
    wstore.put("a", 1, 0)
    wstore.put("a", 2, 10)
    wstore.put("b", 3, 10)
    wstore.put("ab", 4, 0)
    assert wstore.fetch("a", 10) == 2
    assert list(wstore.fetch("a", 0, 50)) == [(0, 1), (10, 2)]
    assert list(wstore.backward_fetch("a", 0, 50)) == [(10, 2), (0, 1)]
    assert [(kv.key.key, kv.key.window.start, kv.value) for kv in wstore.fetch_all(10, 10)] == [
        ("a", 10, 2), ("b", 10, 3)]
    assert len(list(wstore.all())) == 4
    wstore.put("a", 5, 200)  # time moves on: windows before 100 expire
    assert list(wstore.fetch("a", 0, 300)) == [(200, 5)]
    assert wstore.purge_expired() == 4
    wstore.put("z", 9, 50)  # already expired: ignored
    assert wstore.fetch("z", 50) is None


def test_time_windows_validate():
    with pytest.raises(ValueError, match="advance"):
        TimeWindows.of_size_with_no_grace(10).advance_by(20)


def _windowed_count(windows, records, config=NO_CACHE):
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key().windowed_by(windows)
      .count(Materialized.as_("wc")).to_stream()
      .map(lambda wk, v: (f"{wk.key}@{wk.window.start}-{wk.window.end}", v))
      .to("out", key_serde=S, value_serde=L))
    d = TopologyTestDriver(b.build(), config)
    i = d.create_input_topic("in", S, S)
    for k, ts in records:
        i.pipe_input(k, "x", ts)
    return d, d.create_output_topic("out", S, L).read_key_values_to_list()


def test_tumbling_window_count():
    d, out = _windowed_count(TimeWindows.of_size_with_no_grace(10),
                             [("a", 1), ("a", 5), ("a", 12), ("b", 3)])
    # no grace: b at 3 arrives when stream time is 12, after [0, 10) closed: dropped
    assert out == [("a@0-10", 1), ("a@0-10", 2), ("a@10-20", 1)]
    assert d._task.dropped == 1
    # retention = size + grace = 10: at stream time 12 window 0 has expired (start must be
    # > 12 - 10, issue 10 rule 9), as in Kafka Streams' window stores
    assert list(d.get_window_store("wc").fetch("a", 0, 20)) == [(10, 1)]


def test_hopping_window_count():
    _, out = _windowed_count(TimeWindows.of_size_with_no_grace(10).advance_by(5),
                             [("a", 7), ("a", 12)])
    assert out == [("a@0-10", 1), ("a@5-15", 1), ("a@5-15", 2), ("a@10-20", 1)]


def test_out_of_order_within_grace_counts_and_late_records_are_dropped_and_counted():
    d, out = _windowed_count(TimeWindows.of_size_and_grace(10, 5),
                             [("a", 12), ("a", 8), ("a", 30), ("a", 9), ("a", 25)])
    # 8 is within grace of [0,10) (stream time 12 < 10 + 5); after 30, [0,10) is closed: 9 dropped
    assert out == [("a@10-20", 1), ("a@0-10", 1), ("a@30-40", 1), ("a@20-30", 1)]
    assert d._task.dropped == 1


def test_windowed_serde_is_javas_time_windowed_layout():
    serde = TimeWindowedSerde(S, 10)
    raw = serde.serialize("t", Windowed("k", Window(20, 30)))
    assert raw == b"k" + (20).to_bytes(8, "big")
    assert serde.deserialize("t", raw) == Windowed("k", Window(20, 30))


def test_windowed_reduce_with_caching_emits_per_commit():
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(TimeWindows.of_size_with_no_grace(10)).reduce(lambda a, v: a + v)
      .to_stream().map(lambda wk, v: (wk.key, v)).to("out", key_serde=S, value_serde=S))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 1 << 20}) as d:
        from kspark._engine.nodes import RawRecord
        for n, v in enumerate(["x", "y", "z"]):
            d._task.process(RawRecord("in", 0, n, n, b"a", v.encode()))
        d._task.flush()
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [("a", "xyz")]


def _run_in_incarnations(topology, raws, cuts, state_dir):
    """Run ``raws`` through tasks rebuilt at each cut (as Spark rebuilds RocksDB tasks each
    micro-batch), each resuming its predecessor's progress; returns the output records."""
    from kspark._engine.collector import MemoryCollector
    from kspark._graph.instantiate import build_task
    from kspark.config import StreamsConfig

    config = StreamsConfig({"application.id": "inc", "bootstrap.servers": "x",
                            "state.dir": state_dir, "statestore.cache.max.bytes": 0})
    out, progress, bounds = MemoryCollector(), None, [0, *cuts, len(raws)]
    for lo, hi in itertools.pairwise(bounds):
        restore = (lambda t, p=progress: t.resume(p)) if progress else None
        task = build_task(topology._graph, "0_0", config, out, restore=restore)
        for raw in raws[lo:hi]:
            task.process(raw)
        task.flush()
        progress = task.progress()
        task.close()
    return [(r.key, r.value) for r in out.records]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=1, max_size=20), st.data())
def test_a_rebuilt_task_drops_the_same_late_records(timestamps, data):
    import tempfile

    from kspark._engine.nodes import RawRecord

    cuts = sorted(data.draw(st.sets(st.integers(1, len(timestamps)), max_size=3)))
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(TimeWindows.of_size_and_grace(10, 3)).count().to_stream()
      .map(lambda wk, v: (f"{wk.key}@{wk.window.start}", v)).to("out", key_serde=S, value_serde=L))
    topology = b.build()
    raws = [RawRecord("in", 0, i, ts, b"a", b"x", ()) for i, ts in enumerate(timestamps)]
    whole = _run_in_incarnations(topology, raws, [], tempfile.mkdtemp())
    assert _run_in_incarnations(topology, raws, cuts, tempfile.mkdtemp()) == whole


def test_windowed_aggregations_skip_only_null_keys():
    """Issue 10, rule 2 (KStreamWindowAggregate): null values reach the aggregator."""
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(TimeWindows.of_size_with_no_grace(10)).count(Materialized.as_("wc"))
      .to_stream().map(lambda k, v: (f"{k.key}@{k.window.start}", v)).to("out", key_serde=S,
                                                                        value_serde=L))
    with TopologyTestDriver(b.build(), NO_CACHE) as d:
        i = d.create_input_topic("in", S, S)
        for k, v, ts in (("a", "x", 1), ("a", None, 2), (None, "x", 3), ("a", None, 4)):
            i.pipe_input(k, v, ts)
        out = d.create_output_topic("out", S, L).read_key_values_to_list()
    assert out == [("a@0", 1), ("a@0", 2), ("a@0", 3)]


def test_with_retention_is_checked_and_used():
    b = StreamsBuilder()
    grouped = b.stream("s", key_serde=S, value_serde=L).group_by_key()
    with pytest.raises(TopologyError, match="no smaller than its window size plus grace"):
        grouped.windowed_by(TimeWindows.of_size_and_grace(10, 5)).count(
            Materialized.as_("short").with_retention(14))
    with pytest.raises(TopologyError, match="inactivity gap plus grace"):
        grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 5)).count(
            Materialized.as_("short-s").with_retention(14))
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(10)).count(
        Materialized.as_("long").with_retention(1000))
    with TopologyTestDriver(b.build()) as d:
        s = d.create_input_topic("s", S, L)
        s.pipe_input("a", 1, 5)
        s.pipe_input("a", 1, 500)  # window 0 would have expired with retention 10
        assert [kv.key.window.start for kv in d.get_window_store("long").all()] == [0, 500]



def test_emit_on_window_close_forwards_each_window_once_when_it_closes():
    b = StreamsBuilder()
    (b.stream("s", key_serde=S, value_serde=L).group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(10, 2))
     .emit_strategy(EmitStrategy.on_window_close()).count()
     .to_stream(lambda wk, v: f"{wk.key}@{wk.window.start}").to("o", key_serde=S, value_serde=L))
    with TopologyTestDriver(b.build()) as d:
        s = d.create_input_topic("s", S, L)
        for key, ts in [("b", 1), ("a", 3), ("a", 5), ("a", 11), ("a", 12)]:
            s.pipe_input(key, 1, ts)
        # [0, 10) closes at stream time 12; ties go in key order, at their newest timestamp
        assert _out(d, "o") == [("a@0", 2, 5), ("b@0", 1, 1)]
