"""Each scenario runs on the TopologyTestDriver and on Spark + the real broker: same output.

Outputs are compared as the multiset of (key, value, timestamp, headers) records and, for
each key, as the order of that key's records (Kafka orders records per partition, and a
key always lands in one partition).
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, StreamsBuilder
from kspark.processor import Topology
from kspark.testing import TopologyTestDriver
from tests.conftest import consume_all
from tests.integration.scenarios import SCENARIOS, I, S, Scenario

pytestmark = pytest.mark.integration


def _topology(sc: Scenario, ins: list[str], outs: list[str]) -> Topology:
    b = StreamsBuilder()
    built = sc.build(b, ins, outs)
    return built if isinstance(built, Topology) else b.build()


def _decode_value(sc: Scenario, topic_index: int, raw: bytes | None):
    if raw is None:
        return None
    if sc.out_serdes[1] is None:  # mixed: the through topic holds Integers
        return I.deserialize("", raw) if topic_index == 0 else S.deserialize("", raw)
    return sc.out_serdes[1].deserialize("", raw)


def _on_driver(sc: Scenario, ins: list[str], outs: list[str]) -> dict:
    with TopologyTestDriver(_topology(sc, ins, outs)) as d:
        piped = sorted(((rec[2], n, rec) for n, t in enumerate(ins)
                        for rec in sc.inputs[list(sc.inputs)[n]]), key=lambda x: (x[0], x[1]))
        topics = {t: d.create_input_topic(t, S, I) for t in ins}
        for _, n, rec in piped:
            topics[ins[n]].pipe_input(rec[0], rec[1], rec[2], rec[3] if len(rec) > 3 else None)
        out = {}
        for j, o in enumerate(outs):
            out[o] = [(S.deserialize(o, r.key), _decode_value(sc, j, r.value), r.timestamp,
                       tuple(r.headers)) for r in d._records_for(o)]
        return out


def _on_spark(sc: Scenario, ins, outs, broker, spark, admin, config) -> dict:
    admin.create_topics({t: sc.partitions for t in ins + outs})
    # idempotent: a retried request on a busy machine must not reorder the input
    p = Producer({"bootstrap.servers": broker, "partitioner": "murmur2_random",
                  "enable.idempotence": True})
    for n, t in enumerate(ins):
        for rec in sc.inputs[list(sc.inputs)[n]]:
            p.produce(t, key=S.serialize(t, rec[0]), value=I.serialize(t, rec[1]),
                      timestamp=rec[2], headers=rec[3] if len(rec) > 3 else None)
    p.flush(30)
    streams = KafkaStreams(_topology(sc, ins, outs),
                           config(max_offsets_per_trigger=sc.per_batch), spark=spark)
    streams.start()
    assert streams.await_termination(240)
    streams.close()
    out = {}
    for j, o in enumerate(outs):
        msgs = consume_all(broker, o, 1, timeout_s=20)
        out[o] = [(S.deserialize(o, m.key()), _decode_value(sc, j, m.value()), m.timestamp()[1],
                   tuple(m.headers() or ())) for m in msgs]
    return out


def _per_key(records: list) -> dict:
    by_key = defaultdict(list)
    for r in records:
        by_key[r[0]].append(r)
    return dict(by_key)


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_driver_and_spark_agree(sc, broker, spark, admin, topic_name, app_config):
    ins = [topic_name(f"{sc.name}-{t}") for t in sc.inputs]
    outs = [topic_name(f"{sc.name}-{o}") for o in sc.outputs]
    expected = _on_driver(sc, ins, outs)
    assert any(expected.values()), "the scenario must produce output"
    got = _on_spark(sc, ins, outs, broker, spark, admin, app_config)
    for o in outs:
        assert sorted(got[o], key=repr) == sorted(expected[o], key=repr), f"records of {o} differ"
        assert _per_key(got[o]) == _per_key(expected[o]), f"per-key order of {o} differs"
