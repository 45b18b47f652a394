"""No silent corruption: one active instance per application, lost changelogs detected,
start-up checks (dead-letter topic, record sizes)."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from tests.integration.soak import read_all

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()
KEYS = 50


def _produce(broker: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": broker, "partitioner": "murmur2_random", "linger.ms": 20})
    for i in range(n):
        p.produce(topic, key=f"k{i % KEYS}".encode(), value=b"x", timestamp=1000 + i)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(30) == 0


def _count(src: str, dst: str):
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by_key()
      .count().to_stream().to(dst, key_serde=S, value_serde=L))
    return b.build()


def test_a_second_instance_of_a_running_application_is_refused(broker, admin, spark, topic_name,
                                                               app_config, tmp_path):
    from kspark.errors import InstanceAlreadyRunningError

    src, dst = topic_name("twice-in"), topic_name("twice-out")
    admin.create_topics({src: 3, dst: 3})
    first_cfg = app_config(autostop_at="none")
    second_cfg = {**first_cfg, "state.dir": str(tmp_path / "other-host")}
    first = KafkaStreams(_count(src, dst), first_cfg, spark=spark)
    first.start()
    try:
        with pytest.raises(InstanceAlreadyRunningError,
                           match=rf"{first_cfg['application.id']}.*already running.*kspark-instance@"):
            KafkaStreams(_count(src, dst), second_cfg, spark=spark).start()
    finally:
        first.close()
    again = KafkaStreams(_count(src, dst), {**second_cfg, "autostop.at": "eol"}, spark=spark)
    again.start()  # once the first has closed, an instance may start at once
    assert again.await_termination(120)
    again.close()


def test_a_missing_dead_letter_topic_is_found_at_start(admin, topic_name, app_config):
    from kspark.errors import MissingSinkTopicError

    src, dst = topic_name("dlq-in"), topic_name("dlq-out")
    admin.create_topics({src: 1, dst: 1})
    cfg = app_config(errors_dead_letter_queue_topic_name=topic_name("no-such-dlq"))
    with pytest.raises(MissingSinkTopicError, match="no-such-dlq"):
        KafkaStreams(_count(src, dst), cfg).start()


def test_records_as_large_as_the_topics_allow_are_written(broker, admin, spark, topic_name,
                                                         app_config):
    src, dst = topic_name("big-in"), topic_name("big-out")
    big = {"max.message.bytes": str(10 * 1024 * 1024)}
    admin.create_topics({src: 1, dst: 1}, big)
    p = Producer({"bootstrap.servers": broker, "message.max.bytes": 11 * 1024 * 1024})
    p.produce(src, key=b"k", value=b"v" * (5 * 1024 * 1024))
    assert p.flush(30) == 0
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=Serdes.ByteArray()).to(
        dst, key_serde=S, value_serde=Serdes.ByteArray())
    streams = KafkaStreams(b.build(), app_config(consumer_fetch_max_bytes=52428800), spark=spark)
    streams.start()
    assert streams.await_termination(120)
    streams.close()
    (m,) = read_all(broker, dst)
    assert len(m.value()) == 5 * 1024 * 1024


def test_a_deleted_changelog_is_an_error_not_a_silent_wipe(broker, admin, spark, topic_name,
                                                          app_config):
    from kspark.errors import ChangelogLostError

    src, dst = topic_name("cl-in"), topic_name("cl-out")
    admin.create_topics({src: 3, dst: 3})
    cfg = app_config()

    def run():
        streams = KafkaStreams(_count(src, dst), cfg, spark=spark)
        streams.start()
        assert streams.await_termination(300)
        streams.close()

    _produce(broker, src, 30_000)
    run()
    changelogs = [t for t in admin.partition_counts() if t.startswith(cfg["application.id"])
                  and t.endswith("-changelog")]
    assert len(changelogs) == 1
    admin.delete_topics(changelogs)
    _produce(broker, src, 30_000)
    with pytest.raises(ChangelogLostError, match=rf"{changelogs[0]}.*does not exist.*reset"):
        KafkaStreams(_count(src, dst), cfg, spark=spark).start()
