"""auto.offset.reset on the real broker: an application with ``latest`` skips what its input
held before its first start and processes what arrives after, in both execution modes;
``by_duration`` finds its start by timestamp (Kafka's ListOffsets)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from tests.conftest import consume_all

pytestmark = pytest.mark.integration
S = Serdes.String()


def _produce(broker, topic, values, timestamp_ms=None):
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for i, v in enumerate(values):
        p.produce(topic, key=f"k{i % 4}".encode(), value=v.encode(),
                  timestamp=timestamp_ms or 0)
    assert p.flush(10) == 0


def _run(mode, policy, broker, spark, admin, topic_name, app_config) -> list[str]:
    """What an application under ``policy`` outputs of 20 records produced before its first
    start and 10 after (values upper-cased)."""
    src, dst = topic_name("reset-in"), topic_name("reset-out")
    admin.create_topics({src: 2, dst: 1})
    _produce(broker, src, [f"before-{i}" for i in range(20)])
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).map_values(str.upper).to(dst, key_serde=S,
                                                                        value_serde=S)
    cfg = app_config(autostop_at="none", execution_mode=mode, auto_offset_reset=policy,
                     commit_interval_ms=100)
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()  # returns once the starts are resolved (micro_batch: pinned)
    try:
        _produce(broker, src, [f"after-{i}" for i in range(10)])
        out = consume_all(broker, dst, 30 if policy == "earliest" else 10, timeout_s=45)
    finally:
        streams.close()
    return sorted(m.value().decode() for m in out)


def test_latest_skips_records_produced_before_the_first_start_and_processes_those_after(
        execution_mode, broker, spark, admin, topic_name, app_config):
    out = _run(execution_mode, "latest", broker, spark, admin, topic_name, app_config)
    assert out == sorted(f"AFTER-{i}" for i in range(10))


def test_earliest_a_real_time_thread_starts_at_the_beginning(
        broker, spark, admin, topic_name, app_config):
    out = _run("real_time", "earliest", broker, spark, admin, topic_name, app_config)
    assert out == sorted([f"BEFORE-{i}" for i in range(20)] + [f"AFTER-{i}" for i in range(10)])


def test_by_duration_starts_at_the_first_record_that_recent_else_at_the_end(
        broker, admin, topic_name):
    from kspark._host.start_offsets import resolve_start_offsets

    src = topic_name("reset-by-time")
    admin.create_topics({src: 1})
    now = int(time.time() * 1000)
    _produce(broker, src, ["old"] * 3, now - 3 * 3_600_000)
    _produce(broker, src, ["new"] * 2, now - 600_000)
    tp = (src, 0)
    assert resolve_start_offsets(admin, "app", [tp], {}, {}, "by_duration:PT1H",
                                 now_ms=now) == {tp: 3}
    assert resolve_start_offsets(admin, "app", [tp], {}, {}, "by_duration:PT1M",
                                 now_ms=now) == {tp: 5}  # none that recent: the end
    assert resolve_start_offsets(admin, "app", [tp], {tp: 1}, {}, "by_duration:PT1M",
                                 now_ms=now) == {tp: 1}  # a committed offset wins
