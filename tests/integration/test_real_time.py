"""execution.mode=real_time: long-running stream threads on the real broker and Spark.

Each test runs the application until its output is in (read with read_committed), then
closes it: close() asks the threads to commit and end through the control topic."""

from __future__ import annotations

import collections

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark.processor import Processor, PunctuationType
from kspark.errors import ConfigError, InstanceAlreadyRunningError
from tests.conftest import consume_all

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()


def _produce(broker, topic, records):
    p = Producer({"bootstrap.servers": broker, "partitioner": "murmur2_random",
                  "enable.idempotence": True})
    for k, v, ts in records:
        p.produce(topic, key=k.encode(), value=v.encode(), timestamp=ts)
    p.flush(10)


def _real_time(app_config, epoch_ms=None, **extra):
    cfg = app_config(autostop_at="none", execution_mode="real_time", **extra)
    if epoch_ms is not None:
        cfg["real_time.epoch.ms"] = epoch_ms  # app_config's keywords turn "_" into "."
    return cfg


def _await_live(streams, done, timeout_s=60):
    """The application's progress() and metrics() once ``done(progress, metrics)``."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        p, m = streams.progress(), streams.metrics()
        if done(p, m):
            return p, m
        assert time.monotonic() < deadline, (p, m)
        time.sleep(0.2)


def _one_task_context(admin, graph, cfg, src, dst):
    """The HostContext of a one-partition topology's one task, with its progress topic and
    changelogs created: for tests that run the real-time driver's tasks in this process,
    without Spark."""
    from kspark._graph.resources import progress_topic
    from kspark._plan.plan import plan
    from kspark._spark.realtime.checks import real_time_members
    from kspark._host.context import HostContext

    query = plan(graph, {src: 1, dst: 1}, cfg)
    admin.create_topics({progress_topic(cfg["application.id"]): 1})
    if query.stores:
        admin.create_topics({s.changelog: 1 for s in query.stores},
                            {"cleanup.policy": "compact"})
    (member,) = real_time_members(query, graph, cfg)
    return HostContext(graph, cfg.as_dict(), member.stage_plan)


def _one_task_record(src):
    """Record ``i`` of ``src`` partition 0: key ``k``, value ``v<i>``, timestamp 1000 + i."""
    from kspark._engine.nodes import RawRecord

    return lambda i: RawRecord(src, 0, i, 1000 + i, b"k", f"v{i}".encode(), ())


def _count_topology(src, dst):
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by_key().count()
     .to_stream().to(dst, key_serde=S, value_serde=L))
    return b.build()


def _latest(messages):
    out = {}
    for m in messages:
        out[m.key().decode()] = L.deserialize("", m.value())
    return out


def test_count_under_exactly_once_across_restart_and_epochs(
        broker, spark, admin, topic_name, app_config):
    """A stateful count, exactly_once_v2, commit every 100 ms, epochs of 3 s: the first run
    sees 120 records and is closed; a second run (same application) sees 80 more. Every
    count is exact (no record lost or counted twice across the epoch boundaries and the
    restart), and no output record is visible twice."""
    src, dst = topic_name("rt-in"), topic_name("rt-out")
    admin.create_topics({src: 2, dst: 2})
    cfg = _real_time(app_config, processing_guarantee="exactly_once_v2",
                     commit_interval_ms=100, epoch_ms=3000,
                     statestore_cache_max_bytes=0)
    first = [(f"k{i % 7}", f"v{i}", 1000 + i) for i in range(120)]
    _produce(broker, src, first)
    streams = KafkaStreams(_count_topology(src, dst), cfg, spark=spark)
    streams.start()
    out = consume_all(broker, dst, 120, timeout_s=120)
    streams.close()
    assert len(out) == 120  # cache off: one update per record, none twice
    second = [(f"k{i % 7}", f"v{i}", 5000 + i) for i in range(80)]
    _produce(broker, src, second)
    streams = KafkaStreams(_count_topology(src, dst), cfg, spark=spark)
    streams.start()
    out = consume_all(broker, dst, 200, timeout_s=120)
    progress = streams.progress()
    streams.close()
    expected = collections.Counter(k for k, _, _ in first + second)
    assert _latest(out) == dict(expected)
    assert len(out) == 200
    assert progress["position"] == 200  # the group's committed offsets: all input


def test_a_thread_keeps_its_in_memory_tasks_across_epochs(
        broker, spark, admin, topic_name, app_config):
    """Epochs of 2 s, a thread per Spark task slot: a count over an in-memory store keeps
    its tasks (stores open, nothing restored) from one epoch to the next, whichever slot
    Spark gives the worker that holds them, and stays exact as records arrive across the
    epoch boundaries."""
    from kspark import Materialized
    from kspark.state import Stores

    src, dst = topic_name("rt-keep-in"), topic_name("rt-keep-out")
    admin.create_topics({src: 2, dst: 2})
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by_key()
     .count(Materialized.as_(Stores.in_memory_key_value_store("counts")))
     .to_stream().to(dst, key_serde=S, value_serde=L))
    cfg = _real_time(app_config, processing_guarantee="exactly_once_v2", epoch_ms=2000,
                     commit_interval_ms=100, statestore_cache_max_bytes=0,
                     num_stream_threads=spark.sparkContext.defaultParallelism)
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    try:
        _produce(broker, src, [(f"k{i % 3}", "v", 1000 + i) for i in range(30)])
        consume_all(broker, dst, 30, timeout_s=60)
        _await_live(streams, lambda p, m: p["batches"] >= 3 and p["tasks_kept"] >= 4)
        _produce(broker, src, [(f"k{i % 3}", "v", 2000 + i) for i in range(30)])
        out = consume_all(broker, dst, 60, timeout_s=60)
    finally:
        streams.close()
    assert _latest(out) == {"k0": 20, "k1": 20, "k2": 20}
    assert len(out) == 60


def test_passthrough_at_least_once_keeps_every_record_in_order(
        broker, spark, admin, topic_name, app_config):
    """Every record out once, in order per key; live progress and metrics while the epoch
    runs; a second instance of the running application is refused (the one-instance
    guard)."""
    src, dst = topic_name("rt-pass-in"), topic_name("rt-pass-out")
    admin.create_topics({src: 2, dst: 2})
    records = [(f"k{i % 5}", f"v{i}", 1000 + i) for i in range(300)]
    _produce(broker, src, records)
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).map_values(str.upper).to(dst, key_serde=S,
                                                                       value_serde=S)
    cfg = _real_time(app_config, commit_interval_ms=200)
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    out = consume_all(broker, dst, 300, timeout_s=120)
    live = _await_live(streams, lambda p, m: p["records_in"] == 300 and p["lag"] == 0
                       and p["commits"] >= 1 and p["position"] == 300
                       and len(m.find("records-lag", topic=src)) == 2
                       # the task metrics count committed work, reported after the commit
                       and m.total("records-consumed-total") == 300)
    with pytest.raises(InstanceAlreadyRunningError, match="already running"):  # the guard
        KafkaStreams(b.build(), {**cfg, "state.dir": cfg["state.dir"] + "-other"},
                     spark=spark).start()
    streams.close()
    progress, metrics = live  # reported by the threads while their epoch still runs
    assert progress["batches"] == 0 and progress["records_out"] == 300
    assert progress["position"] == 300
    assert len(metrics.find("process-total", "stream-thread-metrics")) == 2
    assert metrics.total("process-total", "stream-thread-metrics") == 300
    assert max(m.metric_value() for m in metrics.find("commit-latency-max")) > 0
    # Kafka Streams' task metrics, summed over the threads' tasks
    assert metrics.total("records-produced-total", "stream-topic-metrics") == 300
    assert len(metrics.find("dropped-records-total", "stream-task-metrics")) == 2
    by_key = collections.defaultdict(list)
    for m in out:
        by_key[m.key().decode()].append(m.value().decode())
    for k, values in by_key.items():  # a key's records stay in order
        assert values == [v.upper() for kk, v, _ in records if kk == k]
    assert len(out) == 300


def test_more_threads_than_task_slots_is_refused(broker, spark, admin, topic_name, app_config):
    src, dst = topic_name("rt-slots-in"), topic_name("rt-slots-out")
    admin.create_topics({src: 4, dst: 1})
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).to(dst)
    slots = spark.sparkContext.defaultParallelism
    cfg = _real_time(app_config, num_stream_threads=slots + 1)
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    with pytest.raises(ConfigError, match=f"num.stream.threads={slots + 1} needs") as refused:
        streams.start()
    streams.close()
    assert "execution.mode=micro_batch" in str(refused.value)  # the alternative is named


def _slow_upper(v):
    import time

    time.sleep(0.002)
    return v.upper()


def test_async_steps_and_delayed_records_run_on_the_real_clock(
        broker, spark, admin, topic_name, app_config):
    """An async step (KIP-311, completed before each commit) then a delay of 500 ms of
    wall-clock time (fired by the threads' wall-clock check), exactly-once: every record
    comes out once, in order per key, with its own timestamp; the async step's metrics come
    from the threads."""
    import time

    src, dst = topic_name("rt-async-in"), topic_name("rt-async-out")
    admin.create_topics({src: 2, dst: 2})
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S)
     .map_values_async(_slow_upper, "enrich", max_in_flight=8)
     .delay(500, "hold", value_serde=S).to(dst, key_serde=S, value_serde=S))
    cfg = _real_time(app_config, processing_guarantee="exactly_once_v2")
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    try:
        sent = int(time.time() * 1000)
        records = [(f"k{i % 4}", f"v{i}", sent) for i in range(40)]
        _produce(broker, src, records)
        out = consume_all(broker, dst, 40, timeout_s=120)
        _, metrics = _await_live(
            streams, lambda p, m: m.total("completed-total", processor_node_id="enrich") == 40)
    finally:
        streams.close()
    by_key = collections.defaultdict(list)
    for m in out:
        by_key[m.key().decode()].append(m.value().decode())
        assert m.timestamp()[1] >= sent  # the record's own timestamp is kept
    for k, values in by_key.items():
        assert values == [v.upper() for kk, v, _ in records if kk == k]
    assert len(out) == 40 and metrics.value("in-flight", processor_node_id="enrich") == 0


def test_a_batch_run_stops_at_its_stop_offsets_with_repartition_topics_drained(
        broker, spark, admin, topic_name, app_config):
    """autostop.at=eol (KIP-95) in real-time mode: the run takes the input's ends at its
    start as stop offsets, processes nothing after them (records written later wait for the
    next run), drains the repartition topic, then ends by itself and is finished; the next
    batch run takes the rest."""
    src, dst = topic_name("rt-eol-in"), topic_name("rt-eol-out")
    admin.create_topics({src: 2, dst: 2})
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by(lambda k, v: v).count()
     .to_stream().to(dst, key_serde=S, value_serde=L))
    cfg = _real_time(app_config, processing_guarantee="exactly_once_v2",
                     statestore_cache_max_bytes=0, default_key_serde="String",
                     default_value_serde="String")
    cfg["autostop.at"] = "eol"
    _produce(broker, src, [(f"k{i}", f"g{i % 2}", 1000 + i) for i in range(60)])
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    stop = streams.stop_offsets()
    _produce(broker, src, [(f"k{i}", "late", 2000 + i) for i in range(10)])  # after the start
    assert streams.await_termination(180)
    assert streams.batch_finished()
    streams.close()
    assert sum(stop.values()) == 60
    out = consume_all(broker, dst, 60, timeout_s=30)
    assert _latest(out) == {"g0": 30, "g1": 30} and len(out) == 60
    streams = KafkaStreams(b.build(), cfg, spark=spark)  # the next batch run
    streams.start()
    assert streams.await_termination(180) and streams.batch_finished()
    streams.close()
    out = consume_all(broker, dst, 70, timeout_s=30)
    assert _latest(out) == {"g0": 30, "g1": 30, "late": 10} and len(out) == 70
    # kspark reset deletes the repartition topic with the other internal topics
    from kspark._cli.main import main

    app_id = cfg["application.id"]
    internal = lambda: sorted(t for t in admin.partition_counts()  # noqa: E731
                              if t.startswith(f"{app_id}-") and t.endswith("-repartition"))
    assert len(internal()) == 1
    assert main(["reset", "--application-id", app_id, "--bootstrap-servers", broker,
                 "--state-dir", cfg["state.dir"]]) == 0
    assert internal() == []


def test_a_batch_run_ends_once_drained_without_waiting_for_the_commit_interval(
        broker, spark, admin, topic_name, app_config):
    """A thread that has read every partition to its stop offset commits at once: a batch
    run with a 10-minute commit interval ends as soon as its input is processed."""
    src, dst = topic_name("rt-drain-in"), topic_name("rt-drain-out")
    admin.create_topics({src: 2, dst: 2})
    _produce(broker, src, [(f"k{i}", f"v{i}", 1000 + i) for i in range(20)])
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).to(dst, key_serde=S, value_serde=S)
    cfg = _real_time(app_config, commit_interval_ms=600_000)
    cfg["autostop.at"] = "eol"
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    assert streams.await_termination(120) and streams.batch_finished()
    streams.close()
    assert len(consume_all(broker, dst, 20, timeout_s=30)) == 20


def test_micro_batch_settings_are_refused_not_ignored(app_config):
    """Refused when the config is built (config.py: each key's modes), before any start;
    tests/unit/test_config_modes.py checks every key, both ways."""
    b = StreamsBuilder()
    b.stream("rt-mb-in", key_serde=S, value_serde=S).to("rt-mb-out")
    cfg = _real_time(app_config, max_offsets_per_trigger=100)
    with pytest.raises(ConfigError, match="max.offsets.per.trigger applies to "
                                          "execution.mode=micro_batch only; this application "
                                          "runs real_time"):
        KafkaStreams(b.build(), cfg)


def test_sub_topologies_meet_through_purged_repartition_topics(
        broker, spark, admin, topic_name, app_config):
    """group_by then count: two sub-topologies joined by a repartition topic, created with
    the input's partition count (as Kafka Streams chooses); exactly_once_v2 counts are
    exact, and the repartition records the downstream tasks committed are purged."""
    import time

    src, dst = topic_name("rt-rep-in"), topic_name("rt-rep-out")
    admin.create_topics({src: 2, dst: 2})
    records = [(f"k{i}", f"g{i % 3}", 1000 + i) for i in range(90)]
    _produce(broker, src, records)
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by(lambda k, v: v).count()
     .to_stream().to(dst, key_serde=S, value_serde=L))
    cfg = _real_time(app_config, processing_guarantee="exactly_once_v2",
                     commit_interval_ms=100, statestore_cache_max_bytes=0,
                     repartition_purge_interval_ms=200, default_key_serde="String",
                     default_value_serde="String")
    app_id = cfg["application.id"]
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    try:
        out = consume_all(broker, dst, 90, timeout_s=120)
        repartition = [t for t, n in admin.partition_counts().items()
                       if t.startswith(f"{app_id}-") and t.endswith("-repartition")]
        assert len(repartition) == 1
        assert admin.partition_counts()[repartition[0]] == 2
        tps = [(repartition[0], p) for p in range(2)]
        deadline = time.monotonic() + 60
        while True:  # the committed repartition records are deleted (the purge)
            committed = {tp: o for tp, o in admin.group_offsets(app_id).items() if tp in tps}
            earliest = admin.end_offsets(tps, earliest=True)
            if len(committed) == 2 and all(earliest[tp] == committed[tp] > 0 for tp in tps):
                break
            assert time.monotonic() < deadline, (committed, earliest)
            time.sleep(0.2)
    finally:
        streams.close()
    assert _latest(out) == {"g0": 30, "g1": 30, "g2": 30}
    assert len(out) == 90  # cache off, exactly-once: one update per record, none twice


def _last_values(broker, topic, expected, timeout_s=120):
    """Each key's last value in ``topic``, read again until it is ``expected`` (or time is up)."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        last = {m.key().decode(): None if m.value() is None else m.value().decode()
                for m in consume_all(broker, topic, 1, timeout_s=30)}
        if last == expected or time.monotonic() > deadline:
            return last
        time.sleep(1)


def test_foreign_key_joins_meet_through_javas_subscription_topics(
        broker, spark, admin, topic_name, app_config):
    """A foreign-key join and left join of tables that are not co-partitioned: Java's two
    sub-topologies, each reading what the other writes through
    ``...-SUBSCRIPTION-REGISTRATION-<n>-topic`` and ``...-SUBSCRIPTION-RESPONSE-<n>-topic``
    (created with the other table's and this table's partition counts); each key's last
    result is the join of the final tables."""
    a, c = topic_name("rt-fk-a"), topic_name("rt-fk-c")
    outs = {v: topic_name(f"rt-fk-{v}") for v in ("join", "left")}
    admin.create_topics({a: 2, c: 3, **{o: 2 for o in outs.values()}})
    left = [(f"u{i % 9}", f"a{i}", 1000 + 2 * i) for i in range(60)]
    right = [(f"u{i % 7}", f"c{i}", 1001 + 2 * i) for i in range(60)]
    _produce(broker, c, right)
    _produce(broker, a, left)
    fk = lambda v: f"u{int(v[1:]) % 7}"  # noqa: E731  ("a12" names row u5 of the other table)
    b = StreamsBuilder()
    ta, tc = b.table(a, key_serde=S, value_serde=S), b.table(c, key_serde=S, value_serde=S)
    ta.join(tc, fk, lambda x, y: f"{x}+{y}").to_stream().to(outs["join"], value_serde=S)
    ta.left_join(tc, fk, lambda x, y: f"{x}+{y}").to_stream().to(outs["left"], value_serde=S)
    cfg = _real_time(app_config, commit_interval_ms=100, statestore_cache_max_bytes=0)
    app_id = cfg["application.id"]
    final_a = {k: v for k, v, _ in left}
    final_c = {k: v for k, v, _ in right}
    expected = {k: f"{v}+{final_c[fk(v)]}" for k, v in final_a.items()}  # every key matches
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    try:
        got = {v: _last_values(broker, o, expected) for v, o in outs.items()}
        counts = admin.partition_counts()
    finally:
        streams.close()
    assert got == {"join": expected, "left": expected}
    topics = {t: n for t, n in counts.items()
              if t.startswith(f"{app_id}-KTABLE-FK-JOIN-") and t.endswith("-topic")}
    assert sorted(topics.values()) == [2, 2, 3, 3], topics  # response like a, registration like c


def test_global_stores_are_bootstrapped_then_updated_continuously(
        broker, spark, admin, topic_name, app_config):
    """A stream joined with a global table: the global store is read to the topic's end
    before the threads process anything, then kept up to date while they run (an update to
    the global topic reaches records joined after it)."""
    src, dst, glob = topic_name("rt-gl-in"), topic_name("rt-gl-out"), topic_name("rt-gl")
    admin.create_topics({src: 2, dst: 1})
    admin.create_topics({glob: 1}, {"cleanup.policy": "compact"})
    _produce(broker, glob, [("k0", "A", 1), ("k1", "B", 1)])
    _produce(broker, src, [("x", "k0", 1000), ("y", "k1", 1001)])
    b = StreamsBuilder()
    table = b.global_table(glob, key_serde=S, value_serde=S)
    (b.stream(src, key_serde=S, value_serde=S)
     .join(table, lambda k, v: v, lambda v, g: f"{v}={g}").to(dst, key_serde=S, value_serde=S))
    streams = KafkaStreams(b.build(), _real_time(app_config, commit_interval_ms=100),
                           spark=spark)
    streams.start()
    try:
        first = consume_all(broker, dst, 2, timeout_s=120)
        _produce(broker, glob, [("k0", "C", 2)])
        import time

        deadline, out = time.monotonic() + 60, []
        while not any(m.value() == b"k0=C" for m in out):  # the update reaches the threads
            assert time.monotonic() < deadline, [m.value() for m in out]
            _produce(broker, src, [("z", "k0", 2000)])
            out = consume_all(broker, dst, len(out) + 1, timeout_s=30)
            time.sleep(0.3)
    finally:
        streams.close()
    assert sorted(m.value() for m in first) == [b"k0=A", b"k1=B"]


def test_a_new_attempt_of_a_task_fences_its_zombie(broker, admin, topic_name, app_config):
    """Two attempts of one task (a retried Spark task, or a thread of a new epoch while the
    old one still runs): the new one's init_transactions fences the old, whose commit then
    fails with TaskFencedError; only the new attempt's output becomes visible. Runs the
    stream-thread parts in this process, without Spark."""
    from kspark._spark.realtime.stream_thread import open_live_task
    from kspark.config import StreamsConfig
    from kspark.errors import TaskFencedError

    src, dst = topic_name("rt-fence-in"), topic_name("rt-fence-out")
    admin.create_topics({src: 1, dst: 1})
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).to(dst, key_serde=S, value_serde=S)
    cfg = StreamsConfig(_real_time(app_config, processing_guarantee="exactly_once_v2"))
    ctx = _one_task_context(admin, b.build()._graph, cfg, src, dst)
    record = _one_task_record(src)

    zombie = open_live_task(ctx, 0, "rt-zombie")
    zombie.feed([record(0), record(1)])
    # fences the zombie: its open transaction is aborted
    attempt = open_live_task(ctx, 0, "rt-attempt")
    with pytest.raises(Exception) as failed:  # its writes are refused
        zombie.commit()
    cause = zombie.abort(failed.value)  # what run_stream_thread raises for the thread
    assert isinstance(cause, TaskFencedError), cause
    assert "task 0_0 was fenced" in str(cause)
    attempt.feed([record(0), record(1), record(2)])
    assert attempt.commit()
    attempt.release()
    out = consume_all(broker, dst, 3, timeout_s=30)
    assert [m.value() for m in out] == [b"v0", b"v1", b"v2"]


def test_kspark_run_prints_live_progress_and_stops_on_ctrl_c(broker, admin, topic_name,
                                                               app_config, tmp_path):
    """``kspark run`` in real-time mode prints its live line (state, counts and rates, lag
    per input topic) while the epoch runs; Ctrl-C (SIGINT) commits, stops, prints the
    summary and exits 130."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    src, dst = topic_name("rt-run-in"), topic_name("rt-run-out")
    admin.create_topics({src: 2, dst: 2})
    _produce(broker, src, [(f"k{i % 5}", f"v{i}", 1000 + i) for i in range(500)])
    app_file = tmp_path / "rt_app.py"
    app_file.write_text("from kspark import Serdes, StreamsBuilder\n"
                        "b = StreamsBuilder()\n"
                        f"b.stream({src!r}, key_serde=Serdes.String(), "
                        f"value_serde=Serdes.String()).to({dst!r})\n"
                        "TOPOLOGY = b.build()\n")
    cfg = _real_time(app_config, commit_interval_ms=200)
    cfg.update({"spark.master": "local[2]", "spark.ui.enabled": "false"})
    cmd = [sys.executable, "-m", "kspark._cli.main", "run", f"{app_file}:TOPOLOGY", "--every", "1",
           *[a for k, v in cfg.items() for a in ("--set", f"{k}={v}")]]
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(root)})
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 180
        for line in proc.stdout:
            lines.append(line)
            if ", in 500 (" in line and ", out 500 (" in line:
                break
            assert time.monotonic() < deadline, "".join(lines[-30:])
        os.kill(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
        lines.append(rest)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    out = "".join(lines)
    assert proc.returncode == 130, out[-3000:]
    assert "kspark run: RUNNING, in " in out and "/s), out " in out
    assert f"kspark run: application '{cfg['application.id']}' interrupted: " in out
    assert len(consume_all(broker, dst, 500, timeout_s=30)) == 500


def test_a_retried_attempt_of_an_epoch_restores_what_the_attempt_before_committed(
        broker, admin, topic_name, app_config):
    """Spark retries a thread's task lost with its executor: the new attempt of a task must
    restore the changelog records the attempt before committed in the same epoch. Each
    attempt stamps them with a run of its own (``<epoch run>.<attempt>``), so the restore
    keeps them (it skips only the records stamped by its own run). Runs the stream-thread
    parts in this process, without Spark."""
    from kspark._spark.realtime.stream_thread import open_live_task
    from kspark.config import StreamsConfig

    src, dst = topic_name("rt-retry-in"), topic_name("rt-retry-out")
    admin.create_topics({src: 1, dst: 1})
    graph = _count_topology(src, dst)._graph
    cfg = StreamsConfig(_real_time(app_config, processing_guarantee="exactly_once_v2",
                                   statestore_cache_max_bytes=0))
    ctx = _one_task_context(admin, graph, cfg, src, dst)
    record = _one_task_record(src)

    first = open_live_task(ctx, 0, "rt-epoch.attempt0")
    first.feed([record(0), record(1)])
    assert first.commit()
    first.feed([record(2)])  # the attempt fails before its next commit
    first.abort(RuntimeError("executor lost"))
    retry = open_live_task(ctx, 0, "rt-epoch.attempt1")  # restores counts from the changelog: k = 2
    retry.feed([record(2)])
    assert retry.commit()
    retry.release()
    out = consume_all(broker, dst, 3, timeout_s=30)
    assert [L.deserialize("", m.value()) for m in out] == [1, 2, 3]


class _WallTicker(Processor):
    """Forwards each record, and on every wall-clock punctuation (100 ms) a tick carrying
    the last record's key, while no record arrives."""

    def init(self, context):
        self.context, self.last = context, None
        context.schedule(100, PunctuationType.WALL_CLOCK_TIME, self.tick)

    def tick(self, now):
        if self.last is not None:
            self.context.forward(self.last.with_value(f"tick-{self.context.task_id()}"))

    def process(self, record):
        self.last = record
        self.context.forward(record)


def test_wall_clock_punctuation_ticks_on_the_real_clock_and_bad_records_go_to_the_dlq(
        broker, spark, admin, topic_name, app_config):
    """Wall-clock punctuation fires on the real clock while the threads wait for records
    (ticks keep coming with no input); a record that fails to deserialize goes to the
    dead-letter topic and processing goes on."""
    src, dst, dlq = topic_name("rt-wall-in"), topic_name("rt-wall-out"), topic_name("rt-dlq")
    admin.create_topics({src: 1, dst: 1, dlq: 1})
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    integer = Serdes.Integer()
    for k, v in ((b"a", integer.serialize(src, 1)), (b"b", b"bad"),
                 (b"c", integer.serialize(src, 3))):
        p.produce(src, key=k, value=v, timestamp=1000)
    p.flush(10)
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=integer).process(_WallTicker).map_values(str)
     .to(dst, key_serde=S, value_serde=S))
    cfg = _real_time(app_config, commit_interval_ms=100,
                     **{"deserialization_exception_handler": "log_and_continue",
                        "errors_dead_letter_queue_topic_name": dlq})
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    try:
        out = consume_all(broker, dst, 6, timeout_s=120, until_quiet=False)
        values = [m.value().decode() for m in out]
        assert values[:2] == ["1", "3"]
        assert set(values[2:]) == {"tick-0_0"}  # no record came in: the real clock ticked
        dead = consume_all(broker, dlq, 1, timeout_s=30)
    finally:
        streams.close()
    assert [(m.key(), m.value()) for m in dead] == [(b"b", b"bad")]


def test_global_store_rebuilds_when_its_records_are_deleted_kip406(
        broker, spark, admin, topic_name, app_config):
    """KIP-406 while the threads run: the global topic's records are deleted past the
    worker copy's offset (an open transaction holds the read_committed end back meanwhile);
    the copy is wiped and rebuilt from the topic's new start (a key deleted from the topic
    joins nothing after), records joined after that see the new content, and nothing is
    lost or duplicated."""
    import time

    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    src, dst, glob = topic_name("rt-406-in"), topic_name("rt-406-out"), topic_name("rt-406")
    admin.create_topics({src: 1, dst: 1})
    admin.create_topics({glob: 1}, {"cleanup.policy": "compact,delete"})
    _produce(broker, glob, [("k0", "A", 1), ("k1", "K", 1)])
    _produce(broker, src, [("x0", "k0", 1000)])
    b = StreamsBuilder()
    table = b.global_table(glob, key_serde=S, value_serde=S)
    (b.stream(src, key_serde=S, value_serde=S)
     .join(table, lambda k, v: v, lambda v, g: f"{v}={g}").to(dst, key_serde=S, value_serde=S))
    cfg = _real_time(app_config, processing_guarantee="exactly_once_v2", commit_interval_ms=100)
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    try:
        assert [m.value() for m in consume_all(broker, dst, 1, timeout_s=120)] == [b"k0=A"]
        tx = Producer({"bootstrap.servers": broker, "transactional.id": f"{glob}-truncate"})
        tx.init_transactions(30)
        tx.begin_transaction()
        tx.produce(glob, key=b"k0", value=b"never-seen")
        tx.flush(30)
        c = Consumer({"bootstrap.servers": broker, "group.id": f"hw-{glob}",
                      "isolation.level": "read_uncommitted"})
        _, high = c.get_watermark_offsets(TopicPartition(glob, 0), timeout=30)
        c.close()
        raw = AdminClient({"bootstrap.servers": broker})  # kept: its futures need it alive
        (fut,) = raw.delete_records([TopicPartition(glob, 0, high)]).values()
        fut.result(30)
        tx.abort_transaction(30)
        _produce(broker, glob, [("k0", "B", 2)])
        deadline, n = time.monotonic() + 90, 1
        while True:  # records joined once the copy is rebuilt see B
            _produce(broker, src, [(f"x{n}", "k0", 1000 + n)])
            n += 1
            out = consume_all(broker, dst, n, timeout_s=30)
            if out[-1].value() == b"k0=B":
                break
            assert time.monotonic() < deadline, [m.value() for m in out]
            time.sleep(0.3)
        # the copy was wiped, not moved on: k1 (deleted from the topic) joins nothing now
        _produce(broker, src, [("y", "k1", 3000), (f"x{n}", "k0", 3001)])
        out = consume_all(broker, dst, n + 1, timeout_s=60)
    finally:
        streams.close()
    values = [m.value() for m in out]
    assert len(values) == n + 1 and values[0] == b"k0=A" and values[-1] == b"k0=B"
    assert b"never-seen" not in b"".join(values)
    assert sorted(m.key() for m in out) == sorted(f"x{i}".encode() for i in range(n + 1))
