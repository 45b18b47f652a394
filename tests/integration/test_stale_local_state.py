"""A task that lands on an executor holding a stale copy of its local state (on a cluster
whose executors have their own disks, a task may come back to an executor it left batches
ago) resumes its progress from Kafka, never from that copy: a late record is dropped
wherever its task runs (issue 25), under both guarantees."""

from __future__ import annotations

import shutil

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder, TimeWindows
from tests.conftest import consume_all

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()


def _windowed_count(src: str, dst: str):
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by_key()
      .windowed_by(TimeWindows.of_size_and_grace(10_000, 0)).count()
      .to_stream().map(lambda w, n: (f"{w.key}@{w.window.start}", n))
      .to(dst, key_serde=S, value_serde=L))
    return b.build()


def _produce(broker: str, topic: str, timestamps: list[int]) -> None:
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for ts in timestamps:
        p.produce(topic, key=b"k", value=b"x", timestamp=ts)
    assert p.flush(30) == 0


@pytest.mark.parametrize(("guarantee", "execution_mode"), [
    pytest.param("at_least_once", "micro_batch", id="at_least_once-micro_batch"),
    pytest.param("exactly_once_v2", "micro_batch", id="exactly_once_v2-micro_batch"),
    pytest.param("exactly_once_v2", "real_time", id="exactly_once_v2-real_time")])
def test_a_stale_local_copy_of_progress_is_not_resumed(guarantee, execution_mode, broker, spark,
                                                       admin, topic_name, app_config, tmp_path):
    """Three batch runs (``autostop.at=eol``, which real-time mode runs too); before the
    third the task's local state and progress are replaced by the copy the first run left.
    real_time is sampled with exactly_once_v2 only: the rule that ignores a stale local
    copy is the one task lifecycle's (``_host/task.py``), whichever guarantee runs, and
    both guarantees run it in micro_batch mode (the suite's time budget)."""
    src, dst = topic_name("stale-in"), topic_name("stale-out")
    admin.create_topics({src: 1, dst: 1})
    cfg = app_config(processing_guarantee=guarantee, execution_mode=execution_mode)
    if execution_mode == "micro_batch":  # real-time mode has no Spark checkpoint
        cfg["checkpoint.location"] = str(tmp_path / "checkpoint")
    app_dir = tmp_path / "state" / cfg["application.id"]

    def run() -> None:
        streams = KafkaStreams(_windowed_count(src, dst), cfg, spark=spark)
        streams.start()
        assert streams.await_termination(180)
        streams.close()

    _produce(broker, src, [1_000, 2_000])
    run()  # stream time 2,000: this executor keeps the task's state and progress
    stale = tmp_path / "stale-copy"
    shutil.copytree(app_dir, stale)
    _produce(broker, src, [100_000])
    run()  # the task ran elsewhere: stream time 100,000
    shutil.rmtree(app_dir)  # ... and comes back to the executor with the stale copy
    shutil.copytree(stale, app_dir)
    _produce(broker, src, [60_000, 61_000])  # window [60,000, 70,000) closed at 70,000
    run()
    # two updates (cache on: one per run that counts), read to the end of the output
    got = [(m.key().decode(), L.deserialize(dst, m.value())) for m in consume_all(broker, dst, 2)]
    assert not [k for k, _ in got if k.endswith("@60000")], f"late records counted: {got}"
    assert ("k@0", 2) in got and ("k@100000", 1) in got


def test_a_checkpoint_below_the_changelogs_log_start_restores_from_what_is_left(
        broker, spark, admin, topic_name, app_config, tmp_path):
    """The changelog records after a local checkpoint were deleted (retention, or records
    deleted on purpose): the restore cannot continue from the checkpoint, and a read from it
    would only wait for records that are gone until ``source.read.timeout.ms`` (here 10
    minutes, far beyond the run's bound). As Kafka Streams treats such a task as corrupted,
    the store is wiped and restored from what the changelog still holds, at once."""
    from kspark import Materialized
    from kspark._engine.state.build import changelog_topic
    from kspark.state import Stores

    src, dst = topic_name("logstart-in"), topic_name("logstart-out")
    admin.create_topics({src: 1, dst: 1})
    cfg = app_config(statestore_cache_max_bytes=0, source_read_timeout_ms=600_000,
                     checkpoint_location=str(tmp_path / "checkpoint"))
    app_dir = tmp_path / "state" / cfg["application.id"]
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by_key()
      .count(Materialized.as_(Stores.persistent_key_value_store("counts")))
      .to_stream().to(dst, key_serde=S, value_serde=L))
    topology = b.build()

    def run() -> None:
        streams = KafkaStreams(topology, cfg, spark=spark)
        streams.start()
        assert streams.await_termination(180), "the restore waited for deleted records"
        streams.close()

    _produce(broker, src, [1_000, 2_000])
    run()  # a micro-batch writes each key's last value down: the checkpoint is at offset 1
    stale = tmp_path / "stale-copy"
    shutil.copytree(app_dir, stale)
    _produce(broker, src, [3_000, 4_000, 5_000])
    run()  # the changelog ends at 2
    changelog = (changelog_topic(cfg["application.id"], "counts"), 0)
    _allow_deletion(broker, changelog[0])  # as a window store's compact,delete changelog
    end = admin.end_offsets([changelog])[changelog]
    assert end == 2, end
    admin.delete_records({changelog: end})  # the log now starts at 2: offset 1 is gone
    shutil.rmtree(app_dir)
    shutil.copytree(stale, app_dir)  # the local state, checkpointed at 1, comes back
    _produce(broker, src, [6_000])
    run()
    counts = [L.deserialize(dst, m.value()) for m in consume_all(broker, dst, 6)]
    # restored from what the changelog holds (nothing after the deletion): counting again
    assert counts == [1, 2, 3, 4, 5, 1], counts


def _allow_deletion(broker: str, topic: str) -> None:
    """``cleanup.policy=compact,delete`` on ``topic`` (records may then be deleted)."""
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ResourceType)

    entry = ConfigEntry("cleanup.policy", "compact,delete",
                        incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    client = AdminClient({"bootstrap.servers": broker})  # kept alive until the futures end
    for fut in client.incremental_alter_configs([resource]).values():
        fut.result(30)
