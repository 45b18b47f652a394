"""Operable in production (issue 42), on the real broker and the real SparkSession, in both
execution modes: Kafka Streams' metrics summed over the tasks, the Prometheus and health
endpoint, the processing exception handler with dead letters, and the client's states.

1. A topology that drops 3 late records (a window closed) in one task and skips 1 bad value
   in the other (``processing.exception.handler``: a user's subclass of Java's
   LogAndContinueProcessingExceptionHandler, pickled to the executors and configured there):
   ``dropped-records-total``
   is 4 across its tasks in ``metrics()`` and in a Prometheus scrape of ``/metrics``; the
   dead-letter topic holds the bad input record, unchanged, with Kafka Streams'
   ``__streams.errors.*`` headers in Java's order (the stack trace names the raising line); the
   output is exact; the listener saw REBALANCING -> RUNNING.
2. ``log_and_fail`` (the default): a bad value moves the running client to ERROR, with no
   call to ``await_termination()``; the listener sees RUNNING -> PENDING_ERROR -> ERROR;
   ``/health/ready`` answered 503 until the tasks ran and 200 after; ``/health/live`` turns
   503.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder, TimeWindows
from kspark.errors import LogAndContinueProcessingExceptionHandler
from tests.conftest import consume_all

pytestmark = pytest.mark.integration
S = Serdes.String()


def _produce(broker, topic, records):
    p = Producer({"bootstrap.servers": broker})
    for partition, k, v, ts in records:
        p.produce(topic, key=k.encode(), value=v.encode(), timestamp=ts, partition=partition)
    p.flush(10)


class Continue(LogAndContinueProcessingExceptionHandler):
    """Java's LogAndContinueProcessingExceptionHandler as a user's subclass: it reaches the
    executors pickled and reads the dead-letter topic in configure(), there."""


def parse(value: str) -> int:
    return int(value)


def _topology(src, dst):
    """Parse the value, count per key in 10 s windows (no grace), write the counts."""
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).map_values(parse).group_by_key()
     .windowed_by(TimeWindows.of_size_with_no_grace(10_000)).count()
     .to_stream().map(lambda k, n: (f"{k.key}@{k.window.start}", str(n)))
     .to(dst, key_serde=S, value_serde=S))
    return b.build()


def _get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, ""


def _wait(what, timeout_s=120):
    deadline = time.monotonic() + timeout_s
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _scraped(text, name):
    """The sum of the samples of ``name`` in a Prometheus text page."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + "{"))


def test_dropped_records_show_in_metrics_and_prometheus_and_dead_letters_hold_the_bad_one(
        execution_mode, broker, admin, spark, topic_name, app_config):
    src, dst, dlq = (topic_name(f"ops-{execution_mode}-{n}") for n in ("in", "out", "dlq"))
    admin.create_topics({src: 2, dst: 2, dlq: 1})
    # task 0_0: a window at 0 s, stream time to 50 s, then 3 records of the closed window
    late = [(0, "a", "1", 1000), (0, "a", "1", 2000), (0, "a", "1", 50_000)] + \
        [(0, "a", "1", 3000 + i) for i in range(3)]
    # task 0_1: good values, and one that int() cannot parse
    bad = [(1, "b", "1", 1000), (1, "b", "oops", 1500), (1, "b", "1", 2000)]
    _produce(broker, src, late + bad)
    seen = []
    streams = KafkaStreams(_topology(src, dst), app_config(
        execution_mode=execution_mode, processing_exception_handler=Continue,
        metrics_http_port=0, commit_interval_ms=200,
        **{"errors.dead.letter.queue.topic.name": dlq}), spark=spark)
    streams.set_state_listener(lambda new, old: seen.append(new.name))
    streams.start()
    port = streams.metrics_http_port()
    try:
        assert streams.await_termination(240) and streams.batch_finished()
        m = streams.metrics()
        assert m.total("dropped-records-total", "stream-task-metrics") == 4
        assert m.value("dropped-records-total", task_id="0_0") == 3
        assert m.value("dropped-records-total", task_id="0_1") == 1
        status, page = _get(port, "/metrics")
        assert status == 200
        assert _scraped(page, "kafka_streams_stream_task_metrics_dropped_records_total") == 4
        assert 'task_id="0_1"' in page and "thread_id=" in page
    finally:
        streams.close()
    assert "REBALANCING" in seen and "RUNNING" in seen and seen[-1] == "NOT_RUNNING", seen
    out = {m.key().decode(): m.value().decode() for m in consume_all(broker, dst, 3)}
    assert out == {"a@0": "2", "a@50000": "1", "b@0": "2"}
    dead = consume_all(broker, dlq, 1)
    assert [(d.key(), d.value()) for d in dead] == [(b"b", b"oops")]
    assert dead[0].timestamp()[1] == 1500  # the input record's
    assert [k for k, _ in dead[0].headers()] == [f"__streams.errors.{h}" for h in (
        "exception", "message", "stacktrace", "topic", "partition", "offset")]
    headers = dict(dead[0].headers())
    assert headers["__streams.errors.exception"] == b"builtins.ValueError"
    assert headers["__streams.errors.message"] == \
        b"invalid literal for int() with base 10: 'oops'"
    trace = headers["__streams.errors.stacktrace"].decode()
    assert trace.rstrip().endswith("ValueError: invalid literal for int() with base 10: 'oops'")
    assert "in parse" in trace
    assert (headers["__streams.errors.topic"], headers["__streams.errors.partition"],
            headers["__streams.errors.offset"]) == (src.encode(), b"1", b"1")


def test_a_failure_moves_the_client_to_error_and_the_health_endpoint_says_so(
        execution_mode, broker, admin, spark, topic_name, app_config):
    src, dst = (topic_name(f"opsfail-{execution_mode}-{n}") for n in ("in", "out"))
    admin.create_topics({src: 1, dst: 1})
    _produce(broker, src, [(0, "a", "1", 1000)])
    seen = []
    streams = KafkaStreams(_topology(src, dst), app_config(
        execution_mode=execution_mode, autostop_at="none", metrics_http_port=0,
        commit_interval_ms=200),
        spark=spark)
    streams.set_state_listener(lambda new, old: seen.append(new.name))
    streams.start()
    port = streams.metrics_http_port()
    try:
        assert _get(port, "/health/ready")[0] == 503  # starting: the tasks do not run yet
        _wait(lambda: _get(port, "/health/ready")[0] == 200)
        assert streams.state() == "RUNNING" and _get(port, "/health/live")[0] == 200
        sent = time.monotonic()
        _produce(broker, src, [(0, "a", "not a number", 2000)])
        _wait(lambda: streams.state() == KafkaStreams.State.ERROR)
        print(f"{execution_mode}: ERROR {time.monotonic() - sent:.1f} s after the bad record "
              "was sent")
        assert seen[-3:] == ["RUNNING", "PENDING_ERROR", "ERROR"], seen
        assert _get(port, "/health/live")[0] == 503 and _get(port, "/health/ready")[0] == 503
    finally:
        streams.close()
    assert streams.state() == "ERROR"  # close() keeps a failed client in ERROR, as Java
