"""Records kspark writes on Spark carry exactly the bytes Java's serializers would write."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from tests.conftest import consume_all
from tests.unit.test_serdes import JAVA_BYTES

pytestmark = pytest.mark.integration


def test_each_builtin_serde_writes_javas_byte_layout(broker, spark, admin, topic_name, app_config):
    src = topic_name("interop-in")
    outs = [topic_name(f"interop-{i}-{serde.name}") for i, (serde, _, _) in enumerate(JAVA_BYTES)]
    admin.create_topics({src: 1, **{o: 1 for o in outs}})
    b = StreamsBuilder()
    s = b.stream(src, key_serde=Serdes.Integer(), value_serde=Serdes.String())
    for i, (serde, value, _raw) in enumerate(JAVA_BYTES):
        (s.filter(lambda k, v, i=i: k == i).map_values(lambda v, value=value: value)
          .to(outs[i], key_serde=Serdes.Integer(), value_serde=serde))
    p = Producer({"bootstrap.servers": broker})
    for i in range(len(JAVA_BYTES)):
        p.produce(src, key=Serdes.Integer().serialize(src, i), value=b"x", timestamp=1000 + i)
    p.flush(10)
    streams = KafkaStreams(b.build(), app_config(), spark=spark)
    streams.start()
    assert streams.await_termination(180)
    streams.close()
    for i, (serde, _value, raw) in enumerate(JAVA_BYTES):
        [m] = consume_all(broker, outs[i], 1, timeout_s=20)
        assert m.key() == i.to_bytes(4, "big"), serde
        assert m.value() == raw, f"{serde!r} wrote {m.value()!r}, Java writes {raw!r}"
