"""Issue 42 item 4 on the real broker and Spark, in both execution modes: a map_values that
raises on one bad value among many, under a processing exception handler that continues
(a class of this module: it reaches the executors pickled, and is configured there with the
application's config), with a dead-letter topic. The output is exact minus the bad record;
the dead-letter topic holds the bad input record, unchanged, with all of Kafka Streams'
``__streams.errors.*`` headers."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark.errors import LogAndContinueProcessingExceptionHandler
from tests.conftest import consume_all

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()
N, BAD = 40, 13


class Continue(LogAndContinueProcessingExceptionHandler):
    """Java's LogAndContinueProcessingExceptionHandler, as a user's subclass (it reads the
    dead-letter topic in configure(), on the executor)."""


def reject_bad(v: int) -> int:
    if v == BAD:
        raise ValueError(f"bad value {v}")
    return v * 10


@pytest.mark.parametrize("mode", ["micro_batch", "real_time"])
def test_a_raising_map_values_is_skipped_and_dead_lettered_on_spark(
        mode, broker, admin, spark, topic_name, app_config):
    src, dst, dlq = (topic_name(f"peh-{mode}-{n}") for n in ("in", "out", "dlq"))
    admin.create_topics({src: 2, dst: 2, dlq: 1})
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for i in range(N):
        p.produce(src, key=f"k{i}".encode(), value=L.serialize(src, i), timestamp=1000 + i,
                  headers=[("origin", b"test")])
    assert p.flush(30) == 0
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=L).map_values(reject_bad) \
        .to(dst, key_serde=S, value_serde=L)
    cfg = app_config(execution_mode=mode, commit_interval_ms=200, **{
        "processing.exception.handler": Continue,
        "errors.dead.letter.queue.topic.name": dlq})
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    streams.start()
    try:
        assert streams.await_termination(180), "the batch run did not end"
    finally:
        streams.close()

    out = consume_all(broker, dst, N - 1)
    assert sorted((m.key().decode(), L.deserialize(dst, m.value())) for m in out) == sorted(
        (f"k{i}", i * 10) for i in range(N) if i != BAD)
    [dead] = consume_all(broker, dlq, 1)
    assert (dead.key(), L.deserialize(dlq, dead.value()), dead.timestamp()[1]) == (
        f"k{BAD}".encode(), BAD, 1000 + BAD)
    headers = dead.headers()
    assert [k for k, _ in headers] == ["origin"] + [f"__streams.errors.{h}" for h in (
        "exception", "message", "stacktrace", "topic", "partition", "offset")]
    h = dict(headers)
    assert h["__streams.errors.exception"] == b"builtins.ValueError"
    assert h["__streams.errors.message"] == f"bad value {BAD}".encode()
    trace = h["__streams.errors.stacktrace"].decode()
    assert trace.rstrip().endswith(f"ValueError: bad value {BAD}") and "in reject_bad" in trace
    assert h["__streams.errors.topic"] == src.encode()
    read = [m for m in consume_all(broker, src, N) if m.key() == f"k{BAD}".encode()]
    assert (h["__streams.errors.partition"], h["__streams.errors.offset"]) == (
        str(read[0].partition()).encode(), str(read[0].offset()).encode())
