"""Standby tasks (``num.standby.replicas``, KIP-441): a warm copy of a task's stores, kept
by tailing its changelog, becomes the task's stores when the task moves to its keeper, so
the moved task restores only what was written since the copy's last update. Runs the
stream-thread parts in this process, against the real broker, without Spark (the failover
on a cluster: ``benchmarks/failover.py`` and ``test_exactly_once.py``)."""

from __future__ import annotations

import shutil

from kspark import Serdes
from tests.integration.test_real_time import (_count_topology, _one_task_context,
                                              _one_task_record, _real_time)
from tests.conftest import consume_all

L = Serdes.Long()


def _one_count_task(admin, topic_name, app_config, name):
    """A logged count's one task under exactly_once_v2 (cache off: a changelog record per
    commit and key), with its topics and the run's control topic (where an opened task
    announces its query route): its HostContext, the broker's output topic and a maker of
    input records."""
    from kspark._graph.resources import control_topic
    from kspark.config import StreamsConfig

    src, dst = topic_name(f"{name}-in"), topic_name(f"{name}-out")
    admin.create_topics({src: 1, dst: 1})
    cfg = StreamsConfig(_real_time(app_config, processing_guarantee="exactly_once_v2",
                                   statestore_cache_max_bytes=0))
    admin.create_topics({control_topic(cfg["application.id"]): 1})
    ctx = _one_task_context(admin, _count_topology(src, dst)._graph, cfg, src, dst)
    return ctx, dst, _one_task_record(src)


def test_a_standby_copy_follows_the_changelog_and_becomes_the_stores_restoring_only_the_tail(
        broker, admin, topic_name, app_config):
    from kspark._engine.state.build import task_store_dir
    from kspark._host.standby import StandbyTask, promote_standby
    from kspark._spark.realtime.stream_thread import open_live_task
    ctx, dst, record = _one_count_task(admin, topic_name, app_config, "standby")

    active = open_live_task(ctx, 0, "rt-active")
    for i in range(4):  # four commits: four changelog records of key k
        active.feed([record(i)])
        assert active.commit()
    copy = StandbyTask(ctx, 0)
    assert not copy.empty
    assert copy.update() == 4  # the whole changelog, once
    active.feed([record(4), record(5), record(6)])
    assert active.commit()  # one commit: one changelog record (the task's last count of k)
    active.feed([record(7)])
    assert copy.update() == 1  # the tail only
    assert copy.lag == 1
    assert copy.position == admin.end_offsets(list(copy.position))  # read_committed ends
    _stale_reads_see_the_copy(ctx, copy, 7)
    active.abort(RuntimeError("its executor was lost"))  # the transaction is aborted
    shutil.rmtree(task_store_dir(ctx.state_dir, ctx.app_id, "0_0"))  # and its disk is gone

    assert promote_standby(ctx.state_dir, ctx.app_id, "0_0")
    moved = open_live_task(ctx, 0, "rt-moved")
    moved.feed([record(7), record(8)])
    done = moved.commit()
    moved.release()
    assert done is not None and done.restored_records == 0, done  # nothing since the copy
    out = consume_all(broker, dst, 9, timeout_s=30)
    assert [L.deserialize("", m.value()) for m in out] == list(range(1, 10))


def _stale_reads_see_the_copy(ctx, copy, count):
    """The copy answers a stale read (StoreQueryParameters.enable_stale_stores()) with its
    count and the changelog position of its last update; a read that is not stale is
    refused, naming why."""
    from kspark._iq.host import query_host

    (store,) = copy.builders
    ask = {"app": ctx.app_id, "task": "0_0", "store": store, "partition": 0,
           "query": {"op": "get", "key": "k"}, "render": "json", "standby": True}
    answer = query_host().answer({**ask, "stale": True})
    assert answer["status"] == "ok" and answer["rows"] == [count], answer
    ((topic, partition),) = copy.position
    assert answer["position"][topic] == {str(partition): copy.position[(topic, partition)]}
    refused = query_host().answer(ask)
    assert refused["status"] == "unavailable" and "stale" in refused["message"]


def test_a_copy_older_than_the_tasks_own_stores_is_dropped_not_promoted(
        broker, admin, topic_name, app_config):
    from kspark._host.standby import StandbyTask, promote_standby
    from kspark._spark.realtime.stream_thread import open_live_task
    ctx, dst, record = _one_count_task(admin, topic_name, app_config, "standby-old")
    active = open_live_task(ctx, 0, "rt-active")
    active.feed([record(0)])
    assert active.commit()
    copy = StandbyTask(ctx, 0)
    copy.update()
    active.feed([record(1)])
    assert active.commit()
    active.release()  # its own stores, checkpointed, are fresher than the copy
    assert not promote_standby(ctx.state_dir, ctx.app_id, "0_0")
    assert not copy.directory.exists()


def test_a_threads_copies_are_updated_in_the_background_and_counted_as_kafka_streams_does(
        broker, admin, topic_name, app_config):
    """A thread's StandbyUpdater keeps its copies warm without its loop waiting, and counts
    the records they applied: Kafka Streams' update-total and update-rate of the task
    (stream-task-metrics, KIP-869)."""
    import time

    from kspark import LagInfo
    from kspark._engine.metrics.catalog import build_metrics
    from kspark._host.lags import partition_lags
    from kspark._host.standby import StandbyTask, StandbyUpdater
    from kspark._spark.realtime.stream_thread import open_live_task
    from kspark._spark.realtime.thread_metrics import changelog_positions
    ctx, dst, record = _one_count_task(admin, topic_name, app_config, "standby-bg")
    active = open_live_task(ctx, 0, "rt-active")
    for i in range(3):
        active.feed([record(i)])
        assert active.commit()
    updater = StandbyUpdater([StandbyTask(ctx, 0)], every_s=0.1)
    try:
        deadline = time.monotonic() + 60
        while "0_0" not in updater.lags:
            assert time.monotonic() < deadline, "the copy was never updated"
            time.sleep(0.05)
        # all_local_store_partition_lags (issue 53): what a thread reports of its changelogs
        held = changelog_positions([active], updater)
        ((tp, at),) = held["standby"].items()
        assert held["active"] == [tp] and at > 0, held
        topic, _, p = tp.rpartition(":")
        store = topic[len(ctx.app_id) + 1:-len("-changelog")]
        copy = partition_lags(ctx.app_id, {store: 1}, set(), {(topic, int(p)): at},
                              lambda tps: admin.end_offsets(tps))
        assert copy[store][0] == LagInfo(at, at), copy  # caught up: lag 0
        lags = partition_lags(ctx.app_id, {store: 1}, {(topic, int(p))}, {},
                              lambda tps: admin.end_offsets(tps))
        assert lags[store][0].offset_lag == 0 and lags[store][0].end_offset_position == at
    finally:
        updater.close()
        active.release()
    stats = updater.take_stats()
    assert stats["update|0_0|"][0] == 3, stats
    metrics = build_metrics(stats, thread_of=lambda task: "t", rate=lambda key, n: 0.0)
    totals = {k.name: v.metric_value() for k, v in metrics.items()
              if k.group == "stream-task-metrics" and k.tags["task-id"] == "0_0"}
    assert totals["update-total"] == 3 and "update-rate" in totals
