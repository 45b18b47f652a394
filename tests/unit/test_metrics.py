"""Kafka Streams' metrics in the TopologyTestDriver (issue 42): Java's names, groups and
tags, what counts, and metrics.recording.level. Java's own list is printed by
tests/conformance/MetricNames.java; the conformance suite compares names with Java's."""

from __future__ import annotations

import math

import pytest

from kspark import BufferConfig, Serdes, StreamsBuilder, Suppressed, TimeWindows
from kspark.errors import ConfigError
from kspark.metrics import MetricName, Metrics
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()

TASK_METRICS = {  # Java 4.1's stream-task-metrics of a task without a caching store
    "active-buffer-count", "active-process-ratio", "dropped-records-rate",
    "dropped-records-total", "enforced-processing-rate", "enforced-processing-total",
    "process-latency-avg", "process-latency-max", "process-rate", "process-total",
    "punctuate-latency-avg", "punctuate-latency-max", "punctuate-rate", "punctuate-total",
    "record-lateness-avg", "record-lateness-max", "restore-rate",
    "restore-remaining-records-total", "restore-total"}
E2E = {"record-e2e-latency-avg", "record-e2e-latency-max", "record-e2e-latency-min"}


def _windowed_count() -> StreamsBuilder:
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=L).group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(10_000, 5_000)).count()
     .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
     .to_stream().to("out"))
    return b


def _run(builder: StreamsBuilder, level: str, times=(1000, 2000, 20_000, 1500, 40_000)):
    with TopologyTestDriver(builder.build(), {"metrics.recording.level": level}) as d:
        i = d.create_input_topic("in", S, L)
        for ts in times:
            i.pipe_input("k", 1, ts)
        return d.metrics()


def _names(m: Metrics, group: str, node: str | None = None) -> set[str]:
    return {n.name for n in m if n.group == group
            and (node is None or n.tags.get("processor-node-id") == node)}


def test_task_metrics_have_javas_names_group_and_tags():
    m = _run(_windowed_count(), "INFO")
    assert _names(m, "stream-task-metrics") == TASK_METRICS | {"cache-size-bytes-total"}
    tags = {tuple(sorted(n.tags)) for n in m if n.group == "stream-task-metrics"}
    assert tags == {("task-id", "thread-id")}
    assert {n.tags["thread-id"] for n in m if "thread-id" in n.tags} == {"main"}  # as Java's


def test_node_metrics_as_java_registers_them_per_kind_of_node():
    m = _run(_windowed_count(), "INFO")
    assert _names(m, "stream-processor-node-metrics", "KSTREAM-SOURCE-0000000000") == \
        {"process-rate", "process-total"} | E2E
    assert _names(m, "stream-processor-node-metrics", "KTABLE-SUPPRESS-0000000003") == \
        {"suppression-emit-rate", "suppression-emit-total"}
    assert _names(m, "stream-processor-node-metrics", "KSTREAM-AGGREGATE-0000000002") == {
        "window-aggregate-final-emit-latency-avg", "window-aggregate-final-emit-latency-max",
        "window-aggregate-final-emit-rate", "window-aggregate-final-emit-total"}
    assert _names(m, "stream-processor-node-metrics", "KSTREAM-SINK-0000000006") == E2E
    assert _names(m, "stream-processor-node-metrics", "KTABLE-TOSTREAM-0000000005") == set()


def test_a_late_record_counts_as_dropped_at_info_level():
    m = _run(_windowed_count(), "INFO")
    assert m.value("dropped-records-total", task_id="0_0") == 1


def test_debug_metrics_stay_unrecorded_at_info_but_exist():
    m = _run(_windowed_count(), "INFO")
    assert m.value("process-total", "stream-task-metrics") == 0
    assert math.isnan(m.value("process-latency-avg", "stream-task-metrics"))
    assert math.isnan(m.value("record-lateness-max"))


def test_debug_records_process_lateness_and_suppression_emits():
    m = _run(_windowed_count(), "DEBUG")
    assert m.value("process-total", "stream-task-metrics") == 5
    assert m.value("process-total", "stream-processor-node-metrics") == 5  # the source
    assert m.value("record-lateness-max") == 18_500  # 1500 at stream time 20000
    assert m.value("suppression-emit-total") == 2  # windows [0,10s) and [20s,30s) closed
    assert m.value("process-latency-max", "stream-task-metrics") > 0


def test_topic_metrics_count_records_and_bytes_as_java():
    m = _run(_windowed_count(), "INFO")
    assert m.value("records-consumed-total", topic="in") == 5
    # key 1 + value 8 + topic 2 + timestamp, offset, partition 20 = 31 bytes a record
    assert m.value("bytes-consumed-total", topic="in") == 5 * 31
    assert m.value("records-produced-total", topic="out") == 2


def test_a_record_that_cannot_be_read_counts_consumed_and_dropped_not_processed():
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).to("out", key_serde=S, value_serde=L)
    cfg = {"metrics.recording.level": "DEBUG",
           "deserialization.exception.handler": "log_and_continue"}
    with TopologyTestDriver(b.build(), cfg) as d:
        raw = d.create_input_topic("in", S, Serdes.ByteArray())
        raw.pipe_input("k", (5).to_bytes(8, "big"), 1000)
        raw.pipe_input("k", b"abc", 2000)
        m = d.metrics()
    assert m.value("records-consumed-total") == 2
    assert m.value("dropped-records-total") == 1
    assert m.value("process-total", "stream-task-metrics") == 1


def test_the_recording_level_is_checked():
    with pytest.raises(ConfigError, match="metrics.recording.level"):
        _run(_windowed_count(), "VERBOSE")


def test_metric_names_compare_by_name_group_and_tags_not_description():
    a = MetricName("process-rate", "g", "one", {"task-id": "0_0"})
    assert a == MetricName("process-rate", "g", "other", {"task-id": "0_0"})
    assert a != MetricName("process-rate", "g", "one", {"task-id": "0_1"})
    assert hash(a) == hash(MetricName("process-rate", "g", "", {"task-id": "0_0"}))


def test_a_lookup_that_matches_several_metrics_says_so():
    m = _run(_windowed_count(), "INFO")
    with pytest.raises(Exception, match="metrics match 'record-e2e-latency-max'"):
        m.value("record-e2e-latency-max")


def test_final_results_count_their_emits_and_the_pass_latency():
    from kspark import EmitStrategy

    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=L).group_by_key()
     .windowed_by(TimeWindows.of_size_with_no_grace(10_000))
     .emit_strategy(EmitStrategy.on_window_close()).count()
     .to_stream().to("out"))
    assert _run(b, "INFO", times=(1000, 31_000)).value("window-aggregate-final-emit-total") == 0
    m = _run(b, "DEBUG", times=(1000, 2000, 15_000, 31_000))
    assert m.value("window-aggregate-final-emit-total") == 2  # [0,10s) then [10s,20s)
    assert m.value("window-aggregate-final-emit-latency-max") >= 0


def test_three_late_records_and_one_bad_value_are_four_dropped_records():
    """Issue 42's example, as tests/integration/test_operations_on_spark.py runs it on Spark:
    3 records of a closed window and 1 value a user's handler skips (KIP-1033)."""
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).map_values(int).group_by_key()
     .windowed_by(TimeWindows.of_size_with_no_grace(10_000)).count()
     .to_stream().map(lambda k, n: (f"{k.key}@{k.window.start}", str(n)))
     .to("out", key_serde=S, value_serde=S))
    with TopologyTestDriver(b.build(), {"processing.exception.handler":
                                        "log_and_continue"}) as d:
        i = d.create_input_topic("in", S, S)
        for key, value, ts in [("b", "1", 1000), ("b", "oops", 1500), ("b", "1", 2000),
                               ("a", "1", 1000), ("a", "1", 2000), ("a", "1", 50_000),
                               ("a", "1", 3000), ("a", "1", 3001), ("a", "1", 3002)]:
            i.pipe_input(key, value, ts)
        out = d.create_output_topic("out", S, S).read_key_values_to_map()
        m = d.metrics()
    assert m.value("dropped-records-total", task_id="0_0") == 4
    assert out == {"a@0": "2", "a@50000": "1", "b@0": "2"}


# -- issue 53: state-store metrics and the record cache's hit ratio ----------------------

KV_STORE = {f"{op}-{m}" for op in ("all", "delete", "flush", "get", "prefix-scan", "put",
                                     "put-all", "put-if-absent", "range", "restore")
            for m in ("rate", "latency-avg", "latency-max")} | E2E


def _count(level: str):
    from kspark import Materialized

    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=L).group_by_key()
     .count(Materialized.as_("counts")).to_stream().to("out"))
    return _run(b, level, times=(1000, 2000, 3000))


def test_state_store_metrics_have_javas_names_group_tags_and_levels():
    for level in ("INFO", "DEBUG", "TRACE"):
        m = _count(level)
        assert _names(m, "stream-state-metrics") == KV_STORE
        assert {tuple(sorted(n.tags.items())) for n in m if n.group == "stream-state-metrics"} \
            == {(("rocksdb-state-id", "counts"), ("task-id", "0_0"), ("thread-id", "main"))}
        assert _names(m, "stream-record-cache-metrics") == {
            "hit-ratio-avg", "hit-ratio-max", "hit-ratio-min"}
    info, debug, trace = _count("INFO"), _count("DEBUG"), _count("TRACE")
    assert math.isnan(info.value("put-latency-avg", "stream-state-metrics"))  # not timed
    assert math.isnan(info.value("hit-ratio-avg"))
    assert debug.value("put-latency-max", "stream-state-metrics") > 0
    assert debug.value("restore-latency-max", "stream-state-metrics") > 0
    assert 0 <= debug.value("hit-ratio-max") <= 1
    assert math.isnan(debug.value("record-e2e-latency-max", "stream-state-metrics"))  # TRACE
    assert not math.isnan(trace.value("record-e2e-latency-max", "stream-state-metrics"))


def test_window_and_session_stores_have_their_own_operations():
    m = _run(_windowed_count(), "DEBUG")
    window = {n.name for n in m if n.tags.get("rocksdb-window-state-id")}
    assert window == {f"{op}-{k}" for op in ("fetch", "flush", "put", "restore")
                      for k in ("rate", "latency-avg", "latency-max")} | E2E
    assert m.value("fetch-latency-max", "stream-state-metrics") > 0
    # the suppression buffer is no metered store (Java gives it buffer metrics instead)
    assert not any("suppress" in v.lower() for n in m for k, v in n.tags.items()
                   if k.endswith("-state-id"))


def test_at_info_a_store_is_left_as_built():
    from kspark._engine.state.kv import KeyValueStore
    from kspark.testing import TopologyTestDriver as Driver

    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).group_by_key().count().to_stream().to("out")
    with Driver(b.build(), {"metrics.recording.level": "INFO"}) as d:
        (store,) = d._task.stores.values()
        assert type(store) is KeyValueStore and "_meter" not in vars(store)
    with Driver(b.build(), {"metrics.recording.level": "DEBUG"}) as d:
        (store,) = d._task.stores.values()
        assert type(store) is not KeyValueStore and isinstance(store, KeyValueStore)
