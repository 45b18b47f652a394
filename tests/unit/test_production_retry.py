"""Issue 57 item 6: ``Response.retry()`` (Java's ``ProductionExceptionHandlerResponse.RETRY``)
of the production exception handler, as Kafka Streams' RecordCollectorImpl honours it: only
for a retriable error (RETRY to any other error, a serialization error included, is read as
FAIL), the record sent again in place, and bounded by ``task.timeout.ms``.

The TopologyTestDriver's collector never refuses a record, so these tests make it refuse a
few (``_refuse``); the Spark host's collector is driven with a fake producer."""

from __future__ import annotations

import logging
import time

import pytest

from kspark import Serdes, StreamsBuilder
from kspark._engine.collector import MemoryCollector
from kspark._graph.instantiate import build_task
from kspark._engine.nodes import RawRecord
from kspark._engine.partitioner import default_partition
from kspark._plan.plan import StagePlan
from kspark._spark.routing import RoutingCollector
from kspark.errors import (DefaultProductionExceptionHandler, ExceptionHandlerError,
                           ProcessingExceptionHandler, ProductionExceptionHandler, Response,
                           Result, RetriableSinkWriteError, SerializationError, SinkWriteError,
                           TaskTimeoutError)
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()
FAST = {"retry.backoff.ms": 1}


def _driver(config=None, fn=lambda v: v, sink_serde=L):
    """in -> map_values(fn) -> out, and in -> map_values(+1) -> out2."""
    b = StreamsBuilder()
    s = b.stream("in", key_serde=S, value_serde=L)
    s.map_values(fn).to("out", key_serde=S, value_serde=sink_serde)
    s.map_values(lambda v: v + 1).to("out2", key_serde=S, value_serde=L)
    return TopologyTestDriver(b.build(), {**FAST, **(config or {})})


def _refuse(collector, times, error=RetriableSinkWriteError, topic="out"):
    """Make ``collector`` refuse its next ``times`` records for ``topic`` (None: forever)
    with ``error``, as a producer does when a partition has no leader."""
    send = collector.send
    left = [times]

    def refusing(t, key, value, timestamp, headers, partition):
        if t == topic and (left[0] is None or left[0] > 0):
            if left[0] is not None:
                left[0] -= 1
            raise error(f"topic {t!r}: NOT_ENOUGH_REPLICAS")
        send(t, key, value, timestamp, headers, partition)

    collector.send = refusing
    return left  # how many refusals are left


def _pipe(d, *values):
    topic = d.create_input_topic("in", S, L)
    for v in values:
        topic.pipe_input("k", v, 100 + v)


def _out(d, topic="out"):
    return d.create_output_topic(topic, S, L).read_values_to_list()


class Retrying(ProductionExceptionHandler):
    """Answers RETRY to everything, remembering what it was asked."""

    def __init__(self):
        self.seen = []

    def handle(self, context, record, exception):
        self.seen.append((context, record, exception))
        return Response.retry()

    def handle_serialization_exception(self, context, record, exception, origin):
        self.seen.append((context, record, exception))
        return Response.retry()


def test_retry_is_a_result_as_javas():
    assert Response.retry() == Response(Result.RETRY)
    assert ProductionExceptionHandler.ProductionExceptionHandlerResponse.RETRY is Result.RETRY
    assert Result["RETRY"] is Result.RETRY and Result.CONTINUE is Result.RESUME


def test_a_retriable_refusal_is_sent_again_in_place_then_processing_goes_on():
    handler = Retrying()
    d = _driver({"production.exception.handler": handler})
    _refuse(d._collector, 2)
    _pipe(d, 1, 2, 3)
    assert _out(d) == [1, 2, 3]  # the refused record first: the order is kept
    assert _out(d, "out2") == [2, 3, 4]
    assert len(handler.seen) == 2 and d._task.dropped == 0
    context, record, error = handler.seen[0]
    assert isinstance(error, RetriableSinkWriteError)
    assert str(error).startswith("sink 'KSTREAM-SINK-0000000002' in task 0_0: topic 'out'")
    assert (record.topic, record.key, L.deserialize("out", record.value)) == ("out", b"k", 1)
    assert (context.topic, context.offset, context.processor_node_id) == (
        "in", 0, "KSTREAM-SINK-0000000002")
    m = d.metrics()
    assert m.total("records-produced-total") == 6  # each written record counted once


def test_the_default_handler_retries_a_retriable_error_as_javas():
    assert DefaultProductionExceptionHandler().handle(
        None, None, RetriableSinkWriteError("x")) == Response.retry()
    d = _driver()  # log_and_fail: Java's DefaultProductionExceptionHandler
    left = _refuse(d._collector, 3)
    _pipe(d, 7)
    assert _out(d) == [7] and left == [0]


def test_a_handler_may_change_its_mind_after_a_retry():
    answers = iter([Response.retry(), Response.resume()])
    d = _driver({"production.exception.handler": lambda c, r, e: next(answers)})
    _refuse(d._collector, None)
    _pipe(d, 1)
    assert _out(d) == [] and _out(d, "out2") == [2] and d._task.dropped == 1


def test_retry_to_an_error_that_is_not_retriable_fails_as_fail(caplog):
    handler = Retrying()
    d = _driver({"production.exception.handler": handler})
    _refuse(d._collector, None, error=SinkWriteError)
    with caplog.at_level(logging.WARNING, "kspark"), \
            pytest.raises(SinkWriteError) as e:
        _pipe(d, 3)
    message = str(e.value)
    assert not isinstance(e.value, RetriableSinkWriteError)
    assert "answered RETRY, read as FAIL" in message and "non-retriable error" in message
    for part in ("task 0_0", "processor 'KSTREAM-SINK-0000000002'", "topic 'out'",
                 "topic 'out', partition 0 (from the input record at topic 'in', "
                 "partition 0, offset 0)"):
        assert part in message
    assert len(handler.seen) == 1  # not sent again
    assert "treated as FAIL" in caplog.text


def test_retry_to_a_serialization_error_fails_as_fail():
    handler = Retrying()
    d = _driver({"production.exception.handler": handler}, fn=lambda v: "text",
                sink_serde=Serdes.Integer())
    with pytest.raises(SerializationError, match="read as FAIL.*a serialization error"):
        _pipe(d, 1)
    assert len(handler.seen) == 1


def test_retrying_stops_at_task_timeout_ms_naming_it():
    handler = Retrying()
    d = _driver({"production.exception.handler": handler, "task.timeout.ms": 50,
                 "retry.backoff.ms": 5})
    _refuse(d._collector, None)
    started = time.monotonic()
    with pytest.raises(TaskTimeoutError) as e:
        _pipe(d, 1)
    assert 0.05 <= time.monotonic() - started < 5
    message = str(e.value)
    assert "task.timeout.ms (50 ms)" in message and "RETRY each time" in message
    for part in ("task 0_0", "processor 'KSTREAM-SINK-0000000002'",
                 "topic 'out', partition 0 (from the input record"):
        assert part in message
    assert len(handler.seen) >= 3  # asked after every failed attempt
    assert isinstance(e.value.__cause__, RetriableSinkWriteError)


def test_only_the_production_handler_may_answer_retry():
    class Wrong(ProcessingExceptionHandler):
        def handle(self, context, record, exception):
            return Response.retry()

    def boom(v):
        raise ValueError("boom")

    d = _driver({"processing.exception.handler": Wrong}, fn=boom)
    with pytest.raises(ExceptionHandlerError, match="only production.exception.handler"):
        _pipe(d, 1)


def test_a_counts_batched_flush_retries_the_refused_record_too():
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key().count()
      .to_stream().to("counts", key_serde=S, value_serde=L))
    d = TopologyTestDriver(b.build(), {**FAST, "statestore.cache.max.bytes": 1 << 20})
    left = _refuse(d._collector, 1, topic="counts")
    topic = d.create_input_topic("in", S, S)
    for key in "abca":
        topic.pipe_input(key, "x")
    d.advance_wall_clock_time(60_000)
    out = d.create_output_topic("counts", S, L).read_key_values_to_list()
    assert dict(out) == {"a": 2, "b": 1, "c": 1} and left == [0]


# -- the Spark host's collector: a fake producer behind RoutingCollector

def test_on_spark_a_retried_record_is_counted_once_as_sent(tmp_path):
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).to("out", key_serde=S, value_serde=L)
    producer = MemoryCollector()  # as the task's producer, refusing below
    collector = RoutingCollector(producer, StagePlan(0, ("n",), {}, {}, {}, {}), 0)
    task = build_task(b.build()._graph, "0_0", {"application.id": "app", **FAST,
                                                 "state.dir": str(tmp_path)},
                      collector)
    left = _refuse(producer, 2)
    task.process(RawRecord("in", 0, 0, 5, b"k", L.serialize("in", 9), ()))
    assert [L.deserialize("out", r.value) for r in producer.records] == [9]
    assert collector.sent == 1 and task.dropped == 0 and left == [0]


def test_on_spark_retry_to_a_refusal_that_is_not_retriable_names_the_partition(tmp_path):
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).to("out", key_serde=S, value_serde=L)
    producer = MemoryCollector()
    collector = RoutingCollector(producer, StagePlan(0, ("n",), {}, {}, {}, {}), 0)
    task = build_task(b.build()._graph, "0_3", {
        "application.id": "app", "state.dir": str(tmp_path),
        "production.exception.handler": lambda c, r, e: Response.retry()}, collector)
    task.partition_counts = {"out": 4}
    _refuse(producer, None, error=SinkWriteError)
    with pytest.raises(SinkWriteError, match=r"task 0_3, processor 'KSTREAM-SINK-0000000001', "
                       rf"topic 'out', partition {default_partition(b'k', 4)} "
                       r"\(from the input record at topic 'in', partition 3, offset 7\)"):
        task.process(RawRecord("in", 3, 7, 5, b"k", L.serialize("in", 9), ()))
    assert producer.records == [] and collector.sent == 0


def test_the_spark_hosts_producer_names_a_retriable_refusal_retriable():
    """A refusal librdkafka marks retriable reaches the handler as Java's
    RetriableException (so RETRY applies on Spark); any other stays a SinkWriteError."""
    from confluent_kafka import KafkaError, KafkaException

    from kspark._kafka.task_producer import TaskProducer

    class Refusing:
        def __init__(self, error):
            self.error = error

        def produce(self, *args, **kwargs):
            raise KafkaException(self.error)

    producer = TaskProducer("127.0.0.1:1", "retry-test")
    for error, kind in ((KafkaError(KafkaError.REQUEST_TIMED_OUT, "slow", retriable=True),
                             RetriableSinkWriteError),
                            (KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "big"), SinkWriteError)):
        producer._producer = Refusing(error)  # noqa: SLF001
        with pytest.raises(SinkWriteError) as e:
            producer.send("out", b"k", b"v", 1, None, 0)
        assert type(e.value) is kind, e.value
