"""Kafka -> Spark -> Kafka through the walking skeleton, on the real broker and a real
SparkSession."""

from __future__ import annotations

from collections import defaultdict

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from tests.conftest import consume_all

pytestmark = pytest.mark.integration
N = 10_000


def test_ten_thousand_records_exact_with_order_keys_values_timestamps_headers(
        broker, spark, admin, topic_name, app_config):
    src, dst = topic_name("skeleton-in"), topic_name("skeleton-out")
    admin.create_topics({src: 3, dst: 3})
    producer = Producer({"bootstrap.servers": broker, "partitioner": "murmur2_random",
                         "linger.ms": 5})
    sent = []
    for i in range(N):
        key, value, ts = f"key-{i % 257}", i, 1_700_000_000_000 + i * 7
        headers = [("seq", str(i).encode()), ("src", b"test")]
        producer.produce(src, key=key.encode(), value=Serdes.Integer().serialize(src, value),
                         timestamp=ts, headers=headers,
                         on_delivery=lambda err, m, rec=(key, value, ts, headers):
                         sent.append((m.partition(), m.offset(), rec)))
    producer.flush(30)
    assert len(sent) == N

    b = StreamsBuilder()
    (b.stream(src, key_serde=Serdes.String(), value_serde=Serdes.Integer())
      .filter(lambda k, v: v % 3 != 0)
      .map_values(lambda k, v: f"{k}={v * 2}", with_key=True)
      .to(dst, value_serde=Serdes.String()))
    streams = KafkaStreams(b.build(), app_config(max_offsets_per_trigger=4000), spark=spark)
    streams.start()
    assert streams.await_termination(300)
    streams.close()

    expected = defaultdict(list)
    for partition, _offset, (key, value, ts, headers) in sorted(sent, key=lambda s: s[:2]):
        if value % 3 != 0:
            expected[partition].append((key, f"{key}={value * 2}", ts, headers))
    total = sum(len(v) for v in expected.values())
    got = defaultdict(list)
    for m in consume_all(broker, dst, total):
        got[m.partition()].append((m.key().decode(), m.value().decode(), m.timestamp()[1],
                                   list(m.headers() or [])))
    assert sum(len(v) for v in got.values()) == total
    for partition in range(3):
        assert got[partition] == expected[partition], f"partition {partition} differs"


def test_rerun_resumes_from_checkpoint_and_processes_only_new_records(
        broker, spark, admin, topic_name, app_config):
    src, dst = topic_name("resume-in"), topic_name("resume-out")
    admin.create_topics({src: 2, dst: 2})
    p = Producer({"bootstrap.servers": broker})
    for i in range(50):
        p.produce(src, key=b"k", value=str(i).encode(), timestamp=1000 + i)
    p.flush(10)
    b = StreamsBuilder()
    b.stream(src, key_serde=Serdes.String(), value_serde=Serdes.String()).to(dst)
    cfg = app_config()
    for _ in range(2):
        s = KafkaStreams(b.build(), cfg, spark=spark)
        s.start()
        assert s.await_termination(120)
        s.close()
        for i in range(50, 60):
            p.produce(src, key=b"k", value=str(i).encode(), timestamp=1000 + i)
        p.flush(10)
    values = [m.value().decode() for m in consume_all(broker, dst, 60)]
    assert values == [str(i) for i in range(60)]
