"""Scenarios written once, run on the TopologyTestDriver and on Spark + Kafka: same output."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark.processor import Processor, PunctuationType
from kspark.testing import TopologyTestDriver
from tests.conftest import consume_all

pytestmark = pytest.mark.integration
S, I = Serdes.String(), Serdes.Integer()
INPUT = [(f"k{i % 7}", i, 1000 + 3 * i) for i in range(200)]


def _branching(b, src, outs):
    s = b.stream(src, key_serde=S, value_serde=I)
    br = s.split(name="b-").branch(lambda k, v: v % 3 == 0, name="three").default_branch()
    tripled = br["b-three"].flat_map_values(lambda v: [v, v * 10])
    rest = br["b-0"].select_key(lambda k, v: f"{k}-{v % 2}")
    tripled.merge(rest).map_values(lambda k, v: f"{k}:{v}", with_key=True).to(
        outs[0], key_serde=S, value_serde=S)


class Summer(Processor):
    def init(self, context):
        self.context, self.total = context, 0
        context.schedule(50, PunctuationType.STREAM_TIME, self.emit)

    def emit(self, ts):
        self.context.forward(self.record.with_value(f"{self.total}@{ts}"))

    def process(self, record):
        self.record = record
        self.total += record.value


def _punctuating(b, src, outs):
    b.stream(src, key_serde=S, value_serde=I).process(Summer).to(outs[0], key_serde=S,
                                                                value_serde=S)


# (build, output topics, records per micro-batch). The punctuation scenario runs as one
# micro-batch: a task's stream time and processor objects survive between micro-batches
# only while Spark keeps the task on the same Python worker (see docs/architecture.md).
SCENARIOS = {"split-merge-flatmap-selectkey": (_branching, 1, 64),
             "processor-stream-time-punctuation": (_punctuating, 1, 10_000)}


def _on_driver(build, src, outs):
    b = StreamsBuilder()
    build(b, src, outs)
    with TopologyTestDriver(b.build()) as d:
        i = d.create_input_topic(src, S, I)
        for k, v, ts in INPUT:
            i.pipe_input(k, v, ts)
        return {o: [(r.key, r.value, r.timestamp)
                    for r in d.create_output_topic(o, S, S).read_records_to_list()] for o in outs}


def _on_spark(build, src, outs, broker, spark, admin, config, per_batch):
    admin.create_topics({src: 1, **{o: 1 for o in outs}})
    p = Producer({"bootstrap.servers": broker})
    for k, v, ts in INPUT:
        p.produce(src, key=S.serialize(src, k), value=I.serialize(src, v), timestamp=ts)
    p.flush(10)
    b = StreamsBuilder()
    build(b, src, outs)
    streams = KafkaStreams(b.build(), config(max_offsets_per_trigger=per_batch), spark=spark)
    streams.start()
    assert streams.await_termination(180)
    streams.close()
    return {o: [(m.key().decode(), m.value().decode(), m.timestamp()[1])
                for m in consume_all(broker, o, 1)] for o in outs}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_driver_and_spark_agree(scenario, broker, spark, admin, topic_name, app_config):
    build, n_out, per_batch = SCENARIOS[scenario]
    src = topic_name(f"{scenario}-in")
    outs = [topic_name(f"{scenario}-out{i}") for i in range(n_out)]
    expected = _on_driver(build, src, outs)
    assert all(expected.values())
    assert _on_spark(build, src, outs, broker, spark, admin, app_config, per_batch) == expected
