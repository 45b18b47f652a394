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


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_a_stale_local_copy_of_progress_is_not_resumed(guarantee, broker, spark, admin,
                                                       topic_name, app_config, tmp_path):
    src, dst = topic_name("stale-in"), topic_name("stale-out")
    admin.create_topics({src: 1, dst: 1})
    cfg = app_config(processing_guarantee=guarantee,
                     checkpoint_location=str(tmp_path / "checkpoint"))
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
