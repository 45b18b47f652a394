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


def test_python_shuffle_keys_agree_with_spark_hash_partitioning(spark):
    """The plan computes Spark's Murmur3 in Python (``passes.spark_hash``): it must agree with
    Spark's ``hash()`` of an int, and each shuffle key must land in its partition when Spark
    repartitions by it, as the stages' exchanges do."""
    from pyspark.sql import functions as F  # noqa: N812 - PySpark's own idiom

    from kspark._plan.passes import shuffle_keys, spark_hash

    ints = [0, 1, -1, 2**31 - 1, -2**31, *range(-3000, 3000, 7), *range(10**6, 10**9, 9_999_991)]
    rows = (spark.createDataFrame([(k,) for k in ints], "k int")
            .select("k", F.hash("k").alias("h")).collect())
    assert {r.k: r.h for r in rows} == {k: spark_hash(k) for k in ints}
    for n in (1, 2, 3, 5, 8, 13, 32):
        keys = shuffle_keys(n)
        landed = (spark.createDataFrame([(k,) for k in keys], "shuffle_key int")
                  .repartition(n, "shuffle_key")
                  .select("shuffle_key", F.spark_partition_id().alias("p")).collect())
        assert {r.shuffle_key: r.p for r in landed} == {k: p for p, k in enumerate(keys)}


def test_describe_takes_partition_counts_from_the_broker(broker, admin, topic_name, app_config):
    src, dst = topic_name("describe-in"), topic_name("describe-out")
    admin.create_topics({src: 3, dst: 2})
    b = StreamsBuilder()
    (b.stream(src, key_serde=Serdes.String(), value_serde=Serdes.String())
      .group_by(lambda k, v: v).count().to_stream().to(dst, value_serde=Serdes.Long()))
    config = app_config()
    text = KafkaStreams(b.build(), config).describe()
    assert f"   {src}: 3 (from the broker at {broker})" in text
    assert "   Stage 1 (3 Spark tasks): exchange of 3 partitions" in text
    assert f"   {config['application.id']}-kspark-progress: the tasks' progress markers (one " \
        "partition per task), 6 partitions" in text
