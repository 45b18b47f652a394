"""The batch path of ``count()`` (``_engine/aggregates/batch_count.py``): a batch counted at
once leaves exactly what record-by-record processing leaves, and every case where it could
differ goes record by record."""

from __future__ import annotations

import random

import pytest

from kspark import Serdes, StreamsBuilder
from kspark._engine.aggregates.batch_base import counts_in_order
from kspark._engine.collector import MemoryCollector
from kspark._engine.nodes import RawRecord
from kspark._graph.instantiate import build_task
from kspark._plan.describe import describe_application
from kspark.config import StreamsConfig
from kspark.processor import PunctuationType

S, L, B = Serdes.String(), Serdes.Long(), Serdes.Bytes()


def _topology(key_serde=S, value_serde=S, between=None, to_stream=True, **count_kw):
    b = StreamsBuilder()
    s = b.stream(["in", "in2"], key_serde=key_serde, value_serde=value_serde)
    if between is not None:
        s = between(s)
    table = s.group_by_key().count(**count_kw)
    if to_stream:
        table.to_stream().to("out", key_serde=key_serde, value_serde=L)
    return b.build()


def _task(topology, tmp_path, enabled=True, **config):
    cfg = StreamsConfig({"application.id": "bc", "bootstrap.servers": "kafka:9092",
                         "state.dir": str(tmp_path / f"s-{enabled}"),
                         "batch.aggregation.enabled": enabled, **config})
    return build_task(topology._graph, "0_0", cfg, MemoryCollector(), clock=lambda: 10**12)


def _records(n, keys, seed=1, key=lambda i: b"k-%d" % i):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = None if rng.random() < 0.02 else key(rng.randrange(keys))
        v = None if rng.random() < 0.02 else b"v%d" % i
        topic = rng.choice(("in", "in2"))
        out.append(RawRecord(topic, 0, i, 1_000 + rng.randrange(5_000), k, v,
                             (("h", b"1"),) if rng.random() < 0.1 else ()))
    return out


def _run(task, records, batch, flush_every=3):
    for i in range(0, len(records), batch):
        task.add_records(records[i:i + batch])
        task.process_buffered()
        if (i // batch) % flush_every == flush_every - 1:
            task.flush()
    task.flush()
    store = next(iter(task.stores.values()))
    return ([(r.topic, r.key, r.value, r.timestamp, tuple(r.headers), r.partition)
             for r in task.collector.records], [tuple(kv) for kv in store.all()],
            task.stats.take(), task.processed, task.dropped, task.stream_time,
            task.partition_time, task.current_timestamp)


def _both(topology, tmp_path, records, batch=200, **config):
    on, off = _task(topology, tmp_path, True, **config), _task(topology, tmp_path, False,
                                                                  **config)
    return on, _run(on, records, batch), _run(off, records, batch)


@pytest.mark.parametrize("persistent", [True, False])
def test_a_batch_counts_exactly_as_record_by_record(tmp_path, persistent):
    from kspark import Materialized

    kw = {} if persistent else {"materialized": Materialized.as_("c").in_memory()}
    task, fast, slow = _both(_topology(**kw), tmp_path, _records(3_000, 300))
    assert task._batch_count is not None
    assert fast == slow
    assert fast[0] and fast[4] > 0  # output, and dropped records (null keys and values)


def test_long_keys_and_bytes_values_count_exactly_as_record_by_record(tmp_path):
    records = _records(2_000, 50, key=lambda i: i.to_bytes(8, "big"))
    task, fast, slow = _both(_topology(L, B), tmp_path, records)
    assert task._batch_count is not None and fast == slow


def test_a_key_that_would_not_deserialize_sends_its_batch_record_by_record(tmp_path):
    records = _records(500, 20)
    records[250] = records[250]._replace(key=b"\xff\xfe")  # not UTF-8
    task = _task(_topology(), tmp_path, True, **{
        "deserialization.exception.handler": "log_and_continue"})
    task.add_records(records[:300])
    assert task._batch_count.run(task, list(task._group.drain())) is False
    config = {"deserialization.exception.handler": "log_and_continue"}
    _, fast, slow = _both(_topology(), tmp_path / "2", records, **config)
    assert fast == slow


def test_a_json_value_that_would_not_parse_sends_its_batch_record_by_record(tmp_path):
    records = [RawRecord("in", 0, i, 5, b"k%d" % (i % 3), b'{"a": 1}') for i in range(10)]
    records[4] = records[4]._replace(value=b"{not json")
    task = _task(_topology(value_serde=Serdes.Json()), tmp_path)
    assert task._batch_count.run(task, records) is False
    assert task._batch_count.run(task, records[:4]) is True
    json_null = [RawRecord("in", 0, 0, 5, b"k", b"null")]  # a null value: dropped
    assert task._batch_count.run(task, json_null) is True and task.dropped == 1


def test_a_batch_that_could_overflow_the_record_cache_goes_record_by_record(tmp_path):
    records = _records(400, 400)
    small = {"statestore.cache.max.bytes": 2_000}
    task = _task(_topology(), tmp_path, True, **small)
    assert task._batch_count.run(task, records) is False
    _, fast, slow = _both(_topology(), tmp_path / "2", records, **small)
    assert fast == slow


def test_a_scheduled_punctuation_or_debug_metrics_send_the_batch_record_by_record(tmp_path):
    records = _records(50, 5)
    task = _task(_topology(), tmp_path)
    node = task.nodes[0]
    task.schedule(node, 1000, PunctuationType.STREAM_TIME, lambda ts: None)
    assert task._batch_count.run(task, records) is False
    debug = _task(_topology(), tmp_path / "d", True, **{"metrics.recording.level": "DEBUG"})
    assert debug._batch_count is not None and debug._batch_count.run(debug, records) is False


@pytest.mark.parametrize("why, topology", [
    ("a step before the count", lambda: _topology(between=lambda s: s.map_values(str.upper))),
    ("a user's aggregate", lambda: _user_aggregate()),
    ("no cache", lambda: _topology(materialized=_uncached())),
])
def test_a_count_the_batch_path_cannot_prove_exact_is_counted_record_by_record(tmp_path, why,
                                                                                topology):
    assert _task(topology(), tmp_path)._batch_count is None, why


def test_a_count_behind_the_switch_is_counted_record_by_record(tmp_path):
    assert _task(_topology(), tmp_path, False)._batch_count is None


def test_counts_in_order_follow_each_keys_last_record():
    per_key = counts_in_order([b"a", b"b", None, b"a", b"c", b"b"], [3, 9, 1, 2, 4, 8])
    assert list(per_key) == [b"a", b"c", b"b"]
    assert per_key == {b"a": [2, 3], b"c": [1, 4], b"b": [2, 9]}


def test_describe_says_which_stores_are_counted_a_batch_at_a_time():
    config = {"application.id": "app", "bootstrap.servers": "kafka:9092"}
    counted = _topology()
    text = describe_application(str(counted.describe()), counted._graph,
                                StreamsConfig(config), {"in": 2, "in2": 2}, broker=False)
    assert "counted a batch of records at a time" in text
    off = StreamsConfig({**config, "statestore.cache.max.bytes": 0,
                         "execution.mode": "micro_batch"})
    text = describe_application(str(counted.describe()), counted._graph, off,
                                {"in": 2, "in2": 2}, broker=False)
    assert "counted record by record: the count's store does not cache" in text
    mapped = _topology(between=lambda s: s.map_values(str.upper))
    text = describe_application(str(mapped.describe()), mapped._graph, StreamsConfig(config),
                                {"in": 2, "in2": 2}, broker=False)
    assert "counted" not in text


def _user_aggregate():
    from kspark import Materialized

    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .aggregate(lambda: 0, lambda k, v, agg: agg + 1, Materialized.with_(S, L))
      .to_stream().to("out", value_serde=L))
    return b.build()


def _uncached():
    from kspark import Materialized

    return Materialized.as_("counts").with_caching_disabled()


def _windowed(advance=None, grace=50, **kw):
    from kspark import TimeWindows

    w = TimeWindows.of_size_and_grace(100, grace)
    b = StreamsBuilder()
    (b.stream(["in", "in2"], key_serde=S, value_serde=S).group_by_key()
      .windowed_by(w if advance is None else w.advance_by(advance)).count(**kw)
      .to_stream().map(lambda k, v: (f"{k.key}@{k.window.start}", v))
      .to("out", key_serde=S, value_serde=L))
    return b.build()


@pytest.mark.parametrize("advance", [None, 40], ids=["tumbling", "hopping"])
def test_a_windowed_batch_counts_exactly_as_record_by_record(tmp_path, advance):
    records = _records(3_000, 40)  # timestamps out of order by up to 5 s: many late windows
    task, fast, slow = _both(_windowed(advance), tmp_path, records)
    assert type(task._batch_count).__name__ == "WindowedBatchCount"
    assert fast == slow
    assert fast[0] and fast[4] > 100  # output, and dropped records (late and null keys)
    count = task.nodes[1].processor
    assert count.observed == max(r.timestamp for r in records if r.key is not None)


def test_a_windowed_count_on_window_close_is_counted_record_by_record(tmp_path):
    from kspark import EmitStrategy, TimeWindows

    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(TimeWindows.of_size_and_grace(100, 0))
      .emit_strategy(EmitStrategy.on_window_close()).count())
    assert _task(b.build(), tmp_path)._batch_count is None


def test_describe_says_a_windowed_count_is_counted_a_batch_at_a_time():
    config = {"application.id": "app", "bootstrap.servers": "kafka:9092"}
    t = _windowed()
    text = describe_application(str(t.describe()), t._graph, StreamsConfig(config),
                                {"in": 2, "in2": 2}, broker=False)
    assert "counted a batch of records at a time" in text


class _Refusing(MemoryCollector):
    """Refuses every output record of one key (as a broker refuses a record too large)."""

    def send(self, topic, key, value, timestamp, headers, partition):
        from kspark.errors import SinkWriteError

        if topic == "out" and key == b"k-3":
            raise SinkWriteError("record too large")
        super().send(topic, key, value, timestamp, headers, partition)


def test_a_count_the_collector_refuses_goes_to_the_production_handler_as_record_by_record(
        tmp_path):
    records = _records(1_000, 10)
    runs = []
    for enabled in (True, False):
        task = _task(_topology(), tmp_path / str(enabled), enabled,
                     **{"production.exception.handler": "log_and_continue"})
        task.collector = _Refusing()
        runs.append(_run(task, records, 100))
    assert runs[0] == runs[1]
    assert not any(r[1] == b"k-3" and r[0] == "out" for r in runs[0][0])


def test_a_count_whose_serdes_are_missing_is_planned_without_an_error():
    """The plan (and ``kspark describe``) leaves a store whose serdes are not given alone:
    the error is the task's to raise, where it always was."""
    from kspark._plan.batch_path import batch_path_note

    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=S).group_by(lambda k, v: v).count()
    g = b.build()._graph
    config = StreamsConfig({"application.id": "app", "bootstrap.servers": "kafka:9092"})
    assert batch_path_note(g, config, set(g.nodes), next(iter(g.stores))) is None
