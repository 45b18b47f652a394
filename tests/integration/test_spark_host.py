"""Spark-host specifics: wall-clock punctuation, dead letters, partitioning, plan limits."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark._engine.partitioner import default_partition
from kspark.errors import TopologyError
from kspark.processor import Processor, PunctuationType
from tests.conftest import consume_all

pytestmark = pytest.mark.integration
S, I = Serdes.String(), Serdes.Integer()


def _produce(broker, topic, records):
    p = Producer({"bootstrap.servers": broker, "partitioner": "murmur2_random",
                  "enable.idempotence": True})
    for k, v, ts in records:
        p.produce(topic, key=k, value=v, timestamp=ts)
    p.flush(10)


class WallTicker(Processor):
    def init(self, context):
        self.context = context
        context.schedule(1, PunctuationType.WALL_CLOCK_TIME, self.tick)
        self.ticked = False

    def tick(self, now):
        if not self.ticked and getattr(self, "last", None) is not None:
            self.ticked = True
            self.context.forward(self.last.with_value(f"tick-{self.context.task_id()}"))

    def process(self, record):
        self.last = record


def test_wall_clock_punctuation_fires_in_each_task(broker, spark, admin, topic_name, app_config):
    src, dst = topic_name("wall-in"), topic_name("wall-out")
    admin.create_topics({src: 2, dst: 2})
    _produce(broker, src, [(f"k{i}".encode(), I.serialize(src, i), 1000 + i) for i in range(20)])
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=I).process(WallTicker).to(dst, key_serde=S,
                                                                     value_serde=S)
    streams = KafkaStreams(b.build(), app_config(), spark=spark)
    streams.start()
    assert streams.await_termination(120)
    streams.close()
    values = sorted(m.value().decode() for m in consume_all(broker, dst, 2, timeout_s=20))
    assert values == ["tick-0_0", "tick-0_1"]


def test_bad_records_go_to_the_dead_letter_topic_and_processing_continues(
        broker, spark, admin, topic_name, app_config):
    src, dst, dlq = topic_name("dl-in"), topic_name("dl-out"), topic_name("dl-dlq")
    admin.create_topics({src: 1, dst: 1, dlq: 1})
    _produce(broker, src, [(b"a", I.serialize(src, 1), 1), (b"b", b"bad", 2),
                           (b"c", I.serialize(src, 3), 3)])
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=I).to(dst)
    cfg = app_config(**{"deserialization.exception.handler": "log_and_continue",
                        "errors.dead.letter.queue.topic.name": dlq})
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    assert streams.await_termination(120)
    streams.close()
    assert [I.deserialize(dst, m.value()) for m in consume_all(broker, dst, 2)] == [1, 3]
    [dead] = consume_all(broker, dlq, 1)
    assert dead.value() == b"bad"
    assert dict(dead.headers())["__streams.errors.offset"] == b"1"


def test_engine_partition_matches_where_kafka_puts_keyed_records(
        broker, spark, admin, topic_name, app_config):
    src, dst = topic_name("part-in"), topic_name("part-out")
    admin.create_topics({src: 1, dst: 5})
    _produce(broker, src, [(f"key-{i}".encode(), I.serialize(src, i), 10 + i) for i in range(100)])
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=I).to(dst)
    streams = KafkaStreams(b.build(), app_config(), spark=spark)
    streams.start()
    assert streams.await_termination(120)
    streams.close()
    msgs = consume_all(broker, dst, 100)
    assert len(msgs) == 100
    assert all(m.partition() == default_partition(m.key(), 5) for m in msgs)


def test_offset_reset_latest_skips_what_was_there_before_the_first_start(
        broker, spark, admin, topic_name, app_config):
    src, dst = topic_name("reset-in"), topic_name("reset-out")
    admin.create_topics({src: 1, dst: 1})
    _produce(broker, src, [(b"old", I.serialize(src, 1), 1)])
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=I, offset_reset="latest").to(dst)
    cfg = app_config()
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    assert streams.await_termination(120)
    streams.close()
    _produce(broker, src, [(b"new", I.serialize(src, 2), 2)])
    streams = KafkaStreams(b.build(), cfg, spark=spark)  # restart: resumes from its checkpoint
    streams.start()
    assert streams.await_termination(120)
    streams.close()
    assert [m.key() for m in consume_all(broker, dst, 1)] == [b"new"]


def test_copartitioned_topics_with_different_partition_counts_fail_at_start(
        broker, spark, admin, topic_name, app_config):
    left, right, dst = topic_name("cop-l"), topic_name("cop-r"), topic_name("cop-out")
    admin.create_topics({left: 2, right: 3, dst: 1})
    b = StreamsBuilder()
    b.stream(left, key_serde=S, value_serde=I).merge(
        b.stream(right, key_serde=S, value_serde=I)).to(dst)
    topology = b.build()
    topology._graph.copartition(left, right)  # what a join registers
    with pytest.raises(TopologyError, match=rf"'{left}' has 2, '{right}' has 3"):
        KafkaStreams(topology, app_config(), spark=spark).start()


@pytest.mark.parametrize("placed", [True, False], ids=["placed", "without-the-shim"])
def test_a_source_without_new_data_in_a_micro_batch_does_not_shift_task_numbers(
        broker, spark, admin, topic_name, app_config, monkeypatch, placed):
    # Spark replaces a source with nothing new by an empty relation without partitions;
    # tasks must still know their number (here: batches where only b, then only the
    # re-keyed stream, has data, ahead of and behind stages that do run). Without the
    # placement shim (no javac), each source's markers are taken by their tag instead.
    if not placed:
        monkeypatch.setattr("kspark._spark.micro_batch.load", lambda spark: False)
    a, b_in, c_in = topic_name("gap-a"), topic_name("gap-b"), topic_name("gap-c")
    table = topic_name("gap-table")
    a_out, b_out, joined = topic_name("gap-a-out"), topic_name("gap-b-out"), topic_name("gap-join")
    admin.create_topics({a: 1, b_in: 1, c_in: 1, table: 1, a_out: 1, b_out: 1, joined: 1})
    _produce(broker, a, [(b"x", I.serialize(a, 1), 10)])
    _produce(broker, b_in, [(b"y", I.serialize(b_in, i), 20 + i) for i in range(3)])
    _produce(broker, c_in, [(b"z", I.serialize(c_in, i), 20 + i) for i in range(3)])
    _produce(broker, table, [(b"T", I.serialize(table, 100), 5)])
    b = StreamsBuilder()
    b.stream(a, key_serde=S, value_serde=I).to(a_out)
    b.stream(b_in, key_serde=S, value_serde=I).map_values(lambda v: v * 2).to(b_out)
    lookup = b.table(table, key_serde=S, value_serde=I)
    (b.stream(c_in, key_serde=S, value_serde=I).select_key(lambda k, v: "T")
     .left_join(lookup, lambda v, t: v + (t or 0)).to(joined))
    cfg = app_config(**{"max.offsets.per.trigger": 1, "default.key.serde": "String",
                        "default.value.serde": "Integer"})
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    assert streams.await_termination(180)
    streams.close()
    assert [I.deserialize(a_out, m.value()) for m in consume_all(broker, a_out, 1)] == [1]
    assert [I.deserialize(b_out, m.value()) for m in consume_all(broker, b_out, 3)] == [0, 2, 4]
    got = [(m.key(), I.deserialize(joined, m.value())) for m in consume_all(broker, joined, 3)]
    assert got == [(b"T", 100), (b"T", 101), (b"T", 102)]
